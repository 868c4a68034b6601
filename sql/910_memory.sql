-- Memory (docs/memory.md): adk_add_session_to_memory, adk_search_memory, the
-- app's options, and the load_memory / preload_memory built-ins against
-- the local model server.
SELECT adk_create_session('mem', 'ann', 'm1') IS NOT NULL AS created;
SELECT adk_append_event('mem', 'ann', 'm1', '{"author": "user", "content": {"role": "user", "parts": [{"text": "My dog is called Rex."}]}}') IS NOT NULL AS appended;
SELECT adk_append_event('mem', 'ann', 'm1', '{"author": "helper", "content": {"role": "model", "parts": [{"text": "Nice name!", "thought": true}, {"text": "Rex is a fine name for a dog."}]}}') IS NOT NULL AS appended;
-- no text: a function call; a partial event is never stored anyway
SELECT adk_append_event('mem', 'ann', 'm1', '{"author": "helper", "content": {"role": "model", "parts": [{"function_call": {"name": "f", "args": {}}}]}}') IS NOT NULL AS appended;
SELECT adk_append_event('mem', 'ann', 'm1', '{"author": "user", "content": {"role": "user", "parts": [{"text": "I live in Lisbon"}, {"text": "and I like cats too"}]}}') IS NOT NULL AS appended;

-- adding is idempotent: the second time adds only what is new
SELECT adk_add_session_to_memory('mem', 'ann', 'm1') AS added;
SELECT adk_add_session_to_memory('mem', 'ann', 'm1') AS added;
SELECT adk_append_event('mem', 'ann', 'm1', '{"author": "user", "content": {"role": "user", "parts": [{"text": "My cat is Tom"}]}}') IS NOT NULL AS appended;
SELECT adk_add_session_to_memory('mem', 'ann', 'm1') AS added;
SELECT author, text, session_id, event_id = (SELECT id FROM adk.events e WHERE e.session_id = 'm1' AND e.event_data ->> 'author' = m.author AND adk._event_text(e.event_data) = m.text) AS source_event,
       "timestamp" = (SELECT "timestamp" FROM adk.events e WHERE e.id = m.event_id) AS event_time,
       search_config, search
  FROM adk.memory m WHERE app_name = 'mem' ORDER BY id;

-- any word of the query matches ('simple' keeps every word), best first
SELECT text, author, session_id, rank > 0 AS ranked
  FROM adk_search_memory('mem', 'ann', 'what is my dog called');
SELECT text FROM adk_search_memory('mem', 'ann', 'Lisbon');
SELECT text FROM adk_search_memory('mem', 'ann', 'dog', max_results => 1);
SELECT count(*) AS none FROM adk_search_memory('mem', 'ann', 'giraffe');
SELECT count(*) AS none FROM adk_search_memory('mem', 'ann', '');
SELECT count(*) AS none FROM adk_search_memory('mem', 'ann', '!!! & | <->');
-- never another user's entries, nor another app's
SELECT adk_create_session('mem', 'bob', 'b1') IS NOT NULL AS created;
SELECT adk_append_event('mem', 'bob', 'b1', '{"author": "user", "content": {"role": "user", "parts": [{"text": "My dog is Fido"}]}}') IS NOT NULL AS appended;
SELECT adk_add_session_to_memory('mem', 'bob', 'b1') AS added;
SELECT text FROM adk_search_memory('mem', 'bob', 'dog');
SELECT count(*) AS none FROM adk_search_memory('other_app', 'ann', 'dog');
-- memory outlives its session
SELECT adk_delete_session('mem', 'bob', 'b1');
SELECT text FROM adk_search_memory('mem', 'bob', 'dog');

-- errors
SELECT expect_error($q$SELECT adk_add_session_to_memory('mem', 'ann', 'nope')$q$);
SELECT expect_error($q$SELECT adk_add_session_to_memory('mem', NULL, 'm1')$q$);
SELECT expect_error($q$SELECT * FROM adk_search_memory('mem', 'ann', NULL)$q$);
SELECT expect_error($q$SELECT * FROM adk_search_memory('mem', 'ann', 'dog', 0)$q$);
SELECT expect_error($q$SELECT * FROM adk_search_memory('', 'ann', 'dog')$q$);
SELECT expect_error($q$SELECT adk_define_app_memory('no_such_app', 'english')$q$);
SELECT expect_error($q$SELECT adk_define_app_memory('no_such_app', 'no_such_config')$q$);

-- the app's text search configuration: 'english' stems and drops stop words
SELECT adk_define_model('mem_model', 'openai', current_setting('adk_test.model_url') || '/v1', 'gpt-test',
                        api_key_secret => 'test-key');
SELECT adk_define_agent('mem_agent', model => 'mem_model', instruction => 'You remember things.',
                        tools => ARRAY['load_memory']);
SELECT adk_define_app('mem_app', 'mem_agent');
SELECT memory_search_config, add_to_memory FROM adk.apps WHERE name = 'mem_app';
SELECT adk_define_app_memory('mem_app', 'english');
SELECT adk_create_session('mem_app', 'ann', 'e1') IS NOT NULL AS created;
SELECT adk_append_event('mem_app', 'ann', 'e1', '{"author": "user", "content": {"role": "user", "parts": [{"text": "My dogs were running in the park"}]}}') IS NOT NULL AS appended;
SELECT adk_append_event('mem_app', 'ann', 'e1', '{"author": "user", "content": {"role": "user", "parts": [{"text": "What is the time"}]}}') IS NOT NULL AS appended;
SELECT adk_add_session_to_memory('mem_app', 'ann', 'e1') AS added;
SELECT search_config, search FROM adk.memory WHERE app_name = 'mem_app' ORDER BY id;
SELECT text FROM adk_search_memory('mem_app', 'ann', 'does the dog run?');
-- stop words alone match nothing under 'english'
SELECT count(*) AS none FROM adk_search_memory('mem_app', 'ann', 'what is the');
-- a define_app again keeps the memory options
SELECT adk_define_app('mem_app', 'mem_agent');
SELECT memory_search_config, add_to_memory FROM adk.apps WHERE name = 'mem_app';

-- load_memory: the instruction says memory exists; the call answers
-- {"memories": [...]} with the user's matching entries
SELECT count(*) AS events FROM adk_run('mem_app', 'ann', 'e2', 'call load_memory({"query": "dog park"})');
SELECT seq, author, function_calls, regexp_replace(function_responses, '"timestamp": "[^"]*"', '"timestamp": "<time>"', 'g') AS function_responses,
       regexp_replace(text, '"timestamp":"[^"]*"', '"timestamp":"<time>"', 'g') AS text
  FROM adk.event_log WHERE app_name = 'mem_app' AND session_id = 'e2' ORDER BY seq;
SELECT (SELECT event_data #>> '{content,parts,0,function_response,response,memories,0,timestamp}'
          FROM adk.events WHERE session_id = 'e2' AND seq = 3)::timestamptz
       = (SELECT "timestamp" FROM adk.memory WHERE app_name = 'mem_app' AND text LIKE 'My dogs%') AS memory_time;
SELECT request #>> '{messages,0,content}' AS system, request #> '{tools,0,function}' AS declaration
  FROM adk.model_calls WHERE invocation_id = (SELECT invocation_id FROM adk.events WHERE session_id = 'e2' LIMIT 1)
 ORDER BY id LIMIT 1;
-- another user's run finds nothing of ann's
SELECT count(*) AS events FROM adk_run('mem_app', 'bob', 'e3', 'call load_memory({"query": "dog park"})');
SELECT function_responses FROM adk.event_log WHERE app_name = 'mem_app' AND session_id = 'e3' AND function_responses IS NOT NULL;
SELECT count(*) AS events FROM adk_run('mem_app', 'ann', 'e2', 'call load_memory({"q": 1})');
SELECT function_responses FROM adk.event_log WHERE app_name = 'mem_app' AND session_id = 'e2' AND function_responses IS NOT NULL ORDER BY seq DESC LIMIT 1;

-- preload_memory: no declaration; the memories that match the user's
-- message go into the system instruction of every model call
SELECT adk_define_agent('pre_agent', model => 'mem_model', instruction => 'Be brief.',
                        tools => ARRAY['preload_memory']);
SELECT adk_define_app('pre_app', 'pre_agent');
SELECT adk_create_session('pre_app', 'ann', 'p1') IS NOT NULL AS created;
SELECT adk_append_event('pre_app', 'ann', 'p1', '{"author": "user", "content": {"role": "user", "parts": [{"text": "My dog is called Rex"}]}}') IS NOT NULL AS appended;
SELECT adk_add_session_to_memory('pre_app', 'ann', 'p1') AS added;
SELECT text FROM adk_run('pre_app', 'ann', 'p2', 'what is my dog called') r,
       LATERAL (SELECT r.event_data #>> '{content,parts,0,text}' AS text) t;
SELECT regexp_replace(request #>> '{messages,0,content}', 'Time: [^\n]*', 'Time: <time>') AS system,
       request ? 'tools' AS has_tools
  FROM adk.model_calls WHERE invocation_id = (SELECT invocation_id FROM adk.events WHERE session_id = 'p2' LIMIT 1);
-- nothing relevant: no block
SELECT count(*) AS events FROM adk_run('pre_app', 'ann', 'p3', 'giraffes');
SELECT request #>> '{messages,0,content}' AS system
  FROM adk.model_calls WHERE invocation_id = (SELECT invocation_id FROM adk.events WHERE session_id = 'p3' LIMIT 1);
-- another user: no block
SELECT count(*) AS events FROM adk_run('pre_app', 'bob', 'p4', 'what is my dog called');
SELECT request #>> '{messages,0,content}' AS system
  FROM adk.model_calls WHERE invocation_id = (SELECT invocation_id FROM adk.events WHERE session_id = 'p4' LIMIT 1);

-- add_to_memory: off by default; on, every completed invocation's events
-- go to memory (a failed one's do not)
SELECT count(*) AS entries FROM adk.memory WHERE app_name = 'pre_app' AND session_id = 'p2';
SELECT adk_define_app_memory('pre_app', add_to_memory => true);
SELECT count(*) AS events FROM adk_run('pre_app', 'ann', 'p5', 'remember that my boat is blue');
SELECT author, text FROM adk.memory WHERE app_name = 'pre_app' AND session_id = 'p5' ORDER BY id;
SELECT text FROM adk_search_memory('pre_app', 'ann', 'boat colour');
SELECT adk_define_model('mem_broken', 'openai', current_setting('adk_test.model_url') || '/v1', 'fault-500',
                        api_key_secret => 'test-key', options => '{"retries": 0}');
SELECT adk_define_agent('pre_agent', model => 'mem_broken', tools => ARRAY['preload_memory']);
SELECT count(*) AS events FROM adk_run('pre_app', 'ann', 'p6', 'this run fails');
SELECT count(*) AS entries FROM adk.memory WHERE app_name = 'pre_app' AND session_id = 'p6';

-- privileges: adk_user adds and searches through the API; cannot write the table
CREATE ROLE regress_adk_mem IN ROLE adk_user;
SET ROLE regress_adk_mem;
SELECT adk_add_session_to_memory('mem', 'ann', 'm1') AS added;
SELECT count(*) > 0 AS found FROM adk_search_memory('mem', 'ann', 'Rex');
SELECT expect_error($q$DELETE FROM adk.memory$q$);
SELECT expect_error($q$SELECT adk_define_app_memory('mem_app', 'simple')$q$);
RESET ROLE;
DROP ROLE regress_adk_mem;

-- quotes and backslashes in a query are words like any other
SELECT adk_append_event('mem', 'ann', 'm1', $j${"author": "user", "content": {"role": "user", "parts": [{"text": "it's in C:\\temp\\x'y"}]}}$j$) IS NOT NULL AS appended;
SELECT adk_add_session_to_memory('mem', 'ann', 'm1') AS added;
SELECT text FROM adk_search_memory('mem', 'ann', $q$x'y it's \temp\$q$);
SELECT adk._any_word_query('simple', $q$x'y \temp\$q$) AS query;

-- Semantic search: an embedding model embeds entries as they are added
-- and each query; the two rankings are fused (reciprocal rank fusion).
-- The local server's embeddings are bags of words in which a few synonyms
-- count as one word ("canine" is "dog"), so semantic search finds what no
-- word of the query matches.
SELECT adk._cosine('{1,0}', '{0,1}') AS orthogonal, adk._cosine('{1,2}', '{2,4}') AS parallel,
       adk._cosine('{1}', '{1,2}') AS lengths_differ, adk._cosine('{0,0}', '{1,1}') AS zero;
SELECT adk_define_model('emb_openai', 'openai', current_setting('adk_test.model_url') || '/v1', 'emb-test',
                        api_key_secret => 'test-key');
SELECT adk_define_model('emb_gemini', 'gemini', current_setting('adk_test.model_url'), 'emb-test',
                        api_key_secret => 'test-key');
SELECT adk_define_model('emb_broken', 'openai', current_setting('adk_test.model_url') || '/v1', 'fault-500',
                        api_key_secret => 'test-key', options => '{"retries": 0}');
SELECT adk_define_model('emb_claude', 'anthropic', current_setting('adk_test.model_url'), 'claude-test',
                        api_key_secret => 'test-key');
SELECT adk_define_app('sem_app', 'mem_agent');
SELECT adk_define_app('sem_app2', 'mem_agent');
SELECT adk_define_app_memory('sem_app', 'english', embedding_model => 'emb_openai');
SELECT adk_define_app_memory('sem_app2', embedding_model => 'emb_gemini', min_similarity => 0.5);
SELECT name, memory_search_config, memory_embedding_model, memory_min_similarity
  FROM adk.apps WHERE name LIKE 'sem_app%' ORDER BY name;
SELECT adk_create_session(a, 'ann', 'v1') IS NOT NULL AS created FROM unnest(ARRAY['sem_app', 'sem_app2']) a;
SELECT count(*) AS appended FROM unnest(ARRAY['sem_app', 'sem_app2']) a,
       unnest(ARRAY['My dog is called Rex', 'I parked the car near the river', 'The weather is nice today']) t,
       LATERAL adk_append_event(a, 'ann', 'v1', jsonb_build_object('author', 'user',
                 'content', jsonb_build_object('role', 'user', 'parts', jsonb_build_array(jsonb_build_object('text', t))))) e;
SELECT adk_add_session_to_memory('sem_app', 'ann', 'v1') AS added;
SELECT adk_add_session_to_memory('sem_app2', 'ann', 'v1') AS added;
SELECT app_name, text, array_length(embedding, 1) AS dims,
       round(adk._cosine(embedding, (SELECT v FROM adk._embed('emb_openai', ARRAY['canine']) v))::numeric, 3) AS to_canine
  FROM adk.memory WHERE app_name LIKE 'sem_app%' ORDER BY app_name, id;
-- no word of "canine" is in memory: only semantic search finds the dog
SELECT count(*) AS full_text FROM adk_search_memory('mem_app', 'ann', 'canine');
SELECT text, round(rank::numeric, 5) AS rrf FROM adk_search_memory('sem_app', 'ann', 'canine');
SELECT text, round(rank::numeric, 5) AS rrf FROM adk_search_memory('sem_app2', 'ann', 'my puppy');
-- both rankings: the entry both find comes first
SELECT text, round(rank::numeric, 5) AS rrf FROM adk_search_memory('sem_app', 'ann', 'canine weather');
-- never another user's
SELECT count(*) AS none FROM adk_search_memory('sem_app', 'bob', 'canine');
-- load_memory uses it too
SELECT adk_define_agent('sem_agent', model => 'mem_model', tools => ARRAY['load_memory']);
SELECT adk_define_app('sem_app3', 'sem_agent');
SELECT adk_define_app_memory('sem_app3', embedding_model => 'emb_openai');
SELECT adk_create_session('sem_app3', 'ann', 'v1') IS NOT NULL AS created;
SELECT adk_append_event('sem_app3', 'ann', 'v1', '{"author": "user", "content": {"role": "user", "parts": [{"text": "My dog is called Rex"}]}}') IS NOT NULL AS appended;
SELECT adk_add_session_to_memory('sem_app3', 'ann', 'v1') AS added;
SELECT count(*) AS events FROM adk_run('sem_app3', 'ann', 'v2', 'call load_memory({"query": "hound"})');
SELECT event_data #>> '{content,parts,0,function_response,response,memories,0,content,parts,0,text}' AS found
  FROM adk.events WHERE app_name = 'sem_app3' AND session_id = 'v2' AND seq = 3;
-- errors: a model that cannot embed; an embedding failure while adding
-- raises; while searching, the search goes on with full-text only
SELECT expect_error($q$SELECT adk_define_app_memory('sem_app', embedding_model => 'emb_claude')$q$);
SELECT expect_error($q$SELECT adk_define_app_memory('sem_app', embedding_model => 'no_such_model')$q$);
SELECT expect_error($q$SELECT adk_define_app_memory('sem_app', min_similarity => 2)$q$);
SELECT expect_error($q$SELECT * FROM adk._embed('emb_claude', ARRAY['x'])$q$);
SELECT adk_define_app_memory('sem_app', 'english', embedding_model => 'emb_broken');
SELECT adk_append_event('sem_app', 'ann', 'v1', '{"author": "user", "content": {"role": "user", "parts": [{"text": "One more dog"}]}}') IS NOT NULL AS appended;
SELECT expect_error($q$SELECT adk_add_session_to_memory('sem_app', 'ann', 'v1')$q$);
SELECT text FROM adk_search_memory('sem_app', 'ann', 'dog');
