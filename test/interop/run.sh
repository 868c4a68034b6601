#!/usr/bin/env bash
# test/interop/run.sh -- does Google's ADK-JS (@google/adk 2.0.0, its
# DatabaseSessionService over PostgreSQL through MikroORM 6.6.16) share
# adk_runner's session tables in schema adk?  No arguments.
#
# Uses the adk_runner installed system-wide.  Makes a throw-away PostgreSQL
# 15 cluster in a mktemp directory (TCP on 127.0.0.1, a free port, every
# statement logged), CREATE EXTENSION adk_runner in database adk_interop,
# runs `npm ci` here when node_modules is missing, runs interop.mjs, stops
# that cluster (only that one) and prints, last, exactly
#     interop: N passed, M failed
# and exits non-zero when M > 0 or it could not run.
#
# PostgreSQL will not run as root: started as root, the script runs itself
# again as $ADK_INTEROP_USER (default adkci, made with
# `useradd --create-home adkci`), after `npm ci` as root if needed.
#
# The local model server (test/model_server/server.py) runs on a free
# loopback port for the ADK-JS Runner checks (section 9); adk_run reaches
# it through the model interop.mjs defines with that URL.
#
# ADK_INTEROP_KEEP=1    keep the temp directory (server log: statements)
# ADK_INTEROP_DEBUG=1   MikroORM's own query log (MIKRO_ORM_DEBUG) on stderr
set -uo pipefail

PGBIN=${ADK_INTEROP_PGBIN:-$(${PG_CONFIG:-/usr/lib/postgresql/15/bin/pg_config} --bindir)}
RUN_USER=${ADK_INTEROP_USER:-adkci}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)

# A setup failure is one failed check, so the last line is always there.
setup_fail() {
    echo "not ok - setup: $1"
    shift
    for l in "$@"; do echo "#   $l"; done
    echo "interop: 0 passed, 1 failed"
    exit 1
}

NODE=$(command -v node) || setup_fail "node not found on PATH"
NPM=$(command -v npm) || setup_fail "npm not found on PATH"
[ -x "$PGBIN/initdb" ] && [ -x "$PGBIN/pg_ctl" ] && [ -x "$PGBIN/pg_dump" ] ||
    setup_fail "PostgreSQL 15 binaries not found in $PGBIN"

npm_ci() { # dir: `npm ci` there, npm cache in a throw-away directory
    local dir=$1 cache out
    cache=$(mktemp -d "${TMPDIR:-/tmp}/adk-interop-npm.XXXXXX") || return 1
    out=$(cd "$dir" && "$NPM" ci --no-audit --no-fund --cache "$cache" 2>&1)
    local rc=$?
    rm -rf "$cache"
    if [ $rc -ne 0 ]; then
        printf '%s\n' "$out" | tail -n 30 | sed 's/^/#   npm: /'
    fi
    return $rc
}

# ---------------------------------------------------------------- as root
if [ "$(id -u)" -eq 0 ]; then
    id -u "$RUN_USER" >/dev/null 2>&1 ||
        setup_fail "postgres refuses root, and user $RUN_USER does not exist" \
                   "create it: useradd --create-home $RUN_USER (or set ADK_INTEROP_USER)"
    if runuser -u "$RUN_USER" -- test -r "$HERE/interop.mjs" -a -x "$HERE"; then
        if [ ! -d "$HERE/node_modules" ]; then
            npm_ci "$HERE" || setup_fail "npm ci in $HERE failed"
        fi
        exec runuser -u "$RUN_USER" -- bash "$HERE/run.sh"
    fi
    # the work tree is not readable by $RUN_USER (e.g. under /root): copy the
    # test to a directory of its own; `npm ci` runs there as $RUN_USER
    stage=$(mktemp -d /tmp/adk-interop-stage.XXXXXX) || setup_fail "mktemp failed"
    cp "$HERE/run.sh" "$HERE/interop.mjs" "$HERE/package.json" "$HERE/package-lock.json" "$stage/" ||
        setup_fail "could not copy the test to $stage"
    cp "$HERE/../model_server/server.py" "$stage/model_server.py" ||
        setup_fail "could not copy the local model server to $stage"
    chown -R "$RUN_USER" "$stage" && chmod 755 "$stage"
    runuser -u "$RUN_USER" -- env ADK_INTEROP_ORIGIN="$HERE/run.sh" bash "$stage/run.sh"
    rc=$?
    rm -rf "$stage"
    exit $rc
fi

# ------------------------------------------------------------ as non-root
WORK=$(mktemp -d "${TMPDIR:-/tmp}/adk-interop.XXXXXX") || setup_fail "mktemp failed"
PGDATA_DIR="$WORK/data"
PGLOG="$WORK/server.log"
OUT="$WORK/interop.out"
DB=adk_interop
SUPERUSER=postgres
started=0

ms_pid=
cleanup() {
    if [ -n "$ms_pid" ]; then
        kill "$ms_pid" 2>/dev/null
        wait "$ms_pid" 2>/dev/null
    fi
    if [ "$started" -eq 1 ]; then
        "$PGBIN/pg_ctl" -D "$PGDATA_DIR" -m fast -w stop >/dev/null 2>&1 ||
            "$PGBIN/pg_ctl" -D "$PGDATA_DIR" -m immediate -w stop >/dev/null 2>&1
    fi
    if [ "${ADK_INTEROP_KEEP:-0}" = 1 ]; then
        echo "# kept $WORK (server log: $PGLOG)"
    else
        rm -rf "$WORK"
    fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

fail_here() { # message, detail...: one failed check, summary, exit (cleanup runs)
    echo "not ok - setup: $1"
    shift
    for l in "$@"; do echo "#   $l"; done
    echo "interop: 0 passed, 1 failed"
    exit 1
}

# node_modules: here, or in a copy when this directory is not writable
APPDIR=$HERE
if [ ! -d "$APPDIR/node_modules" ]; then
    if [ ! -w "$APPDIR" ]; then
        APPDIR="$WORK/app"
        mkdir -p "$APPDIR"
        cp "$HERE/interop.mjs" "$HERE/package.json" "$HERE/package-lock.json" "$APPDIR/" ||
            fail_here "could not copy the test to $APPDIR"
    fi
    npm_ci "$APPDIR" || fail_here "npm ci in $APPDIR failed"
fi

# the cluster: superuser $SUPERUSER, trust, TCP on 127.0.0.1 only, and a
# socket in $WORK (never the system's /var/run/postgresql)
"$PGBIN/initdb" -A trust -U "$SUPERUSER" -E UTF8 --no-sync -D "$PGDATA_DIR" >"$WORK/initdb.log" 2>&1 ||
    fail_here "initdb failed" "$(tail -n 5 "$WORK/initdb.log")"
cat >>"$PGDATA_DIR/postgresql.conf" <<EOF
listen_addresses = '127.0.0.1'
unix_socket_directories = '$WORK'
fsync = off
full_page_writes = off
synchronous_commit = off
# the statements ADK-JS runs (its schema sync) are read back from this log
log_statement = 'all'
log_line_prefix = '%m [%p] %a: '
# not UTC, and not a whole hour: time zone mistakes show
timezone = 'Asia/Kolkata'
max_connections = 50
EOF

free_port() {
    "$NODE" -e 'const s=require("net").createServer();s.listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close();});'
}
PORT=
for try in 1 2 3 4 5; do
    p=$(free_port) || continue
    if "$PGBIN/pg_ctl" -D "$PGDATA_DIR" -l "$PGLOG" -o "-p $p" -w -t 60 start >"$WORK/pg_ctl.log" 2>&1; then
        PORT=$p
        started=1
        break
    fi
    # the port may have been taken meanwhile; make sure nothing is left
    "$PGBIN/pg_ctl" -D "$PGDATA_DIR" -m immediate -w stop >/dev/null 2>&1
done
[ -n "$PORT" ] || fail_here "could not start PostgreSQL" "$(tail -n 5 "$PGLOG" 2>/dev/null)"

psql_() { "$PGBIN/psql" -X -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$PORT" -U "$SUPERUSER" "$@"; }
psql_ -d postgres -c "CREATE DATABASE $DB" >"$WORK/setup.log" 2>&1 ||
    fail_here "CREATE DATABASE failed" "$(cat "$WORK/setup.log")"
psql_ -d "$DB" -c "CREATE EXTENSION adk_runner" >>"$WORK/setup.log" 2>&1 ||
    fail_here "CREATE EXTENSION adk_runner failed" "$(cat "$WORK/setup.log")"
echo "# cluster $WORK on 127.0.0.1:$PORT, TimeZone $(psql_ -d "$DB" -Atc 'SHOW timezone'); adk_runner $(psql_ -d "$DB" -Atc "SELECT extversion FROM pg_extension WHERE extname = 'adk_runner'") in $DB; node $("$NODE" --version)"

# the local model server (test/model_server/), for ADK-JS's Runner and
# adk_run alike; it records the requests both send (GET /_requests)
MS_PY=$HERE/../model_server/server.py
[ -f "$MS_PY" ] || MS_PY=$HERE/model_server.py
python3 "$MS_PY" --port 0 --port-file "$WORK/ms.port" --log "$WORK/model_server.log" \
    >"$WORK/model_server.out" 2>&1 &
ms_pid=$!
for _ in $(seq 100); do
    [ -s "$WORK/ms.port" ] && break
    kill -0 "$ms_pid" 2>/dev/null || break
    sleep 0.05
done
[ -s "$WORK/ms.port" ] || fail_here "the local model server did not start" "$(cat "$WORK/model_server.out")"
MODEL_URL="http://127.0.0.1:$(cat "$WORK/ms.port")"

# the test; PG* variables of the caller must not redirect anything
unset PGHOST PGHOSTADDR PGPORT PGDATABASE PGUSER PGPASSWORD PGPASSFILE PGSERVICE PGSERVICEFILE PGOPTIONS PGSSLMODE
debug_env=()
if [ "${ADK_INTEROP_DEBUG:-0}" = 1 ]; then debug_env=(MIKRO_ORM_DEBUG=true); fi
(
    cd "$APPDIR" &&
    env ADK_INTEROP_PGHOST=127.0.0.1 ADK_INTEROP_PGPORT="$PORT" ADK_INTEROP_DB="$DB" \
        ADK_INTEROP_PGUSER="$SUPERUSER" ADK_INTEROP_PGBIN="$PGBIN" ADK_INTEROP_PGLOG="$PGLOG" \
        ADK_INTEROP_MODEL_URL="$MODEL_URL" \
        "${debug_env[@]}" \
        timeout 900 "$NODE" "$APPDIR/interop.mjs"
) 2>"$WORK/node.stderr" | tee "$OUT"
node_rc=${PIPESTATUS[0]}

passed=$(grep -c '^ok - ' "$OUT")
failed=$(grep -c '^not ok - ' "$OUT")
if [ "$node_rc" -ne 0 ] && [ "$failed" -eq 0 ]; then
    echo "not ok - interop.mjs exited $node_rc without a failed check"
    tail -n 20 "$WORK/node.stderr" | sed 's/^/#   /'
    failed=$((failed + 1))
fi
if [ "$failed" -gt 0 ]; then
    if [ -s "$WORK/node.stderr" ]; then
        echo "# interop.mjs stderr (last 20 lines):"
        tail -n 20 "$WORK/node.stderr" | sed 's/^/#   /'
    fi
    # server errors, less the one 7e causes on purpose (reading a deleted session)
    errs=$(grep -A1 'ERROR:' "$PGLOG" | grep -v -e 'sql-session-del' -e 'Create it with adk_create_session' -e '^--$' | head -n 20)
    if [ -n "$errs" ]; then
        echo "# server log errors (first 20 lines):"
        printf '%s\n' "$errs" | sed 's/^/#   /'
    fi
    echo "# for the full server log (every statement): ADK_INTEROP_KEEP=1 bash ${ADK_INTEROP_ORIGIN:-$HERE/run.sh}"
fi
echo "interop: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
