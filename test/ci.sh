#!/usr/bin/env bash
# The whole test suite, from a fresh Debian 12 machine, as root:
#
#   bash test/ci.sh
#
# installs the packages it needs, builds and installs the extension, creates
# the unprivileged user "adkci" (PostgreSQL refuses to run as root), copies
# the tree to a private temp dir owned by that user and runs every suite
# there, each against its own throw-away cluster.  Last line:
#   ci: N passed, M failed
# and a non-zero exit on any failure.
#
# Environment (for developers): ADK_CI_NO_APT=1 skips apt-get;
# ADK_CI_SUITES="regress isolation" runs only the named suites
# (unit fuzz regress regress_valgrind isolation tap interop model_server); ADK_PG_CONFIG=/path/pg_config
# builds and tests against another PostgreSQL 15 tree (e.g. a private copy of
# /usr/lib/postgresql/15, so that two checkouts can be tested side by side).
set -uo pipefail
cd "$(dirname "$0")/.."
SRC=$PWD
T0=$SECONDS
SUITES=${ADK_CI_SUITES:-"model_server unit fuzz regress regress_valgrind isolation tap interop"}
step() { printf '\n==== [%4ds] %s\n' $((SECONDS - T0)) "$*"; }
die() { echo "FATAL: $*"; echo "ci: 0 passed, 1 failed"; exit 1; }
wants() { [[ " $SUITES " == *" $1 "* ]]; }

if [ "$(id -u)" -ne 0 ]; then
    die "run as root: it installs packages and the extension (the tests themselves run as user adkci)"
fi

if [ -z "${ADK_CI_NO_APT:-}" ]; then
    step "packages"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq || die "apt-get update"
    apt-get install -y -qq --no-install-recommends \
        postgresql-15 postgresql-server-dev-15 libcurl4-openssl-dev libjson-c-dev \
        libipc-run-perl make gcc pkg-config python3 curl ca-certificates valgrind \
        clang-14 libclang-rt-14-dev \
        >/dev/null || die "apt-get install"
    # the interop suite runs Google's ADK-JS; the image's Node.js 20 is used
    # when present, Debian's otherwise
    command -v npm >/dev/null || apt-get install -y -qq --no-install-recommends nodejs npm >/dev/null ||
        die "apt-get install nodejs npm"
fi
export PG_CONFIG=${ADK_PG_CONFIG:-/usr/lib/postgresql/15/bin/pg_config}
"$PG_CONFIG" --version || die "no PostgreSQL 15 pg_config"

step "build + install"
M="make USE_PGXS=1 PG_CONFIG=$PG_CONFIG"
$M -s clean >/dev/null
$M -s -j2 || die "build"
$M -s install >/dev/null || die "install"

step "unprivileged test user + private copy of the tree"
id adkci >/dev/null 2>&1 || useradd --create-home --shell /bin/bash adkci || die "useradd"
WORK=$(mktemp -d /tmp/adk-ci.XXXXXX)
cp -a "$SRC/." "$WORK/" && rm -rf "$WORK/.git" && chown -R adkci:adkci "$WORK" || die "copy"

# the upgrade test's server tree: the last release's library, this build's
# scripts (test/t/024_upgrade.pl; skipped when it cannot be made)
UPGRADE_TREE=
if wants tap; then
    step "upgrade test tree (the last release's library, built from its commit)"
    if UPGRADE_TREE=$(bash "$SRC/test/scripts/upgrade_tree.sh" "$SRC" "$PG_CONFIG" "$WORK/upgrade-pg" adkci); then
        echo "upgrade tree: $UPGRADE_TREE"
    else
        echo "---- could not prepare the upgrade tree: test/t/024_upgrade.pl will skip"
        UPGRADE_TREE=
    fi
fi
as_user() { runuser -u adkci -- env HOME=/home/adkci PATH=/usr/local/bin:/usr/bin:/bin PG_CONFIG="$PG_CONFIG" \
    ADK_UPGRADE_TREE="$UPGRADE_TREE" "$@"; }

pass=0
fail=0
skipped=()
count() {  # log-file: adds the suite's ok / failed lines to the totals
    local log=$1 rc=$2 ok bad line
    if [ ! -f "$log" ]; then
        # the suite's log is gone (its tree removed under it): a failure
        echo "---- no log $log: the suite counts as failed"
        fail=$((fail + 1))
        return
    fi
    ok=$(grep -cE '^ok\s+\S|\.\.\. ok( |$)' "$log")
    bad=$(grep -cE '^not ok|^FAIL |\.\.\. FAILED|^\S+\.pl \.+ (Dubious|Failed)' "$log")
    [ "$rc" -ne 0 ] && [ "$bad" -eq 0 ] && bad=1
    pass=$((pass + ok))
    fail=$((fail + bad))
    echo "---- $ok passed, $bad failed"
    # a TAP file that skips itself (plan skip_all) counts neither way
    while IFS= read -r line; do
        echo "---- SKIPPED (neither passed nor failed): $line"
        skipped+=("$line")
    done < <(grep -E '^\S+\.pl \.+ skipped' "$log")
}
run_make_suite() {  # name, files-to-show-on-failure, make overrides...
    local name=$1 show=$2 rc
    shift 2
    step "suite: $name"
    as_user timeout 1800 make -C "$WORK" USE_PGXS=1 PG_CONFIG="$PG_CONFIG" installcheck "$@" \
        >"$WORK/ci-$name.log" 2>&1
    rc=$?
    cat "$WORK/ci-$name.log"
    if [ "$rc" -ne 0 ]; then
        (cd "$WORK" && for f in $show; do [ -f "$f" ] && { echo "---- $f"; tail -n 300 "$f"; }; done)
    fi
    count "$WORK/ci-$name.log" "$rc"
}
run_script_suite() {  # name, command...
    local name=$1 rc
    shift
    step "suite: $name"
    (cd "$WORK" && as_user timeout 1800 "$@") >"$WORK/ci-$name.log" 2>&1
    rc=$?
    cat "$WORK/ci-$name.log"
    count "$WORK/ci-$name.log" "$rc"
}

if wants model_server && [ -f "$SRC/test/model_server/selftest.sh" ]; then
    run_script_suite model_server bash test/model_server/selftest.sh
fi
if wants unit && [ -f "$SRC/test/unit/Makefile" ]; then
    # the model layer's C, standalone: ASan + UBSan, then valgrind
    run_script_suite unit make -s -C test/unit check
    run_script_suite unit_valgrind make -s -C test/unit valgrind
fi
if wants fuzz && [ -f "$SRC/test/unit/fuzz/run.sh" ]; then
    # libFuzzer (ASan + UBSan) on the SSE parser and each adapter, unary and
    # streamed: 3 s per harness, seeded from test/unit/data
    run_script_suite fuzz make -s -C test/unit fuzz-check FUZZ_SECONDS=3
fi
# the local model server for the regression suite, as the test user
step "local model server"
MS_ENV=$WORK/model_server.env
as_user bash -c ". '$WORK/test/scripts/model_server.sh' && model_server_start && \
    declare -p ADK_TEST_MODEL_URL ADK_TEST_MODEL_CONF MODEL_SERVER_LOG MODEL_SERVER_PID > '$MS_ENV' && disown" \
    || die "model server"
. "$MS_ENV"
trap 'kill $MODEL_SERVER_PID 2>/dev/null' EXIT
echo "model server at $ADK_TEST_MODEL_URL (pid $MODEL_SERVER_PID)"

if wants regress; then
    run_make_suite regress "regression.diffs log/postmaster.log" ISOLATION= TAP_TESTS= \
        EXTRA_REGRESS_OPTS="--temp-config=$ADK_TEST_MODEL_CONF"
fi
if wants regress_valgrind; then
    # a cursor over adk_run left open while other statements run, under valgrind
    run_script_suite regress_valgrind env ADK_TEST_MODEL_CONF="$ADK_TEST_MODEL_CONF" \
        bash test/scripts/regress_valgrind.sh
fi
if wants isolation; then
    run_make_suite isolation "output_iso/regression.diffs output_iso/log/postmaster.log" REGRESS= TAP_TESTS= \
        EXTRA_REGRESS_OPTS="--temp-config=$ADK_TEST_MODEL_CONF"
fi
if wants tap && ls "$SRC"/test/t/*.pl >/dev/null 2>&1; then
    run_make_suite tap "$(cd "$WORK" && echo tmp_check/log/*)" REGRESS= ISOLATION= PROVE_FLAGS=--verbose
fi
if wants interop && [ -f "$SRC/test/interop/run.sh" ]; then
    run_script_suite interop bash test/interop/run.sh
fi

step "done in $((SECONDS - T0)) s (tree: $WORK)"
for line in "${skipped[@]}"; do echo "ci: SKIPPED $line"; done
echo "ci: $pass passed, $fail failed"
[ "$fail" -eq 0 ] && [ "$pass" -gt 0 ]
