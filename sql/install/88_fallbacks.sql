-- ---------------------------------------------------------------------
-- Fallback models and the circuit breaker (docs/models.md, "Fallback
-- models").  A model's fallbacks are tried, in order, when its answer is
-- a failure its fallback_on option lists (429, 5xx and timeouts by
-- default), after its own retries; each attempt is a row of
-- adk.model_calls.  The breaker (shared memory, shared/breaker.c) skips a
-- model that failed adk.breaker_failures times within adk.breaker_window
-- for adk.breaker_cooldown.
-- ---------------------------------------------------------------------

ALTER TABLE adk.models ADD COLUMN fallbacks text[] NOT NULL DEFAULT '{}';
COMMENT ON COLUMN adk.models.fallbacks IS
    'Models tried in order when this one fails with a failure its fallback_on option lists (default 429, 5xx, TIMEOUT); each fallback''s own fallbacks follow it (depth first, each model once)';

ALTER TABLE adk.model_calls
    ADD COLUMN fallback_attempt integer NOT NULL DEFAULT 0,
    ADD COLUMN fallback_from    text;
COMMENT ON COLUMN adk.model_calls.fallback_attempt IS
    'Which model of the request''s fallback chain this row is: 0 the first one tried (the model called, unless its circuit breaker was open), 1 the next, ...';
COMMENT ON COLUMN adk.model_calls.fallback_from IS
    'The model this attempt fell back from (it failed, or its circuit breaker was open); NULL for the first attempt';

-- Fallbacks name models that exist, never the model itself or one twice,
-- and never make a cycle; a model another one falls back to cannot be
-- deleted or renamed.  Under the definitions lock, as the agent graph's
-- checks (50_definitions.sql); while a dump is restored
-- (adk._check_references() false) only existence is not checked.
CREATE FUNCTION adk._models_check_fallbacks() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    f text;
    users text;
    cycle text[];
BEGIN
    PERFORM adk._lock_definitions();
    IF TG_OP IN ('UPDATE', 'DELETE') AND (TG_OP = 'DELETE' OR NEW.name IS DISTINCT FROM OLD.name) THEN
        users := adk._name_list('model', 'models',
                                ARRAY(SELECT m.name FROM adk.models m
                                       WHERE OLD.name = ANY (m.fallbacks) AND m.name <> OLD.name));
        IF users IS NOT NULL THEN
            RAISE EXCEPTION 'model "%" is a fallback of %', OLD.name, users USING ERRCODE = '23503',
                HINT = 'Remove it from their fallbacks first (adk_define_fallbacks).';
        END IF;
    END IF;
    IF TG_OP = 'DELETE' THEN
        RETURN OLD;
    END IF;
    IF NEW.fallbacks IS NULL THEN
        RAISE EXCEPTION 'fallbacks of model "%" must not be null', NEW.name USING ERRCODE = '22004',
            HINT = 'An empty array means no fallbacks.';
    END IF;
    IF cardinality(NEW.fallbacks) > 0 AND (array_ndims(NEW.fallbacks) <> 1 OR array_lower(NEW.fallbacks, 1) <> 1) THEN
        RAISE EXCEPTION 'fallbacks of model "%" must be a one-dimensional array', NEW.name USING ERRCODE = '22023';
    END IF;
    FOREACH f IN ARRAY NEW.fallbacks LOOP
        IF f IS NULL OR f = '' THEN
            RAISE EXCEPTION 'fallbacks of model "%" must not contain null or empty names', NEW.name
                USING ERRCODE = '22023';
        END IF;
        IF f = NEW.name THEN
            RAISE EXCEPTION 'model "%" cannot fall back to itself', NEW.name USING ERRCODE = '22023';
        END IF;
        IF cardinality(array_positions(NEW.fallbacks, f)) > 1 THEN
            RAISE EXCEPTION 'model "%" lists fallback "%" twice', NEW.name, f USING ERRCODE = '22023';
        END IF;
        IF adk._check_references() AND NOT EXISTS (SELECT 1 FROM adk.models m WHERE m.name = f) THEN
            RAISE EXCEPTION 'fallback model "%" of model "%" does not exist', f, NEW.name
                USING ERRCODE = '42704', HINT = 'Define it first with adk_define_model().';
        END IF;
    END LOOP;
    -- a path from one of the fallbacks back to this model is a cycle
    WITH RECURSIVE walk(name, path) AS (
        SELECT x.f, ARRAY[NEW.name, x.f] FROM unnest(NEW.fallbacks) AS x(f)
        UNION ALL
        SELECT x.f, w.path || x.f
          FROM walk w
          JOIN adk.models m ON m.name = w.name AND w.name <> NEW.name
         CROSS JOIN LATERAL unnest(m.fallbacks) AS x(f)
         WHERE NOT (x.f = ANY (w.path[2:]))
    )
    SELECT w.path INTO cycle FROM walk w WHERE w.name = NEW.name LIMIT 1;
    IF cycle IS NOT NULL THEN
        RAISE EXCEPTION 'fallbacks of model "%" would make a cycle: %', NEW.name,
            array_to_string(cycle, ' -> ') USING ERRCODE = '22023',
            HINT = 'A model''s fallbacks are followed depth first; no model may lead back to one before it.';
    END IF;
    RETURN NEW;
END
$$;
CREATE TRIGGER adk_models_check_fallbacks
    BEFORE INSERT OR UPDATE OR DELETE ON adk.models
    FOR EACH ROW EXECUTE FUNCTION adk._models_check_fallbacks();

CREATE FUNCTION adk_define_fallbacks(model text, fallbacks text[])
RETURNS void
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    UPDATE adk.models m SET fallbacks = coalesce($2, '{}') WHERE m.name = $1;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'model "%" does not exist', $1 USING ERRCODE = '42704',
            HINT = 'Define it first with adk_define_model().';
    END IF;
END
$$;
COMMENT ON FUNCTION adk_define_fallbacks(text, text[]) IS
    'Set the models a model falls back to, in order (an empty array: none); adk_admin.';

-- The circuit breakers of the models, from shared memory (only with
-- shared_preload_libraries = 'adk_runner').
CREATE FUNCTION adk._model_breakers(OUT model text, OUT state text, OUT failures integer,
                                    OUT window_start timestamptz, OUT open_until timestamptz,
                                    OUT times_opened bigint, OUT last_failure timestamptz)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'adk_model_breakers' LANGUAGE C STRICT VOLATILE;
CREATE VIEW adk.model_breakers AS
SELECT b.model, b.state, b.failures, b.window_start, b.open_until, b.times_opened, b.last_failure
  FROM adk._model_breakers() b;
COMMENT ON VIEW adk.model_breakers IS
    'Per model its circuit breaker (shared by every backend and worker): closed, open (skipped until open_until) or half_open (the next request tries it); failures counted in the current window of adk.breaker_window';
GRANT SELECT ON adk.model_breakers TO adk_user;
