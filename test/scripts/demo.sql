-- The demo: adk_runner's session store, driven from SQL.
CREATE EXTENSION adk_runner;

SELECT adk_create_session('weather_app', 'user-1', 'session-1',
                          '{"user:units": "metric"}') ->> 'id' AS session;

-- the weather walkthrough's four events, appended as ADK events
SELECT seq_of.author, seq_of.ok
  FROM (VALUES
   ('{"invocation_id": "e-1", "author": "user",
      "content": {"role": "user", "parts": [{"text": "What is the weather in Hangzhou?"}]}}'::jsonb),
   ('{"invocation_id": "e-1", "author": "weather_agent",
      "content": {"role": "model", "parts": [{"function_call": {"id": "call-1", "name": "get_weather", "args": {"city": "Hangzhou"}}}]}}'),
   ('{"invocation_id": "e-1", "author": "weather_agent",
      "content": {"role": "user", "parts": [{"function_response": {"id": "call-1", "name": "get_weather", "response": {"forecast": "sunny", "temperature_c": 25}}}]}}'),
   ('{"invocation_id": "e-1", "author": "weather_agent",
      "content": {"role": "model", "parts": [{"text": "The weather in Hangzhou is sunny, 25°C."}]},
      "actions": {"state_delta": {"last_city": "Hangzhou"}}}')
  ) AS v(e),
  LATERAL (SELECT e ->> 'author' AS author,
                  adk_append_event('weather_app', 'user-1', 'session-1', e) IS NOT NULL AS ok) seq_of;

\echo
\echo == the session history, from SQL
SELECT seq, author, role, text, function_calls, function_responses
  FROM adk.event_log WHERE session_id = 'session-1' ORDER BY seq;

\echo == the session as an ADK Session (state merged by scope)
SELECT jsonb_pretty(adk_get_session('weather_app', 'user-1', 'session-1') - 'events') AS session;
