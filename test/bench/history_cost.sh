#!/usr/bin/env bash
# Benchmark: test/bench/history.sh's runs in instructions (callgrind,
# deterministic on a loaded machine, where wall times vary by more than a
# change): a new single-call run on a session of 10 and of 3,000 events
# (questions and answers, one earlier run on it), each in a single-user
# backend (postgres --single) under callgrind on its own copy of one
# cluster, after a warm-up run on another session:
#  - cold: the run in a new backend, Ir(warm-up + run) - Ir(warm-up);
#  - next: the run after it in the same backend (the next turn, which goes
#    on from what the backend kept: src/runner/prompt_carry.c),
#    Ir(warm-up + run + run) - Ir(warm-up + run).
#
#   sudo ADK_PG_CONFIG=/path/pg_config bash test/bench/history_cost.sh [TAG]
#
# Uses the build installed in ADK_PG_CONFIG's tree, with the extension
# preloaded and the local model server at 0 ms.  Prints "TAG cold10 N
# cold3000 N next10 N next3000 N ratio R" (R: next3000 / next10) and keeps
# the callgrind files in the directory it names.  Needs valgrind; run as
# root (the cluster runs as user adkci).
set -euo pipefail
[ "$(id -u)" -eq 0 ] || { echo "run as root" >&2; exit 2; }
TAG=${1:-build}
SRC=$(cd "$(dirname "$0")/../.." && pwd)
PGBIN=$("${ADK_PG_CONFIG:-pg_config}" --bindir)
id adkci >/dev/null 2>&1 || useradd --create-home adkci
W=$(mktemp -d /tmp/adk-history-cost.XXXXXX)
chmod 755 "$W"
trap 'kill $(cat "$W/ms.pid" 2>/dev/null) 2>/dev/null || true' EXIT
cp -a "$SRC/test/model_server" "$W/"
chown -R adkci "$W"
as() { runuser -u adkci -- env HOME=/home/adkci "$@"; }
as bash -c "python3 '$W/model_server/server.py' --port 0 --port-file '$W/ms.port' --log '$W/ms.log' >/dev/null 2>&1 & echo \$! > '$W/ms.pid'"
for _ in $(seq 100); do [ -s "$W/ms.port" ] && break; sleep 0.1; done
url="http://127.0.0.1:$(cat "$W/ms.port")"
as "$PGBIN/initdb" -D "$W/data" -A trust -U adkci --no-sync >/dev/null
printf "unix_socket_directories = '%s'\nlisten_addresses = ''\nfsync = off\nlc_messages = 'C'\ntimezone = 'UTC'\nshared_preload_libraries = 'adk_runner'\nadk.database = 'postgres'\nadk.max_workers = 0\n" "$W" >>"$W/data/postgresql.conf"
as "$PGBIN/pg_ctl" -D "$W/data" -l "$W/server.log" -w start >/dev/null
as "$PGBIN/psql" -X -q -v ON_ERROR_STOP=1 -h "$W" -d postgres -v url="$url" >/dev/null <<'SQL'
CREATE EXTENSION adk_runner;
SELECT adk_set_secret('k', 'sk-bench', ARRAY['127.0.0.1']);
SELECT adk_define_model('local', 'openai', :'url' || '/v1', 'gpt-test', api_key_secret => 'k');
SELECT adk_define_agent('chat_agent', model => 'local', instruction => 'You answer questions.');
SELECT adk_define_app('hist_app', 'chat_agent');
-- as in test/bench/history.sh
CREATE PROCEDURE make_session(s text, n int) LANGUAGE plpgsql AS $$
BEGIN
  PERFORM adk_create_session('hist_app', 'u', s);
  PERFORM adk_append_event('hist_app', 'u', s,
            CASE WHEN i % 2 = 1
                 THEN jsonb_build_object('author', 'user', 'content',
                        jsonb_build_object('role', 'user', 'parts',
                          jsonb_build_array(jsonb_build_object('text', 'Question ' || i || ': what is the weather like today?'))))
                 ELSE jsonb_build_object('author', 'chat_agent', 'content',
                        jsonb_build_object('role', 'model', 'parts',
                          jsonb_build_array(jsonb_build_object('text', 'Answer ' || i || ': sunny, 25 degrees, light wind.'))))
            END)
    FROM generate_series(1, n) i;
END $$;
CALL make_session('w', 10);
CALL make_session('s10', 10);
CALL make_session('s3000', 3000);
SELECT count(*) FROM adk_run('hist_app', 'u', 's10', 'hi');
SELECT count(*) FROM adk_run('hist_app', 'u', 's3000', 'hi');
SQL
as "$PGBIN/pg_ctl" -D "$W/data" -m fast -w stop >/dev/null
declare -A IR
for c in base c10 c3000 n10 n3000; do
  as cp -a "$W/data" "$W/data.$c"
  cmds="SELECT count(*) FROM adk_run('hist_app', 'u', 'w', 'And tomorrow?')\n"
  case $c in
    c*) cmds="$cmds""SELECT count(*) FROM adk_run('hist_app', 'u', 's${c#c}', 'And tomorrow?')\n" ;;
    n*) cmds="$cmds""SELECT count(*) FROM adk_run('hist_app', 'u', 's${c#n}', 'And tomorrow?')\nSELECT count(*) FROM adk_run('hist_app', 'u', 's${c#n}', 'And after?')\n" ;;
  esac
  printf "$cmds" | as valgrind --tool=callgrind --callgrind-out-file="$W/cg.$c" \
      "$PGBIN/postgres" --single -D "$W/data.$c" postgres >"$W/out.$c" 2>&1
  if grep -q ERROR "$W/out.$c"; then grep ERROR "$W/out.$c"; exit 1; fi
  IR[$c]=$(awk '/^summary:|^totals:/ {print $2; exit}' "$W/cg.$c")
  rm -rf "$W/data.$c"     # only the callgrind files are kept
done
rm -rf "$W/data"
c10=$((IR[c10] - IR[base])); c3000=$((IR[c3000] - IR[base]))
n10=$((IR[n10] - IR[c10])); n3000=$((IR[n3000] - IR[c3000]))
echo "$TAG cold10 $c10 cold3000 $c3000 next10 $n10 next3000 $n3000 ratio $(awk -v a=$n3000 -v b=$n10 'BEGIN {printf "%.2f", a/b}')  ($W)"
