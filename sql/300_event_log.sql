-- adk.event_log reads like the conversation.
SELECT adk_create_session('weather_app', 'user-1', 'session-1') IS NOT NULL AS created;
SELECT adk_append_event('weather_app', 'user-1', 'session-1', e)  IS NOT NULL
  FROM (VALUES
   ('{"invocation_id": "e-1", "author": "user", "content": {"role": "user", "parts": [{"text": "What is the weather in Hangzhou?"}]}}'::jsonb),
   ('{"invocation_id": "e-1", "author": "weather_agent", "content": {"role": "model", "parts": [{"function_call": {"id": "call-1", "name": "get_weather", "args": {"city": "Hangzhou"}}}]}}'),
   ('{"invocation_id": "e-1", "author": "weather_agent", "content": {"role": "user", "parts": [{"function_response": {"id": "call-1", "name": "get_weather", "response": {"forecast": "sunny", "temperature_c": 25}}}]}}'),
   ('{"invocation_id": "e-1", "author": "weather_agent", "content": {"role": "model", "parts": [{"text": "It is "}, {"text": "sunny, 25°C."}]}, "actions": {"state_delta": {"last_city": "Hangzhou"}}}'),
   ('{"invocation_id": "e-2", "author": "weather_agent", "error_code": "HTTP_500", "error_message": "model unavailable"}')
  ) AS v(e);

SELECT seq, author, role, text, function_calls, function_responses, error, state_delta, invocation_id
  FROM adk.event_log WHERE session_id = 'session-1' ORDER BY seq;
