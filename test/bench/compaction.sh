#!/usr/bin/env bash
# Benchmark: one long session with compaction on -- both strategies, the
# local model server at 0 ms latency.
#
#   bash test/bench/compaction.sh [turns]
#
# Runs "turns" (default 2000) plain turns (user message, echo answer) on
# one session, one commit per turn, and prints at turns 10, 100, 1000 and
# 2000 (those reached): the size of the request the next model call would
# send (adk_prompt: bytes, and tokens as the model server counts them --
# characters / 4 + 1) and the turn time (the mean of the 10 turns ending
# there, and of the 100 ending there; summarizer calls included).  With compaction both stay flat:
# tail retention rolls everything but the last events into one summary,
# and each turn reads only from the newest summary on.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
N=${1:-2000}
bench_cluster
bench_model_server

$PSQL -v url="$ADK_TEST_MODEL_URL" >/dev/null <<'SQL'
CREATE EXTENSION adk_runner;
SELECT adk_set_secret('k', 'sk-bench', ARRAY['127.0.0.1']);
SELECT adk_define_model('local', 'openai', :'url' || '/v1', 'gpt-bench', api_key_secret => 'k');
-- the summarizer's answers are capped, as a real summarizer's output is
SELECT adk_define_model('summ', 'openai', :'url' || '/v1', 'gpt-summ', api_key_secret => 'k',
                        options => '{"max_output_tokens": 100}');
SELECT adk_define_agent('chat', model => 'local', instruction => 'You are a helpful assistant.');
SELECT adk_define_app('chat_app', 'chat',
    compaction => '{"compaction_interval": 10, "overlap_size": 2, "token_threshold": 600, "event_retention_size": 8, "summarizer_model": "summ"}');
SELECT adk_create_session('chat_app', 'u', 'long');
CREATE TABLE turn_time (turn int PRIMARY KEY, ms float8);
CREATE TABLE prompt_size (turn int PRIMARY KEY, bytes int, tokens int, events bigint);
CREATE PROCEDURE turns(n int) LANGUAGE plpgsql AS $$
DECLARE t0 timestamptz; body jsonb;
BEGIN
  FOR i IN 1..n LOOP
    t0 := clock_timestamp();
    PERFORM count(*) FROM adk_run('chat_app', 'u', 'long',
                                  format('turn %s: tell me one more thing about topic number %s, please', i, i));
    INSERT INTO turn_time VALUES (i, extract(epoch FROM clock_timestamp() - t0) * 1000);
    COMMIT;
    IF i IN (10, 100, 1000, 2000) THEN
      body := adk_prompt('chat_app', 'u', 'long');
      INSERT INTO prompt_size
      SELECT i, length(body::text), length(body::text) / 4 + 1,
             (SELECT count(*) FROM adk.events WHERE session_id = 'long');
      COMMIT;
    END IF;
  END LOOP;
END $$;
SQL

echo "compaction benchmark: $N turns on one session (compaction_interval 10, overlap 2, token_threshold 600, retention 8)"
t0=$(date +%s.%N)
$PSQL -c "CALL turns($N)"
t1=$(date +%s.%N)
$PSQL -P footer=off <<'SQL'
SELECT p.turn, p.events AS stored_events, p.bytes AS prompt_bytes, p.tokens AS prompt_tokens,
       round((SELECT avg(t.ms) FROM turn_time t WHERE t.turn BETWEEN p.turn - 9 AND p.turn)::numeric, 2) AS turn_ms,
       round((SELECT avg(t.ms) FROM turn_time t WHERE t.turn BETWEEN p.turn - 99 AND p.turn)::numeric, 2) AS turn_ms_last_100
  FROM prompt_size p ORDER BY p.turn;
SELECT kind, count(*) AS compactions FROM adk.compactions GROUP BY kind ORDER BY kind;
SELECT count(*) FILTER (WHERE compaction_error IS NOT NULL) AS compaction_errors,
       count(*) AS invocations FROM adk.invocations;
SQL
echo "total: $(echo "$t1 - $t0" | bc) s"
