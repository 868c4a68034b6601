-- ---------------------------------------------------------------------
-- Tenancy, row-level security, token budgets and costs.
-- See docs/security.md ("Tenancy") and docs/budgets.md, and src/store/tenancy.c.
--
-- adk.apps.tenancy: 'shared' (default; every adk_user member may name any
-- user id), 'role' (the user id is the calling role's name), 'claim' (a
-- member of adk_gateway names the end user it asserted with
-- adk_set_user() in this transaction).  adk_admin members, the owner of
-- schema adk and superusers see and run everything.
-- ---------------------------------------------------------------------

DO $roles$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_roles WHERE rolname OPERATOR(pg_catalog.=) 'adk_gateway') THEN
        CREATE ROLE adk_gateway NOLOGIN;
    END IF;
END
$roles$;
-- a gateway runs apps like any adk_user member
GRANT adk_user TO adk_gateway;

ALTER TABLE adk.apps ADD COLUMN tenancy text NOT NULL DEFAULT 'shared'
    CHECK (tenancy OPERATOR(pg_catalog.=) ANY (ARRAY['shared', 'role', 'claim']));
COMMENT ON COLUMN adk.apps.tenancy IS
    '''shared'' (any adk_user member names any user id), ''role'' (user id = the calling role), ''claim'' (an adk_gateway member names the user it asserted with adk_set_user())';

DROP FUNCTION adk_define_app(text, text, boolean, text[], integer, jsonb, boolean);
CREATE FUNCTION adk_define_app(name text, root_agent text,
                               auto_create_session boolean DEFAULT true,
                               plugins text[] DEFAULT '{}',
                               max_llm_calls integer DEFAULT 500,
                               compaction jsonb DEFAULT NULL,
                               save_input_blobs_as_artifacts boolean DEFAULT false,
                               tenancy text DEFAULT 'shared')
RETURNS void
LANGUAGE sql SET search_path = pg_catalog, pg_temp AS $$
    INSERT INTO adk.apps AS a (name, root_agent, auto_create_session, plugins, max_llm_calls,
                               compaction, save_input_blobs_as_artifacts, tenancy)
    VALUES ($1, $2, coalesce($3, true), coalesce($4, '{}'),
            coalesce($5, 500), $6, coalesce($7, false),
            coalesce($8, 'shared'))
    ON CONFLICT ON CONSTRAINT apps_pkey DO UPDATE
       SET root_agent = EXCLUDED.root_agent, auto_create_session = EXCLUDED.auto_create_session,
           plugins = EXCLUDED.plugins, max_llm_calls = EXCLUDED.max_llm_calls,
           compaction = EXCLUDED.compaction,
           save_input_blobs_as_artifacts = EXCLUDED.save_input_blobs_as_artifacts,
           tenancy = EXCLUDED.tenancy
$$;
COMMENT ON FUNCTION adk_define_app(text, text, boolean, text[], integer, jsonb, boolean, text) IS
    'Create or replace an app: its root agent (the whole tree under it is checked), auto_create_session, plugins in call order, max_llm_calls per run, compaction (NULL = off), save_input_blobs_as_artifacts, tenancy (''shared'', ''role'' or ''claim'').';

CREATE FUNCTION adk_set_user(user_id text) RETURNS void
    AS 'MODULE_PATHNAME', 'adk_set_user' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION adk_set_user(text) IS
    'adk_gateway members: assert the end user for the rest of the transaction (NULL: none); apps with tenancy ''claim'' then accept only that user id.  Refused while a run is active.';

CREATE FUNCTION adk_asserted_user() RETURNS text
    AS 'MODULE_PATHNAME', 'adk_asserted_user' LANGUAGE C STABLE;
COMMENT ON FUNCTION adk_asserted_user() IS
    'The end user asserted with adk_set_user() in this transaction, or NULL.';

CREATE FUNCTION adk._tenancy_check(app_name text, user_id text) RETURNS void
    AS 'MODULE_PATHNAME', 'adk_tenancy_check_sql' LANGUAGE C STABLE;
CREATE FUNCTION adk._tenant_visible(app_name text, user_id text) RETURNS boolean
    AS 'MODULE_PATHNAME', 'adk_tenant_visible' LANGUAGE C STABLE PARALLEL RESTRICTED;
COMMENT ON FUNCTION adk._tenant_visible(text, text) IS
    'Row-level security: may the current role see rows of this app and user id?';
CREATE FUNCTION adk._role_visible(role_name name) RETURNS boolean
    AS 'MODULE_PATHNAME', 'adk_role_visible' LANGUAGE C STABLE PARALLEL RESTRICTED;
COMMENT ON FUNCTION adk._role_visible(name) IS
    'Row-level security: may the current role see rows of this role (it has its privileges, or sees everything)?';

-- adk_create_session / adk_delete_session check the tenancy as the caller
-- (a SECURITY DEFINER function cannot see its caller), then run their SQL
-- bodies, now plain functions in schema adk, as the owner of schema adk.
-- Called directly, a body runs as the caller, who may not write the store.
ALTER FUNCTION adk_create_session(text, text, text, jsonb) RENAME TO _create_session;
ALTER FUNCTION _create_session(text, text, text, jsonb) SET SCHEMA adk;
ALTER FUNCTION adk._create_session(text, text, text, jsonb) SECURITY INVOKER;
ALTER FUNCTION adk_delete_session(text, text, text) RENAME TO _delete_session;
ALTER FUNCTION _delete_session(text, text, text) SET SCHEMA adk;
ALTER FUNCTION adk._delete_session(text, text, text) SECURITY INVOKER;

CREATE FUNCTION adk_create_session(app_name text, user_id text,
                                   session_id text DEFAULT NULL,
                                   state jsonb DEFAULT NULL)
RETURNS jsonb
AS 'MODULE_PATHNAME', 'adk_create_session_sql' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION adk_create_session(text, text, text, jsonb) IS
    'Create a session (id generated when NULL); state keys app:/user: go to their scope, temp: are dropped. Returns the session as ADK''s Session JSON. A second create of the same id fails with 23505.';

CREATE FUNCTION adk_delete_session(app_name text, user_id text, session_id text)
RETURNS void
AS 'MODULE_PATHNAME', 'adk_delete_session_sql' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION adk_delete_session(text, text, text) IS
    'Delete a session with its events; app and user state stay.';

-- adk_rebuild_run_states (62_hitl.sql) the same way: a scope of one user
-- is checked like any entry point that names a user; a scope of one app
-- is, for a role that may name only one user id of it ('role', 'claim'),
-- that user's sessions; no scope at all is an admin's.  So the sessions
-- it locks are always ones the caller may see.
CREATE FUNCTION adk_rebuild_run_states(app_name text DEFAULT NULL, user_id text DEFAULT NULL,
                                       session_id text DEFAULT NULL)
RETURNS bigint
AS 'MODULE_PATHNAME', 'adk_rebuild_run_states_sql' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION adk_rebuild_run_states(text, text, text) IS
    'Rebuild adk.run_states from adk.events alone, for one session (app, user, session), one user, the sessions of one app the caller may see, or everything (adk_admin); returns the rows the scope has.';

-- The same for the artifact and memory writers (80_artifacts.sql,
-- 82_memory.sql).  Their readers (adk_load_artifact, adk_list_artifacts,
-- adk_list_artifact_versions, adk_search_memory) run as the caller: they
-- call adk._tenancy_check, and row-level security filters what they read.
-- Inside a run every one of them is called as the role running the step,
-- so a SQL tool that names another user than the run's is refused the
-- same way (adk_save_artifact(filename, data, mime_type) names the run's).
ALTER FUNCTION adk_save_artifact(text, text, text, text, bytea, text) RENAME TO _save_artifact;
ALTER FUNCTION _save_artifact(text, text, text, text, bytea, text) SET SCHEMA adk;
ALTER FUNCTION adk._save_artifact(text, text, text, text, bytea, text) SECURITY INVOKER;
ALTER FUNCTION adk_delete_artifact(text, text, text, text) RENAME TO _delete_artifact;
ALTER FUNCTION _delete_artifact(text, text, text, text) SET SCHEMA adk;
ALTER FUNCTION adk._delete_artifact(text, text, text, text) SECURITY INVOKER;
ALTER FUNCTION adk_add_session_to_memory(text, text, text) RENAME TO _add_session_to_memory;
ALTER FUNCTION _add_session_to_memory(text, text, text) SET SCHEMA adk;
ALTER FUNCTION adk._add_session_to_memory(text, text, text) SECURITY INVOKER;

CREATE FUNCTION adk_save_artifact(app_name text, user_id text, session_id text,
                                  filename text, data bytea,
                                  mime_type text DEFAULT 'application/octet-stream')
RETURNS integer
AS 'MODULE_PATHNAME', 'adk_save_artifact_sql' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION adk_save_artifact(text, text, text, text, bytea, text) IS
    'Save a new version of an artifact (0, 1, ...; user: filenames are shared by the user''s sessions) and return it. Inside a run, for the run''s session, the version goes into the event''s actions.artifact_delta.';

CREATE FUNCTION adk_delete_artifact(app_name text, user_id text, session_id text, filename text)
RETURNS integer
AS 'MODULE_PATHNAME', 'adk_delete_artifact_sql' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION adk_delete_artifact(text, text, text, text) IS
    'Delete every version of an artifact; returns how many versions were deleted (0 when none: like ADK, deleting a missing artifact is no error).';

CREATE FUNCTION adk_add_session_to_memory(app_name text, user_id text, session_id text)
RETURNS integer
AS 'MODULE_PATHNAME', 'adk_add_session_to_memory_sql' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION adk_add_session_to_memory(text, text, text) IS
    'Add the events with text of a session to its user''s memory; idempotent: events already added are skipped. Returns how many entries were added.';

-- ---------------------------------------------------------------------
-- Row-level security.  The owner of the tables (the role that created the
-- extension; ADK-JS and ADK Python connect as it) and superusers bypass
-- it; adk_admin members pass adk._tenant_visible.  The policies cover
-- every command, so adk_admin's DELETE on adk.model_calls still works.
-- ---------------------------------------------------------------------

ALTER TABLE adk.sessions ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant ON adk.sessions
    USING (adk._tenant_visible(app_name, user_id)) WITH CHECK (adk._tenant_visible(app_name, user_id));
ALTER TABLE adk.events ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant ON adk.events
    USING (adk._tenant_visible(app_name, user_id)) WITH CHECK (adk._tenant_visible(app_name, user_id));
ALTER TABLE adk.user_states ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant ON adk.user_states
    USING (adk._tenant_visible(app_name, user_id)) WITH CHECK (adk._tenant_visible(app_name, user_id));
ALTER TABLE adk.run_states ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant ON adk.run_states
    USING (adk._tenant_visible(app_name, user_id)) WITH CHECK (adk._tenant_visible(app_name, user_id));
ALTER TABLE adk.invocations ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant ON adk.invocations
    USING (adk._tenant_visible(app_name, user_id)) WITH CHECK (adk._tenant_visible(app_name, user_id));
ALTER TABLE adk.jobs ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant ON adk.jobs
    USING (adk._tenant_visible(app_name, user_id)) WITH CHECK (adk._tenant_visible(app_name, user_id));
ALTER TABLE adk.compactions ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant ON adk.compactions
    USING (adk._tenant_visible(app_name, user_id)) WITH CHECK (adk._tenant_visible(app_name, user_id));
-- A model call belongs to the session it was made for, and its writer
-- says whose that is: a run's calls are its user's, and so is a
-- summarizer's, inside a run or outside one (adk_compact).  A call made for
-- no session (adk_generate) is the role's that made it.  "No invocation"
-- is never "anyone's".
ALTER TABLE adk.model_calls ADD COLUMN app_name text, ADD COLUMN user_id text;
COMMENT ON COLUMN adk.model_calls.app_name IS
    'The app of the session the call was made for (a run''s, or a summarizer''s); NULL: none (adk_generate)';
COMMENT ON COLUMN adk.model_calls.user_id IS
    'The user id of the session the call was made for; NULL: none (adk_generate)';
ALTER TABLE adk.model_calls ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant ON adk.model_calls
    USING (CASE WHEN app_name IS NULL
                THEN adk._role_visible(role_name)
                ELSE adk._tenant_visible(app_name, user_id) END);

-- Artifacts and memory (80_artifacts.sql, 82_memory.sql).  For a role
-- under these policies a memory search reads the user's entries through
-- the (app, user) index and filters them by the query: @@ is not
-- leakproof, so it is not used below the policy as a GIN index condition.
ALTER TABLE adk.artifacts ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant ON adk.artifacts
    USING (adk._tenant_visible(app_name, user_id)) WITH CHECK (adk._tenant_visible(app_name, user_id));
ALTER TABLE adk.memory ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant ON adk.memory
    USING (adk._tenant_visible(app_name, user_id)) WITH CHECK (adk._tenant_visible(app_name, user_id));

-- Views read the tables as the querying role, so the policies apply.
ALTER VIEW adk.event_log SET (security_invoker = true);
ALTER VIEW adk.pending_interrupts SET (security_invoker = true);
ALTER VIEW adk.active_tasks SET (security_invoker = true);

-- ---------------------------------------------------------------------
-- Token budgets.  A budget covers the model calls of one app, of one user
-- id (NULL: all users together) and one role (NULL: all roles together),
-- per UTC day, UTC month or in total.  Before every model call of a run
-- adk._budget_take locks the usage row of every budget that applies
-- (SELECT ... FOR UPDATE, in budget id order) and refuses the call when
-- any of them is spent: tokens used >= max_tokens or calls >= max_model_calls.
-- Otherwise it counts the call; after the call adk._budget_charge adds its
-- input + output tokens to the same rows.  See docs/budgets.md
-- for what that makes exact.
-- ---------------------------------------------------------------------

CREATE TABLE adk.budgets (
    id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    app_name        text NOT NULL REFERENCES adk.apps (name) ON DELETE CASCADE,
    user_id         text,
    role_name       name,
    period          text NOT NULL CHECK (period OPERATOR(pg_catalog.=) ANY (ARRAY['day', 'month', 'total'])),
    max_tokens      bigint CHECK (max_tokens OPERATOR(pg_catalog.>=) 0),
    max_model_calls integer CHECK (max_model_calls OPERATOR(pg_catalog.>=) 0),
    created_at      timestamptz NOT NULL DEFAULT pg_catalog.now(),
    CONSTRAINT budgets_scope_key UNIQUE NULLS NOT DISTINCT (app_name, user_id, role_name, period)
);
COMMENT ON TABLE adk.budgets IS
    'Token budgets: max_tokens (input + output) and max_model_calls (NULL: no limit) per app, user id (NULL: all) and role (NULL: all), per day, month (UTC) or in total';
CREATE INDEX budgets_app_idx ON adk.budgets (app_name);
SELECT pg_catalog.pg_extension_config_dump('adk.budgets', '');

CREATE TABLE adk.budget_spend (
    budget_id    bigint NOT NULL REFERENCES adk.budgets (id) ON DELETE CASCADE,
    period_start timestamptz NOT NULL,
    tokens       bigint NOT NULL DEFAULT 0,
    model_calls  integer NOT NULL DEFAULT 0,
    CONSTRAINT budget_spend_pkey PRIMARY KEY (budget_id, period_start)
);
COMMENT ON TABLE adk.budget_spend IS 'What each budget has spent per period (written under its row lock)';
SELECT pg_catalog.pg_extension_config_dump('adk.budget_spend', '');

CREATE FUNCTION adk._budget_period_start(period text, at timestamptz) RETURNS timestamptz
LANGUAGE sql IMMUTABLE PARALLEL SAFE SET search_path = pg_catalog, pg_temp AS $$
    SELECT CASE period
           WHEN 'total' THEN '-infinity'::pg_catalog.timestamptz
           ELSE pg_catalog.timezone('UTC', pg_catalog.date_trunc(period, pg_catalog.timezone('UTC', at)))
           END
$$;

-- Take a model call from every budget that applies: NULL when the call may
-- go ahead (it is counted), else why not.  Runs as the owner of schema adk.
CREATE FUNCTION adk._budget_take(p_app text, p_user text, p_role name)
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

-- Charge a finished call's tokens to the budgets that took it: the rows
-- whose lock this transaction holds from adk._budget_take (same period
-- starts: the call counts in the period it was taken in).
CREATE FUNCTION adk._budget_charge(p_app text, p_user text, p_role name, p_taken_at timestamptz,
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

-- ---------------------------------------------------------------------
-- A rolled-back call is not free (src/shared/spent.c, docs/budgets.md).
-- What _budget_take and _budget_charge add to adk.budget_spend is noted
-- for the transaction (_budget_spent); if it rolls back, the
-- notes go to shared memory, _budget_take counts them as pending
-- (_budget_pending), and the launcher adds them to adk.budget_spend in a
-- transaction of its own (_budget_apply).  Ledger rows of rolled-back
-- calls are written again by the launcher with rolled_back = true.
-- ---------------------------------------------------------------------

CREATE FUNCTION adk._budget_pending(budget_id bigint, period_start timestamptz) RETURNS bigint[]
    AS 'MODULE_PATHNAME', 'adk_budget_pending' LANGUAGE C VOLATILE STRICT;
CREATE FUNCTION adk._budget_spent(budget_id bigint, period_start timestamptz, calls bigint, tokens bigint)
RETURNS void
    AS 'MODULE_PATHNAME', 'adk_budget_spent' LANGUAGE C VOLATILE STRICT;

-- The launcher: add what a rolled-back transaction charged.  false: the
-- usage row is locked by a running transaction (it waits 100 ms at most,
-- so one busy budget never holds up the launcher); the launcher tries
-- again in its next round.  A budget deleted since takes nothing.
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

-- A budget of one user is that user's data: the tenancy rules apply.  A
-- budget of one role (and all users) is that role's: its members see it.
-- An app-wide budget (no user, no role) is visible to everyone.
ALTER TABLE adk.budgets ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant ON adk.budgets
    USING (CASE WHEN user_id IS NOT NULL THEN adk._tenant_visible(app_name, user_id)
                WHEN role_name IS NOT NULL THEN adk._role_visible(role_name)
                ELSE true END)
    WITH CHECK (CASE WHEN user_id IS NOT NULL THEN adk._tenant_visible(app_name, user_id)
                     WHEN role_name IS NOT NULL THEN adk._role_visible(role_name)
                     ELSE true END);
ALTER TABLE adk.budget_spend ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant ON adk.budget_spend
    USING (EXISTS (SELECT 1 FROM adk.budgets b WHERE b.id OPERATOR(pg_catalog.=) budget_spend.budget_id));

CREATE VIEW adk.budget_usage WITH (security_invoker = true) AS
SELECT b.id AS budget_id, b.app_name, b.user_id, b.role_name, b.period,
       adk._budget_period_start(b.period, pg_catalog.now()) AS period_start,
       coalesce(s.tokens, 0) AS tokens, b.max_tokens,
       coalesce(s.model_calls, 0) AS model_calls, b.max_model_calls,
       (b.max_tokens IS NOT NULL AND coalesce(s.tokens, 0) OPERATOR(pg_catalog.>=) b.max_tokens)
       OR (b.max_model_calls IS NOT NULL
           AND coalesce(s.model_calls, 0) OPERATOR(pg_catalog.>=) b.max_model_calls) AS spent
  FROM adk.budgets b
  LEFT JOIN adk.budget_spend s
    ON s.budget_id OPERATOR(pg_catalog.=) b.id
   AND s.period_start OPERATOR(pg_catalog.=) adk._budget_period_start(b.period, pg_catalog.now());
COMMENT ON VIEW adk.budget_usage IS 'Each budget in its current period: tokens and model calls spent against the limits';

-- ---------------------------------------------------------------------
-- Costs: optional prices per model, USD (or any one currency) per million
-- tokens: {"input": 2.5, "output": 10, "cached_input": 1.25}.  Cached input
-- tokens (usage_metadata.cached_content_token_count) cost cached_input,
-- else input.
-- ---------------------------------------------------------------------

CREATE FUNCTION adk._check_price(price jsonb) RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE SET search_path = pg_catalog, pg_temp AS $$
    SELECT price IS NULL
        OR (pg_catalog.jsonb_typeof(price) OPERATOR(pg_catalog.=) 'object'
            AND NOT EXISTS (SELECT 1 FROM pg_catalog.jsonb_each(price) e
                             WHERE e.key OPERATOR(pg_catalog.<>) ALL (ARRAY['input', 'output', 'cached_input'])
                                OR pg_catalog.jsonb_typeof(e.value) OPERATOR(pg_catalog.<>) 'number'
                                OR (e.value)::text::numeric OPERATOR(pg_catalog.<) 0))
$$;
ALTER TABLE adk.models ADD COLUMN price jsonb
    CONSTRAINT models_price_check CHECK (adk._check_price(price));
COMMENT ON COLUMN adk.models.price IS
    'Optional prices per million tokens: {"input", "output", "cached_input"} (non-negative numbers)';

CREATE VIEW adk.costs WITH (security_invoker = true) AS
SELECT c.app_name, c.user_id, i.agent, c.model,
       (pg_catalog.timezone('UTC', c.created_at))::date AS day,
       pg_catalog.count(*) AS model_calls,
       pg_catalog.sum(coalesce(c.input_tokens, 0)) AS input_tokens,
       pg_catalog.sum(coalesce(c.output_tokens, 0)) AS output_tokens,
       pg_catalog.sum(x.cached) AS cached_input_tokens,
       -- OPERATOR() forms share one precedence: every product is bracketed;
       -- the cost is rounded to millionths of the currency (a person reads
       -- 0.000125, not 24 decimals)
       pg_catalog.round(pg_catalog.sum(((coalesce(c.input_tokens, 0) OPERATOR(pg_catalog.-) x.cached)
                       OPERATOR(pg_catalog.*) (m.price ->> 'input')::numeric)
                      OPERATOR(pg_catalog.+)
                      (x.cached OPERATOR(pg_catalog.*)
                       coalesce(m.price ->> 'cached_input', m.price ->> 'input')::numeric)
                      OPERATOR(pg_catalog.+)
                      (coalesce(c.output_tokens, 0) OPERATOR(pg_catalog.*) (m.price ->> 'output')::numeric))
           OPERATOR(pg_catalog./) 1000000, 6) AS cost
  FROM adk.model_calls c
  LEFT JOIN adk.invocations i ON i.invocation_id OPERATOR(pg_catalog.=) c.invocation_id
  LEFT JOIN adk.models m ON m.name OPERATOR(pg_catalog.=) c.model
 CROSS JOIN LATERAL (SELECT coalesce((c.response #>> '{usage_metadata,cached_content_token_count}')::bigint, 0)
                            AS cached) x
 GROUP BY 1, 2, 3, 4, 5;
COMMENT ON VIEW adk.costs IS
    'Model calls, tokens and cost (from adk.models.price; NULL without a price) per app and user (the session''s the call was made for; NULL for adk_generate), agent (the invocation''s), model and UTC day';

-- safe to read now that row-level security filters it
GRANT SELECT ON adk.compactions TO adk_user;
GRANT SELECT ON adk.budgets, adk.budget_spend, adk.budget_usage, adk.costs TO adk_user;
GRANT INSERT, UPDATE, DELETE ON adk.budgets TO adk_admin;
