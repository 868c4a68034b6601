#!/usr/bin/env bash
# The doc-test suite (test/doctest/doctest.py): each of README.md and
# docs/*.md on a fresh PostgreSQL cluster of its own (adk_runner preloaded,
# adk.database = 'postgres', the database the examples use) with the local
# model server.  Run as a non-root user with the extension installed:
#
#   bash test/doctest/run.sh [--update] [FILE...]    # default: README.md docs/*.md
#
# PG_CONFIG picks the server (its bindir).  Without FILEs it also runs the
# demo (demo/demo.sh, as this user: the README's first command after its
# packages and build).  Last line "doctest: N failed".
set -uo pipefail
cd "$(dirname "$0")/../.."
export ADK_DOC_ROOT=$PWD
PGBIN=${PGBIN:-$("${PG_CONFIG:-pg_config}" --bindir)}
export PATH=$PGBIN:$PATH
. test/scripts/cluster.sh
. test/scripts/model_server.sh
update=
[ "${1:-}" = "--update" ] && { update=--update; shift; }
files=("$@")
[ ${#files[@]} -gt 0 ] || files=(README.md docs/*.md)
model_server_start >/dev/null || { echo "not ok - model server"; exit 1; }
trap 'model_server_stop; cluster_stop; rm -rf "${MODEL_SERVER_DIR:-}"' EXIT
failed=0
for f in "${files[@]}"; do
    cluster_start "shared_preload_libraries = 'adk_runner'" "adk.database = 'postgres'" \
        "max_worker_processes = 16" || { echo "not ok - $f: cluster"; failed=$((failed + 1)); continue; }
    trap 'model_server_stop; cluster_stop; rm -rf "${MODEL_SERVER_DIR:-}"' EXIT
    python3 test/doctest/doctest.py $update "$f" || failed=$((failed + 1))
    cluster_stop
done
if [ $# -eq 0 ]; then
    log=$(mktemp "${TMPDIR:-/tmp}/adk-doctest-demo.XXXXXX")
    if ADK_DEMO_AS_USER=1 PGBIN=$PGBIN bash demo/demo.sh >"$log" 2>&1 &&
        grep -q "The weather in Hangzhou is sunny" "$log"; then
        echo "ok - demo/demo.sh"
    else
        echo "not ok - demo/demo.sh"; sed 's/^/#   /' "$log"
        failed=$((failed + 1))
    fi
    rm -f "$log"
fi
echo "doctest: $failed file(s) failed"
[ "$failed" -eq 0 ]
