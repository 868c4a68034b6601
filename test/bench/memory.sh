#!/usr/bin/env bash
# Benchmark: memory (docs/memory.md).
#
#   bash test/bench/memory.sh [entries] [queries]
#
# Run as a non-root user with the extension installed (root: the script
# re-runs itself as user adkci).  It starts its own throw-away cluster
# (PGBIN selects the PostgreSQL 15 tree, as for test/scripts/cluster.sh).
#
# 1. Add throughput: `entries` events with text (default 100000) are
#    appended to sessions of 100 events each, of one user, with
#    adk_append_event; then every session goes to memory with
#    adk_add_session_to_memory, one call per session, committed every 10
#    sessions.  Reported: entries added per second (and the append rate,
#    for scale).  A second pass over the same sessions (the idempotent case:
#    nothing new) is timed too.
# 2. Search latency: `queries` (default 1000) adk_search_memory calls of
#    3 to 6 words over that user's entries, max_results 10, each timed on
#    its own; p50, p90, p99 and max.  Words follow a power law over a
#    vocabulary of 5000 whose 30 most frequent words are English stop words:
#    under 'simple' (the default) most queries share a word with a large
#    share of the entries, all of which must be ranked (the costly case of
#    any-word matching); under 'english' (the entries re-added under it) stop
#    words are dropped from entries and queries.
# 3. Semantic search (unless MEMORY_BENCH_EMBEDDINGS=0): the entries added
#    again with an embedding model -- the bundled local model server at 0 ms
#    latency, 64-dimensional vectors -- then the same queries, each embedded
#    and ranked by cosine over all of the user's entries and fused with the
#    'english' full-text ranking.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
N=${1:-100000}
Q=${2:-1000}
bench_cluster "shared_buffers = '256MB'" "work_mem = '16MB'"

$PSQL <<SQL
CREATE EXTENSION adk_runner;
CREATE SCHEMA bench;
CREATE TABLE bench.timing (what text, n bigint, ms float8);
CREATE TABLE bench.lat (config text, ms float8);

-- a word of the vocabulary: rank 1..5000, drawn with a power law; the 30
-- most frequent are English stop words, the rest made-up words
CREATE FUNCTION bench.word() RETURNS text LANGUAGE sql AS \$\$
  SELECT CASE WHEN r <= 30
              THEN (ARRAY['the', 'of', 'and', 'a', 'to', 'in', 'is', 'you', 'that', 'it',
                          'he', 'was', 'for', 'on', 'are', 'as', 'with', 'his', 'they', 'i',
                          'at', 'be', 'this', 'have', 'from', 'or', 'my', 'had', 'by', 'what'])[r]
              ELSE translate(substr(md5(r::text), 1, 7), '0123456789', 'ghijklmnop') END
    FROM (SELECT floor(power(5000, random()))::int AS r) x \$\$;
CREATE FUNCTION bench.sentence(lo int, hi int) RETURNS text LANGUAGE sql AS \$\$
  SELECT string_agg(bench.word(), ' ') FROM generate_series(1, lo + floor(random() * (hi - lo + 1))::int) \$\$;

CREATE PROCEDURE bench.append(n int) LANGUAGE plpgsql AS \$\$
DECLARE t0 timestamptz := clock_timestamp(); s int;
BEGIN
  FOR i IN 0..n - 1 LOOP
    s := i / 100;
    IF i % 100 = 0 THEN
      PERFORM adk_create_session('bench', 'u', 's' || s);
      COMMIT;
    END IF;
    PERFORM adk_append_event('bench', 'u', 's' || s,
      jsonb_build_object('author', CASE WHEN i % 2 = 0 THEN 'user' ELSE 'agent' END,
                         'content', jsonb_build_object('role', CASE WHEN i % 2 = 0 THEN 'user' ELSE 'model' END,
                                                       'parts', jsonb_build_array(jsonb_build_object('text', bench.sentence(8, 20))))));
  END LOOP;
  COMMIT;
  INSERT INTO bench.timing VALUES ('append', n, extract(epoch FROM clock_timestamp() - t0) * 1000);
  COMMIT;
END \$\$;

CREATE PROCEDURE bench.add(what text) LANGUAGE plpgsql AS \$\$
DECLARE t0 timestamptz := clock_timestamp(); total bigint := 0; k int := 0; r record;
BEGIN
  FOR r IN SELECT id FROM adk.sessions WHERE app_name = 'bench' AND user_id = 'u' ORDER BY id LOOP
    total := total + adk_add_session_to_memory('bench', 'u', r.id);
    k := k + 1;
    IF k % 10 = 0 THEN COMMIT; END IF;
  END LOOP;
  COMMIT;
  INSERT INTO bench.timing VALUES (what, total, extract(epoch FROM clock_timestamp() - t0) * 1000);
  COMMIT;
END \$\$;

CREATE PROCEDURE bench.search(config text, q int) LANGUAGE plpgsql AS \$\$
DECLARE t0 timestamptz; query text; n int;
BEGIN
  FOR i IN 1..q LOOP
    query := bench.sentence(3, 6);
    t0 := clock_timestamp();
    SELECT count(*) INTO n FROM adk_search_memory('bench', 'u', query);
    INSERT INTO bench.lat VALUES (config, extract(epoch FROM clock_timestamp() - t0) * 1000);
  END LOOP;
END \$\$;
SQL

$PSQL -c "SELECT setseed(0.14)" -c "CALL bench.append($N)"
$PSQL -c "CALL bench.add('add')"
$PSQL -c "CALL bench.add('add again (nothing new)')"
$PSQL -c "VACUUM ANALYZE adk.memory"
$PSQL -c "SELECT setseed(0.5)" -c "CALL bench.search('simple', 10)" -c "DELETE FROM bench.lat" \
      -c "CALL bench.search('simple', $Q)"
# the same entries under 'english': an app row to hold the option
$PSQL <<'SQL'
SELECT adk_define_model('m', 'openai', 'http://127.0.0.1:9/v1', 'x');
SELECT adk_define_agent('a', model => 'm');
SELECT adk_define_app('bench', 'a');
SELECT adk_define_app_memory('bench', 'english');
TRUNCATE adk.memory;
SQL
$PSQL -c "CALL bench.add('add (english)')"
$PSQL -c "VACUUM ANALYZE adk.memory"
$PSQL -c "SELECT setseed(0.5)" -c "CALL bench.search('english', 10)" -c "DELETE FROM bench.lat WHERE config = 'english'" \
      -c "CALL bench.search('english', $Q)"

if [ "${MEMORY_BENCH_EMBEDDINGS:-1}" != 0 ]; then
    bench_model_server
    $PSQL <<SQL
SELECT adk_set_secret('k', 'sk-bench', ARRAY['127.0.0.1']);
SELECT adk_define_model('emb', 'openai', '$ADK_TEST_MODEL_URL/v1', 'emb-bench', api_key_secret => 'k');
SELECT adk_define_app_memory('bench', 'english', embedding_model => 'emb', min_similarity => 0.3);
TRUNCATE adk.memory;
SQL
    $PSQL -c "CALL bench.add('add (english + embeddings)')"
    $PSQL -c "VACUUM ANALYZE adk.memory"
    $PSQL -c "SELECT setseed(0.5)" -c "CALL bench.search('english + embeddings', 10)" \
          -c "DELETE FROM bench.lat WHERE config = 'english + embeddings'" \
          -c "CALL bench.search('english + embeddings', $Q)"
    model_server_stop
fi

echo "memory benchmark: $N entries of one user, $Q queries each"
$PSQL -c "SELECT what, n AS entries, round(ms::numeric) AS ms,
                 round((n / nullif(ms, 0) * 1000)::numeric) AS per_second
            FROM bench.timing ORDER BY ctid"
$PSQL -c "SELECT config,
                 round(percentile_cont(0.5) WITHIN GROUP (ORDER BY ms)::numeric, 2) AS p50_ms,
                 round(percentile_cont(0.9) WITHIN GROUP (ORDER BY ms)::numeric, 2) AS p90_ms,
                 round(percentile_cont(0.99) WITHIN GROUP (ORDER BY ms)::numeric, 2) AS p99_ms,
                 round(max(ms)::numeric, 2) AS max_ms
            FROM bench.lat GROUP BY config ORDER BY min(ctid)"
$PSQL -c "SELECT pg_size_pretty(pg_total_relation_size('adk.memory')) AS memory_table,
                 pg_size_pretty(pg_relation_size('adk.memory_search_idx')) AS gin_index"
cluster_stop
