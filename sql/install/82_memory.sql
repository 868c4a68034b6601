-- ---------------------------------------------------------------------
-- Memory (docs/memory.md): ADK's MemoryService as a table.
--
-- Entries per (app, user): the text of one event, its author and time,
-- the session and event it came from.  The tsvector is computed by the
-- extension (a generated column) with the app's text search configuration
-- at the time the entry was added; adk_search_memory parses the query
-- with the app's current one.  An entry matches when it shares any word
-- (lexeme) of the query, as ADK's in-memory service matches any word;
-- ts_rank_cd orders them.  A search only ever reads the given user's
-- entries.  Memory outlives the session it came from (it is long-term
-- memory): deleting a session keeps its entries.
--
-- Semantic search (optional): an app with an embedding model embeds its
-- entries as they are added (real[], batches of 100) and each query; the
-- full-text ranking and the cosine ranking (entries at least
-- memory_min_similarity alike) are fused by reciprocal rank fusion,
-- 1 / (60 + rank) summed over both.  Embeddings are ranked in C
-- (adk._cosine) over the user's entries: pgvector is not packaged for
-- Debian 12's PostgreSQL.  A query whose embedding fails falls back to
-- full-text search alone, with a warning.  Inside a run the embeddings are
-- requested in one of its steps and consumed in a later one, so the run
-- waits for them without holding its process (src/runner/builtin_tools.c:
-- adk._memory_pending, then adk._memory_insert; adk._memory_search_vec);
-- called from SQL, these functions wait inside their own call.
-- ---------------------------------------------------------------------

-- App options: the text search configuration of its memory, and whether
-- every completed invocation is added to memory (off: ADK's Runner never
-- adds implicitly).
ALTER TABLE adk.apps
    ADD COLUMN memory_search_config regconfig NOT NULL DEFAULT 'pg_catalog.simple',
    ADD COLUMN add_to_memory boolean NOT NULL DEFAULT false,
    ADD COLUMN memory_embedding_model text REFERENCES adk.models (name),
    ADD COLUMN memory_min_similarity real NOT NULL DEFAULT 0.3
        CHECK (memory_min_similarity BETWEEN -1 AND 1);
COMMENT ON COLUMN adk.apps.memory_search_config IS 'text search configuration of the app''s memory (adk_search_memory), e.g. simple or english';
COMMENT ON COLUMN adk.apps.add_to_memory IS 'add every completed invocation''s events to memory (off by default, as in ADK)';
COMMENT ON COLUMN adk.apps.memory_embedding_model IS 'model that embeds memory entries and queries for semantic search (NULL: full-text search only)';
COMMENT ON COLUMN adk.apps.memory_min_similarity IS 'least cosine similarity for an entry to be a semantic match';

-- Embeddings (src/model/embed.c): one real[] per text, in order; the
-- cosine similarity of two (NULL when lengths differ or one is zero).
CREATE FUNCTION adk._embed(model text, texts text[]) RETURNS SETOF real[]
    AS 'MODULE_PATHNAME', 'adk_embed_sql' LANGUAGE C VOLATILE;
CREATE FUNCTION adk._cosine(a real[], b real[]) RETURNS real
    AS 'MODULE_PATHNAME', 'adk_cosine_sql' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE SEQUENCE adk.memory_id_seq;
CREATE TABLE adk.memory (
    id            bigint NOT NULL DEFAULT pg_catalog.nextval('adk.memory_id_seq') PRIMARY KEY,
    app_name      text NOT NULL,
    user_id       text NOT NULL,
    session_id    text NOT NULL,
    event_id      text NOT NULL,
    author        text,
    "timestamp"   timestamptz NOT NULL,
    text          text NOT NULL,
    search_config regconfig NOT NULL,
    search        tsvector NOT NULL GENERATED ALWAYS AS (pg_catalog.to_tsvector(search_config, pg_catalog.left(text, 100000))) STORED,
    embedding     real[],
    created_at    timestamptz NOT NULL DEFAULT pg_catalog.clock_timestamp(),
    CONSTRAINT memory_source_key UNIQUE (app_name, user_id, session_id, event_id)
);
ALTER SEQUENCE adk.memory_id_seq OWNED BY adk.memory.id;
CREATE INDEX memory_search_idx ON adk.memory USING gin (search);
COMMENT ON TABLE adk.memory IS 'ADK memory: the text of past events per (app, user), with its source session and event, full-text searchable';
COMMENT ON COLUMN adk.memory.search IS 'to_tsvector(search_config, text), kept by the extension (the first 100000 characters of the text are searchable)';

-- The app's search configuration ('simple' for an app not defined).
CREATE FUNCTION adk._memory_config(app_name text) RETURNS regconfig
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
    SELECT coalesce((SELECT a.memory_search_config FROM adk.apps a
                                 WHERE a.name OPERATOR(pg_catalog.=) $1),
                               'pg_catalog.simple'::pg_catalog.regconfig)
$$;

-- The text of an event: its text parts (not thoughts), one per line;
-- NULL when it has none.
CREATE FUNCTION adk._event_text(event_data jsonb) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE SET search_path = pg_catalog, pg_temp AS $$
    SELECT pg_catalog.string_agg(p.part OPERATOR(pg_catalog.->>) 'text', E'\n' ORDER BY p.n)
      FROM pg_catalog.jsonb_array_elements(
               CASE WHEN pg_catalog.jsonb_typeof(event_data OPERATOR(pg_catalog.#>) '{content,parts}')
                         OPERATOR(pg_catalog.=) 'array'
                    THEN event_data OPERATOR(pg_catalog.#>) '{content,parts}' ELSE '[]' END)
           WITH ORDINALITY AS p(part, n)
     WHERE pg_catalog.jsonb_typeof(p.part OPERATOR(pg_catalog.->) 'text') OPERATOR(pg_catalog.=) 'string'
       AND p.part OPERATOR(pg_catalog.->>) 'text' OPERATOR(pg_catalog.<>) ''
       AND coalesce(p.part OPERATOR(pg_catalog.->) 'thought', 'false') OPERATOR(pg_catalog.<>) 'true'
$$;

-- The live events with text of a session (of one invocation when given)
-- that are not in memory yet, in order: what adding them adds.
CREATE FUNCTION adk._memory_pending(app_name text, user_id text, session_id text,
                                    invocation_id text DEFAULT NULL)
RETURNS TABLE (event_id text, text text)
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
    SELECT e.id, t.text
      FROM adk.live_events e
     CROSS JOIN LATERAL (SELECT adk._event_text(e.event_data) AS text) t
     WHERE e.app_name OPERATOR(pg_catalog.=) $1 AND e.user_id OPERATOR(pg_catalog.=) $2
       AND e.session_id OPERATOR(pg_catalog.=) $3
       AND ($4 IS NULL OR e.invocation_id OPERATOR(pg_catalog.=) $4)
       AND t.text IS NOT NULL
       AND coalesce(e.event_data OPERATOR(pg_catalog.->) 'partial', 'false') OPERATOR(pg_catalog.<>) 'true'
       AND NOT EXISTS (SELECT 1 FROM adk.memory m
                        WHERE m.app_name OPERATOR(pg_catalog.=) $1 AND m.user_id OPERATOR(pg_catalog.=) $2
                          AND m.session_id OPERATOR(pg_catalog.=) $3 AND m.event_id OPERATOR(pg_catalog.=) e.id)
     ORDER BY e.seq
$$;

-- Add those events of a session to memory, in the order of event_ids;
-- embeddings: NULL, or one row per event (a two-dimensional real[], row i
-- the embedding of event_ids[i]).  Entries added meanwhile are skipped;
-- returns how many were added.
CREATE FUNCTION adk._memory_insert(app_name text, user_id text, session_id text,
                                   event_ids text[], embeddings real[])
RETURNS integer
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    cfg regconfig := adk._memory_config(app_name);
    n integer;
BEGIN
    IF embeddings IS NOT NULL AND (pg_catalog.array_ndims(embeddings) OPERATOR(pg_catalog.<>) 2
            OR pg_catalog.array_length(embeddings, 1) OPERATOR(pg_catalog.<>) pg_catalog.cardinality(event_ids)) THEN
        RAISE EXCEPTION 'memory embeddings must be one row per event' USING ERRCODE = '22023';
    END IF;
    INSERT INTO adk.memory AS m (app_name, user_id, session_id, event_id, author,
                                 "timestamp", text, search_config, embedding)
    SELECT e.app_name, e.user_id, e.session_id, e.id, e.event_data OPERATOR(pg_catalog.->>) 'author',
           e."timestamp", t.text, cfg,
           CASE WHEN embeddings IS NOT NULL
                THEN ARRAY(SELECT pg_catalog.unnest(embeddings[p.i:p.i])) END
      FROM pg_catalog.unnest(event_ids) WITH ORDINALITY AS p(event_id, i)
      JOIN adk.events e
        ON e.app_name OPERATOR(pg_catalog.=) $1 AND e.user_id OPERATOR(pg_catalog.=) $2
       AND e.session_id OPERATOR(pg_catalog.=) $3 AND e.id OPERATOR(pg_catalog.=) p.event_id
     CROSS JOIN LATERAL (SELECT adk._event_text(e.event_data) AS text) t
     WHERE t.text IS NOT NULL
     ORDER BY p.i
    ON CONFLICT ON CONSTRAINT memory_source_key DO NOTHING;
    GET DIAGNOSTICS n = ROW_COUNT;
    RETURN n;
END
$$;

-- Add the events with text of a session (of one invocation when given)
-- that are not in memory yet, with their embeddings when the app has an
-- embedding model (100 texts a request, waited for here: a run starts
-- them in one step and adds the entries in a later one, builtin_tools.c);
-- returns how many were added.  An embedding failure raises: nothing is
-- added.
CREATE FUNCTION adk._memory_add(app_name text, user_id text, session_id text,
                                invocation_id text DEFAULT NULL)
RETURNS integer
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    model text := (SELECT a.memory_embedding_model FROM adk.apps a
                    WHERE a.name OPERATOR(pg_catalog.=) $1);
    ids text[];
    texts text[];
    embeddings real[];
    n integer;
    b integer;
BEGIN
    SELECT pg_catalog.array_agg(p.event_id ORDER BY p.n), pg_catalog.array_agg(p.text ORDER BY p.n)
      INTO ids, texts
      FROM adk._memory_pending($1, $2, $3, $4) WITH ORDINALITY AS p(event_id, text, n);
    n := coalesce(pg_catalog.cardinality(ids), 0);
    IF n OPERATOR(pg_catalog.=) 0 THEN
        RETURN 0;
    END IF;
    IF model IS NOT NULL THEN
        FOR b IN 0 .. (n OPERATOR(pg_catalog.-) 1) OPERATOR(pg_catalog./) 100 LOOP
            embeddings := embeddings OPERATOR(pg_catalog.||) ARRAY(
                SELECT v FROM adk._embed(model, texts[b OPERATOR(pg_catalog.*) 100 OPERATOR(pg_catalog.+) 1
                                                     : b OPERATOR(pg_catalog.*) 100 OPERATOR(pg_catalog.+) 100])
                       WITH ORDINALITY AS x(v, i) ORDER BY x.i);
        END LOOP;
    END IF;
    RETURN adk._memory_insert($1, $2, $3, ids, embeddings);
END
$$;

CREATE FUNCTION adk_add_session_to_memory(app_name text, user_id text, session_id text)
RETURNS integer
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    PERFORM adk._check_id('app name', app_name);
    PERFORM adk._check_id('user id', user_id);
    PERFORM adk._check_id('session id', session_id);
    IF NOT EXISTS (SELECT 1 FROM adk.sessions s
                    WHERE s.app_name OPERATOR(pg_catalog.=) $1
                      AND s.user_id OPERATOR(pg_catalog.=) $2
                      AND s.id OPERATOR(pg_catalog.=) $3) THEN
        PERFORM adk._session_not_found(app_name, user_id, session_id);
    END IF;
    RETURN adk._memory_add(app_name, user_id, session_id);
END
$$;
COMMENT ON FUNCTION adk_add_session_to_memory(text, text, text) IS
    'Add the events with text of a session to its user''s memory; idempotent: events already added are skipped. Returns how many entries were added.';

CREATE TYPE adk.memory_match AS (
    text text, author text, "timestamp" timestamptz,
    session_id text, event_id text, rank real);

-- The query's lexemes joined with OR, as the configuration parses them
-- (to_tsvector: a query of stop words only gives NULL, which matches
-- nothing, without plainto_tsquery's notice).  Each lexeme is quoted for
-- tsquery input, backslashes and quotes escaped, so it is read back as is.
CREATE FUNCTION adk._any_word_query(config regconfig, query text) RETURNS tsquery
LANGUAGE sql IMMUTABLE PARALLEL SAFE SET search_path = pg_catalog, pg_temp AS $$
    SELECT pg_catalog.string_agg(
               '''' OPERATOR(pg_catalog.||)
               pg_catalog.replace(pg_catalog.replace(l.lexeme, E'\\', E'\\\\'), '''', '''''')
               OPERATOR(pg_catalog.||) '''', ' | ')::pg_catalog.tsquery
      FROM pg_catalog.unnest(pg_catalog.tsvector_to_array(pg_catalog.to_tsvector(config, query))) AS l(lexeme)
$$;

-- The query's embedding (NULL: search without, with a warning when the
-- embedding failed); a run computes it in its steps instead
-- (builtin_tools.c) and calls adk._memory_search_vec itself.
CREATE FUNCTION adk._memory_search(app_name text, user_id text, query text, max_results integer)
RETURNS SETOF adk.memory_match
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    model text;
    qv real[];
    msg text;
BEGIN
    SELECT a.memory_embedding_model INTO model
      FROM adk.apps a WHERE a.name OPERATOR(pg_catalog.=) $1;
    IF model IS NOT NULL AND query OPERATOR(pg_catalog.~) '[[:alnum:]]' THEN
        BEGIN
            SELECT v INTO qv FROM adk._embed(model, ARRAY[query]) v;
        EXCEPTION WHEN OTHERS THEN
            GET STACKED DIAGNOSTICS msg = MESSAGE_TEXT;
            RAISE WARNING 'memory search without embeddings: %', msg;
            qv := NULL;
        END;
    END IF;
    RETURN QUERY SELECT * FROM adk._memory_search_vec($1, $2, $3, $4, qv);
END
$$;

-- The search itself, given the query's embedding qv (NULL: full-text
-- only).  The query is parsed once, before the scan (a variable, so the
-- planner can use the GIN index and never re-parses it per row).
CREATE FUNCTION adk._memory_search_vec(app_name text, user_id text, query text,
                                       max_results integer, qv real[])
RETURNS SETOF adk.memory_match
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    q tsquery := adk._any_word_query(adk._memory_config(app_name), query);
    min_similarity real;
    k integer := GREATEST(max_results, 20) OPERATOR(pg_catalog.*) 3;
BEGIN
    SELECT a.memory_min_similarity INTO min_similarity
      FROM adk.apps a WHERE a.name OPERATOR(pg_catalog.=) $1;
    IF qv IS NULL THEN
        IF q IS NULL THEN
            RETURN;
        END IF;
        RETURN QUERY
            SELECT m.text, m.author, m."timestamp", m.session_id, m.event_id,
                   pg_catalog.ts_rank_cd(m.search, q) AS rank
              FROM adk.memory m
             WHERE m.app_name OPERATOR(pg_catalog.=) $1 AND m.user_id OPERATOR(pg_catalog.=) $2
               AND m.search OPERATOR(pg_catalog.@@) q
             ORDER BY rank DESC, m."timestamp" DESC, m.id DESC
             LIMIT $4;
        RETURN;
    END IF;
    -- reciprocal rank fusion of the full-text and the semantic ranking
    RETURN QUERY
        WITH fts AS (
            SELECT m.id, pg_catalog.row_number() OVER (ORDER BY pg_catalog.ts_rank_cd(m.search, q) DESC,
                                                       m."timestamp" DESC, m.id DESC) AS r
              FROM adk.memory m
             WHERE q IS NOT NULL
               AND m.app_name OPERATOR(pg_catalog.=) $1 AND m.user_id OPERATOR(pg_catalog.=) $2
               AND m.search OPERATOR(pg_catalog.@@) q
             ORDER BY r LIMIT k),
        sem AS (
            SELECT s.id, pg_catalog.row_number() OVER (ORDER BY s.sim DESC, s.id DESC) AS r
              FROM (SELECT m.id, adk._cosine(m.embedding, qv) AS sim
                      FROM adk.memory m
                     WHERE m.app_name OPERATOR(pg_catalog.=) $1 AND m.user_id OPERATOR(pg_catalog.=) $2
                       AND m.embedding IS NOT NULL) s
             WHERE s.sim OPERATOR(pg_catalog.>=) min_similarity
             ORDER BY r LIMIT k),
        fused AS (
            SELECT x.id, pg_catalog.sum(1.0 OPERATOR(pg_catalog./) (60 OPERATOR(pg_catalog.+) x.r)) AS score
              FROM (SELECT * FROM fts UNION ALL SELECT * FROM sem) x
             GROUP BY x.id)
        SELECT m.text, m.author, m."timestamp", m.session_id, m.event_id, f.score::real AS rank
          FROM fused f JOIN adk.memory m ON m.id OPERATOR(pg_catalog.=) f.id
         ORDER BY f.score DESC, m."timestamp" DESC, m.id DESC
         LIMIT $4;
END
$$;

CREATE FUNCTION adk_search_memory(app_name text, user_id text, query text,
                                  max_results integer DEFAULT 10)
RETURNS SETOF adk.memory_match
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    PERFORM adk._check_id('app name', app_name);
    PERFORM adk._check_id('user id', user_id);
    PERFORM adk._tenancy_check(app_name, user_id);
    IF query IS NULL THEN
        RAISE EXCEPTION 'memory query must not be null' USING ERRCODE = '22004';
    END IF;
    IF max_results IS NULL OR max_results OPERATOR(pg_catalog.<=) 0 THEN
        RAISE EXCEPTION 'max_results must be positive' USING ERRCODE = '22023';
    END IF;
    RETURN QUERY SELECT * FROM adk._memory_search(app_name, user_id, query, max_results);
END
$$;
COMMENT ON FUNCTION adk_search_memory(text, text, text, integer) IS
    'The user''s memory entries that share any word of the query, best first (ts_rank_cd with the app''s text search configuration), at most max_results.';

CREATE FUNCTION adk_define_app_memory(app_name text,
                                      search_config regconfig DEFAULT 'pg_catalog.simple',
                                      add_to_memory boolean DEFAULT false,
                                      embedding_model text DEFAULT NULL,
                                      min_similarity real DEFAULT 0.3)
RETURNS void
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    IF embedding_model IS NOT NULL AND NOT EXISTS (
           SELECT 1 FROM adk.models m WHERE m.name OPERATOR(pg_catalog.=) $4
              AND m.provider OPERATOR(pg_catalog.=) ANY (ARRAY['openai', 'gemini'])) THEN
        RAISE EXCEPTION 'embedding model "%" is not an OpenAI-compatible or Gemini model', embedding_model
            USING ERRCODE = '42704',
                  HINT = 'Define it with adk_define_model(); its endpoint must serve /embeddings (OpenAI) or :batchEmbedContents (Gemini).';
    END IF;
    IF min_similarity IS NOT NULL AND NOT min_similarity BETWEEN -1 AND 1 THEN
        RAISE EXCEPTION 'min_similarity must be between -1 and 1' USING ERRCODE = '22023';
    END IF;
    UPDATE adk.apps a
       SET memory_search_config = coalesce($2, 'pg_catalog.simple'::pg_catalog.regconfig),
           add_to_memory = coalesce($3, false),
           memory_embedding_model = $4,
           memory_min_similarity = coalesce($5, 0.3)
     WHERE a.name OPERATOR(pg_catalog.=) $1;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'app "%" does not exist', app_name USING ERRCODE = '42704',
            HINT = 'Define it first with adk_define_app().';
    END IF;
END
$$;
COMMENT ON FUNCTION adk_define_app_memory(text, regconfig, boolean, text, real) IS
    'Set an app''s memory options: the text search configuration of adk_search_memory (simple, english, ...), whether every completed invocation is added to memory, and an embedding model (with the least cosine similarity of a semantic match) for semantic search fused with full-text search.';

GRANT SELECT ON adk.memory TO adk_user;
SELECT pg_catalog.pg_extension_config_dump('adk.memory', '');
SELECT pg_catalog.pg_extension_config_dump('adk.memory_id_seq', '');
