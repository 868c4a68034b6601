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
