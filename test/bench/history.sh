#!/usr/bin/env bash
# Benchmark: a new run's non-model time against the length of the session's
# history, without compaction.
#
#   bash test/bench/history.sh [rounds (5)] [sizes ("10 1000 3000")]
#
# Per size and round: a session of that many events (questions and answers,
# written by adk_append_event) and a run on it, the conversation's previous
# turn; then the next turn, a new single-call run (its own adk_run, its own
# transaction), measured twice over:
#  - "same backend": in the backend that ran the previous turn, which kept
#    what that run assembled (src/runner/prompt_carry.c);
#  - "other backend": in a new connection, after a warm-up run on a small
#    session there (plans, caches, the library), so the run reads and
#    assembles the whole history.
# A run's non-model time is its wall time minus its model call's latency_ms
# from adk.model_calls (HTTP and the python server's parse of the request).
# Prints the medians per size and the ratios of the last size to the first
# (the target, for the same backend: at most 3).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
ROUNDS=${1:-5}
SIZES=${2:-"10 1000 3000"}
bench_cluster
bench_model_server

$PSQL -v url="$ADK_TEST_MODEL_URL" >/dev/null <<'SQL'
CREATE EXTENSION adk_runner;
SELECT adk_set_secret('k', 'sk-bench', ARRAY['127.0.0.1']);
SELECT adk_define_model('local', 'openai', :'url' || '/v1', 'gpt-test', api_key_secret => 'k');
SELECT adk_define_agent('chat_agent', model => 'local', instruction => 'You answer questions.');
SELECT adk_define_app('hist_app', 'chat_agent');

CREATE TABLE timing (size int, backend text, own_us float8, messages int);
-- a session of n events: user questions and the agent's answers
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
-- one new run on session s (of n events before the benchmark's runs): its
-- own time, when timed (backend: which of the two)
CREATE PROCEDURE one_run(s text, n int, backend text) LANGUAGE plpgsql AS $$
DECLARE t0 timestamptz; wall_us float8; model_us float8; msgs int; inv text;
BEGIN
  t0 := clock_timestamp();
  SELECT max(e.invocation_id) INTO inv FROM adk_run('hist_app', 'u', s, 'And tomorrow?') e;
  wall_us := extract(epoch FROM clock_timestamp() - t0) * 1e6;
  SELECT sum(c.latency_ms) * 1000, max(jsonb_array_length(c.request -> 'messages')), count(*)
    INTO model_us, msgs FROM adk.model_calls c WHERE c.invocation_id = inv;
  IF msgs IS NULL THEN
    RAISE EXCEPTION 'run on % made no model call', s;
  END IF;
  IF backend IS NOT NULL THEN
    INSERT INTO timing VALUES (n, backend, wall_us - model_us, msgs);
  END IF;
  COMMIT;
END $$;
SQL

echo "a new single-call run's non-model time by history length (openai, model server at 0 ms, no compaction), $ROUNDS rounds"
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
declare -A first last
for n in $SIZES; do
    $PSQL -c "TRUNCATE timing"
    for r in $(seq "$ROUNDS"); do
        s="h$n-$r"
        # the conversation so far, its previous turn, and its next one
        $PSQL -c "CALL make_session('$s', $n)" -c "CALL one_run('$s', $n, NULL)" \
              -c "CALL one_run('$s', $n, 'same')"
        # the turn after, in a new backend after a warm-up run there
        $PSQL -c "CALL make_session('w$s', 10)" -c "CALL one_run('w$s', 10, NULL)" \
              -c "CALL one_run('$s', $n, 'other')"
    done
    m=$($PSQL -At -c "SELECT max(messages) FROM timing")
    for b in same other; do
        mapfile -t own < <($PSQL -At -c "SELECT round(own_us::numeric, 0) FROM timing WHERE backend = '$b' ORDER BY own_us")
        mo=$(median "${own[@]}")
        printf '%6d events, %-13s %9s us per new run (runs: %s; requests of up to %s messages)\n' \
            "$n" "$b backend:" "$mo" "${own[*]}" "$m"
        [ -n "${first[$b]:-}" ] || first[$b]=$mo
        last[$b]=$mo
    done
done
set -- $SIZES
for b in same other; do
    echo "ratio ${!#}/$1 events, $b backend: $(awk -v a="${last[$b]}" -v b="${first[$b]}" 'BEGIN {printf "%.2f", a / b}')"
done
echo "(target: at most 3 for the next turn in the backend that ran the previous one)"
