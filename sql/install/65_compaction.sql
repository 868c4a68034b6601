-- ---------------------------------------------------------------------
-- Compaction (docs/compaction.md; seed 000 §四.4.6): summaries that stand in for older
-- events in prompts.
--
-- A compaction is an ordinary event (author "user", no content) whose
-- actions.compaction = {start_timestamp, end_timestamp, compacted_content}
-- is ADK's record, so ADK-JS and ADK Python read it.  Timestamps there are
-- integer epoch milliseconds, the unit of event_data.timestamp in our
-- store (docs/sessions.md), so a reader comparing them with event timestamps gets
-- the same answer.  Because one session's timestamps strictly increase
-- with seq, the range is also an exact seq range; we keep it in our own
-- table adk.compactions (not in columns of the shared adk.events), with
-- the seq the summarizer saw last (seen_seq) and the end of the
-- contiguously covered prefix of the session (covered_to).
--
-- The summary is computed outside any lock (adk._compaction_read reads the
-- events, the model call happens in C).  adk._compaction_check takes the
-- session row lock -- the lock every append takes -- and refuses a range
-- whose events changed since they were read, or that a compaction appended
-- after the read (seq > seen_seq) covers in part.  Earlier summaries may
-- overlap on purpose (overlap_size, rolling summaries); a summary wholly
-- inside a wider one is dropped from prompts.  Events appended while the
-- summarizer ran have seq > to_seq and are never covered.
--
-- Every compaction event counts, whoever wrote it (ADK-JS and ADK Python
-- write them too, and anyone may append one with adk_append_event): the
-- append path (src/store/event_trigger.c, adk._compaction_note) records
-- its range in adk.compactions, found from its timestamps (epoch ms, or
-- ADK Python's seconds), with kind 'external'.  ADK-JS 2.0 writes its own
-- shape -- is_compacted, start_time, end_time, the summary as the event's
-- content -- which counts the same way.  Our own compactor's record
-- is the same row, which it then marks with its kind.  A record with no
-- compacted_content (an object with parts), an inverted range, or a range
-- that holds no event hides nothing: no row.
-- ---------------------------------------------------------------------

CREATE TABLE adk.compactions (
    app_name      text NOT NULL,
    user_id       text NOT NULL,
    -- the type of adk.sessions.id, so Citus can colocate the two
    session_id    varchar(191) NOT NULL,
    seq           bigint NOT NULL,      -- seq of the compaction event
    event_id      text NOT NULL,
    kind          text NOT NULL CHECK (kind IN ('sliding_window', 'tail_retention', 'manual', 'external')),
    from_seq      bigint NOT NULL,
    to_seq        bigint NOT NULL,
    seen_seq      bigint NOT NULL,      -- the session's last seq when the events were read
    covered_to    bigint NOT NULL,      -- every seq up to this one is covered after this row
    invocation_id text,
    created_at    timestamptz NOT NULL DEFAULT clock_timestamp(),
    CONSTRAINT compactions_pkey PRIMARY KEY (app_name, user_id, session_id, seq),
    CHECK (from_seq >= 1 AND from_seq <= to_seq AND to_seq <= seen_seq AND seen_seq < seq)
);
CREATE INDEX compactions_to_seq_idx ON adk.compactions (app_name, user_id, session_id, to_seq);
COMMENT ON TABLE adk.compactions IS 'Compaction events of sessions and the exact seq range each one covers';
COMMENT ON COLUMN adk.compactions.kind IS 'sliding_window, tail_retention or manual for ours; external for a compaction event another writer appended';
SELECT pg_catalog.pg_extension_config_dump('adk.compactions', '');

ALTER TABLE adk.invocations ADD COLUMN compaction_error text;
COMMENT ON COLUMN adk.invocations.compaction_error IS 'Why a compaction of this invocation failed or was refused (the run itself went on)';

-- A session's compactions go with it.
CREATE FUNCTION adk._sessions_delete_compactions() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    DELETE FROM adk.compactions c
     WHERE c.app_name = OLD.app_name AND c.user_id = OLD.user_id AND c.session_id = OLD.id;
    RETURN OLD;
END
$$;
CREATE TRIGGER adk_sessions_delete_compactions
    AFTER DELETE ON adk.sessions
    FOR EACH ROW EXECUTE FUNCTION adk._sessions_delete_compactions();

-- ---------------------------------------------------------------------
-- Configuration: adk.apps.compaction, checked as 000 §四.4.6.1 lists.
-- ---------------------------------------------------------------------

CREATE FUNCTION adk._check_compaction(app text, root text, c jsonb) RETURNS void
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    k text;
    v jsonb;
    n numeric;
    interval_ bigint := 0;
    overlap bigint := 0;
    threshold bigint := 0;
    retention bigint := 0;
    root_kind text;
BEGIN
    IF c IS NULL THEN
        RETURN;
    END IF;
    IF jsonb_typeof(c) <> 'object' THEN
        RAISE EXCEPTION 'compaction of app "%" must be a JSON object, or NULL for none', app
            USING ERRCODE = '22023';
    END IF;
    FOR k, v IN SELECT * FROM jsonb_each(c) LOOP
        IF k IN ('compaction_interval', 'overlap_size', 'token_threshold', 'event_retention_size') THEN
            IF jsonb_typeof(v) <> 'number' OR (v #>> '{}')::numeric <> trunc((v #>> '{}')::numeric)
               OR abs((v #>> '{}')::numeric) > 2147483647 THEN
                RAISE EXCEPTION '"%" in the compaction of app "%" must be an integer', k, app
                    USING ERRCODE = '22023', DETAIL = format('It is %s.', v);
            END IF;
            n := (v #>> '{}')::numeric;
            IF n < 0 THEN
                RAISE EXCEPTION '"%" in the compaction of app "%" must not be negative', k, app
                    USING ERRCODE = '22023', DETAIL = format('It is %s.', v);
            END IF;
            CASE k
                WHEN 'compaction_interval' THEN interval_ := n;
                WHEN 'overlap_size' THEN overlap := n;
                WHEN 'token_threshold' THEN threshold := n;
                ELSE retention := n;
            END CASE;
        ELSIF k = 'summarizer_model' THEN
            IF jsonb_typeof(v) <> 'string' OR v #>> '{}' = '' THEN
                RAISE EXCEPTION '"summarizer_model" in the compaction of app "%" must be the name of a model', app
                    USING ERRCODE = '22023', DETAIL = format('It is %s.', v);
            END IF;
            IF adk._check_references() AND NOT EXISTS (SELECT 1 FROM adk.models m WHERE m.name = v #>> '{}') THEN
                RAISE EXCEPTION 'summarizer model "%" of app "%" does not exist', v #>> '{}', app
                    USING ERRCODE = '42704', HINT = 'Define it first with adk_define_model().';
            END IF;
        ELSE
            RAISE EXCEPTION 'unknown key "%" in the compaction of app "%"', k, app
                USING ERRCODE = '22023',
                      HINT = 'The keys are compaction_interval, overlap_size, token_threshold, event_retention_size and summarizer_model.';
        END IF;
    END LOOP;
    IF overlap > 0 AND interval_ = 0 THEN
        RAISE EXCEPTION 'compaction of app "%" sets overlap_size without compaction_interval', app
            USING ERRCODE = '22023', HINT = 'overlap_size only applies to the sliding window, which compaction_interval enables.';
    END IF;
    IF threshold > 0 AND retention = 0 THEN
        RAISE EXCEPTION 'compaction of app "%" sets token_threshold without event_retention_size', app
            USING ERRCODE = '22023', HINT = 'Tail retention needs both: the threshold that starts it and the number of recent events it keeps.';
    END IF;
    IF retention > 0 AND threshold = 0 THEN
        RAISE EXCEPTION 'compaction of app "%" sets event_retention_size without token_threshold', app
            USING ERRCODE = '22023', HINT = 'Tail retention needs both: the threshold that starts it and the number of recent events it keeps.';
    END IF;
    IF interval_ = 0 AND threshold = 0 THEN
        RAISE EXCEPTION 'compaction of app "%" enables nothing', app
            USING ERRCODE = '22023',
                  HINT = 'Set compaction_interval (sliding window), or token_threshold and event_retention_size (tail retention); NULL turns compaction off.';
    END IF;
    IF NOT c ? 'summarizer_model' AND adk._check_references() THEN
        SELECT a.kind INTO root_kind FROM adk.agents a WHERE a.name = root;
        IF root_kind IS DISTINCT FROM 'llm' THEN
            RAISE EXCEPTION 'compaction of app "%" needs a summarizer_model: its root agent "%" is a % agent', app, root, root_kind
                USING ERRCODE = '22023', HINT = 'Without summarizer_model the root LLM agent''s model summarizes.';
        END IF;
        IF adk._agent_model(root) IS NULL THEN
            RAISE EXCEPTION 'compaction of app "%" needs a summarizer_model: its root agent "%" has no model', app, root
                USING ERRCODE = '22023';
        END IF;
    END IF;
END
$$;

CREATE FUNCTION adk._apps_check_compaction() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    PERFORM adk._check_compaction(NEW.name, NEW.root_agent, NEW.compaction);
    RETURN NEW;
END
$$;
-- after adk_apps_before_write (triggers fire in name order)
CREATE TRIGGER adk_apps_check_compaction
    BEFORE INSERT OR UPDATE ON adk.apps
    FOR EACH ROW EXECUTE FUNCTION adk._apps_check_compaction();

-- ---------------------------------------------------------------------
-- Choosing a range.
-- ---------------------------------------------------------------------

-- Sliding window: when at least "every" invocations began after the newest
-- compaction's range, those invocations plus "overlap" earlier ones, up to
-- the last event.  NULLs when it is not time.  Walks the events backwards
-- from the end and stops as soon as it has what it needs.
CREATE FUNCTION adk._sliding_window_range(p_app text, p_user text, p_session text,
                                          every integer, overlap integer,
                                          OUT from_seq bigint, OUT to_seq bigint)
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    last_to bigint;
    r record;
    ids text[] := '{}';
    new_count integer := 0;
    last_seq bigint;
    lo bigint;
BEGIN
    SELECT c.to_seq INTO last_to FROM adk.compactions c
     WHERE c.app_name = p_app AND c.user_id = p_user AND c.session_id = p_session
     ORDER BY c.to_seq DESC LIMIT 1;
    last_to := coalesce(last_to, 0);
    FOR r IN SELECT e.seq, e.invocation_id FROM adk.live_events e
              WHERE e.app_name = p_app AND e.user_id = p_user AND e.session_id = p_session
                AND NOT coalesce(e.event_data -> 'actions' ? 'compaction', false)
              ORDER BY e.seq DESC
    LOOP
        last_seq := coalesce(last_seq, r.seq);
        IF NOT r.invocation_id = ANY (ids) THEN
            IF r.seq > last_to THEN
                new_count := new_count + 1;
            ELSIF new_count < every OR cardinality(ids) >= new_count + overlap THEN
                EXIT;
            END IF;
            ids := ids || r.invocation_id;
        END IF;
        lo := r.seq;
    END LOOP;
    IF new_count >= every AND every > 0 THEN
        from_seq := lo;
        to_seq := last_seq;
    END IF;
END
$$;

-- Tail retention: everything but the last "keep" events (compaction
-- events do not count); NULL when there is nothing else.
-- (These helpers are PL/pgSQL, not SQL: Citus plans their statements.)
CREATE FUNCTION adk._tail_retention_end(p_app text, p_user text, p_session text, keep integer)
RETURNS bigint
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    RETURN (SELECT e.seq FROM adk.live_events e
             WHERE e.app_name = p_app AND e.user_id = p_user AND e.session_id = p_session
               AND NOT coalesce(e.event_data -> 'actions' ? 'compaction', false)
             ORDER BY e.seq DESC OFFSET keep LIMIT 1);
END
$$;

-- The newest rolling summary: the widest one that starts at the session's
-- first event.  Every event up to its to_seq is in it.
CREATE FUNCTION adk._root_compaction(p_app text, p_user text, p_session text,
                                     OUT seq bigint, OUT to_seq bigint)
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
#variable_conflict use_column
BEGIN
    SELECT c.seq, c.to_seq INTO seq, to_seq FROM adk.compactions c
     WHERE c.app_name = p_app AND c.user_id = p_user AND c.session_id = p_session AND c.from_seq = 1
       AND NOT EXISTS (SELECT 1 FROM adk.sessions r
                        WHERE r.app_name = p_app AND r.user_id = p_user AND r.id = p_session
                          AND r.rewound @> c.seq)
     ORDER BY c.to_seq DESC LIMIT 1;
END
$$;

-- The function calls and responses of events lo..hi, one row per part.
-- placeholder: a response that only says the call waits for confirmation
-- (its event's actions.requested_tool_confirmations names the call), which
-- leaves the call open.
CREATE FUNCTION adk._compaction_parts(p_app text, p_user text, p_session text, lo bigint, hi bigint)
RETURNS TABLE (seq bigint, author text, is_call boolean, call_id text, long_running boolean,
               placeholder boolean)
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
#variable_conflict use_column
BEGIN
    RETURN QUERY
    SELECT e.seq, e.event_data ->> 'author', p ? 'function_call',
           coalesce(p #>> '{function_call,id}', p #>> '{function_response,id}'),
           p ? 'function_call' AND (coalesce(e.event_data -> 'long_running_tool_ids', '[]') ? (p #>> '{function_call,id}')
                                    OR p #>> '{function_call,name}' = 'adk_request_confirmation'),
           p ? 'function_response'
             AND jsonb_typeof(e.event_data #> '{actions,requested_tool_confirmations}') = 'object'
             AND (e.event_data #> '{actions,requested_tool_confirmations}') ? (p #>> '{function_response,id}')
      FROM adk.live_events e,
           LATERAL jsonb_array_elements(CASE WHEN jsonb_typeof(e.event_data #> '{content,parts}') = 'array'
                                             THEN e.event_data #> '{content,parts}' ELSE '[]' END) p
     WHERE e.app_name = p_app AND e.user_id = p_user AND e.session_id = p_session
       AND e.seq BETWEEN lo AND hi
       AND (p ? 'function_call' OR p ? 'function_response');
END
$$;

-- Read events p_from..p_to for a summary, the range narrowed so that it
-- never splits a function call from its response and never covers a call
-- without one (a long-running call or a confirmation is answered only by
-- the user's response; a call waiting for confirmation has only ADK's
-- placeholder response, which answers nothing).  Rolling (tail retention): the range starts at the
-- first event, and the newest rolling summary stands in for the events it
-- covers.  NULL when nothing is left to summarize.  The result is what
-- adk._compaction_check compares against later: seen_seq, read_from and a
-- digest of the ids read.
CREATE FUNCTION adk._compaction_read(p_app text, p_user text, p_session text,
                                     p_from bigint, p_to bigint, p_rolling boolean)
RETURNS jsonb
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    seen bigint;
    f bigint := greatest(coalesce(p_from, 1), 1);
    t bigint;
    lo bigint;
    root_to bigint := 0;
    root_seq bigint;
    prior text;
    x bigint;
    parts record;
    result jsonb;
BEGIN
    SELECT s.last_seq INTO seen FROM adk.sessions s
     WHERE s.app_name = p_app AND s.user_id = p_user AND s.id = p_session;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'session "%" does not exist for app "%" and user "%"', p_session, p_app, p_user
            USING ERRCODE = '42704';
    END IF;
    t := least(coalesce(p_to, seen), seen);
    IF p_rolling THEN
        f := 1;
        SELECT r.seq, r.to_seq INTO root_seq, root_to FROM adk._root_compaction(p_app, p_user, p_session) r;
        root_to := coalesce(root_to, 0);
        IF root_seq IS NOT NULL THEN
            SELECT string_agg(p ->> 'text', E'\n') INTO prior
              FROM adk.events e,
                   LATERAL jsonb_array_elements(e.event_data #> '{actions,compaction,compacted_content,parts}') p
             WHERE e.app_name = p_app AND e.user_id = p_user AND e.session_id = p_session
               AND e.seq = root_seq AND p ? 'text';
        END IF;
    END IF;
    lo := greatest(f, root_to + 1);

    LOOP
        EXIT WHEN t < lo;
        -- the first call in the range not answered inside it: stop before it
        SELECT min(c.seq) INTO x FROM adk._compaction_parts(p_app, p_user, p_session, lo, t) c
         WHERE c.is_call AND NOT EXISTS (
               SELECT 1 FROM adk._compaction_parts(p_app, p_user, p_session, c.seq + 1, t) r
                WHERE NOT r.is_call AND r.call_id = c.call_id AND NOT r.placeholder
                  AND (NOT c.long_running OR r.author = 'user'));
        IF x IS NOT NULL THEN
            t := x - 1;
            CONTINUE;
        END IF;
        -- the last response in the range whose call is before it: start after it
        SELECT max(r.seq) INTO x FROM adk._compaction_parts(p_app, p_user, p_session, lo, t) r
         WHERE NOT r.is_call AND NOT EXISTS (
               SELECT 1 FROM adk._compaction_parts(p_app, p_user, p_session, lo, r.seq) c
                WHERE c.is_call AND c.call_id = r.call_id AND c.seq < r.seq);
        IF x IS NOT NULL AND NOT p_rolling THEN
            f := x + 1;
            lo := greatest(lo, f);
            CONTINUE;
        END IF;
        EXIT;
    END LOOP;
    IF t < lo THEN
        RETURN NULL;
    END IF;

    SELECT jsonb_build_object(
               'from_seq', f, 'to_seq', t, 'read_from', lo, 'seen_seq', seen,
               'digest', md5(string_agg(e.id, ',' ORDER BY e.seq)),
               'prior_summary', prior,
               'transcript', string_agg(adk._transcript_line(e.event_data), '' ORDER BY e.seq))
      INTO result
      FROM adk.live_events e
     WHERE e.app_name = p_app AND e.user_id = p_user AND e.session_id = p_session
       AND e.seq BETWEEN lo AND t;
    SELECT result || jsonb_build_object('start_timestamp', (e.event_data -> 'timestamp'))
      INTO result FROM adk.events e
     WHERE e.app_name = p_app AND e.user_id = p_user AND e.session_id = p_session AND e.seq = f;
    SELECT result || jsonb_build_object('end_timestamp', (e.event_data -> 'timestamp'))
      INTO result FROM adk.events e
     WHERE e.app_name = p_app AND e.user_id = p_user AND e.session_id = p_session AND e.seq = t;
    RETURN result;
END
$$;

-- One event as lines of the summarizer's transcript ("" when it says
-- nothing: compaction events, partials, thoughts).
CREATE FUNCTION adk._transcript_line(ev jsonb) RETURNS text
LANGUAGE sql IMMUTABLE SET search_path = pg_catalog, pg_temp AS $$
    SELECT coalesce(string_agg(
               CASE WHEN p ? 'text' THEN format(E'%s: %s\n', ev ->> 'author', p ->> 'text')
                    WHEN p ? 'function_call' THEN format(E'%s called tool `%s` with parameters: %s\n', ev ->> 'author',
                                                        p #>> '{function_call,name}', coalesce(p #> '{function_call,args}', '{}'))
                    ELSE format(E'%s: tool `%s` returned: %s\n', ev ->> 'author',
                                p #>> '{function_response,name}', coalesce(p #> '{function_response,response}', '{}'))
               END, ''), '')
      FROM jsonb_array_elements(CASE WHEN jsonb_typeof(ev #> '{content,parts}') = 'array'
                                     THEN ev #> '{content,parts}' ELSE '[]' END) p
     WHERE (p ? 'text' AND NOT coalesce((p ->> 'thought')::boolean, false))
        OR p ? 'function_call' OR p ? 'function_response'
$$;

-- ---------------------------------------------------------------------
-- Appending: the check under the session row lock, and the record.
-- ---------------------------------------------------------------------

-- Takes the session row lock (held until commit) and says why the summary
-- of "plan" (adk._compaction_read's result) may not be appended, or NULL.
CREATE FUNCTION adk._compaction_check(p_app text, p_user text, p_session text, plan jsonb)
RETURNS text
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    f bigint := (plan ->> 'from_seq')::bigint;
    t bigint := (plan ->> 'to_seq')::bigint;
    lo bigint := (plan ->> 'read_from')::bigint;
    seen bigint := (plan ->> 'seen_seq')::bigint;
    d text;
    c record;
    last bigint;
    again jsonb;
BEGIN
    IF f IS NULL OR t IS NULL OR lo IS NULL OR seen IS NULL OR plan ->> 'digest' IS NULL
       OR f < 1 OR f > t OR lo < f OR lo > t OR t > seen OR (lo > f AND f <> 1) THEN
        RAISE EXCEPTION 'invalid compaction plan' USING ERRCODE = '22023',
            HINT = 'Pass the result of adk_compaction_read() unchanged.';
    END IF;
    SELECT s.last_seq INTO last FROM adk.sessions s
      WHERE s.app_name = p_app AND s.user_id = p_user AND s.id = p_session FOR UPDATE;
    IF NOT FOUND THEN
        RETURN 'the session no longer exists';
    END IF;
    IF seen > last THEN
        RAISE EXCEPTION 'invalid compaction plan' USING ERRCODE = '22023',
            DETAIL = format('The plan has seen seq %s; the session ends at seq %s.', seen, last),
            HINT = 'Pass the result of adk_compaction_read() unchanged.';
    END IF;
    SELECT md5(string_agg(e.id, ',' ORDER BY e.seq)) INTO d FROM adk.live_events e
     WHERE e.app_name = p_app AND e.user_id = p_user AND e.session_id = p_session
       AND e.seq BETWEEN lo AND t;
    IF d IS DISTINCT FROM plan ->> 'digest' THEN
        RETURN format('the events of seq %s..%s changed after they were summarized', lo, t);
    END IF;
    SELECT x.seq, x.from_seq, x.to_seq INTO c FROM adk.compactions x
     WHERE x.app_name = p_app AND x.user_id = p_user AND x.session_id = p_session
       AND x.seq > seen AND x.from_seq <= t AND x.to_seq >= f
     ORDER BY x.seq LIMIT 1;
    IF FOUND THEN
        RETURN format('seq %s..%s overlaps the compaction at seq %s (seq %s..%s), appended after the summarizer read its events',
                      f, t, c.seq, c.from_seq, c.to_seq);
    END IF;
    -- The whole range, not only the events read: the digest is no secret
    -- (anyone who may read the events can compute it), so the plan must be
    -- what adk._compaction_read gives for its range now -- the same seq
    -- f..t, never splitting a call from its response, and seq f..lo-1
    -- covered by the compaction a rolling summary starts from.
    IF lo = f THEN
        again := adk._compaction_read(p_app, p_user, p_session, f, t, false);
    END IF;
    IF f = 1 AND (again IS NULL OR (again ->> 'from_seq')::bigint <> f
                  OR (again ->> 'read_from')::bigint <> lo) THEN
        again := adk._compaction_read(p_app, p_user, p_session, NULL, t, true);
    END IF;
    IF again IS NULL OR (again ->> 'from_seq')::bigint <> f OR (again ->> 'to_seq')::bigint <> t
       OR (again ->> 'read_from')::bigint <> lo OR again ->> 'digest' <> plan ->> 'digest' THEN
        RETURN format('seq %s..%s (events read from seq %s) is not a range adk_compaction_read() gives',
                      f, t, lo);
    END IF;
    RETURN NULL;
END
$$;

-- The row of a compaction event at p_seq covering f..t: covered_to is
-- the end of the contiguously covered prefix of the session after it.
-- The event's row comes first from the append path (kind 'external');
-- our compactor then marks it as its own (adk._compaction_record).
CREATE FUNCTION adk._compaction_insert(p_app text, p_user text, p_session text, p_seq bigint,
                                       p_event_id text, f bigint, t bigint, p_seen bigint,
                                       p_kind text, p_invocation text)
RETURNS void
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    covered bigint;
    further bigint;
BEGIN
    SELECT c.covered_to INTO covered FROM adk.compactions c
     WHERE c.app_name OPERATOR(pg_catalog.=) p_app AND c.user_id OPERATOR(pg_catalog.=) p_user
       AND c.session_id OPERATOR(pg_catalog.=) p_session
       AND c.seq OPERATOR(pg_catalog.<) p_seq
     ORDER BY c.seq DESC LIMIT 1;
    covered := coalesce(covered, 0);
    IF f OPERATOR(pg_catalog.<=) (covered OPERATOR(pg_catalog.+) 1) THEN
        covered := GREATEST(covered, t);
        -- summaries appended earlier may now join the covered prefix
        LOOP
            SELECT pg_catalog.max(c.to_seq) INTO further FROM adk.compactions c
             WHERE c.app_name OPERATOR(pg_catalog.=) p_app AND c.user_id OPERATOR(pg_catalog.=) p_user
               AND c.session_id OPERATOR(pg_catalog.=) p_session
               AND c.to_seq OPERATOR(pg_catalog.>) covered
               AND c.from_seq OPERATOR(pg_catalog.<=) (covered OPERATOR(pg_catalog.+) 1);
            EXIT WHEN further IS NULL;
            covered := further;
        END LOOP;
    END IF;
    INSERT INTO adk.compactions AS c (app_name, user_id, session_id, seq, event_id, kind, from_seq, to_seq,
                                      seen_seq, covered_to, invocation_id)
    VALUES (p_app, p_user, p_session, p_seq, p_event_id, p_kind, f, t, p_seen, covered, p_invocation)
    ON CONFLICT (app_name, user_id, session_id, seq) DO UPDATE
       SET kind = EXCLUDED.kind, seen_seq = EXCLUDED.seen_seq, invocation_id = EXCLUDED.invocation_id;
END
$$;

-- Records the compaction event at "seq" (appended under the lock that
-- adk._compaction_check took) as ours: its kind, what the summarizer saw.
CREATE FUNCTION adk._compaction_record(p_app text, p_user text, p_session text, p_seq bigint,
                                       p_event_id text, plan jsonb, p_kind text, p_invocation text)
RETURNS void
LANGUAGE sql SET search_path = pg_catalog, pg_temp AS $$
    SELECT adk._compaction_insert(p_app, p_user, p_session, p_seq, p_event_id,
                                  (plan ->> 'from_seq')::bigint, (plan ->> 'to_seq')::bigint,
                                  (plan ->> 'seen_seq')::bigint, p_kind, p_invocation)
$$;

-- The append path (src/store/event_trigger.c): an event carrying ADK's
-- actions.compaction, from any writer.  Its range is found from its
-- timestamps among the session's earlier events: epoch milliseconds, as
-- ADK-JS and we write them, or seconds, as ADK Python does (a value below
-- 1e11 -- a time before 1973 in milliseconds -- is seconds), truncated to
-- whole milliseconds as event times are stored.
CREATE FUNCTION adk._compaction_note(p_app text, p_user text, p_session text, p_new jsonb)
RETURNS void
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    c jsonb := p_new #> '{event_data,actions,compaction}';
    d jsonb := p_new -> 'event_data';
    this_seq bigint := (p_new ->> 'seq')::bigint;
    lo numeric;
    hi numeric;
    f bigint;
    t bigint;
BEGIN
    IF c IS NULL AND d -> 'is_compacted' OPERATOR(pg_catalog.=) 'true'::jsonb
       AND d -> 'is_scratchpad' IS DISTINCT FROM 'true'::jsonb THEN
        -- ADK-JS 2.0's compacted event: the summary is its content
        c := pg_catalog.jsonb_build_object('start_timestamp', d -> 'start_time',
                                           'end_timestamp', d -> 'end_time',
                                           'compacted_content', d -> 'content');
    END IF;
    IF pg_catalog.jsonb_typeof(c) IS DISTINCT FROM 'object'
       -- an event a caller appended where it may not speak for the
       -- session (85_tenancy.sql) is no compaction record
       OR p_new #> '{event_data,custom_metadata,adk_appended_by}' IS NOT NULL
       OR pg_catalog.jsonb_typeof(c -> 'start_timestamp') IS DISTINCT FROM 'number'
       OR pg_catalog.jsonb_typeof(c -> 'end_timestamp') IS DISTINCT FROM 'number'
       OR pg_catalog.jsonb_typeof(c #> '{compacted_content,parts}') IS DISTINCT FROM 'array'
       OR pg_catalog.jsonb_array_length(c #> '{compacted_content,parts}') OPERATOR(pg_catalog.=) 0 THEN
        RETURN;
    END IF;
    lo := (c ->> 'start_timestamp')::numeric;
    hi := (c ->> 'end_timestamp')::numeric;
    IF lo OPERATOR(pg_catalog.<) 1e11 THEN lo := lo OPERATOR(pg_catalog.*) 1000; END IF;
    IF hi OPERATOR(pg_catalog.<) 1e11 THEN hi := hi OPERATOR(pg_catalog.*) 1000; END IF;
    lo := pg_catalog.floor(lo);
    hi := pg_catalog.floor(hi);
    IF lo OPERATOR(pg_catalog.>) hi OR lo OPERATOR(pg_catalog.<) 0 OR hi OPERATOR(pg_catalog.>) 253402300799999 THEN
        RETURN;
    END IF;
    SELECT e.seq INTO f FROM adk.events e
     WHERE e.app_name OPERATOR(pg_catalog.=) p_app AND e.user_id OPERATOR(pg_catalog.=) p_user
       AND e.session_id OPERATOR(pg_catalog.=) p_session AND e.seq OPERATOR(pg_catalog.<) this_seq
       AND e."timestamp" OPERATOR(pg_catalog.>=) pg_catalog.to_timestamp((lo OPERATOR(pg_catalog./) 1000)::double precision)
     ORDER BY e.seq LIMIT 1;
    SELECT e.seq INTO t FROM adk.events e
     WHERE e.app_name OPERATOR(pg_catalog.=) p_app AND e.user_id OPERATOR(pg_catalog.=) p_user
       AND e.session_id OPERATOR(pg_catalog.=) p_session AND e.seq OPERATOR(pg_catalog.<) this_seq
       AND e."timestamp" OPERATOR(pg_catalog.<=) pg_catalog.to_timestamp((hi OPERATOR(pg_catalog./) 1000)::double precision)
     ORDER BY e.seq DESC LIMIT 1;
    IF f IS NULL OR t IS NULL OR f OPERATOR(pg_catalog.>) t THEN
        RETURN;
    END IF;
    PERFORM adk._compaction_insert(p_app, p_user, p_session, this_seq, p_new ->> 'id', f, t,
                                   this_seq OPERATOR(pg_catalog.-) 1, 'external', p_new ->> 'invocation_id');
END
$$;

-- ---------------------------------------------------------------------
-- Prompts: the history a model sees, summaries in place of the events
-- they cover, each at the position of the first event it covers.  Reads
-- the summaries that reach past the newest rolling summary and the events
-- after the covered prefix, by index range scans, not the whole history.
-- Rewound events (adk.live_events) and the summaries a rewind rewound are
-- left out; so are they from what a summary is made of.
-- ---------------------------------------------------------------------

CREATE FUNCTION adk._prompt_events(p_app text, p_user text, p_session text)
RETURNS TABLE (event_data jsonb)
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    root_to bigint;
    base bigint;
    rw int8multirange;
BEGIN
    SELECT s.rewound INTO rw FROM adk.sessions s
     WHERE s.app_name = p_app AND s.user_id = p_user AND s.id = p_session;
    SELECT r.to_seq INTO root_to FROM adk._root_compaction(p_app, p_user, p_session) r;
    SELECT c.covered_to INTO base FROM adk.compactions c
     WHERE c.app_name = p_app AND c.user_id = p_user AND c.session_id = p_session
       AND NOT coalesce(rw @> c.seq, false)
     ORDER BY c.seq DESC LIMIT 1;
    IF base IS NULL THEN
        RETURN QUERY SELECT e.event_data FROM adk.live_events e
                      WHERE e.app_name = p_app AND e.user_id = p_user AND e.session_id = p_session
                      ORDER BY e.seq;
        RETURN;
    END IF;
    RETURN QUERY
    WITH s AS (
        SELECT c.seq, c.from_seq, c.to_seq FROM adk.compactions c
         WHERE c.app_name = p_app AND c.user_id = p_user AND c.session_id = p_session
           AND c.to_seq >= coalesce(root_to, 0)
           AND NOT coalesce(rw @> c.seq, false)
    ), kept AS (
        SELECT s.* FROM s
         WHERE NOT EXISTS (SELECT 1 FROM s o
                            WHERE o.from_seq <= s.from_seq AND o.to_seq >= s.to_seq
                              AND (o.from_seq < s.from_seq OR o.to_seq > s.to_seq OR o.seq > s.seq))
    )
    SELECT x.event_data FROM (
        -- one index lookup per summary (a scalar subquery: never a join
        -- that could scan the session's events)
        SELECT k.from_seq AS pos, 0 AS ord, k.seq AS tie,
               (SELECT jsonb_build_object('id', e.id, 'invocation_id', e.invocation_id, 'author', 'user',
                                          'timestamp', e.event_data -> 'timestamp',
                                          'content', coalesce(e.event_data #> '{actions,compaction,compacted_content}',
                                                              e.event_data -> 'content'))
                  FROM adk.events e
                 WHERE e.app_name = p_app AND e.user_id = p_user AND e.session_id = p_session
                   AND e.seq = k.seq) AS event_data
          FROM kept k
        UNION ALL
        SELECT e.seq, 1, e.seq, e.event_data FROM adk.live_events e
         WHERE e.app_name = p_app AND e.user_id = p_user AND e.session_id = p_session
           AND e.seq > base
           AND NOT EXISTS (SELECT 1 FROM kept k WHERE e.seq BETWEEN k.from_seq AND k.to_seq)
           -- a compaction event with content of its own (ADK-JS's) is its summary
           AND NOT EXISTS (SELECT 1 FROM adk.compactions c
                            WHERE c.app_name = p_app AND c.user_id = p_user
                              AND c.session_id = p_session AND c.seq = e.seq)
    ) x
    ORDER BY x.pos, x.ord, x.tie;
END
$$;

-- ---------------------------------------------------------------------
-- The API.
-- ---------------------------------------------------------------------

CREATE FUNCTION adk_compaction_read(app_name text, user_id text, session_id text,
                                    from_seq bigint DEFAULT NULL, to_seq bigint DEFAULT NULL)
RETURNS jsonb
AS 'MODULE_PATHNAME', 'adk_compaction_read_sql' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION adk_compaction_read(text, text, text, bigint, bigint) IS
    'Read a session''s events from_seq..to_seq (default: all) for a summary, without locking: the range narrowed so no function call is split from its response or left unanswered, the transcript, and what adk_compaction_append checks; NULL when nothing can be summarized.';

CREATE FUNCTION adk_compaction_append(app_name text, user_id text, session_id text,
                                      plan jsonb, summary text)
RETURNS bigint
AS 'MODULE_PATHNAME', 'adk_compaction_append_sql' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION adk_compaction_append(text, text, text, jsonb, text) IS
    'Append a compaction event with this summary for the range of plan (from adk_compaction_read) under the session row lock; returns its seq, or NULL (with a warning) when the events changed or a compaction appended since the read covers part of the range.';

CREATE FUNCTION adk_compact(app_name text, user_id text, session_id text,
                            from_seq bigint DEFAULT NULL, to_seq bigint DEFAULT NULL)
RETURNS bigint
AS 'MODULE_PATHNAME', 'adk_compact' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION adk_compact(text, text, text, bigint, bigint) IS
    'Summarize a session''s events from_seq..to_seq with the app''s summarizer and append the compaction (as adk_compaction_read + adk_compaction_append); returns its seq or NULL.  Without a range: a rolling summary of the whole history.';

CREATE FUNCTION adk_prompt(app_name text, user_id text, session_id text, agent text DEFAULT NULL)
RETURNS jsonb
AS 'MODULE_PATHNAME', 'adk_prompt' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION adk_prompt(text, text, text, text) IS
    'The exact request body (provider wire format, secrets redacted) the next model call for this session would send: of the agent named, else of the agent the next message would go to.';

-- The sliding window's range as ARRAY[from_seq, to_seq], NULL when it is
-- not time (src/runner/compaction.c).
CREATE FUNCTION adk._sliding_window_bounds(p_app text, p_user text, p_session text,
                                           p_every integer, p_overlap integer)
RETURNS bigint[]
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    r record;
BEGIN
    SELECT w.from_seq, w.to_seq INTO r
      FROM adk._sliding_window_range(p_app, p_user, p_session, p_every, p_overlap) w;
    IF r.from_seq IS NULL OR r.to_seq IS NULL THEN
        RETURN NULL;
    END IF;
    RETURN ARRAY[r.from_seq, r.to_seq];
END
$$;

-- The model that summarizes app p_app's sessions: its compaction's
-- summarizer_model, or its root agent's model; NULL for no such app
-- (adk_compact, src/runner/compaction_sql.c).
CREATE FUNCTION adk._summarizer_model(p_app text)
RETURNS text
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    RETURN (SELECT coalesce(a.compaction ->> 'summarizer_model', adk._agent_model(a.root_agent))
              FROM adk.apps a
             WHERE a.name = p_app);
END
$$;

-- Why a compaction of invocation p_invocation failed or was refused, kept
-- on the invocation (the run goes on).
CREATE FUNCTION adk._compaction_error_set(p_invocation text, p_error text)
RETURNS void
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    UPDATE adk.invocations i
       SET compaction_error = p_error
     WHERE i.invocation_id = p_invocation;
END
$$;
