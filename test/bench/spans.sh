#!/usr/bin/env bash
# Benchmark: what spans cost.  The weather turn (4 stored events, 2 model
# calls, 1 tool call -> 4 spans) with the local model server at 0 ms
# latency, with adk.spans on and off, in alternating rounds so both see the
# same machine.
#
#   bash test/bench/spans.sh [turns] [rounds]
#
# Prints, per setting, the median over rounds of the wall time per turn
# (each turn a new session created before the clock starts, one commit per
# turn), the difference (cost of the spans per turn) and the ratio; and how
# many span rows and bytes a turn writes.  No OTLP endpoint is set (the
# export queue adds one small row per span when it is).  PGBIN chooses the
# PostgreSQL build (default: the system one, as test/scripts/cluster.sh).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
N=${1:-200}
ROUNDS=${2:-5}
bench_cluster
bench_model_server

$PSQL -v url="$ADK_TEST_MODEL_URL" >/dev/null <<'SQL'
CREATE EXTENSION adk_runner;
CREATE FUNCTION get_weather(city text) RETURNS jsonb LANGUAGE sql AS $$
  SELECT jsonb_build_object('city', city, 'forecast', 'sunny', 'temperature_c', 25) $$;
SELECT adk_set_secret('k', 'sk-bench', ARRAY['127.0.0.1']);
SELECT adk_define_model('local', 'openai', :'url' || '/v1', 'gpt-bench', api_key_secret => 'k');
SELECT adk_define_tool('get_weather(text)'::regprocedure);
SELECT adk_define_agent('weather_agent', model => 'local', instruction => 'You answer weather questions.',
                        tools => ARRAY['get_weather']);
SELECT adk_define_app('weather_app', 'weather_agent');

CREATE TABLE timing (spans boolean, round int, per_turn_us float8);
CREATE PROCEDURE make_sessions(tag text, n int) LANGUAGE plpgsql AS $$
BEGIN
  PERFORM adk_create_session('weather_app', 'u', format('%s-%s', tag, i)) FROM generate_series(1, n) i;
END $$;
CREATE PROCEDURE turns(tag text, r int, on_ boolean, n int) LANGUAGE plpgsql AS $$
DECLARE t0 timestamptz;
BEGIN
  PERFORM set_config('adk.spans', on_::text, false);
  t0 := clock_timestamp();
  FOR i IN 1..n LOOP
    PERFORM count(*) FROM adk_run('weather_app', 'u', format('%s-%s', tag, i), 'What is the weather in Hangzhou?');
    COMMIT;
  END LOOP;
  INSERT INTO timing VALUES (on_, r, extract(epoch FROM clock_timestamp() - t0) * 1e6 / n);
  COMMIT;
END $$;
SQL

# warm-up
$PSQL -c "CALL make_sessions('warm', 20)" -c "CALL turns('warm', 0, true, 20)" -c "DELETE FROM timing"
for r in $(seq "$ROUNDS"); do
    for on in true false; do
        $PSQL -c "CALL make_sessions('r$r-$on', $N)" -c "VACUUM ANALYZE" -c "CALL turns('r$r-$on', $r, $on, $N)"
    done
done

$PSQL -P footer=off <<'SQL'
\echo 'weather turn, spans on vs off (median over rounds of the wall time per turn)'
WITH m AS (
  SELECT spans, percentile_cont(0.5) WITHIN GROUP (ORDER BY per_turn_us) AS med,
         min(per_turn_us) AS best, max(per_turn_us) AS worst, count(*) AS rounds
    FROM timing GROUP BY spans)
SELECT CASE WHEN spans THEN 'on' ELSE 'off' END AS spans, rounds,
       round(med::numeric, 1) AS median_us_per_turn, round(best::numeric, 1) AS best_us,
       round(worst::numeric, 1) AS worst_us
  FROM m ORDER BY spans DESC;
WITH m AS (
  SELECT spans, percentile_cont(0.5) WITHIN GROUP (ORDER BY per_turn_us) AS med FROM timing GROUP BY spans)
SELECT round((on_.med - off.med)::numeric, 1) AS span_cost_us_per_turn,
       round((on_.med / off.med)::numeric, 3) AS ratio_on_off
  FROM m on_, m off WHERE on_.spans AND NOT off.spans;
SELECT round(count(*)::numeric / count(DISTINCT invocation_id), 2) AS spans_per_turn,
       round(avg(pg_column_size(s.*))::numeric) AS bytes_per_span_row
  FROM adk.spans s WHERE session_id NOT LIKE 'warm-%';
SELECT pg_size_pretty(pg_total_relation_size('adk.spans')) AS spans_table_with_indexes;
SQL
