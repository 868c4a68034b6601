#!/usr/bin/env bash
# Benchmark: graph workflows (docs/workflows.md) -- what a resume costs
# against the size of the paused workflow.
#
#   bash test/bench/workflow.sh [rounds (3)] [sizes ("2 50")]
#
# Per size n: a workflow of n function nodes in a chain, START -> n1 ->
# ... -> ask, whose last node asks for human input (request_input, a
# handoff: the answer is its output).  Per round, a new session: one run
# pauses at ask (n rows in adk.run_states, n events), then the answer --
# ADK's function response to adk_request_input, its own adk_run -- resumes
# it; that resume's wall time is measured (and, for reference, the
# pausing run's).  One warm-up round per size is not counted.  Prints the median resume time per size and the ratio of
# the largest size to the smallest (the target: no more than 1; see
# test/bench/README.md).
#
# Then a 3-branch fan-out of agent nodes and a join, START -> a, b, c ->
# J, each agent one model call to the local model server answering after
# LATENCY ms (500): per round a new session's adk_run is timed.  Prints
# the median and its ratio to the latency (the target: about two
# latencies, the calls being in flight together; one after another would
# be three).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
ROUNDS=${1:-3}
SIZES=${2:-"2 50"}
LATENCY=${LATENCY:-500}
bench_cluster
bench_model_server

$PSQL >/dev/null <<'SQL'
CREATE EXTENSION adk_runner;
CREATE FUNCTION step(ctx jsonb, input jsonb) RETURNS jsonb LANGUAGE sql AS $$
    SELECT jsonb_build_object('output', jsonb_build_object('n', coalesce((input ->> 'n')::int, 0) + 1)) $$;
CREATE FUNCTION ask(ctx jsonb, input jsonb) RETURNS jsonb LANGUAGE sql AS $$
    SELECT jsonb_build_object('request_input', jsonb_build_object('message', 'Approve?', 'payload', input)) $$;
-- a chain of n nodes: n - 1 steps, then ask
CREATE PROCEDURE make_chain(n int) LANGUAGE plpgsql AS $$
BEGIN
  PERFORM adk_define_workflow('chain' || n,
            (SELECT jsonb_agg(jsonb_build_object('name', 's' || i, 'function', 'public.step(jsonb,jsonb)') ORDER BY i)
               FROM generate_series(1, n - 1) i)
              || '[{"name": "ask", "function": "public.ask(jsonb,jsonb)"}]'::jsonb,
            (SELECT jsonb_agg(jsonb_build_object('from', CASE WHEN i = 1 THEN 'START' ELSE 's' || (i - 1) END,
                                                 'to', CASE WHEN i = n THEN 'ask' ELSE 's' || i END) ORDER BY i)
               FROM generate_series(1, n) i));
  PERFORM adk_define_app('chain' || n || '_app', 'chain' || n);
END $$;
CREATE TABLE timing (size int, pause_us float8, resume_us float8);
-- pause a new session of the chain of n, then time the resume
CREATE PROCEDURE one_round(n int, s text, timed boolean) LANGUAGE plpgsql AS $$
DECLARE app text := 'chain' || n || '_app'; id text; t0 timestamptz; pause_us float8; us float8; ended int;
BEGIN
  t0 := clock_timestamp();
  PERFORM count(*) FROM adk_run(app, 'u', s, 'go');
  pause_us := extract(epoch FROM clock_timestamp() - t0) * 1e6;
  SELECT p.call_id INTO STRICT id FROM adk.pending_interrupts p WHERE p.app_name = app AND p.session_id = s;
  t0 := clock_timestamp();
  SELECT count(*) INTO ended FROM adk_run(app, 'u', s, adk_function_response(id, 'adk_request_input', '{"ok": true}')) e
   WHERE e.event_data #>> '{node_info,path}' = 'chain' || n || '/ask@1';
  us := extract(epoch FROM clock_timestamp() - t0) * 1e6;
  IF ended <> 1 THEN
    RAISE EXCEPTION 'the resume of session % did not complete ask', s;
  END IF;
  IF timed THEN
    INSERT INTO timing VALUES (n, pause_us, us);
  END IF;
END $$;
SQL

for n in $SIZES; do
    $PSQL -c "CALL make_chain($n)"
    $PSQL -c "CALL one_round($n, 'warm-$n', false)"
    for r in $(seq "$ROUNDS"); do
        $PSQL -c "CALL one_round($n, 's$n-$r', true)"
    done
done

echo "resume of a paused workflow, median of $ROUNDS (wall time of the answering adk_run)"
$PSQL -P footer=off -c "SELECT size AS nodes, round((percentile_cont(0.5) WITHIN GROUP (ORDER BY pause_us) / 1000)::numeric, 2) AS pausing_run_ms,
                                 round((percentile_cont(0.5) WITHIN GROUP (ORDER BY resume_us) / 1000)::numeric, 2) AS resume_ms
                          FROM timing GROUP BY size ORDER BY size"
$PSQL -At -c "WITH m AS (SELECT size, percentile_cont(0.5) WITHIN GROUP (ORDER BY resume_us) AS us FROM timing GROUP BY size)
              SELECT format('ratio %s nodes / %s nodes: %s', max(size), min(size),
                            round(((SELECT us FROM m ORDER BY size DESC LIMIT 1) / (SELECT us FROM m ORDER BY size LIMIT 1))::numeric, 2))
                FROM m"

# the fan-out of agent nodes
$PSQL -v url="$ADK_TEST_MODEL_URL" -v ms="$LATENCY" >/dev/null <<'SQL'
SELECT adk_set_secret('k', 'sk-test', ARRAY['127.0.0.1']);
SELECT adk_define_model('slow', 'openai', :'url' || '/v1', 'gpt-latency-' || :'ms', api_key_secret => 'k');
SELECT adk_define_agent('fan_' || x, model => 'slow', instruction => 'You are ' || x || '.')
  FROM unnest(ARRAY['a', 'b', 'c']) x;
SELECT adk_define_workflow('fan',
    '[{"agent": "fan_a"}, {"agent": "fan_b"}, {"agent": "fan_c"}, {"name": "J", "kind": "join"}]',
    '[{"from": "START", "to": "fan_a"}, {"from": "START", "to": "fan_b"}, {"from": "START", "to": "fan_c"},
      {"from": "fan_a", "to": "J"}, {"from": "fan_b", "to": "J"}, {"from": "fan_c", "to": "J"}]');
SELECT adk_define_app('fan_app', 'fan');
CREATE TABLE fan_timing (ms float8);
CREATE PROCEDURE fan_round(s text, timed boolean) LANGUAGE plpgsql AS $$
DECLARE t0 timestamptz; joined int;
BEGIN
  t0 := clock_timestamp();
  SELECT count(*) INTO joined FROM adk_run('fan_app', 'u', s, 'views') e
   WHERE e.event_data #>> '{node_info,path}' = 'fan/J@1' AND e.event_data ? 'output';
  IF joined <> 1 THEN
    RAISE EXCEPTION 'the fan-out of session % did not reach its join', s;
  END IF;
  IF timed THEN
    INSERT INTO fan_timing VALUES (extract(epoch FROM clock_timestamp() - t0) * 1e3);
  END IF;
END $$;
SQL
$PSQL -c "CALL fan_round('fan-warm', false)"
for r in $(seq "$ROUNDS"); do
    $PSQL -c "CALL fan_round('fan-$r', true)"
done
echo "3-branch fan-out of agent nodes + join, model latency $LATENCY ms, median of $ROUNDS (wall time of adk_run)"
$PSQL -At -v ms="$LATENCY" -c "SELECT format('fan-out: %s ms, %s latencies', round(m::numeric, 1), round((m / $LATENCY)::numeric, 2))
                FROM (SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY ms) AS m FROM fan_timing) x"
