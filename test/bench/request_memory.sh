#!/usr/bin/env bash
# Benchmark: a run's memory against the bytes of the request it sends.
#
#   bash test/bench/request_memory.sh [repeats] [sizes in MB]
#
# Run as a non-root user with the extension installed (root: the script
# re-runs itself as user adkci).  It starts its own throw-away cluster
# (PGBIN selects the PostgreSQL 15 tree, as for test/scripts/cluster.sh)
# and the local model server.
#
# For each size S (default 1 20 100 MB) a session of 12 events of S/12
# bytes of text each (less 1%, so that 20 MB fits in the default limit) (user and model turns, as a long conversation would
# have) is stored, and one adk_run on it makes one model call whose request
# carries that history.  Each run is made in a new backend: a small run
# first (the extension loaded, its caches and plans made), then VmHWM of
# /proc/self/status (the backend's peak resident memory) is read, the big
# run is made and VmHWM read again.  Printed per size: the request's bytes
# (as stored in adk.model_calls), the peak minus the baseline of each
# repeat (default 3), their median, and the median over the request's
# bytes.  adk.max_request_bytes is raised to 200 MB for the sizes above
# its default (20 MB), which also moves the size up to which a run keeps
# memos of its requests (a 32nd of it).  shared_buffers is 16 MB, so that the shared pages the
# backend touches count for little in its resident memory.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
REPEATS=${1:-3}
shift || true
SIZES=${*:-1 20 100}
bench_cluster "shared_buffers = '16MB'" "adk.max_event_size = '100MB'"
bench_model_server

$PSQL -v url="$ADK_TEST_MODEL_URL" >/dev/null <<'SQL'
CREATE EXTENSION adk_runner;
SELECT adk_set_secret('k', 'sk-bench', ARRAY['127.0.0.1']);
SELECT adk_define_model('local', 'openai', :'url' || '/v1', 'gpt-bench', api_key_secret => 'k');
SELECT adk_define_agent('big_agent', model => 'local', instruction => 'You answer briefly.');
SELECT adk_define_app('big_app', 'big_agent');
CREATE FUNCTION vmhwm_kb() RETURNS bigint LANGUAGE sql AS $$
  SELECT substring(pg_read_file('/proc/self/status') FROM 'VmHWM:\s+(\d+) kB')::bigint $$;
-- adk.max_request_bytes, where the build has it and the size needs it
-- (after a run: the library defines it when it is loaded)
CREATE FUNCTION raise_limit(mb int) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  IF mb > 20 AND EXISTS (SELECT FROM pg_settings WHERE name = 'adk.max_request_bytes') THEN
    PERFORM set_config('adk.max_request_bytes', '200MB', false);
  END IF;
END $$;
SQL

printf '%8s  %12s  %s\n' "size_MB" "request_MB" "peak-baseline MB per repeat -> median (x request)"
for mb in $SIZES; do
    $PSQL -v mb="$mb" >/dev/null <<'SQL'
SELECT adk_create_session('big_app', 'u', 'big' || :mb);
SELECT adk_append_event('big_app', 'u', 'big' || :mb,
         jsonb_build_object('author', CASE WHEN i % 2 = 1 THEN 'user' ELSE 'big_agent' END,
                            'content', jsonb_build_object(
                              'role', CASE WHEN i % 2 = 1 THEN 'user' ELSE 'model' END,
                              'parts', jsonb_build_array(jsonb_build_object(
                                'text', i || ' ' || repeat('history ', (:mb * 1048576 * 0.99 / 12 / 8)::int))))))
  FROM generate_series(1, 12) i;
SQL
    peaks=()
    for r in $(seq "$REPEATS"); do
        out=$($PSQL -At -v mb="$mb" -v r="$r" <<'SQL'
SELECT adk_create_session('big_app', 'u', 'warm' || :mb || '-' || :r);
SELECT count(*) FROM (SELECT adk_run('big_app', 'u', 'warm' || :mb || '-' || :r, 'hi')) x;
SELECT raise_limit(:mb);
SELECT vmhwm_kb() AS base \gset
SELECT count(*) FROM (SELECT adk_run('big_app', 'u', 'big' || :mb, 'hi')) x;
SELECT vmhwm_kb() - :base;
SQL
)
        peaks+=("$(echo "$out" | tail -1)")
    done
    req=$($PSQL -At -c "SELECT round(octet_length(request::text) / 1048576.0, 1) FROM adk.model_calls
                        WHERE octet_length(request::text) > $mb * 900000 ORDER BY created_at DESC LIMIT 1")
    err=$($PSQL -At -c "SELECT coalesce(string_agg(DISTINCT error_code, ','), '') FROM adk.model_calls")
    sorted=$(printf '%s\n' "${peaks[@]}" | sort -n)
    median=$(echo "$sorted" | awk '{a[NR]=$1} END {print a[int((NR + 1) / 2)]}')
    printf '%8s  %12s  %s -> %s MB (%s x)%s\n' "$mb" "${req:-?}" \
        "$(printf '%s ' "${peaks[@]}" | awk '{for (i = 1; i <= NF; i++) printf "%.0f ", $i / 1024}')" \
        "$(awk -v m="$median" 'BEGIN {printf "%.0f", m / 1024}')" \
        "$(awk -v m="$median" -v q="${req:-0}" 'BEGIN {if (q > 0) printf "%.1f", m / 1024 / q; else print "?"}')" \
        "${err:+  (errors: $err)}"
done
