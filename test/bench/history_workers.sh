#!/usr/bin/env bash
# Benchmark: history.sh's new run, through adk_submit and the job workers
# (across workers): a job's non-model time at 10 / 1,000 /
# 3,000 events, and how often a session's job ran in the worker that ran
# its last one and went on from what that worker kept of it
# (src/runner/prompt_carry.c; the worker logs each at DEBUG1).
#
#   bash test/bench/history_workers.sh [rounds (5)] [sizes ("10 1000 3000")] [workers ("1 4")]
#
# CARRY=64MB sets adk.history_carry_size (default: the server's, 8 MB),
# AFFINITY=0 adk.worker_affinity_delay (default 150 ms; 0: off),
# CONCURRENCY=16 adk.worker_concurrency (default 64: one worker may take
# all 64 sessions' first turns at once), CONF='synchronous_commit = off'
# any other postgresql.conf line.
#
# Per worker count and size: "rounds" sessions of that many events, then
# their previous turns, one job after another (a job is submitted when the
# one before ended), then their next turns, measured, in the same order:
# between two jobs of a session run the other sessions' jobs.  A job's
# non-model time is its invocation's ended_at - started_at minus its model
# call's latency_ms (one job runs at a time, so nothing else is in it).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
ROUNDS=${1:-5}
SIZES=${2:-"10 1000 3000"}
WORKERS=${3:-"1 4"}
settings=("log_min_messages = debug1" "adk.worker_idle_timeout = '10min'")
[ -z "${CARRY:-}" ] || settings+=("adk.history_carry_size = '$CARRY'")
[ -z "${AFFINITY:-}" ] || settings+=("adk.worker_affinity_delay = '$AFFINITY'")
[ -z "${CONCURRENCY:-}" ] || settings+=("adk.worker_concurrency = $CONCURRENCY")
[ -z "${CONF:-}" ] || settings+=("$CONF")
bench_queue_cluster "${settings[@]}"
bench_model_server

$PSQL -v url="$ADK_TEST_MODEL_URL" >/dev/null <<'SQL'
CREATE EXTENSION adk_runner;
SELECT adk_set_secret('k', 'sk-bench', ARRAY['127.0.0.1']);
SELECT adk_define_model('local', 'openai', :'url' || '/v1', 'gpt-test', api_key_secret => 'k');
SELECT adk_define_agent('chat_agent', model => 'local', instruction => 'You answer questions.');
SELECT adk_define_app('hist_app', 'chat_agent');
CREATE TABLE timing (workers int, size int, own_us float8, same_worker bool, inv text);
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
SQL

# one job on session $1, waited for; its invocation id
job() {
    local inv
    inv=$($PSQL -At -c "SELECT adk_submit('hist_app', 'u', '$1', 'And tomorrow?')")
    for _ in $(seq 3000); do
        [ "$($PSQL -At -c "SELECT status IN ('completed', 'failed') FROM adk.jobs WHERE invocation_id = '$inv'")" = t ] && break
        sleep 0.01
    done
    echo "$inv"
}

echo "a new single-call job's non-model time by history length (openai, model server at 0 ms, no compaction), $ROUNDS sessions interleaved"
declare -A first last
for w in $WORKERS; do
    bench_set_workers "$w"
    for n in $SIZES; do
        for r in $(seq "$ROUNDS"); do
            $PSQL -c "CALL make_session('w$w-h$n-$r', $n)"
        done
        log0=$(wc -c < "$CLUSTER_DIR/server.log")
        for r in $(seq "$ROUNDS"); do job "w$w-h$n-$r" >/dev/null; done
        for r in $(seq "$ROUNDS"); do
            inv=$(job "w$w-h$n-$r")
            $PSQL -c "INSERT INTO timing
                SELECT $w, $n, extract(epoch FROM i.ended_at - i.started_at) * 1e6
                               - (SELECT sum(c.latency_ms) * 1000 FROM adk.model_calls c WHERE c.invocation_id = i.invocation_id),
                       (SELECT j.worker_pid FROM adk.jobs j WHERE j.invocation_id = i.invocation_id)
                       = (SELECT p.worker_pid FROM adk.jobs p WHERE p.session_id = i.session_id
                            AND p.invocation_id <> i.invocation_id ORDER BY p.id DESC LIMIT 1),
                       i.invocation_id
                  FROM adk.invocations i WHERE i.invocation_id = '$inv' AND i.status = 'completed'"
        done
        taken=$(tail -c +"$((log0 + 1))" "$CLUSTER_DIR/server.log" | grep -c "goes on from the history the backend kept of it" || true)
        kept=$(tail -c +"$((log0 + 1))" "$CLUSTER_DIR/server.log" | sed -n 's/.*goes on from the history the backend kept of it (\([0-9]*\) bytes.*/\1/p' | sort -n | tail -1)
        mapfile -t own < <($PSQL -At -c "SELECT round(own_us::numeric, 0) FROM timing WHERE workers = $w AND size = $n ORDER BY own_us")
        same=$($PSQL -At -c "SELECT count(*) FILTER (WHERE same_worker) FROM timing WHERE workers = $w AND size = $n")
        mo=$(bench_median "${own[@]}")
        printf '%d workers, %6d events: %9s us per new job (jobs: %s); in the last worker: %s of %s, carry taken: %s (largest kept: %s bytes)\n' \
            "$w" "$n" "$mo" "${own[*]}" "$same" "${#own[@]}" "$taken" "${kept:-none}"
        [ -n "${first[$w]:-}" ] || first[$w]=$mo
        last[$w]=$mo
    done
done
# Then, per worker count, 64 sessions of 10 events whose turns are queued
# all at once, three times (each time when the last ended): how many of
# the second and third turns ran in the worker that ran the session's turn
# before, and how many went on from what it kept.
for w in $WORKERS; do
    bench_set_workers "$w"
    $PSQL -c "SELECT count(*) FROM generate_series(1, 64) i, LATERAL (SELECT adk_create_session('hist_app', 'u', 'all$w-' || i)) x" >/dev/null
    log0=$(wc -c < "$CLUSTER_DIR/server.log")
    for t in 1 2 3; do
        $PSQL -c "SELECT count(adk_submit('hist_app', 'u', 'all$w-' || i, 'Turn $t')) FROM generate_series(1, 64) i" >/dev/null
        for _ in $(seq 3000); do
            [ "$($PSQL -At -c "SELECT count(*) = 0 FROM adk.jobs WHERE status IN ('queued', 'running')")" = t ] && break
            sleep 0.02
        done
        [ "$t" = 1 ] && log0=$(wc -c < "$CLUSTER_DIR/server.log")
    done
    taken=$(tail -c +"$((log0 + 1))" "$CLUSTER_DIR/server.log" | grep -c "goes on from the history the backend kept of it" || true)
    read -r same workers_used < <($PSQL -At -F ' ' -c "
      SELECT count(*) FILTER (WHERE j.worker_pid = (SELECT p.worker_pid FROM adk.jobs p
                                WHERE p.session_id = j.session_id AND p.id < j.id ORDER BY p.id DESC LIMIT 1)),
             (SELECT count(DISTINCT worker_pid) FROM adk.jobs WHERE session_id LIKE 'all$w-%')
        FROM adk.jobs j
       WHERE j.session_id LIKE 'all$w-%' AND j.id > (SELECT min(id) + 63 FROM adk.jobs WHERE session_id LIKE 'all$w-%')")
    printf '%d workers (%s ran jobs), 64 sessions queued together: of 128 next turns, %s in the last worker, carry taken: %s\n' \
        "$w" "$workers_used" "$same" "$taken"
done
set -- $SIZES
for w in $WORKERS; do
    echo "ratio ${!#}/$1 events, $w workers: $(awk -v a="${last[$w]}" -v b="${first[$w]}" 'BEGIN {printf "%.2f", a / b}')"
done
echo "(target: at most 3)"
