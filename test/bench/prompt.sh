#!/usr/bin/env bash
# Benchmark: prompt assembly per model call at 10, 1,000 and 5,000 events
# of history, without compaction (a run reads its session once, then only the
# events after the last seq it saw).
#
#   [PROVIDER=openai|gemini|anthropic] bash test/bench/prompt.sh [rounds (5)] [sizes ("10 1000 5000")]
#
# PROVIDER (test/bench/provider.sh, default openai) picks the wire format of
# the requests: the model is defined for that provider against the local
# model server.
#
# A tool loop inside one run: an after_model plugin turns every answer into
# a call of a tool, so each model call of the run sees the whole history
# plus what the run added, and the run stops at options.max_llm_calls.  The
# per-call cost is measured inside a run, not through adk_prompt (which has
# no run object and reads the whole session every time): per size, runs of
# K1 = 2 and K2 = 12 model calls on fresh sessions of that many events, and
#
#   per call = ((wall - model latency) of the K2 run
#               - (wall - model latency) of the K1 run) / (K2 - K1)
#
# so what a run does once (the first read of the history, the invocation
# row, the first event) cancels out; both runs follow a warm-up run in the
# same backend.  Model latency is adk.model_calls'
# latency_ms (HTTP and the python server's parse of the request).  What is
# left per call: prompt assembly, the request's serialization, the response,
# two stored events (the call and its response), the tool call, the plugin,
# the ledger row and spans -- all flat but the assembly and serialization.
# Prints the median per-call time per size and the ratio 5000/10 (or last/
# first size); the requests' message counts show every call carried the
# whole history.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
ROUNDS=${1:-5}
SIZES=${2:-"10 1000 5000"}
# HISTORY=tools: sessions of tool turns (make_session below)
HISTORY=${HISTORY:-text}
K1=2
K2=12
. test/bench/provider.sh
bench_cluster
bench_model_server

$PSQL -v url="$ADK_TEST_MODEL_URL" -v provider="$PROVIDER" -v model_path="$BENCH_MODEL_PATH" \
    -v model_id="$BENCH_MODEL_ID" >/dev/null <<'SQL'
CREATE EXTENSION adk_runner;
SELECT adk_set_secret('k', 'sk-bench', ARRAY['127.0.0.1']);
SELECT adk_define_model('local', :'provider', :'url' || :'model_path', :'model_id', api_key_secret => 'k');
CREATE FUNCTION probe() RETURNS jsonb LANGUAGE sql AS $$ SELECT '{"probed": true}'::jsonb $$;
SELECT adk_define_tool('probe()'::regprocedure);
-- every answer becomes a call of probe: a tool loop until max_llm_calls
CREATE FUNCTION loop_answer(ctx jsonb) RETURNS jsonb LANGUAGE sql AS $$
  SELECT '{"content": {"role": "model", "parts": [{"function_call": {"name": "probe", "args": {}}}]}}'::jsonb $$;
SELECT adk_define_plugin('loop', after_model => 'loop_answer(jsonb)');
SELECT adk_define_agent('loop_agent', model => 'local', instruction => 'You probe.', tools => ARRAY['probe']);
SELECT adk_define_app('prompt_app', 'loop_agent', plugins => ARRAY['loop']);

CREATE TABLE timing (size int, calls int, own_us float8, messages int);
-- a session of n events: user questions and the agent's answers, or (with
-- bench.history = 'tools') turns of four: a question, the agent's call of
-- probe (with a generated "adk-" id, as runs write them), its response,
-- the agent's answer
CREATE PROCEDURE make_session(s text, n int) LANGUAGE plpgsql AS $$
BEGIN
  PERFORM adk_create_session('prompt_app', 'u', s);
  IF coalesce(current_setting('bench.history', true), 'text') = 'tools' THEN
    PERFORM adk_append_event('prompt_app', 'u', s,
              CASE i % 4
                   WHEN 1 THEN jsonb_build_object('author', 'user', 'content',
                          jsonb_build_object('role', 'user', 'parts',
                            jsonb_build_array(jsonb_build_object('text', 'Question ' || i || ': what is the weather like today?'))))
                   WHEN 2 THEN jsonb_build_object('author', 'loop_agent', 'content',
                          jsonb_build_object('role', 'model', 'parts',
                            jsonb_build_array(jsonb_build_object('function_call',
                              jsonb_build_object('id', 'adk-' || md5(s || i), 'name', 'probe', 'args', '{}'::jsonb)))))
                   WHEN 3 THEN jsonb_build_object('author', 'loop_agent', 'content',
                          jsonb_build_object('role', 'user', 'parts',
                            jsonb_build_array(jsonb_build_object('function_response',
                              jsonb_build_object('id', 'adk-' || md5(s || (i - 1)), 'name', 'probe',
                                                 'response', jsonb_build_object('probed', true, 'i', i))))))
                   ELSE jsonb_build_object('author', 'loop_agent', 'content',
                          jsonb_build_object('role', 'model', 'parts',
                            jsonb_build_array(jsonb_build_object('text', 'Answer ' || i || ': sunny, 25 degrees, light wind.'))))
              END)
      FROM generate_series(1, n) i;
    RETURN;
  END IF;
  PERFORM adk_append_event('prompt_app', 'u', s,
            CASE WHEN i % 2 = 1
                 THEN jsonb_build_object('author', 'user', 'content',
                        jsonb_build_object('role', 'user', 'parts',
                          jsonb_build_array(jsonb_build_object('text', 'Question ' || i || ': what is the weather like today?'))))
                 ELSE jsonb_build_object('author', 'loop_agent', 'content',
                        jsonb_build_object('role', 'model', 'parts',
                          jsonb_build_array(jsonb_build_object('text', 'Answer ' || i || ': sunny, 25 degrees, light wind.'))))
            END)
    FROM generate_series(1, n) i;
END $$;
-- one run of k model calls on session s of n events: its own time
CREATE PROCEDURE one_run(s text, n int, k int) LANGUAGE plpgsql AS $$
DECLARE t0 timestamptz; wall_us float8; model_us float8; msgs int;
BEGIN
  t0 := clock_timestamp();
  PERFORM count(*) FROM adk_run('prompt_app', 'u', s, 'go', NULL, jsonb_build_object('max_llm_calls', k));
  wall_us := extract(epoch FROM clock_timestamp() - t0) * 1e6;
  SELECT sum(c.latency_ms) * 1000 INTO model_us
    FROM adk.model_calls c JOIN adk.invocations i USING (invocation_id)
   WHERE i.app_name = 'prompt_app' AND i.session_id = s;
  -- the last request's length: reading every request would count here
  SELECT jsonb_array_length(coalesce(request -> 'messages', request -> 'contents')) INTO msgs FROM adk.model_calls
   WHERE id = (SELECT max(c.id) FROM adk.model_calls c JOIN adk.invocations i USING (invocation_id)
                WHERE i.app_name = 'prompt_app' AND i.session_id = s);
  IF (SELECT count(*) FROM adk.model_calls c JOIN adk.invocations i USING (invocation_id)
       WHERE i.app_name = 'prompt_app' AND i.session_id = s) <> k THEN
    RAISE EXCEPTION 'run on % made the wrong number of model calls', s;
  END IF;
  INSERT INTO timing VALUES (n, k, wall_us - model_us, msgs);
  COMMIT;
END $$;
-- a run in this backend before the measured ones: plans, caches, the library
CREATE PROCEDURE warm_up(s text) LANGUAGE plpgsql AS $$
BEGIN
  CALL make_session(s, 10);
  PERFORM count(*) FROM adk_run('prompt_app', 'u', s, 'go', NULL, '{"max_llm_calls": 12}');
  COMMIT;
END $$;
SQL

$PSQL -c "DO \$\$ BEGIN EXECUTE format('ALTER DATABASE %I SET bench.history = %L', current_database(), '$HISTORY'); END \$\$"

echo "prompt assembly per model call inside a run ($PROVIDER, tool loop, model server at 0 ms, $HISTORY history), $ROUNDS rounds, K1=$K1 K2=$K2"
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
first=
last=
for n in $SIZES; do
    per=()
    for r in $(seq "$ROUNDS"); do
        $PSQL -c "CALL make_session('a$n-$r', $n)" -c "CALL make_session('b$n-$r', $n)" -c "TRUNCATE timing"
        $PSQL -c "CALL warm_up('w$n-$r')" -c "CALL one_run('a$n-$r', $n, $K1)" -c "CALL one_run('b$n-$r', $n, $K2)"
        read -r p m <<<"$($PSQL -At -F ' ' -c "
            SELECT round(((b.own_us - a.own_us) / ($K2 - $K1))::numeric, 1), b.messages
              FROM timing a, timing b WHERE a.calls = $K1 AND b.calls = $K2")"
        per+=("$p")
    done
    mp=$(median "${per[@]}")
    printf '%6d events: %10s us per model call (rounds: %s; the last request had %s messages)\n' \
        "$n" "$mp" "${per[*]}" "$m"
    [ -n "$first" ] || first=$mp
    last=$mp
done
set -- $SIZES
echo "ratio ${!#}/$1 events: $(awk -v a="$last" -v b="$first" 'BEGIN {printf "%.2f", a / b}') (target: flat, i.e. about 1)"
