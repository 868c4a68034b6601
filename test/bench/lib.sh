# Source me first in a benchmark: the set-up every benchmark shares.
#
#   . "$(dirname "$0")/lib.sh"                 # as root: re-runs the script as adkci
#   bench_cluster [postgresql.conf line ...]   # a throw-away cluster (PGHOST, PGPORT, ...)
#   bench_model_server [server args ...]       # the local model server (ADK_TEST_MODEL_URL)
#   bench_on_exit 'command'                    # something more to undo at exit
#   $PSQL -c '...'                             # psql, quiet, stopping at the first error
#
# It moves to the top of the tree.  As root it copies test/ to a temp dir
# owned by the unprivileged user adkci and runs the benchmark there with
# the same arguments (test/scripts/as_test_user.sh): PostgreSQL refuses to
# run as root.  PGBIN picks the PostgreSQL tree (test/scripts/cluster.sh).
# Whatever was started is stopped when the benchmark exits, however it
# exits.
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
. test/scripts/as_test_user.sh
run_as_test_user "test/bench/$(basename "$0")" "$@"
[ -n "${PGBIN:-}" ] || unset PGBIN
. test/scripts/cluster.sh
. test/scripts/model_server.sh
PSQL="psql -X -q -v ON_ERROR_STOP=1"

_bench_exit=()
_bench_cleanup() {
    local c
    for c in "${_bench_exit[@]}"; do eval "$c"; done
    model_server_stop
    cluster_stop
}
bench_on_exit() { _bench_exit+=("$1"); }
# ADK-JS (test/interop's package.json) installed with npm ci into a temp
# dir removed at exit; its path in JS.  Returns non-zero if npm ci fails.
bench_adkjs_install() {
    JS=$(mktemp -d "${TMPDIR:-/tmp}/adk-js.XXXXXX")
    bench_on_exit 'rm -rf "$JS"'
    cp test/interop/package.json test/interop/package-lock.json test/bench/adkjs_weather.mjs "$JS/"
    (cd "$JS" && npm ci --no-audit --no-fund --prefer-offline --cache "$JS/.npm" >/dev/null 2>&1)
}
bench_cluster() {
    cluster_start "$@" || return 1
    trap _bench_cleanup EXIT
}
bench_model_server() {
    model_server_start "$@" || return 1
    trap _bench_cleanup EXIT
}

# The queue benchmarks' set-up (inflight.sh, workers.sh): the extension
# and two apps of one agent without tools, so a run is one model call:
# "bench" (the model answers after $1 ms: "gpt-latency-N") and
# "bench_fast" (at once).  The cluster must preload adk_runner
# (bench_queue_cluster).
bench_queue_cluster() {  # [postgresql.conf line ...]
    bench_cluster "shared_preload_libraries = 'adk_runner'" "adk.database = 'postgres'" \
        "max_worker_processes = 24" "max_connections = 50" "adk.max_workers = 1" "$@"
}
bench_queue_apps() {  # latency-ms
    $PSQL -v url="$ADK_TEST_MODEL_URL" -v ms="$1" >/dev/null <<'SQL'
CREATE EXTENSION adk_runner;
SELECT adk_set_secret('k', 'sk-bench', ARRAY['127.0.0.1']);
SELECT adk_define_model('slow', 'openai', :'url' || '/v1', 'gpt-latency-' || :'ms', api_key_secret => 'k');
SELECT adk_define_model('fast', 'openai', :'url' || '/v1', 'gpt-test', api_key_secret => 'k');
SELECT adk_define_agent('slow_agent', model => 'slow');
SELECT adk_define_app('bench', 'slow_agent');
SELECT adk_define_agent('fast_agent', model => 'fast');
SELECT adk_define_app('bench_fast', 'fast_agent');
SQL
}
# adk.max_workers = n, and wait until at most n job workers run
bench_set_workers() {  # n
    $PSQL -c "ALTER SYSTEM SET adk.max_workers = $1" -c "SELECT pg_reload_conf()" >/dev/null
    for _ in $(seq 100); do
        [ "$($PSQL -Atc "SELECT count(*) <= $1 FROM pg_stat_activity WHERE backend_type = 'adk_runner job worker'")" = t ] && break
        sleep 0.1
    done
}
# the median of the arguments (numbers)
bench_median() {
    printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'
}
# CPU seconds (user + system) used so far by the cluster's processes (the
# postmaster, its children, and the children it reaped) and by the model
# server: "postgres-s model-server-s".  Differences of two calls give what a
# measurement cost.
bench_cpu() {
    local pm hz
    pm=$(head -1 "$CLUSTER_DIR/data/postmaster.pid")
    hz=$(getconf CLK_TCK)
    {
        cat "/proc/$pm/stat"
        for c in $(cat /proc/"$pm"/task/*/children 2>/dev/null); do cat "/proc/$c/stat" 2>/dev/null; done
    } | awk -v pm="$pm" -v hz="$hz" '{ sub(/^.*\) /, ""); t += $12 + $13; if (NR == 1) t += $14 + $15 } END { printf "%.2f ", t / hz }'
    awk -v hz="$hz" '{ sub(/^.*\) /, ""); printf "%.2f\n", ($12 + $13 + $14 + $15) / hz }' "/proc/$MODEL_SERVER_PID/stat"
}
