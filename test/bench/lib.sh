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
