#!/usr/bin/env bash
# Benchmark: the cost of one adk_append_event, against the floor no append
# can beat -- the same rows written by hand.
#
#   bash test/bench/append.sh [events-per-round] [rounds]
#
# Run as a non-root user with the extension installed (root: the script
# re-runs itself as user adkci).  It starts its own throw-away cluster.
#
# Floor: in plain copies of adk.sessions_p0 / adk.events_p0 with the same
# indexes (no trigger, no foreign key), bump the session row with
# UPDATE ... RETURNING and INSERT the event row, in a PL/pgSQL loop.
# Ours: adk_append_event in the same kind of loop, same event body.
# Both commit every 100 events (a procedure), rounds alternate, and we
# report the median per-event time of each and the ratio.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
N=${1:-5000}
ROUNDS=${2:-7}
bench_cluster

$PSQL <<'SQL'
CREATE EXTENSION adk_runner;
CREATE SCHEMA floor;
CREATE TABLE floor.sessions (LIKE adk.sessions_p0 INCLUDING DEFAULTS);
ALTER TABLE floor.sessions ADD PRIMARY KEY (id, app_name, user_id);
CREATE UNIQUE INDEX ON floor.sessions (app_name, user_id, id);
CREATE TABLE floor.events (LIKE adk.events_p0 INCLUDING DEFAULTS);
ALTER TABLE floor.events ADD PRIMARY KEY (id, app_name, user_id, session_id);
CREATE UNIQUE INDEX ON floor.events (app_name, user_id, session_id, seq);

CREATE FUNCTION floor.event() RETURNS jsonb LANGUAGE sql AS $$
  SELECT '{"author": "weather_agent", "invocation_id": "e-1234",
           "content": {"role": "model", "parts": [{"text": "The weather in Hangzhou is sunny, 25 degrees, light wind from the east. A good day for a walk by West Lake."}]},
           "actions": {"state_delta": {"last_city": "Hangzhou"}}}'::jsonb $$;

CREATE TABLE floor.timing (who text, us_per_event float8);

-- the floor: UPDATE ... RETURNING + INSERT, by hand
CREATE PROCEDURE floor.by_hand(n int) LANGUAGE plpgsql AS $$
DECLARE t0 timestamptz := clock_timestamp(); s bigint; ts timestamptz; ev jsonb := floor.event();
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
  INSERT INTO floor.timing VALUES ('floor', extract(epoch FROM clock_timestamp() - t0) * 1e6 / n);
END $$;

CREATE PROCEDURE floor.ours(n int) LANGUAGE plpgsql AS $$
DECLARE t0 timestamptz := clock_timestamp(); ev jsonb := floor.event();
BEGIN
  FOR i IN 1..n LOOP
    IF i % 100 = 0 THEN COMMIT; END IF;
    PERFORM adk_append_event('bench', 'u', 'ours', ev);
  END LOOP;
  COMMIT;
  INSERT INTO floor.timing VALUES ('ours', extract(epoch FROM clock_timestamp() - t0) * 1e6 / n);
END $$;

INSERT INTO floor.sessions (id, app_name, user_id, state, create_time, update_time)
VALUES ('floor', 'bench', 'u', '{}', now(), now());
SELECT adk_create_session('bench', 'u', 'ours') IS NOT NULL;
-- warm-up: plans, caches, the library
CALL floor.by_hand(200);
CALL floor.ours(200);
SQL

echo "adk_append_event vs floor (UPDATE ... RETURNING + INSERT by hand), $N events x $ROUNDS rounds"
floor_t=()
ours_t=()
for r in $(seq "$ROUNDS"); do
    f=$($PSQL -Atc "TRUNCATE floor.timing" -c "CALL floor.by_hand($N)" -c "SELECT round(us_per_event::numeric, 2) FROM floor.timing")
    o=$($PSQL -Atc "TRUNCATE floor.timing" -c "CALL floor.ours($N)" -c "SELECT round(us_per_event::numeric, 2) FROM floor.timing")
    floor_t+=("$f")
    ours_t+=("$o")
    printf 'round %d: floor %8s us/event   adk_append_event %8s us/event\n' "$r" "$f" "$o"
done
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
mf=$(median "${floor_t[@]}")
mo=$(median "${ours_t[@]}")
echo "median: floor $mf us/event, adk_append_event $mo us/event, ratio $(awk -v o="$mo" -v f="$mf" 'BEGIN {printf "%.2f", o / f}') (target <= 1.5)"
$PSQL -Atc "SELECT 'check: ' || count(*) || ' events, seq dense: ' || (max(seq) = count(*)) FROM adk.events WHERE session_id = 'ours'"
