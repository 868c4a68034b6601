-- ---------------------------------------------------------------------
-- adk_session_mermaid: a session as a Mermaid sequence diagram
-- (docs/sessions-lifecycle.md, "A session as a picture").
--
-- The user, the agents (events' authors) and the tools they call are the
-- participants, in the order they first appear.  Each event becomes
-- arrows and notes: a message, a call, a response, a transfer, a pause
-- (a long-running call or a confirmation asked), an answer, an error, a
-- compaction, a rewind.  A model's answer gets a note with its model,
-- latency and tokens from the ledger (adk.model_calls): the row of the
-- same invocation whose response carried the same content, in order --
-- an answer a plugin rewrote has no note.  Text is flattened to one line,
-- cut to 60 characters, and has Mermaid's special characters written as
-- entity codes.  It reads as the caller: row-level security applies to
-- the events and the ledger, and a session the caller cannot see does not
-- exist.
-- ---------------------------------------------------------------------
CREATE FUNCTION adk._mermaid_text(t text, max_chars integer DEFAULT 60)
RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE SET search_path = pg_catalog, pg_temp AS $$
    SELECT coalesce(pg_catalog.string_agg(CASE c WHEN '#' THEN '#35;' WHEN ';' THEN '#59;'
                                                 WHEN '<' THEN '#60;' WHEN '>' THEN '#62;'
                                                 WHEN '%' THEN '#37;' ELSE c END, '' ORDER BY i), '')
      FROM (SELECT pg_catalog.btrim(pg_catalog.regexp_replace(coalesce(t, ''), '\s+', ' ', 'g')) AS flat) x,
           LATERAL pg_catalog.regexp_split_to_table(
               CASE WHEN pg_catalog.length(x.flat) OPERATOR(pg_catalog.>) max_chars
                    THEN pg_catalog.left(x.flat, max_chars OPERATOR(pg_catalog.-) 1) OPERATOR(pg_catalog.||) '…'
                    ELSE x.flat END, '') WITH ORDINALITY AS ch(c, i)
$$;

-- A participant: its alias in alias (u for the user, p1, p2, ... for the
-- rest, in order), its declaration added to decl the first time.
CREATE FUNCTION adk._mermaid_who(INOUT alias jsonb, INOUT decl text[], who text)
LANGUAGE plpgsql IMMUTABLE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    IF NOT alias ? who THEN
        alias := alias OPERATOR(pg_catalog.||) pg_catalog.jsonb_build_object(who,
                     CASE WHEN who OPERATOR(pg_catalog.=) 'user' THEN 'u'
                          ELSE 'p' OPERATOR(pg_catalog.||) pg_catalog.cardinality(decl) END);
        decl := decl OPERATOR(pg_catalog.||)
                pg_catalog.format('participant %s as %s', alias ->> who, adk._mermaid_text(who));
    END IF;
END
$$;

CREATE FUNCTION adk_session_mermaid(app_name text, user_id text, session_id text,
                                    from_seq bigint DEFAULT NULL)
RETURNS text
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    ev record;
    p jsonb;
    alias jsonb := '{}';          -- participant -> its alias (adk._mermaid_who)
    decl text[] := '{}';          -- the participant lines, in order
    body text[] := '{}';
    agent text;                   -- the agent a user event speaks to
    last_agent text;
    who text;
    target text;
    paused jsonb;
BEGIN
    IF NOT EXISTS (SELECT 1 FROM adk.sessions s
                    WHERE s.app_name OPERATOR(pg_catalog.=) $1
                      AND s.user_id OPERATOR(pg_catalog.=) $2
                      AND s.id OPERATOR(pg_catalog.=) $3) THEN
        PERFORM adk._session_not_found($1, $2, $3);
    END IF;
    FOR ev IN
        SELECT e.seq, e.invocation_id, e.event_data AS d, e.event_data ->> 'author' AS author,
               e.next_author AS next_agent,
               c.model, c.latency_ms, c.input_tokens, c.output_tokens
          FROM (SELECT x.*, pg_catalog.row_number() OVER (
                              PARTITION BY x.invocation_id, x.event_data -> 'content' ORDER BY x.seq) AS nth,
                       -- who speaks next in the invocation (a user event's addressee)
                       pg_catalog.lead(x.event_data ->> 'author') OVER (
                              PARTITION BY x.invocation_id ORDER BY x.seq) AS next_author
                  FROM adk.events x
                 WHERE x.app_name OPERATOR(pg_catalog.=) $1
                   AND x.user_id OPERATOR(pg_catalog.=) $2
                   AND x.session_id OPERATOR(pg_catalog.=) $3) e
          LEFT JOIN (SELECT m.*, pg_catalog.row_number() OVER (
                              PARTITION BY m.invocation_id, m.response -> 'content' ORDER BY m.id) AS nth
                       FROM adk.model_calls m
                      WHERE m.app_name OPERATOR(pg_catalog.=) $1
                        AND m.user_id OPERATOR(pg_catalog.=) $2
                        AND m.error_code IS NULL
                        AND m.response ? 'content') c
            ON (e.event_data ->> 'author') OPERATOR(pg_catalog.<>) 'user'
           AND c.invocation_id OPERATOR(pg_catalog.=) e.invocation_id
           AND (c.response -> 'content') OPERATOR(pg_catalog.=) (e.event_data -> 'content')
           AND c.nth OPERATOR(pg_catalog.=) e.nth
         WHERE e.seq OPERATOR(pg_catalog.>=) coalesce($4, 0)
         ORDER BY e.seq
    LOOP
        -- the speakers: the user, then agents and tools as they appear
        SELECT * INTO alias, decl FROM adk._mermaid_who(alias, decl, 'user');
        IF ev.author OPERATOR(pg_catalog.<>) 'user' THEN
            last_agent := ev.author;
        END IF;
        agent := coalesce(CASE WHEN ev.author OPERATOR(pg_catalog.<>) 'user' THEN ev.author END,
                          nullif(ev.next_agent, 'user'), last_agent, 'agent');
        SELECT * INTO alias, decl FROM adk._mermaid_who(alias, decl, agent);
        paused := coalesce(ev.d -> 'long_running_tool_ids', '[]');

        IF ev.d -> 'actions' ? 'compaction' THEN
            body := body OPERATOR(pg_catalog.||) pg_catalog.format('Note over u,%s: compaction: %s', alias ->> agent,
                        adk._mermaid_text(ev.d #>> '{actions,compaction,compacted_content,parts,0,text}'));
        END IF;
        IF (ev.d #>> '{actions,rewind_before_invocation_id}') IS NOT NULL THEN
            body := body OPERATOR(pg_catalog.||) pg_catalog.format('Note over u,%s: rewind before invocation %s', alias ->> agent,
                        adk._mermaid_text(ev.d #>> '{actions,rewind_before_invocation_id}'));
        END IF;

        FOR p IN SELECT x FROM adk._parts(ev.d -> 'content') x LOOP
            IF p ? 'text' AND NOT coalesce((p ->> 'thought')::boolean, false) THEN
                IF ev.author OPERATOR(pg_catalog.=) 'user' THEN
                    body := body OPERATOR(pg_catalog.||) pg_catalog.format('u->>%s: %s', alias ->> agent, adk._mermaid_text(p ->> 'text'));
                ELSE
                    body := body OPERATOR(pg_catalog.||) pg_catalog.format('%s->>u: %s', alias ->> agent, adk._mermaid_text(p ->> 'text'));
                END IF;
            ELSIF p ? 'function_call' THEN
                who := p #>> '{function_call,name}';
                IF who OPERATOR(pg_catalog.=) 'transfer_to_agent' THEN
                    target := p #>> '{function_call,args,agent_name}';
                    SELECT * INTO alias, decl FROM adk._mermaid_who(alias, decl, target);
                    body := body OPERATOR(pg_catalog.||) pg_catalog.format('%s->>%s: transfer', alias ->> agent, alias ->> target);
                ELSIF who OPERATOR(pg_catalog.=) ANY (ARRAY['adk_request_confirmation', 'adk_request_credential']) THEN
                    body := body OPERATOR(pg_catalog.||) pg_catalog.format('%s->>u: %s %s', alias ->> agent,
                                CASE who WHEN 'adk_request_confirmation' THEN 'asks to confirm' ELSE 'asks for a credential for' END,
                                adk._mermaid_text(p #>> '{function_call,args,originalFunctionCall,name}'));
                    body := body OPERATOR(pg_catalog.||) pg_catalog.format('Note over %s: paused', alias ->> agent);
                ELSE
                    SELECT * INTO alias, decl FROM adk._mermaid_who(alias, decl, 'tool ' OPERATOR(pg_catalog.||) who);
                    body := body OPERATOR(pg_catalog.||) pg_catalog.format('%s->>%s: %s', alias ->> agent,
                                alias ->> ('tool ' OPERATOR(pg_catalog.||) who),
                                adk._mermaid_text(pg_catalog.format('%s(%s)', who, coalesce(p #> '{function_call,args}', '{}'))));
                    IF paused ? (p #>> '{function_call,id}') THEN
                        body := body OPERATOR(pg_catalog.||) pg_catalog.format('Note over %s: paused: %s runs long', alias ->> agent, adk._mermaid_text(who));
                    END IF;
                END IF;
            ELSIF p ? 'function_response' THEN
                who := p #>> '{function_response,name}';
                IF who OPERATOR(pg_catalog.=) 'transfer_to_agent' THEN
                    CONTINUE;
                ELSIF ev.author OPERATOR(pg_catalog.=) 'user' THEN
                    body := body OPERATOR(pg_catalog.||) pg_catalog.format('u-->>%s: answers %s: %s', alias ->> agent, adk._mermaid_text(who),
                                adk._mermaid_text(coalesce(p #> '{function_response,response}', '{}')::text));
                ELSE
                    SELECT * INTO alias, decl FROM adk._mermaid_who(alias, decl, 'tool ' OPERATOR(pg_catalog.||) who);
                    body := body OPERATOR(pg_catalog.||) pg_catalog.format('%s-->>%s: %s', alias ->> ('tool ' OPERATOR(pg_catalog.||) who),
                                alias ->> agent, adk._mermaid_text(coalesce(p #> '{function_response,response}', '{}')::text));
                END IF;
            END IF;
        END LOOP;
        IF ev.d ? 'error_code' OR ev.d ? 'error_message' THEN
            body := body OPERATOR(pg_catalog.||) pg_catalog.format('Note over %s: error %s', alias ->> agent,
                        adk._mermaid_text(pg_catalog.concat_ws(': ', ev.d ->> 'error_code', ev.d ->> 'error_message')));
        END IF;
        IF ev.model IS NOT NULL THEN
            body := body OPERATOR(pg_catalog.||) pg_catalog.format('Note right of %s: %s, %s ms, %s in, %s out', alias ->> agent,
                        adk._mermaid_text(ev.model), pg_catalog.round(ev.latency_ms::numeric),
                        coalesce(ev.input_tokens::text, '?'), coalesce(ev.output_tokens::text, '?'));
        END IF;
    END LOOP;
    RETURN pg_catalog.array_to_string(ARRAY['sequenceDiagram'] OPERATOR(pg_catalog.||)
               (SELECT pg_catalog.array_agg('    ' OPERATOR(pg_catalog.||) l) FROM pg_catalog.unnest(decl OPERATOR(pg_catalog.||) body) l),
           E'\n');
END
$$;
COMMENT ON FUNCTION adk_session_mermaid(text, text, text, bigint) IS
    'The session (from seq from_seq on) as a Mermaid sequence diagram: participants user, agents and tools; messages, calls, responses, transfers, pauses, answers, errors, compactions and rewinds; model latency and tokens from the ledger.';
