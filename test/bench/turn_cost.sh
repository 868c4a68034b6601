#!/usr/bin/env bash
# Benchmark: the runner's own cost in instructions (callgrind, deterministic
# on a loaded machine, where wall times vary by more than a change):
#  - per weather turn (test/bench/run.sh's turn: 2 model calls, a SQL tool,
#    4 events, 4 spans, 2 ledger rows), (Ir(NT turns) - Ir(0 turns)) / NT;
#  - per adk_append_event, (Ir(NA appends) - Ir(0)) / NA, and per event of
#    the floor (append.sh's UPDATE ... RETURNING + INSERT by hand) alike;
# each in a single-user backend (postgres --single) under callgrind on its
# own copy of one cluster, after a warm-up (the library, plans, caches),
# with the extension preloaded and the local model server at 0 ms.
#
#   sudo ADK_PG_CONFIG=/path/pg_config bash test/bench/turn_cost.sh [TAG]
#
# Uses the build installed in ADK_PG_CONFIG's tree.  Prints
# "TAG turn N append N floor N ratio R" and keeps the callgrind files in
# the directory it names (callgrind_annotate them per function).  Needs
# valgrind; run as root (the cluster runs as user adkci).
set -euo pipefail
[ "$(id -u)" -eq 0 ] || { echo "run as root" >&2; exit 2; }
TAG=${1:-build}
SRC=$(cd "$(dirname "$0")/../.." && pwd)
PGBIN=$("${ADK_PG_CONFIG:-pg_config}" --bindir)
NT=${NT:-40}; NA=${NA:-400}
id adkci >/dev/null 2>&1 || useradd --create-home adkci
W=$(mktemp -d /tmp/adk-turn-cost.XXXXXX)
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
CREATE FUNCTION get_weather(city text) RETURNS jsonb LANGUAGE sql AS $$
  SELECT jsonb_build_object('city', city, 'forecast', 'sunny', 'temperature_c', 25) $$;
SELECT adk_set_secret('k', 'sk-bench', ARRAY['127.0.0.1']);
SELECT adk_define_model('local', 'openai', :'url' || '/v1', 'gpt-bench', api_key_secret => 'k');
SELECT adk_define_tool('get_weather(text)'::regprocedure);
SELECT adk_define_agent('weather_agent', model => 'local', instruction => 'You answer weather questions.',
                        tools => ARRAY['get_weather']);
SELECT adk_define_app('weather_app', 'weather_agent');
SELECT adk_create_session('weather_app', 'u', 'w' || i) FROM generate_series(1, 2) i;
SELECT adk_create_session('weather_app', 'u', 's' || i) FROM generate_series(1, 100) i;
SELECT adk_create_session('weather_app', 'u', 'ap') ;
SELECT adk_create_session('weather_app', 'u', 'apw') ;
CREATE PROCEDURE turns(n int) LANGUAGE plpgsql AS $$
BEGIN
  FOR i IN 1..n LOOP
    PERFORM count(*) FROM adk_run('weather_app', 'u', 's' || i, 'What is the weather in Hangzhou?');
    COMMIT;
  END LOOP;
END $$;
CREATE PROCEDURE appends(s text, n int) LANGUAGE plpgsql AS $$
DECLARE ev jsonb := '{"author": "weather_agent", "invocation_id": "e-1234",
           "content": {"role": "model", "parts": [{"text": "The weather in Hangzhou is sunny, 25 degrees, light wind from the east. A good day for a walk by West Lake."}]},
           "actions": {"state_delta": {"last_city": "Hangzhou"}}}';
BEGIN
  FOR i IN 1..n LOOP
    IF i % 100 = 0 THEN COMMIT; END IF;
    PERFORM adk_append_event('weather_app', 'u', s, ev);
  END LOOP;
  COMMIT;
END $$;
CREATE SCHEMA floor;
CREATE TABLE floor.sessions (LIKE adk.sessions_p0 INCLUDING DEFAULTS);
ALTER TABLE floor.sessions ADD PRIMARY KEY (id, app_name, user_id);
CREATE UNIQUE INDEX ON floor.sessions (app_name, user_id, id);
CREATE TABLE floor.events (LIKE adk.events_p0 INCLUDING DEFAULTS);
ALTER TABLE floor.events ADD PRIMARY KEY (id, app_name, user_id, session_id);
CREATE UNIQUE INDEX ON floor.events (app_name, user_id, session_id, seq);
INSERT INTO floor.sessions (id, app_name, user_id, state, create_time, update_time)
VALUES ('floor', 'bench', 'u', '{}', now(), now());
CREATE PROCEDURE floor.by_hand(n int) LANGUAGE plpgsql AS $$
DECLARE s bigint; ts timestamptz; ev jsonb := '{"author": "weather_agent", "invocation_id": "e-1234",
           "content": {"role": "model", "parts": [{"text": "The weather in Hangzhou is sunny, 25 degrees, light wind from the east. A good day for a walk by West Lake."}]},
           "actions": {"state_delta": {"last_city": "Hangzhou"}}}';
BEGIN
  FOR i IN 1..n LOOP
    IF i % 100 = 0 THEN COMMIT; END IF;
    UPDATE floor.sessions
       SET last_seq = last_seq + 1, last_event_time = clock_timestamp(),
           update_time = clock_timestamp(), state = state || '{"last_city": "Hangzhou"}'
     WHERE app_name = 'bench' AND user_id = 'u' AND id = 'floor'
     RETURNING last_seq, last_event_time INTO s, ts;
    INSERT INTO floor.events (id, app_name, user_id, session_id, invocation_id, "timestamp", event_data, seq)
    VALUES (gen_random_uuid()::text, 'bench', 'u', 'floor', 'e-1234', ts, ev, s);
  END LOOP;
  COMMIT;
END $$;
SQL
as "$PGBIN/pg_ctl" -D "$W/data" -m fast -w stop >/dev/null
for c in t0 t$NT a0 a$NA f0 f$NA; do as cp -a "$W/data" "$W/data.$c"; done
declare -A IR
for c in t0 t$NT a0 a$NA f0 f$NA; do
  case $c in
    t*) n=${c#t}; cmds="CALL turns(0)\nSELECT count(*) FROM adk_run('weather_app', 'u', 'w1', 'What is the weather in Hangzhou?')\nCALL turns($n)\n" ;;
    a*) n=${c#a}; cmds="CALL appends('apw', 50)\nCALL appends('ap', $n)\n" ;;
    f*) n=${c#f}; cmds="CALL floor.by_hand(50)\nCALL floor.by_hand($n)\n" ;;
  esac
  printf "$cmds" | as valgrind --tool=callgrind --callgrind-out-file="$W/cg.$c" \
      "$PGBIN/postgres" --single -D "$W/data.$c" postgres >"$W/out.$c" 2>&1
  if grep -q ERROR "$W/out.$c"; then grep ERROR "$W/out.$c"; exit 1; fi
  IR[$c]=$(awk '/^summary:|^totals:/ {print $2; exit}' "$W/cg.$c")
  rm -rf "$W/data.$c"     # only the callgrind files are kept
done
rm -rf "$W/data"
pt=$(( (IR[t$NT] - IR[t0]) / NT )); pa=$(( (IR[a$NA] - IR[a0]) / NA )); pf=$(( (IR[f$NA] - IR[f0]) / NA ))
echo "$TAG turn $pt append $pa floor $pf ratio $(awk -v a=$pa -v f=$pf 'BEGIN {printf "%.2f", a/f}')  ($W)"
