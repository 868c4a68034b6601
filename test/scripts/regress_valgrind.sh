#!/usr/bin/env bash
# A few regression tests with every backend of the temp instance under
# valgrind (test/ci.sh suite "regress_valgrind"; run as the test user, with
# ADK_TEST_MODEL_CONF from test/scripts/model_server.sh):
#
#   bash test/scripts/regress_valgrind.sh [test ...]
#
# The default tests keep a cursor over adk_run open while other runs,
# definition changes and big allocations happen in the same backend, and
# step workflow agents, plugins and HITL pauses and resumes: each step of
# a run works in a context deleted when the step returns (runner.h), so a
# pointer kept past its step is a use after free here.
# PostgreSQL's packages are built without USE_VALGRIND, so palloc'd memory
# that is freed back to a context stays invisible; what valgrind sees is
# malloc-level: libcurl/json-c use, and memory of contexts that were
# deleted (the runner's per-round contexts return theirs to malloc).
# Known false positives of a non-USE_VALGRIND server -- uninitialised
# padding written by pwrite/write, the regex cache's overlapping memcpy --
# are not counted.  Prints "test valgrind ... ok" or "... FAILED".
set -uo pipefail
cd "$(dirname "$0")/../.."
PG_CONFIG=${PG_CONFIG:-pg_config}
TESTS=${*:-"000_install 600_models 800_run 810_agents 820_plugins 830_hitl 861_run_hardening"}
command -v valgrind >/dev/null || { echo "valgrind is not installed"; echo "test valgrind ... FAILED"; exit 1; }
: "${ADK_TEST_MODEL_CONF:?start the model server first (test/scripts/model_server.sh)}"

VG=$(mktemp -d "${TMPDIR:-/tmp}/adk-vg.XXXXXX")
mkdir "$VG/bin" "$VG/logs"
bindir=$("$PG_CONFIG" --bindir)
for f in "$bindir"/*; do ln -s "$f" "$VG/bin/"; done
rm "$VG/bin/postgres"
cat >"$VG/bin/postgres" <<EOF
#!/bin/sh
exec valgrind --quiet --error-limit=no --leak-check=no --num-callers=30 \\
    --log-file=$VG/logs/vg.%p.log "$bindir/postgres" "\$@"
EOF
chmod 755 "$VG/bin/postgres"

PGCTLTIMEOUT=300 make -s USE_PGXS=1 PG_CONFIG="$PG_CONFIG" installcheck ISOLATION= TAP_TESTS= \
    REGRESS="$TESTS" \
    REGRESS_OPTS="--temp-instance=$PWD/tmp_regress_vg --temp-config=$PWD/test/temp.conf" \
    EXTRA_REGRESS_OPTS="--temp-config=$ADK_TEST_MODEL_CONF --bindir=$VG/bin --outputdir=$PWD/output_vg"
rc=$?

# every error report, without the known false positives
errors=$(cat "$VG"/logs/vg.*.log 2>/dev/null | awk '
    /^==[0-9]+== [A-Z]/ {
        keep = ($0 !~ /Syscall param (pwrite64|write)\(buf\) points to uninitialised byte/ &&
                $0 !~ /Source and destination overlap in memcpy/)
    }
    /^==[0-9]+== [A-Z]/ && keep { n++ }
    keep { print }
    END { exit n > 0 }')
found=$?
if [ "$rc" -ne 0 ] || [ "$found" -ne 0 ]; then
    [ -n "$errors" ] && { echo "---- valgrind:"; echo "$errors" | head -n 300; }
    [ -f output_vg/regression.diffs ] && { echo "---- output_vg/regression.diffs"; head -n 200 output_vg/regression.diffs; }
    echo "test valgrind ... FAILED"
    rm -rf "$VG"
    exit 1
fi
echo "valgrind: no errors in $(ls "$VG"/logs | wc -l) processes"
echo "test valgrind ... ok"
rm -rf "$VG"
