-- adk_runner 0.2.0 -> 0.3.0: ALTER EXTENSION adk_runner UPDATE TO '0.3.0'.
-- Every change to the SQL surface since release 0.2.0, in the order the
-- full install script (sql/install/) makes it.  test/t/024_upgrade.pl
-- checks that a 0.2.0 schema updated with this script equals a fresh
-- 0.3.0 install (docs/releasing.md).

\echo Use "ALTER EXTENSION adk_runner UPDATE" to load this file. \quit

-- ---------------------------------------------------------------------
-- Models (40_models.sql): endpoints as libcurl reads them, key bindings by
-- scheme, host and port
-- ---------------------------------------------------------------------
CREATE FUNCTION adk._endpoint_problem(url text) RETURNS text
    AS 'MODULE_PATHNAME', 'adk_endpoint_problem_sql' LANGUAGE C STRICT STABLE;
CREATE FUNCTION adk._host_entry_problem(entry text) RETURNS text
    AS 'MODULE_PATHNAME', 'adk_host_entry_problem_sql' LANGUAGE C STRICT STABLE;

CREATE OR REPLACE FUNCTION adk._models_check_options() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    k text;
    v jsonb;
    problem text;
BEGIN
    IF NEW.name IS NULL OR NEW.name = '' THEN
        RAISE EXCEPTION 'model name must not be empty' USING ERRCODE = '22023';
    END IF;
    IF NEW.provider IS NULL OR NEW.provider NOT IN ('openai', 'gemini', 'anthropic') THEN
        RAISE EXCEPTION 'unknown model provider "%"', NEW.provider USING ERRCODE = '22023',
            HINT = 'Use openai (any OpenAI-compatible Chat Completions server), gemini or anthropic.';
    END IF;
    IF NEW.endpoint IS NULL OR NEW.endpoint !~* '^https?://[^/?#@[:space:]]+(/[^?#[:space:]]*)?$' THEN
        RAISE EXCEPTION 'invalid endpoint "%" for model "%"', NEW.endpoint, NEW.name USING ERRCODE = '22023',
            HINT = 'Give the base URL as the provider''s SDK takes it, e.g. https://api.openai.com/v1, without credentials, query or fragment.';
    END IF;
    -- read as libcurl will read it when it connects: a port that is not a
    -- number ("http://127.0.0.1:56102:56103") is refused here
    problem := adk._endpoint_problem(NEW.endpoint);
    IF problem IS NOT NULL THEN
        RAISE EXCEPTION 'invalid endpoint "%" for model "%"', NEW.endpoint, NEW.name USING ERRCODE = '22023',
            DETAIL = problem || '.',
            HINT = 'Give the base URL as the provider''s SDK takes it, e.g. https://api.openai.com/v1, without credentials, query or fragment.';
    END IF;
    IF NEW.model IS NULL OR NEW.model = '' THEN
        RAISE EXCEPTION 'model "%" needs the provider''s model id', NEW.name USING ERRCODE = '22023';
    END IF;
    IF NEW.api_key_env IS NOT NULL AND NEW.api_key_secret IS NOT NULL THEN
        RAISE EXCEPTION 'model "%" takes its key from an environment variable or a secret, not both', NEW.name
            USING ERRCODE = '22023';
    END IF;
    IF NEW.api_key_env !~ '^[A-Za-z_][A-Za-z0-9_]*$' THEN
        RAISE EXCEPTION 'invalid environment variable name "%"', NEW.api_key_env USING ERRCODE = '22023';
    END IF;
    IF NEW.api_key_secret IS NOT NULL AND NOT EXISTS (SELECT 1 FROM adk.secrets s WHERE s.name = NEW.api_key_secret) THEN
        RAISE EXCEPTION 'secret "%" does not exist', NEW.api_key_secret USING ERRCODE = '42704',
            HINT = 'Store it first with adk_set_secret().';
    END IF;
    IF NEW.options IS NULL OR jsonb_typeof(NEW.options) <> 'object' THEN
        RAISE EXCEPTION 'model options must be a JSON object' USING ERRCODE = '22023';
    END IF;
    FOR k, v IN SELECT * FROM jsonb_each(NEW.options) LOOP
        IF k IN ('temperature', 'top_p', 'presence_penalty', 'frequency_penalty') THEN
            IF jsonb_typeof(v) <> 'number' THEN
                RAISE EXCEPTION 'model option "%" must be a number', k USING ERRCODE = '22023';
            END IF;
        ELSIF k IN ('max_output_tokens', 'top_k', 'seed', 'timeout_ms', 'connect_timeout_ms', 'retries') THEN
            IF jsonb_typeof(v) <> 'number' OR v::numeric <> trunc(v::numeric) OR v::numeric < 0 THEN
                RAISE EXCEPTION 'model option "%" must be a non-negative integer', k USING ERRCODE = '22023';
            END IF;
        ELSIF k = 'stop_sequences' THEN
            IF jsonb_typeof(v) <> 'array' OR EXISTS (SELECT 1 FROM jsonb_array_elements(v) e WHERE jsonb_typeof(e) <> 'string') THEN
                RAISE EXCEPTION 'model option "stop_sequences" must be an array of strings' USING ERRCODE = '22023';
            END IF;
        ELSIF k = 'headers' THEN
            NULL;   -- checked below, by the rules every call's config is held to
        ELSIF k = 'system_instruction' THEN
            IF jsonb_typeof(v) <> 'string' THEN
                RAISE EXCEPTION 'model option "system_instruction" must be a string' USING ERRCODE = '22023';
            END IF;
        ELSE
            RAISE EXCEPTION 'unknown model option "%"', k USING ERRCODE = '22023',
                HINT = 'Known options: temperature, max_output_tokens, top_p, top_k, stop_sequences, presence_penalty, frequency_penalty, seed, system_instruction, timeout_ms, connect_timeout_ms, retries, headers.';
        END IF;
    END LOOP;
    -- headers, timeout_ms, connect_timeout_ms, retries (model/guard.c)
    PERFORM adk._check_call_options(NEW.options);
    -- an INSERT keeps the updated_at it carries (a restored row its own)
    IF TG_OP = 'UPDATE' THEN
        NEW.updated_at := now();
    END IF;
    RETURN NEW;
END
$$;

CREATE OR REPLACE FUNCTION adk_set_secret(name text, value text, allowed_hosts text[])
RETURNS void
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    entry text;
    problem text;
BEGIN
    IF name IS NULL OR name = '' THEN
        RAISE EXCEPTION 'secret name must not be empty' USING ERRCODE = '22023';
    END IF;
    IF value IS NULL OR value = '' THEN
        -- the value itself is never shown
        RAISE EXCEPTION 'secret "%" must have a value', name USING ERRCODE = '22023';
    END IF;
    IF cardinality(allowed_hosts) IS DISTINCT FROM array_length(allowed_hosts, 1)
       OR coalesce(cardinality(allowed_hosts), 0) = 0
       OR array_position(allowed_hosts, NULL) IS NOT NULL
       OR array_position(allowed_hosts, '') IS NOT NULL THEN
        RAISE EXCEPTION 'secret "%" needs the hosts it may be sent to', name USING ERRCODE = '22023',
            HINT = 'Give host names or host:port, e.g. ARRAY[''api.openai.com''], or ARRAY[''*''] for any host.';
    END IF;
    -- each entry as the endpoint check will read it (model/endpoint.c)
    FOREACH entry IN ARRAY allowed_hosts LOOP
        problem := adk._host_entry_problem(lower(entry));
        IF problem IS NOT NULL THEN
            RAISE EXCEPTION 'invalid host "%" for secret "%"', entry, name USING ERRCODE = '22023',
                DETAIL = problem || '.',
                HINT = 'Give a host, host:port or scheme://host:port, e.g. api.openai.com, 127.0.0.1:8080 or https://api.openai.com; ''*'' is any host.';
        END IF;
    END LOOP;
    INSERT INTO adk.secrets AS s (name, value, allowed_hosts)
    VALUES (name, value, (SELECT array_agg(lower(h)) FROM unnest(allowed_hosts) h))
    ON CONFLICT ON CONSTRAINT secrets_pkey DO UPDATE
       SET value = EXCLUDED.value, allowed_hosts = EXCLUDED.allowed_hosts, updated_at = now();
END
$$;
COMMENT ON FUNCTION adk_set_secret(text, text, text[]) IS
    'Store an API key, bound to the hosts it may be sent to (host, host:port or scheme://host[:port]; ''*'' for any).';

-- ---------------------------------------------------------------------
-- Runner (60_runner.sql): a function response needs its call id and name
-- ---------------------------------------------------------------------
CREATE OR REPLACE FUNCTION adk_function_response(call_id text, name text, response jsonb)
RETURNS jsonb
LANGUAGE plpgsql IMMUTABLE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    IF call_id IS NULL OR name IS NULL THEN
        RAISE EXCEPTION '% must not be null', CASE WHEN call_id IS NULL THEN 'call id' ELSE 'tool name' END
            USING ERRCODE = '22004',
                  DETAIL = 'A function response answers the function call with this id, of the tool with this name.';
    END IF;
    RETURN jsonb_build_object('role', 'user', 'parts', jsonb_build_array(
        jsonb_build_object('function_response', jsonb_build_object(
            'id', call_id, 'name', name,
            'response', CASE WHEN jsonb_typeof(response) = 'object' THEN response
                             ELSE jsonb_build_object('result', response) END))));
END
$$;

-- ---------------------------------------------------------------------
-- adk_rebuild_run_states checks the caller's tenancy (62_hitl.sql,
-- 85_tenancy.sql): its body moves to adk._rebuild_run_states, run as the
-- owner of schema adk by the C entry point
-- ---------------------------------------------------------------------
DROP FUNCTION adk_rebuild_run_states(text, text, text);
CREATE FUNCTION adk._rebuild_run_states(app_name text, user_id text, session_id text)
RETURNS bigint
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    s record;
    n bigint := 0;
BEGIN
    FOR s IN
        SELECT x.app_name, x.user_id, x.session_id
          FROM (SELECT e.app_name::text, e.user_id::text, e.session_id::text
                  FROM adk.events e
                 WHERE jsonb_typeof(e.event_data -> 'long_running_tool_ids') = 'array'
                   AND jsonb_array_length(e.event_data -> 'long_running_tool_ids') > 0
                   AND ($1 IS NULL OR e.app_name = $1)
                   AND ($2 IS NULL OR e.user_id = $2)
                   AND ($3 IS NULL OR e.session_id = $3)
                UNION
                SELECT r.app_name, r.user_id, r.session_id
                  FROM adk.run_states r
                 WHERE ($1 IS NULL OR r.app_name = $1)
                   AND ($2 IS NULL OR r.user_id = $2)
                   AND ($3 IS NULL OR r.session_id = $3)) x
         ORDER BY 1, 2, 3
    LOOP
        PERFORM 1 FROM adk.sessions ss
         WHERE ss.app_name = s.app_name AND ss.user_id = s.user_id AND ss.id = s.session_id
           FOR UPDATE;
        PERFORM adk._refresh_run_states(s.app_name, s.user_id, s.session_id, NULL);
        n := n + (SELECT count(*) FROM adk.run_states r
                   WHERE r.app_name = s.app_name AND r.user_id = s.user_id
                     AND r.session_id = s.session_id);
    END LOOP;
    RETURN n;
END
$$;

-- ---------------------------------------------------------------------
-- Triggers on adk._job_trigger made by hand are checked when created
-- (70_workers.sql)
-- ---------------------------------------------------------------------
CREATE FUNCTION adk._job_trigger_check(tbl oid, trigger oid) RETURNS void
AS 'MODULE_PATHNAME', 'adk_job_trigger_check' LANGUAGE C VOLATILE STRICT;
CREATE FUNCTION adk._job_trigger_created() RETURNS event_trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    c record;
BEGIN
    FOR c IN
        SELECT t.tgrelid, t.oid
          FROM pg_catalog.pg_event_trigger_ddl_commands() d
          JOIN pg_catalog.pg_trigger t ON t.oid OPERATOR(pg_catalog.=) d.objid
         WHERE d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_trigger'::pg_catalog.regclass
           AND t.tgfoid OPERATOR(pg_catalog.=) 'adk._job_trigger()'::pg_catalog.regprocedure
    LOOP
        PERFORM adk._job_trigger_check(c.tgrelid, c.oid);
    END LOOP;
END
$$;
CREATE EVENT TRIGGER adk_job_trigger_check ON ddl_command_end
    WHEN TAG IN ('CREATE TRIGGER')
    EXECUTE FUNCTION adk._job_trigger_created();

-- ---------------------------------------------------------------------
-- adk.stat_models and adk.stat_tools read adk.stat_reset as the querying
-- role (84_spans.sql)
-- ---------------------------------------------------------------------
GRANT SELECT ON adk.stat_reset TO adk_user;

-- ---------------------------------------------------------------------
-- Tenancy (85_tenancy.sql)
-- ---------------------------------------------------------------------
CREATE FUNCTION adk._role_visible(role_name name) RETURNS boolean
    AS 'MODULE_PATHNAME', 'adk_role_visible' LANGUAGE C STABLE PARALLEL RESTRICTED;
COMMENT ON FUNCTION adk._role_visible(name) IS
    'Row-level security: may the current role see rows of this role (it has its privileges, or sees everything)?';

CREATE FUNCTION adk_rebuild_run_states(app_name text DEFAULT NULL, user_id text DEFAULT NULL,
                                       session_id text DEFAULT NULL)
RETURNS bigint
AS 'MODULE_PATHNAME', 'adk_rebuild_run_states_sql' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION adk_rebuild_run_states(text, text, text) IS
    'Rebuild adk.run_states from adk.events alone, for one session (app, user, session), one user, the sessions of one app the caller may see, or everything (adk_admin); returns the rows the scope has.';

-- a model call carries the owner of the session it was made for
ALTER TABLE adk.model_calls ADD COLUMN app_name text, ADD COLUMN user_id text;
COMMENT ON COLUMN adk.model_calls.app_name IS
    'The app of the session the call was made for (a run''s, or a summarizer''s); NULL: none (adk_generate)';
COMMENT ON COLUMN adk.model_calls.user_id IS
    'The user id of the session the call was made for; NULL: none (adk_generate)';
-- the calls made in runs before 0.3.0 are their invocation's user's (a
-- summarizer's call outside a run, and adk_generate's, had no owner: they
-- are now their role's)
UPDATE adk.model_calls c
   SET app_name = i.app_name, user_id = i.user_id
  FROM adk.invocations i
 WHERE i.invocation_id OPERATOR(pg_catalog.=) c.invocation_id;
DROP POLICY tenant ON adk.model_calls;
CREATE POLICY tenant ON adk.model_calls
    USING (CASE WHEN app_name IS NULL
                THEN adk._role_visible(role_name)
                ELSE adk._tenant_visible(app_name, user_id) END);

-- a rolled-back model call is charged and recorded
CREATE OR REPLACE FUNCTION adk._budget_take(p_app text, p_user text, p_role name)
RETURNS text
LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    b record;
    s adk.budget_spend;
    ps timestamptz;
    taken bigint[] := '{}';
    starts timestamptz[] := '{}';
    pending bigint[];
BEGIN
    FOR b IN
        SELECT x.* FROM adk.budgets x
         WHERE x.app_name OPERATOR(pg_catalog.=) p_app
           AND (x.user_id IS NULL OR x.user_id OPERATOR(pg_catalog.=) p_user)
           AND (x.role_name IS NULL OR x.role_name OPERATOR(pg_catalog.=) p_role)
           AND (x.max_tokens IS NOT NULL OR x.max_model_calls IS NOT NULL)
         ORDER BY x.id
    LOOP
        ps := adk._budget_period_start(b.period, pg_catalog.clock_timestamp());
        INSERT INTO adk.budget_spend AS t (budget_id, period_start) VALUES (b.id, ps)
        ON CONFLICT ON CONSTRAINT budget_spend_pkey DO NOTHING;
        SELECT t.* INTO STRICT s FROM adk.budget_spend t
         WHERE t.budget_id OPERATOR(pg_catalog.=) b.id AND t.period_start OPERATOR(pg_catalog.=) ps
           FOR UPDATE;
        -- what rolled-back transactions charged, not written yet
        pending := adk._budget_pending(b.id, ps);
        IF pending IS NULL THEN
            RETURN pg_catalog.format('budget %s of app "%s" cannot be checked: too many budgets are in use at once',
                                     b.id, p_app);
        END IF;
        s.tokens := s.tokens OPERATOR(pg_catalog.+) pending[2];
        s.model_calls := s.model_calls OPERATOR(pg_catalog.+) pending[1];
        IF b.max_tokens IS NOT NULL AND s.tokens OPERATOR(pg_catalog.>=) b.max_tokens THEN
            RETURN pg_catalog.format('token budget %s of app "%s" is spent: %s of %s tokens used (%s)',
                                     b.id, p_app, s.tokens, b.max_tokens, b.period);
        END IF;
        IF b.max_model_calls IS NOT NULL AND s.model_calls OPERATOR(pg_catalog.>=) b.max_model_calls THEN
            RETURN pg_catalog.format('budget %s of app "%s" is spent: %s of %s model calls made (%s)',
                                     b.id, p_app, s.model_calls, b.max_model_calls, b.period);
        END IF;
        taken := taken OPERATOR(pg_catalog.||) b.id;
        starts := starts OPERATOR(pg_catalog.||) ps;
    END LOOP;
    UPDATE adk.budget_spend t SET model_calls = t.model_calls OPERATOR(pg_catalog.+) 1
      FROM ROWS FROM (pg_catalog.unnest(taken), pg_catalog.unnest(starts)) AS k(id, ps)
     WHERE t.budget_id OPERATOR(pg_catalog.=) k.id AND t.period_start OPERATOR(pg_catalog.=) k.ps;
    PERFORM adk._budget_spent(k.id, k.ps, 1, 0)
       FROM ROWS FROM (pg_catalog.unnest(taken), pg_catalog.unnest(starts)) AS k(id, ps);
    RETURN NULL;
END
$$;

CREATE OR REPLACE FUNCTION adk._budget_charge(p_app text, p_user text, p_role name, p_taken_at timestamptz,
                                   p_tokens bigint)
RETURNS void
LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    c record;
BEGIN
    FOR c IN
        UPDATE adk.budget_spend t SET tokens = t.tokens OPERATOR(pg_catalog.+) p_tokens
          FROM adk.budgets b
         WHERE b.app_name OPERATOR(pg_catalog.=) p_app
           AND (b.user_id IS NULL OR b.user_id OPERATOR(pg_catalog.=) p_user)
           AND (b.role_name IS NULL OR b.role_name OPERATOR(pg_catalog.=) p_role)
           AND (b.max_tokens IS NOT NULL OR b.max_model_calls IS NOT NULL)
           AND t.budget_id OPERATOR(pg_catalog.=) b.id
           AND t.period_start OPERATOR(pg_catalog.=) adk._budget_period_start(b.period, p_taken_at)
        RETURNING t.budget_id, t.period_start
    LOOP
        PERFORM adk._budget_spent(c.budget_id, c.period_start, 0, p_tokens);
    END LOOP;
END
$$;

CREATE FUNCTION adk._budget_pending(budget_id bigint, period_start timestamptz) RETURNS bigint[]
    AS 'MODULE_PATHNAME', 'adk_budget_pending' LANGUAGE C VOLATILE STRICT;
CREATE FUNCTION adk._budget_spent(budget_id bigint, period_start timestamptz, calls bigint, tokens bigint)
RETURNS void
    AS 'MODULE_PATHNAME', 'adk_budget_spent' LANGUAGE C VOLATILE STRICT;

CREATE FUNCTION adk._budget_apply(p_budget bigint, p_start timestamptz, p_calls bigint, p_tokens bigint)
RETURNS boolean
LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, pg_temp SET lock_timeout = '100ms' AS $$
BEGIN
    INSERT INTO adk.budget_spend AS t (budget_id, period_start)
    SELECT b.id, p_start FROM adk.budgets b WHERE b.id OPERATOR(pg_catalog.=) p_budget
    ON CONFLICT ON CONSTRAINT budget_spend_pkey DO NOTHING;
    UPDATE adk.budget_spend t
       SET model_calls = t.model_calls OPERATOR(pg_catalog.+) p_calls::integer,
           tokens = t.tokens OPERATOR(pg_catalog.+) p_tokens
     WHERE t.budget_id OPERATOR(pg_catalog.=) p_budget
       AND t.period_start OPERATOR(pg_catalog.=) p_start;
    RETURN true;
EXCEPTION WHEN lock_not_available THEN
    RETURN false;
END
$$;

ALTER TABLE adk.model_calls ADD COLUMN rolled_back boolean NOT NULL DEFAULT false;
COMMENT ON COLUMN adk.model_calls.rolled_back IS
    'The transaction that made the call rolled back: the row was written again by the launcher, without request, response and response_body';

-- a budget of one role is that role's
DROP POLICY tenant ON adk.budgets;
CREATE POLICY tenant ON adk.budgets
    USING (CASE WHEN user_id IS NOT NULL THEN adk._tenant_visible(app_name, user_id)
                WHEN role_name IS NOT NULL THEN adk._role_visible(role_name)
                ELSE true END)
    WITH CHECK (CASE WHEN user_id IS NOT NULL THEN adk._tenant_visible(app_name, user_id)
                     WHEN role_name IS NOT NULL THEN adk._role_visible(role_name)
                     ELSE true END);

-- costs per the call's own app and user
CREATE OR REPLACE VIEW adk.costs WITH (security_invoker = true) AS
SELECT c.app_name, c.user_id, i.agent, c.model,
       (pg_catalog.timezone('UTC', c.created_at))::date AS day,
       pg_catalog.count(*) AS model_calls,
       pg_catalog.sum(coalesce(c.input_tokens, 0)) AS input_tokens,
       pg_catalog.sum(coalesce(c.output_tokens, 0)) AS output_tokens,
       pg_catalog.sum(x.cached) AS cached_input_tokens,
       -- OPERATOR() forms share one precedence: every product is bracketed
       pg_catalog.sum(((coalesce(c.input_tokens, 0) OPERATOR(pg_catalog.-) x.cached)
                       OPERATOR(pg_catalog.*) (m.price ->> 'input')::numeric)
                      OPERATOR(pg_catalog.+)
                      (x.cached OPERATOR(pg_catalog.*)
                       coalesce(m.price ->> 'cached_input', m.price ->> 'input')::numeric)
                      OPERATOR(pg_catalog.+)
                      (coalesce(c.output_tokens, 0) OPERATOR(pg_catalog.*) (m.price ->> 'output')::numeric))
           OPERATOR(pg_catalog./) 1000000 AS cost
  FROM adk.model_calls c
  LEFT JOIN adk.invocations i ON i.invocation_id OPERATOR(pg_catalog.=) c.invocation_id
  LEFT JOIN adk.models m ON m.name OPERATOR(pg_catalog.=) c.model
 CROSS JOIN LATERAL (SELECT coalesce((c.response #>> '{usage_metadata,cached_content_token_count}')::bigint, 0)
                            AS cached) x
 GROUP BY 1, 2, 3, 4, 5;
COMMENT ON VIEW adk.costs IS
    'Model calls, tokens and cost (from adk.models.price; NULL without a price) per app and user (the session''s the call was made for; NULL for adk_generate), agent (the invocation''s), model and UTC day';

-- ---------------------------------------------------------------------
-- Privileges (90_privileges.sql, 95_tenancy_grants.sql): adk_user reads
-- model definitions without header values
-- ---------------------------------------------------------------------
REVOKE SELECT ON adk.models FROM adk_user;
GRANT SELECT (name, provider, endpoint, model, api_key_env, api_key_secret,
              created_at, updated_at, price)
   ON adk.models TO adk_user;
GRANT SELECT, INSERT, UPDATE, DELETE ON adk.models TO adk_admin;
CREATE VIEW adk.model_definitions AS
SELECT m.name, m.provider, m.endpoint, m.model, m.api_key_env, m.api_key_secret,
       CASE WHEN m.options OPERATOR(pg_catalog.?) 'headers'
            THEN m.options OPERATOR(pg_catalog.||) pg_catalog.jsonb_build_object('headers',
                 (SELECT COALESCE(pg_catalog.jsonb_object_agg(h.key, pg_catalog.to_jsonb('[REDACTED]'::text)), '{}'::jsonb)
                    FROM pg_catalog.jsonb_each(m.options OPERATOR(pg_catalog.->) 'headers') h))
            ELSE m.options END AS options,
       m.price, m.created_at, m.updated_at
  FROM adk.models m;
COMMENT ON VIEW adk.model_definitions IS
    'adk.models with the values of options.headers shown as [REDACTED] (adk_user may not read adk.models.options; adk_admin reads the table).';
GRANT SELECT ON adk.model_definitions TO adk_user;
-- the new functions as 90_privileges.sql's loop leaves them: PUBLIC's
-- EXECUTE taken back, the API granted
REVOKE ALL ON FUNCTION adk._endpoint_problem(text), adk._host_entry_problem(text),
    adk._rebuild_run_states(text, text, text), adk_rebuild_run_states(text, text, text),
    adk._job_trigger_check(oid, oid), adk._job_trigger_created(), adk._role_visible(name),
    adk._budget_pending(bigint, timestamptz), adk._budget_spent(bigint, timestamptz, bigint, bigint),
    adk._budget_apply(bigint, timestamptz, bigint, bigint)
  FROM PUBLIC;
GRANT EXECUTE ON FUNCTION adk._endpoint_problem(text), adk._host_entry_problem(text) TO adk_admin;
GRANT EXECUTE ON FUNCTION adk_rebuild_run_states(text, text, text) TO adk_user;
GRANT EXECUTE ON FUNCTION adk._role_visible(name) TO adk_user;
