#!/usr/bin/env bash
# Benchmark: background runs per second with adk.max_workers = 1, 4, 8, 16
# against the ideal workers / 0.2 s, with the local model server answering
# every request after 200 ms (model "gpt-latency-200"; an agent without
# tools, so a run is one model call).  Then the time from the commit of a
# row insert that fires an adk trigger to that job's model request, with
# an idle worker waiting (warm) and with none (cold: a worker is started).
#
#   bash test/bench/workers.sh [seconds-per-round (5)] [trigger samples (30)]
#
# Run as a non-root user with the extension installed (as root the script
# re-runs itself as user adkci).  Starts its own cluster and model server.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
SECONDS_PER_ROUND=${1:-5}
SAMPLES=${2:-30}
LATENCY_MS=200
bench_queue_cluster
bench_model_server
bench_queue_apps "$LATENCY_MS"
set_workers() { bench_set_workers "$@"; }

echo "background runs, one ${LATENCY_MS} ms model call each; ${SECONDS_PER_ROUND} s of ideal work per round"
printf '%8s %6s %9s %10s %10s %7s\n' workers runs seconds "runs/s" "ideal/s" ratio
worst=
for w in 1 4 8 16; do
    set_workers "$w"
    n=$((w * SECONDS_PER_ROUND * 1000 / LATENCY_MS))
    sessions=$((w * 2))
    $PSQL -c "TRUNCATE adk.jobs" >/dev/null
    # one transaction queues them all: the launcher is woken at its commit
    t0=$($PSQL -At <<SQL
BEGIN;
SELECT count(adk_submit('bench', 'u', 'w$w-s' || (i % $sessions), 'run ' || i)) FROM generate_series(1, $n) i \\g /dev/null
SELECT extract(epoch FROM clock_timestamp());
COMMIT;
SQL
)
    for _ in $(seq 6000); do
        [ "$($PSQL -Atc "SELECT count(*) = $n FROM adk.jobs WHERE status IN ('completed', 'failed')")" = t ] && break
        sleep 0.05
    done
    read -r done failed t1 < <($PSQL -At -F ' ' -c "SELECT count(*) FILTER (WHERE status = 'completed'), count(*) FILTER (WHERE status = 'failed'), extract(epoch FROM max(finished_at)) FROM adk.jobs")
    [ "$failed" = 0 ] || { echo "$failed jobs failed:"; $PSQL -c "SELECT error, count(*) FROM adk.jobs WHERE status = 'failed' GROUP BY 1"; }
    awk -v w="$w" -v n="$done" -v t0="$t0" -v t1="$t1" -v ms="$LATENCY_MS" 'BEGIN {
        s = t1 - t0; r = n / s; ideal = w * 1000 / ms;
        printf "%8d %6d %9.2f %10.2f %10.2f %7.2f\n", w, n, s, r, ideal, r / ideal }'
done

# trigger -> model request: the insert's commit to the transaction start of
# the job's model call (adk.model_calls.created_at, right after the user
# event's commit); also to the claim, and to the end of the (0 ms) call
$PSQL >/dev/null <<'SQL'
CREATE TABLE inbox (id serial PRIMARY KEY, who text NOT NULL, body text NOT NULL);
SELECT adk_create_trigger('inbox', 'bench_fast', 'New message {{id}}: {{body}}', 'who', 'id');
CREATE TABLE commits (id int PRIMARY KEY, committed double precision);
SQL
trigger_round() {  # label
    $PSQL -c "TRUNCATE inbox, commits, adk.jobs, adk.model_calls RESTART IDENTITY" >/dev/null
    for i in $(seq "$SAMPLES"); do
        $PSQL -At >/dev/null <<SQL
BEGIN;
INSERT INTO inbox (who, body) VALUES ('u$i', 'hello $i');
INSERT INTO commits VALUES ($i, extract(epoch FROM clock_timestamp()));
COMMIT;
SQL
        sleep 0.2
    done
    for _ in $(seq 200); do
        [ "$($PSQL -Atc "SELECT count(*) = $SAMPLES FROM adk.model_calls")" = t ] && break
        sleep 0.05
    done
    $PSQL -At -F ' ' <<SQL | awk -v label="$1" '{ printf "%-5s commit -> claim: median %5.1f ms, max %6.1f | commit -> model request: median %5.1f ms, p90 %5.1f, max %6.1f | to the end of the call: median %5.1f ms\n", label, $1, $2, $3, $4, $5, $6 }'
WITH s AS (
  SELECT (extract(epoch FROM j.started_at) - c.committed) * 1000 AS claim,
         (extract(epoch FROM m.created_at) - c.committed) * 1000 AS request,
         (extract(epoch FROM m.created_at) - c.committed) * 1000 + m.latency_ms AS done
    FROM commits c
    JOIN adk.jobs j ON j.session_id = c.id::text
    JOIN adk.model_calls m ON m.invocation_id = j.invocation_id)
SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY claim), max(claim),
       percentile_cont(0.5) WITHIN GROUP (ORDER BY request),
       percentile_cont(0.9) WITHIN GROUP (ORDER BY request), max(request),
       percentile_cont(0.5) WITHIN GROUP (ORDER BY done)
  FROM s;
SQL
}
echo
echo "trigger insert commit -> the job's model request, $SAMPLES inserts 200 ms apart (target < 50 ms)"
set_workers 4
trigger_round warm
$PSQL -c "ALTER SYSTEM SET adk.worker_idle_timeout = 0" -c "SELECT pg_reload_conf()" >/dev/null
sleep 0.5
trigger_round cold
