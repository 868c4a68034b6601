-- ---------------------------------------------------------------------
-- adk.event_log: events flattened for people.
--   SELECT seq, author, role, text, function_calls, function_responses, error
--     FROM adk.event_log WHERE session_id = 'session-1' ORDER BY seq;
-- reads like the conversation.  event_id (the event's id, last because
-- a view only grows at its end) finds the stored event again.
-- ---------------------------------------------------------------------

CREATE FUNCTION adk._parts(content jsonb) RETURNS SETOF jsonb
LANGUAGE sql IMMUTABLE PARALLEL SAFE SET search_path = pg_catalog, pg_temp AS $$
    SELECT p FROM jsonb_array_elements(
        CASE WHEN jsonb_typeof(content -> 'parts') = 'array'
             THEN content -> 'parts' ELSE '[]'::jsonb END) AS p
$$;

CREATE VIEW adk.event_log AS
SELECT e.app_name,
       e.user_id,
       e.session_id,
       e.seq,
       e."timestamp" AS time,
       e.invocation_id,
       e.event_data ->> 'author' AS author,
       e.event_data #>> '{content,role}' AS role,
       (SELECT string_agg(p ->> 'text', '')
          FROM adk._parts(e.event_data -> 'content') p
         WHERE p ? 'text') AS text,
       (SELECT string_agg(format('%s(%s)', p #>> '{function_call,name}',
                                 coalesce(p #> '{function_call,args}', '{}'::jsonb)), '; ')
          FROM adk._parts(e.event_data -> 'content') p
         WHERE p ? 'function_call') AS function_calls,
       (SELECT string_agg(format('%s -> %s', p #>> '{function_response,name}',
                                 p #> '{function_response,response}'), '; ')
          FROM adk._parts(e.event_data -> 'content') p
         WHERE p ? 'function_response') AS function_responses,
       nullif(concat_ws(': ', e.event_data ->> 'error_code',
                        e.event_data ->> 'error_message'), '') AS error,
       nullif(e.event_data #> '{actions,state_delta}', '{}'::jsonb) AS state_delta,
       e.event_data ->> 'branch' AS branch,
       e.event_data -> 'long_running_tool_ids' AS long_running_tool_ids,
       e.id AS event_id
  FROM adk.live_events e;

COMMENT ON VIEW adk.event_log IS
    'Events flattened for reading (not the rewound ones): seq, time, author, role, text, function calls and responses, errors, the event id.';

-- ---------------------------------------------------------------------
-- adk.active_tasks: the open isolation scopes of each session
-- (docs/agent-modes.md).  A task agent's events carry isolation_scope,
-- the id of the call that delegated to it (ADK's field, whoever wrote
-- them); its scope is open until a successful finish_task response (one
-- without "error") is its newest event -- ADK-Go's
-- findActiveTaskIsolationScope: walking back, the first scoped event not
-- closed by such a response (rewound events do not count: adk.live_events).
-- agent is the scope's first author other
-- than the user; since_seq its first event, last_seq its newest.  The
-- session's active task is the open scope with the newest last_seq.
-- ---------------------------------------------------------------------
CREATE VIEW adk.active_tasks AS
SELECT t.app_name, t.user_id, t.session_id, t.scope, t.agent, t.since_seq, t.last_seq
  FROM (SELECT e.app_name, e.user_id, e.session_id,
               e.event_data ->> 'isolation_scope' AS scope,
               min(e.seq) AS since_seq,
               max(e.seq) AS last_seq,
               (array_agg(e.event_data ->> 'author' ORDER BY e.seq)
                  FILTER (WHERE e.event_data ->> 'author' IS DISTINCT FROM 'user'))[1] AS agent,
               (array_agg(jsonb_path_exists(e.event_data,
                   '$.content.parts[*].function_response ? (@.name == "finish_task" && !exists(@.response.error))')
                  ORDER BY e.seq DESC))[1] AS closed
          FROM adk.live_events e
         WHERE (e.event_data ->> 'isolation_scope') <> ''
         GROUP BY e.app_name, e.user_id, e.session_id, e.event_data ->> 'isolation_scope') t
 WHERE NOT t.closed;

COMMENT ON VIEW adk.active_tasks IS
    'Open isolation scopes (tasks) per session: scope (the delegating call id), agent, since_seq and last_seq; a scope closes with a successful finish_task response.';
