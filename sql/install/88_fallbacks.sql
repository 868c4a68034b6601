-- ---------------------------------------------------------------------
-- Fallback models and the circuit breaker (docs/models.md, "Fallback
-- models").  A model's fallbacks are tried, in order, when its answer is
-- a failure its fallback_on option lists (429, 5xx and timeouts by
-- default), after its own retries; each attempt is a row of
-- adk.model_calls.  The breaker (shared memory, shared/breaker.c) skips a
-- model that failed adk.breaker_failures times within adk.breaker_window
-- for adk.breaker_cooldown.
-- ---------------------------------------------------------------------

-- Checked by the models' triggers (40_models.sql, 50_definitions.sql).
-- NULL, not an empty array, when there are none: no default to keep in
-- every backend's relation cache.
ALTER TABLE adk.models ADD COLUMN fallbacks text[];
COMMENT ON COLUMN adk.models.fallbacks IS
    'Models tried in order when this one fails with a failure its fallback_on option lists (default 429, 5xx, TIMEOUT); each fallback''s own fallbacks follow it (depth first, each model once); NULL: none';

ALTER TABLE adk.model_calls
    ADD COLUMN fallback_attempt integer NOT NULL DEFAULT 0,
    ADD COLUMN fallback_from    text;
COMMENT ON COLUMN adk.model_calls.fallback_attempt IS
    'Which model of the request''s fallback chain this row is: 0 the first one tried (the model called, unless its circuit breaker was open), 1 the next, ...';
COMMENT ON COLUMN adk.model_calls.fallback_from IS
    'The model this attempt fell back from (it failed, or its circuit breaker was open); NULL for the first attempt';

CREATE FUNCTION adk_define_fallbacks(model text, fallbacks text[])
RETURNS void
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    UPDATE adk.models m SET fallbacks = CASE WHEN cardinality($2) > 0 THEN $2 END WHERE m.name = $1;
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
