#!/usr/bin/env bash
# Soak: queued runs under kill -9.  For SECONDS_TOTAL seconds, JOBS_PER_S
# jobs a second are queued (each a turn U C R A: a call to an inserting SQL
# tool, then the answer; the local model server answers after LATENCY ms;
# options {"retries": 5}), each in a session of its own, and every
# KILL_EVERY seconds a job worker is killed with SIGKILL (the server's
# crash restart).  Then every job is waited for, and counted: jobs,
# crashes, retried jobs, and the duplicates a retry must not make -- user
# events, model calls and tool rows per job, turns other than U C R A.
#
#   bash test/bench/jobs_crash_soak.sh [seconds (180)] [jobs/s (10)] [kill every s (20)] [latency ms (400)]
#
# Run as a non-root user with the extension installed (as root the script
# re-runs itself as user adkci).  Starts its own cluster and model server.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
SECONDS_TOTAL=${1:-180}
JOBS_PER_S=${2:-10}
KILL_EVERY=${3:-20}
LATENCY_MS=${4:-400}
bench_cluster "shared_preload_libraries = 'adk_runner'" "adk.database = 'postgres'" \
    "max_worker_processes = 24" "max_connections = 50" "adk.max_workers = 2" \
    "restart_after_crash = on"
bench_model_server

$PSQL -v url="$ADK_TEST_MODEL_URL" -v ms="$LATENCY_MS" >/dev/null <<'SQL'
CREATE EXTENSION adk_runner;
SELECT adk_set_secret('k', 'sk-soak', ARRAY['127.0.0.1']);
SELECT adk_define_model('slow', 'openai', :'url' || '/v1', 'gpt-latency-' || :'ms', api_key_secret => 'k');
CREATE TABLE effects (item text);
CREATE FUNCTION insert_row(item text) RETURNS jsonb LANGUAGE sql AS
  $$ INSERT INTO effects VALUES (item) RETURNING jsonb_build_object('stored', item) $$;
SELECT adk_define_tool('insert_row(text)'::regprocedure);
SELECT adk_define_agent('writer', model => 'slow', tools => ARRAY['insert_row']);
SELECT adk_define_app('soak', 'writer');
SQL

crashes=0
n=0
t_end=$((SECONDS + SECONDS_TOTAL))
next_kill=$((SECONDS + KILL_EVERY))
while [ $SECONDS -lt $t_end ]; do
    # a submit during the crash restart fails: it queued nothing
    if $PSQL -c "SELECT count(adk_submit('soak', 'u', 's' || i, 'call insert_row({\"item\": \"' || i || '\"})',
                                          NULL, '{\"retries\": 5}'))
                   FROM generate_series($n + 1, $n + $JOBS_PER_S) i" >/dev/null 2>&1; then
        n=$((n + JOBS_PER_S))
    fi
    if [ $SECONDS -ge $next_kill ]; then
        pid=$($PSQL -Atc "SELECT pid FROM pg_stat_activity WHERE backend_type = 'adk_runner job worker'
                           ORDER BY random() LIMIT 1" 2>/dev/null || true)
        if [ -n "$pid" ]; then
            kill -KILL "$pid" && crashes=$((crashes + 1))
            echo "kill -9 of job worker $pid at ${SECONDS}s ($n jobs queued)"
        fi
        next_kill=$((SECONDS + KILL_EVERY))
    fi
    sleep 1
done
for _ in $(seq 600); do
    left=$($PSQL -Atc "SELECT count(*) FROM adk.jobs WHERE status IN ('queued', 'running')" 2>/dev/null || echo x)
    [ "$left" = 0 ] && break
    sleep 1
done

$PSQL -P footer=off <<SQL
\\echo crashes: $crashes
SELECT count(*) AS jobs,
       count(*) FILTER (WHERE status = 'completed') AS completed,
       count(*) FILTER (WHERE status = 'failed') AS failed,
       count(*) FILTER (WHERE status NOT IN ('completed', 'failed')) AS other,
       count(*) FILTER (WHERE attempts > 1) AS retried,
       max(attempts) AS max_attempts
  FROM adk.jobs;
WITH per_job AS (
  SELECT j.invocation_id, j.status, j.message #>> '{parts,0,text}' AS msg,
         (SELECT count(*) FROM adk.events e WHERE e.invocation_id = j.invocation_id
             AND e.event_data ->> 'author' = 'user') AS user_events,
         (SELECT string_agg(CASE WHEN e.event_data ? 'error_code' THEN 'E'
                                 WHEN e.event_data ->> 'author' = 'user' THEN 'U'
                                 WHEN e.event_data::text LIKE '%"function_call"%' THEN 'C'
                                 WHEN e.event_data::text LIKE '%"function_response"%' THEN 'R'
                                 ELSE 'A' END, ' ' ORDER BY e.seq)
            FROM adk.events e WHERE e.session_id = j.session_id AND e.app_name = 'soak') AS turn,
         (SELECT count(*) FROM effects f WHERE 'call insert_row({"item": "' || f.item || '"})'
             = j.message #>> '{parts,0,text}') AS tool_rows
    FROM adk.jobs j)
SELECT count(*) FILTER (WHERE user_events > 1) AS dup_user_events,
       count(*) FILTER (WHERE tool_rows > 1) AS dup_tool_rows,
       count(*) FILTER (WHERE status = 'completed' AND turn <> 'U C R A') AS completed_not_UCRA,
       count(*) FILTER (WHERE status = 'completed' AND tool_rows <> 1) AS completed_tool_rows_not_1,
       count(*) FILTER (WHERE status = 'failed' AND turn LIKE '%E') AS failed_with_error_event
  FROM per_job;
SELECT count(*) AS dup_model_calls FROM (
  SELECT e.invocation_id FROM adk.events e
   WHERE e.app_name = 'soak' AND e.event_data::text LIKE '%"function_call"%'
   GROUP BY e.invocation_id HAVING count(*) > 1) d;
SQL
