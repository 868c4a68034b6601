#!/usr/bin/env bash
# Benchmark: adk_generate calls per second against the local model server
# at 0 ms latency, and in the same run the same N request bodies sent by one
# curl process that reuses its connection (a -K config listing N requests).
# Then the backend's memory after 100 calls, after MEM_CALLS (10,000) and
# after twice that.
#
#   bash test/bench/generate.sh [N] [rounds]
#
# Run as a non-root user with the extension installed (as root the script
# re-runs itself as user adkci).  Starts its own cluster and model server.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
N=${1:-1000}
ROUNDS=${2:-5}
MEM_CALLS=${MEM_CALLS:-10000}
bench_cluster
bench_model_server
KEY=sk-bench-key

$PSQL -v url="$ADK_TEST_MODEL_URL" -v key="$KEY" >/dev/null <<'SQL'
CREATE EXTENSION adk_runner;
SELECT adk_set_secret('k', :'key', ARRAY['127.0.0.1']);
SELECT adk_define_model('bench', 'openai', :'url' || '/v1', 'gpt-bench', api_key_secret => 'k');
CREATE FUNCTION bench(n int) RETURNS float8 LANGUAGE plpgsql AS $$
DECLARE t0 timestamptz := clock_timestamp();
BEGIN
  FOR i IN 1..n LOOP
    PERFORM adk_generate('bench', '[{"role": "user", "parts": [{"text": "hello, how are you today?"}]}]');
  END LOOP;
  RETURN extract(epoch FROM clock_timestamp() - t0) * 1e6 / n;
END $$;
SELECT bench(50);
SQL
if [ -n "${ADK_BENCH_NO_BODIES:-}" ]; then $PSQL -c "ALTER DATABASE postgres SET adk.model_calls_bodies = off" >/dev/null; fi
# the exact body adk_generate sends
$PSQL -Atc "SELECT request FROM adk.model_calls ORDER BY id DESC LIMIT 1" >"$CLUSTER_DIR/body.json"
CFG=$CLUSTER_DIR/curl.cfg
for i in $(seq "$N"); do
    [ "$i" -gt 1 ] && echo next
    printf 'url = "%s/v1/chat/completions"\nheader = "Content-Type: application/json"\nheader = "Authorization: Bearer %s"\ndata-binary = "@%s"\noutput = "/dev/null"\nwrite-out = "%%{num_connects}\\n"\n' \
        "$ADK_TEST_MODEL_URL" "$KEY" "$CLUSTER_DIR/body.json"
done >"$CFG"

echo "adk_generate vs one curl process reusing its connection: $N calls x $ROUNDS rounds, model server at 0 ms"
ours=()
curls=()
for r in $(seq "$ROUNDS"); do
    $PSQL -c "TRUNCATE adk.model_calls" >/dev/null
    o=$($PSQL -Atc "SELECT round(bench($N)::numeric, 1)")
    t0=$(date +%s%N)
    conns=$(curl -s -K "$CFG" -w '%{num_connects}\n' | awk '{s += $1} END {print s}')
    t1=$(date +%s%N)
    c=$(awk -v a="$t0" -v b="$t1" -v n="$N" 'BEGIN {printf "%.1f", (b - a) / 1000 / n}')
    ours+=("$o")
    curls+=("$c")
    printf 'round %d: adk_generate %8s us/call (%5.0f calls/s)   curl %8s us/call (%5.0f calls/s, %s connection)\n' \
        "$r" "$o" "$(awk -v x="$o" 'BEGIN {print 1e6 / x}')" "$c" "$(awk -v x="$c" 'BEGIN {print 1e6 / x}')" "$conns"
done
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
mo=$(median "${ours[@]}")
mc=$(median "${curls[@]}")
echo "median: adk_generate $mo us/call, curl $mc us/call, ratio $(awk -v o="$mo" -v c="$mc" 'BEGIN {printf "%.2f", o / c}') (target <= 1.2)"

# memory of one backend: after 100 calls, after MEM_CALLS, after twice
# that.  RssAnon is the backend's private memory (what libcurl and json-c
# malloc, too), leaving out the shared buffers it touches.  The figures go
# into psql variables, not a table: a temporary table's local buffers
# would be counted as growth.
$PSQL -At <<SQL
\o /dev/null
SELECT bench(100);
SELECT substring(pg_read_file('/proc/self/status') FROM 'RssAnon:\s+([0-9]+)') AS r1,
       (SELECT (sum(total_bytes) / 1024)::bigint FROM pg_backend_memory_contexts) AS c1 \gset
SELECT bench($((MEM_CALLS - 100)));
SELECT substring(pg_read_file('/proc/self/status') FROM 'RssAnon:\s+([0-9]+)') AS r2,
       (SELECT (sum(total_bytes) / 1024)::bigint FROM pg_backend_memory_contexts) AS c2 \gset
SELECT bench($MEM_CALLS);
SELECT substring(pg_read_file('/proc/self/status') FROM 'RssAnon:\s+([0-9]+)') AS r3,
       (SELECT (sum(total_bytes) / 1024)::bigint FROM pg_backend_memory_contexts) AS c3 \gset
\o
\pset format aligned
\pset tuples_only off
SELECT * FROM (VALUES (100, :r1, :c1), ($MEM_CALLS, :r2, :c2), ($((2 * MEM_CALLS)), :r3, :c3))
    AS m ("calls made", "backend private memory (kB)", "memory contexts (kB)");
SQL
