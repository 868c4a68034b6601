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
# PostgreSQL 15 is the machine's own (Debian 12).  The suites "pg17" and
# "pg18" test the other supported versions in Debian chroots made during
# the run (test/scripts/pg_chroot.sh: trixie's PostgreSQL 17, sid's 18,
# from the mirror the machine's apt uses), set up in the background while
# the PostgreSQL 15 suites run: there the build (-Werror) and the regress,
# isolation and TAP suites run again, as build_pgNN, regress_pgNN,
# isolation_pgNN and tap_pgNN.  The chroots are unmounted and removed at
# the end, also on failure.
#
# Environment (for developers): ADK_CI_NO_APT=1 skips apt-get;
# ADK_CI_SUITES="regress isolation" runs only the named suites
# (unit fuzz regress regress_valgrind isolation tap interop doctest
# model_server pg17 pg18); ADK_PG_CONFIG=/path/pg_config builds and tests against another
# PostgreSQL 15 tree (e.g. a private copy of /usr/lib/postgresql/15, so that
# two checkouts can be tested side by side); ADK_CI_CHROOTS=DIR keeps the
# chroots in DIR (DIR/trixie, DIR/sid) and reuses those set up before.
set -uo pipefail
cd "$(dirname "$0")/.."
SRC=$PWD
T0=$SECONDS
SUITES=${ADK_CI_SUITES:-"model_server unit fuzz regress regress_valgrind isolation tap interop doctest pg17 pg18"}
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
        clang-14 libclang-rt-14-dev debootstrap \
        >/dev/null || die "apt-get install"
    # the interop suite runs Google's ADK-JS; the image's Node.js 20 is used
    # when present, Debian's otherwise
    command -v npm >/dev/null || apt-get install -y -qq --no-install-recommends nodejs npm >/dev/null ||
        die "apt-get install nodejs npm"
fi
export PG_CONFIG=${ADK_PG_CONFIG:-/usr/lib/postgresql/15/bin/pg_config}
"$PG_CONFIG" --version || die "no PostgreSQL 15 pg_config"

# the other server versions' chroots: set up in the background now (about
# two minutes of debootstrap and five of packages on a busy machine), used
# after the PostgreSQL 15 suites
declare -A CHROOT_CODENAME=([17]=trixie [18]=sid)
CHROOT_VERSIONS=()
for v in 17 18; do wants "pg$v" && CHROOT_VERSIONS+=("$v"); done
CHROOTS=${ADK_CI_CHROOTS:-}
declare -A SETUP_PID=()
cleanup() {
    local v d
    [ -n "${MODEL_SERVER_PID:-}" ] && kill "$MODEL_SERVER_PID" 2>/dev/null
    [ ${#CHROOT_VERSIONS[@]} -gt 0 ] || return 0
    for v in "${!SETUP_PID[@]}"; do kill -- -"${SETUP_PID[$v]}" 2>/dev/null; done
    for v in "${CHROOT_VERSIONS[@]}"; do
        d=$CHROOTS/${CHROOT_CODENAME[$v]}
        [ -d "$d" ] && bash "$SRC/test/scripts/pg_chroot.sh" umount "$d"
    done
    if [ -z "${ADK_CI_CHROOTS:-}" ] && [ -n "$CHROOTS" ]; then
        if findmnt -rn -o TARGET | grep -q "^$CHROOTS/"; then
            echo "ci: $CHROOTS still has mounts, not removed"
        else
            rm -rf "$CHROOTS"
        fi
    fi
}
trap cleanup EXIT
if [ ${#CHROOT_VERSIONS[@]} -gt 0 ]; then
    step "chroots for PostgreSQL ${CHROOT_VERSIONS[*]}: setup in the background"
    command -v debootstrap >/dev/null || die "debootstrap is not installed"
    [ -n "$CHROOTS" ] || CHROOTS=$(mktemp -d /var/tmp/adk-ci-chroots.XXXXXX)
    mkdir -p "$CHROOTS"
    for v in "${CHROOT_VERSIONS[@]}"; do
        d=$CHROOTS/${CHROOT_CODENAME[$v]}
        if [ -f "$d/.adk-ready" ]; then
            bash "$SRC/test/scripts/pg_chroot.sh" mount "$d"
            echo "reused" >"$d.setup.log"
            echo 0 >"$d.setup.rc"
            continue
        fi
        setsid bash -c 't0=$SECONDS; bash "$1" setup "$2" "$3" "$4"; rc=$?;
            echo "setup: $((SECONDS - t0)) s"; echo $rc >"$2.setup.rc"' \
            _ "$SRC/test/scripts/pg_chroot.sh" "$d" "${CHROOT_CODENAME[$v]}" "$v" >"$d.setup.log" 2>&1 &
        SETUP_PID[$v]=$!
    done
fi

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
# the make suites run "$RUN_AS make -C $TREE" ($HOST_TREE: the same tree
# seen from here); on the host, as_user in $WORK
RUN_AS=as_user
TREE=$WORK
HOST_TREE=$WORK

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
run_make_suite() {  # name, files-to-show-on-failure (globs), make overrides...
    local name=$1 show=$2 rc t0=$SECONDS
    shift 2
    step "suite: $name"
    $RUN_AS timeout 1800 make -C "$TREE" USE_PGXS=1 PG_CONFIG="$PG_CONFIG" installcheck "$@" \
        >"$HOST_TREE/ci-$name.log" 2>&1
    rc=$?
    cat "$HOST_TREE/ci-$name.log"
    if [ "$rc" -ne 0 ]; then
        (cd "$HOST_TREE" && for f in $show; do [ -f "$f" ] && { echo "---- $f"; tail -n 300 "$f"; }; done)
    fi
    count "$HOST_TREE/ci-$name.log" "$rc"
    echo "---- $name: $((SECONDS - t0)) s"
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
    run_make_suite tap "tmp_check/log/*" REGRESS= ISOLATION= PROVE_FLAGS=--verbose
fi
if wants interop && [ -f "$SRC/test/interop/run.sh" ]; then
    run_script_suite interop bash test/interop/run.sh
fi
if wants doctest; then
    # every sql block of README.md and docs/*.md against the output shown,
    # and the demo (test/doctest/run.sh)
    run_script_suite doctest bash test/doctest/run.sh
fi

# PostgreSQL 17 and 18: the build and the regress, isolation and TAP
# suites again, in the chroot, as adkci (the same uid as here).  unit,
# fuzz and interop test the model layer's C standalone and ADK-JS against
# the host's server, and regress_valgrind takes minutes: they are not
# repeated per version.
chroot_suites() {  # version
    local v=$1 d rc t0 RUN_AS=as_chroot TREE=/home/adkci/adk HOST_TREE
    local PG_CONFIG=/usr/lib/postgresql/$1/bin/pg_config
    d=$CHROOTS/${CHROOT_CODENAME[$v]}
    HOST_TREE=$d/home/adkci/adk
    as_chroot() {
        chroot --userspec="$(id -u adkci):$(id -g adkci)" "$d" env -i HOME=/home/adkci \
            PATH=/usr/local/bin:/usr/bin:/bin LANG=C.UTF-8 PG_CONFIG="$PG_CONFIG" "$@"
    }
    step "PostgreSQL $v: chroot ${CHROOT_CODENAME[$v]}"
    [ -n "${SETUP_PID[$v]:-}" ] && wait "${SETUP_PID[$v]}"
    unset "SETUP_PID[$v]"
    cat "$d.setup.log"
    if [ "$(cat "$d.setup.rc" 2>/dev/null)" != 0 ]; then
        echo "not ok setup_pg$v" | tee "$d.ci-setup.log"
        count "$d.ci-setup.log" 1
        return
    fi
    bash "$SRC/test/scripts/pg_chroot.sh" user "$d"
    rm -rf "$HOST_TREE"
    cp -a "$SRC/." "$HOST_TREE/" && rm -rf "$HOST_TREE/.git" && chown -R adkci:adkci "$HOST_TREE" || die "copy"

    step "suite: build_pg$v"
    t0=$SECONDS
    {
        as_chroot make -C "$TREE" -s USE_PGXS=1 PG_CONFIG="$PG_CONFIG" clean >/dev/null &&
            as_chroot make -C "$TREE" -s -j2 USE_PGXS=1 PG_CONFIG="$PG_CONFIG" &&
            chroot "$d" make -C "$TREE" -s USE_PGXS=1 PG_CONFIG="$PG_CONFIG" install >/dev/null
    } >"$d.ci-build.log" 2>&1
    rc=$?
    [ "$rc" -eq 0 ] && echo "ok build_pg$v (-Werror)" >>"$d.ci-build.log" || echo "not ok build_pg$v" >>"$d.ci-build.log"
    cat "$d.ci-build.log"
    count "$d.ci-build.log" "$rc"
    echo "---- build_pg$v: $((SECONDS - t0)) s"
    [ "$rc" -eq 0 ] || return

    # the local model server inside the chroot, as the test user
    local ADK_TEST_MODEL_URL ADK_TEST_MODEL_CONF MODEL_SERVER_LOG MODEL_SERVER_PID
    if ! as_chroot bash -c ". $TREE/test/scripts/model_server.sh && model_server_start && \
        declare -p ADK_TEST_MODEL_URL ADK_TEST_MODEL_CONF MODEL_SERVER_LOG MODEL_SERVER_PID > /home/adkci/model_server.env && disown" \
        >"$d.ci-model-server.log" 2>&1; then
        echo "not ok model_server_pg$v" >>"$d.ci-model-server.log"
        cat "$d.ci-model-server.log"
        count "$d.ci-model-server.log" 1
        return
    fi
    . "$d/home/adkci/model_server.env"
    run_make_suite "regress_pg$v" "regression.diffs log/postmaster.log" ISOLATION= TAP_TESTS= \
        EXTRA_REGRESS_OPTS="--temp-config=$ADK_TEST_MODEL_CONF"
    run_make_suite "isolation_pg$v" "output_iso/regression.diffs output_iso/log/postmaster.log" REGRESS= TAP_TESTS= \
        EXTRA_REGRESS_OPTS="--temp-config=$ADK_TEST_MODEL_CONF"
    run_make_suite "tap_pg$v" "tmp_check/log/*" REGRESS= ISOLATION= PROVE_FLAGS=--verbose
    kill "$MODEL_SERVER_PID" 2>/dev/null
}
for v in "${CHROOT_VERSIONS[@]}"; do chroot_suites "$v"; done

step "done in $((SECONDS - T0)) s (tree: $WORK)"
for line in "${skipped[@]}"; do echo "ci: SKIPPED $line"; done
echo "ci: $pass passed, $fail failed"
[ "$fail" -eq 0 ] && [ "$pass" -gt 0 ]
