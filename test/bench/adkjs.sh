#!/usr/bin/env bash
# Benchmark, side by side with ADK-JS: weather turns per second
# (two model calls each: a get_weather call, then the answer) with the
# local model server answering after LATENCY ms (Gemini wire format, model
# "gemini-latency-N"), TURNS turns in flight:
#  - ours: TURNS queued runs on TURNS sessions through the job workers
#    (adk.max_workers = WORKERS, adk.worker_concurrency CONCURRENCY), from
#    the commit that queued them to the last job's end; and the job
#    workers' memory: their private resident memory (RssAnon, summed over
#    the workers, sampled every 0.2 s) at its peak during the measured
#    round, less what it was before (idle after the warm-up round), divided
#    by the most runs in flight at once; and each worker's VmHWM;
#  - ADK-JS 2.0.0's Runner (in-memory sessions) with TURNS turns in flight
#    in one Node process (test/bench/adkjs_weather.mjs), in the same run,
#    against the same model server; its resident memory before the turns
#    and at its peak.
#
#   bash test/bench/adkjs.sh [turns (200)] [latency ms (500)] [workers (4)] [concurrency (64)]
#
# 1,000 conversations in flight: adkjs.sh 1000 2000 4 250.
#
# Needs node and npm (ADK-JS is installed with `npm ci` from
# test/interop/package.json into a temp dir).  Run as a non-root user with
# the extension installed (as root the script re-runs itself as adkci).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
TURNS=${1:-200}
LATENCY_MS=${2:-500}
WORKERS=${3:-4}
CONCURRENCY=${4:-64}
bench_cluster "shared_preload_libraries = 'adk_runner'" "adk.database = 'postgres'" \
    "max_worker_processes = 24" "max_connections = 50" "adk.max_workers = $WORKERS" \
    "adk.worker_concurrency = $CONCURRENCY"
bench_model_server
bench_adkjs_install || { echo "npm ci failed in $JS"; exit 1; }

$PSQL -v url="$ADK_TEST_MODEL_URL" -v ms="$LATENCY_MS" >/dev/null <<'SQL'
CREATE EXTENSION adk_runner;
SELECT adk_set_secret('k', 'sk-bench', ARRAY['127.0.0.1']);
SELECT adk_define_model('w', 'gemini', :'url', 'gemini-latency-' || :'ms', api_key_secret => 'k');
CREATE FUNCTION get_weather(city text) RETURNS jsonb LANGUAGE sql AS $$
  SELECT jsonb_build_object('city', city, 'forecast', 'sunny', 'temperature_c', 25) $$;
COMMENT ON FUNCTION get_weather(text) IS 'Current weather for a city.';
SELECT adk_define_tool('get_weather(text)'::regprocedure);
SELECT adk_define_agent('weather_agent', model => 'w', instruction => 'You answer weather questions.',
                        tools => ARRAY['get_weather']);
SELECT adk_define_app('weather_app', 'weather_agent');
SQL

echo "weather turns (2 model calls each) at ${LATENCY_MS} ms model latency, $TURNS in flight; machine load $(cut -d' ' -f1-3 /proc/loadavg)"
# the job workers' pids
worker_pids() { $PSQL -Atc "SELECT pid FROM pg_stat_activity WHERE backend_type = 'adk_runner job worker'"; }
# the sum of a /proc/PID/status field (kB) over the job workers
workers_kb() {  # field
    local p sum=0 v
    for p in $(worker_pids); do
        v=$(awk -v f="$1:" '$1 == f { print $2 }' "/proc/$p/status" 2>/dev/null || true)
        sum=$((sum + ${v:-0}))
    done
    echo "$sum"
}
# until the file $1 is removed: every 0.2 s, the workers' RssAnon sum and
# the runs in flight, as "kB runs" lines on stdout
sample() {
    while [ -e "$1" ]; do
        echo "$(workers_kb RssAnon) $($PSQL -Atc "SELECT count(*) FROM adk.jobs WHERE status = 'running'")"
        sleep 0.2
    done
}
# a warm-up round starts the workers and fills the caches
for round in warmup measured; do
    $PSQL -c "TRUNCATE adk.jobs" >/dev/null
    if [ "$round" = measured ]; then
        idle_kb=$(workers_kb RssAnon)
        flag=$(mktemp); samples=$(mktemp)
        bench_on_exit "rm -f '$flag' '$samples'"
        sample "$flag" > "$samples" &
        sampler=$!
    fi
    t0=$($PSQL -At <<SQL
BEGIN;
SELECT count(adk_submit('weather_app', 'u', '$round-' || i, 'call get_weather({"city": "City' || i || '"})'))
  FROM generate_series(1, $TURNS) i \\g /dev/null
SELECT extract(epoch FROM clock_timestamp());
COMMIT;
SQL
)
    for _ in $(seq 6000); do
        [ "$($PSQL -Atc "SELECT count(*) FROM adk.jobs WHERE status IN ('queued', 'running')")" = 0 ] && break
        sleep 0.05
    done
done
rm -f "$flag"; wait "$sampler"
read -r peak_kb peak_runs < <(awk '$1 > k { k = $1 } $2 > r { r = $2 } END { print k + 0, r + 0 }' "$samples")
hwm=$(for p in $(worker_pids); do awk '$1 == "VmHWM:" { printf "%.0f ", $2 / 1024 }' "/proc/$p/status"; done)
read -r done t1 events < <($PSQL -At -F ' ' -c "
  SELECT count(*) FILTER (WHERE j.status = 'completed'), extract(epoch FROM max(j.finished_at)),
         (SELECT count(*) FROM adk.events e WHERE e.session_id LIKE 'measured-%')
    FROM adk.jobs j")
awk -v n="$done" -v t0="$t0" -v t1="$t1" -v ev="$events" -v w="$WORKERS" 'BEGIN {
    printf "adk_runner (%d job workers):  %d turns (%d events) in %.2f s: %.1f turns/s\n", w, n, ev, t1 - t0, n / (t1 - t0) }'
out=$(cd "$JS" && node adkjs_weather.mjs "$ADK_TEST_MODEL_URL" "$TURNS" "$LATENCY_MS" 2>"$JS/node.err" | tail -1) ||
    { echo "ADK-JS failed:"; tail -5 "$JS/node.err"; }
read -r jn js jr jcpu _ jrss0 jrss <<<"$out"
echo "ADK-JS 2.0.0 (one Node process): $jn turns in $js s: $jr turns/s ($jcpu s of Node CPU)"
awk -v idle="$idle_kb" -v peak="$peak_kb" -v runs="$peak_runs" -v hwm="$hwm" -v w="$WORKERS" -v c="$CONCURRENCY" \
    -v j0="$jrss0" -v j="$jrss" -v n="$TURNS" 'BEGIN {
    printf "memory, adk_runner: job workers'"'"' private resident memory %.1f MB idle, %.1f MB at peak with %d runs in flight (of %d x %d): %.0f kB per run in flight; VmHWM per worker (MB): %s\n", idle / 1024, peak / 1024, runs, w, c, (runs ? (peak - idle) / runs : 0), hwm
    printf "memory, ADK-JS: Node resident %.1f MB before, %.1f MB at peak with %d turns in flight: %.0f kB per turn in flight\n", j0, j, n, (j - j0) * 1024 / n }'
