#!/usr/bin/env bash
# Benchmark: the queue at its limit.  Each run is one model call (an agent
# without tools, test/bench/lib.sh's bench_queue_apps); RUNS runs over 500
# sessions per measurement.  Each round measures, in this order:
#   fg    one foreground backend running adk_run in a loop, a commit after
#         each run (0 ms model latency): runs/s;
#   q0    the same runs queued (adk_submit) for WORKERS job workers at 0 ms:
#         runs/s, and its ratio to fg (target >= 1);
#   q<L>  the same with the model answering after L ms: runs/s against the
#         limit min(in-flight / latency, fg), in-flight = min(WORKERS x
#         adk.worker_concurrency, sessions) (target >= 0.8).
# Then the medians of the rounds' figures and ratios.
#
#   bash test/bench/inflight.sh [runs (1000)] [latency ms (500)] [rounds (3)] [workers (4)]
#
# Run as a non-root user with the extension installed (as root the script
# re-runs itself as user adkci).  Starts its own cluster and model server.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
RUNS=${1:-1000}
LATENCY_MS=${2:-500}
ROUNDS=${3:-3}
WORKERS=${4:-4}
SESSIONS=500
bench_queue_cluster
bench_model_server
bench_queue_apps "$LATENCY_MS"
$PSQL >/dev/null <<'SQL'
CREATE PROCEDURE foreground(tag text, n int, sessions int, INOUT secs float8 DEFAULT 0)
LANGUAGE plpgsql AS $$
DECLARE t0 timestamptz := clock_timestamp();
BEGIN
  FOR i IN 1..n LOOP
    PERFORM count(*) FROM adk_run('bench_fast', 'u', tag || '-s' || (i % sessions), 'run ' || i);
    COMMIT;
  END LOOP;
  secs := extract(epoch FROM clock_timestamp() - t0);
END $$;
SQL
concurrency=$($PSQL -Atc "SELECT current_setting('adk.worker_concurrency')")
bench_set_workers "$WORKERS"

queued() {  # app tag: RUNS runs queued in one transaction; prints runs/s
    local app=$1 tag=$2 t0 left done failed t1
    $PSQL -c "TRUNCATE adk.jobs" >/dev/null
    t0=$($PSQL -At <<SQL
BEGIN;
SELECT count(adk_submit('$app', 'u', '$tag-s' || (i % $SESSIONS), 'run ' || i)) FROM generate_series(1, $RUNS) i \\g /dev/null
SELECT extract(epoch FROM clock_timestamp());
COMMIT;
SQL
)
    for _ in $(seq 6000); do
        left=$($PSQL -Atc "SELECT count(*) FROM adk.jobs WHERE status IN ('queued', 'running')")
        [ "$left" = 0 ] && break
        sleep 0.1
    done
    read -r done failed t1 < <($PSQL -At -F ' ' -c "SELECT count(*) FILTER (WHERE status = 'completed'), count(*) FILTER (WHERE status <> 'completed'), extract(epoch FROM max(finished_at)) FROM adk.jobs")
    [ "$failed" = 0 ] || { echo "$failed jobs did not complete:" >&2; $PSQL -c "SELECT status, error, count(*) FROM adk.jobs WHERE status <> 'completed' GROUP BY 1, 2" >&2; }
    awk -v n="$done" -v t0="$t0" -v t1="$t1" 'BEGIN { printf "%.1f", n / (t1 - t0) }'
}

inflight=$((WORKERS * concurrency)); [ "$inflight" -le "$SESSIONS" ] || inflight=$SESSIONS
echo "(machine load before: $(cut -d' ' -f1-3 /proc/loadavg))"
echo "$RUNS single-call runs over $SESSIONS sessions per figure; $WORKERS job workers, adk.worker_concurrency = $concurrency ($inflight in flight)"
printf '%5s %9s %9s %8s %9s %9s %8s\n' round "fg/s" "q0/s" "q0/fg" "q${LATENCY_MS}/s" "limit/s" "ratio"
fgcpu=(); fgmcpu=(); q0cpu=(); q0mcpu=(); fgs=(); q0s=(); r0s=(); qls=(); lims=(); rls=()
for r in $(seq "$ROUNDS"); do
    c0=$(bench_cpu)
    fg=$($PSQL -At -c "CALL foreground('fg$r', $RUNS, $SESSIONS)" | awk -v n="$RUNS" '{ printf "%.1f", n / $1 }')
    c1=$(bench_cpu)
    q0=$(queued bench_fast "q0r$r")
    c2=$(bench_cpu)
    ql=$(queued bench "qlr$r")
    read -r r0 lim rl < <(awk -v fg="$fg" -v q0="$q0" -v ql="$ql" -v f="$inflight" -v ms="$LATENCY_MS" 'BEGIN {
        lim = f * 1000 / ms; if (fg < lim) lim = fg;
        printf "%.2f %.1f %.2f\n", q0 / fg, lim, ql / lim }')
    printf '%5d %9s %9s %8s %9s %9s %8s\n' "$r" "$fg" "$q0" "$r0" "$ql" "$lim" "$rl"
    read -r fgpg fgms q0pg q0ms < <(echo "$c0 $c1 $c2" | awk -v n="$RUNS" '{
        printf "%.0f %.0f %.0f %.0f\n", ($3 - $1) * 1e6 / n, ($4 - $2) * 1e6 / n, ($5 - $3) * 1e6 / n, ($6 - $4) * 1e6 / n }')
    fgcpu+=("$fgpg"); fgmcpu+=("$fgms"); q0cpu+=("$q0pg"); q0mcpu+=("$q0ms")
    fgs+=("$fg"); q0s+=("$q0"); r0s+=("$r0"); qls+=("$ql"); lims+=("$lim"); rls+=("$rl")
done
printf '%5s %9s %9s %8s %9s %9s %8s\n' median "$(bench_median "${fgs[@]}")" "$(bench_median "${q0s[@]}")" \
    "$(bench_median "${r0s[@]}")" "$(bench_median "${qls[@]}")" "$(bench_median "${lims[@]}")" "$(bench_median "${rls[@]}")"
echo "CPU per run at 0 ms (medians; the whole cluster, then the model server): fg $(bench_median "${fgcpu[@]}") us + $(bench_median "${fgmcpu[@]}") us, q0 $(bench_median "${q0cpu[@]}") us + $(bench_median "${q0mcpu[@]}") us"
echo "targets: q0/fg >= 1 (the queue at 0 ms keeps up with one foreground backend); q${LATENCY_MS}/limit >= 0.8"
echo "(machine load after: $(cut -d' ' -f1-3 /proc/loadavg))"
