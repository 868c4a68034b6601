-- ---------------------------------------------------------------------
-- Rewind (docs/sessions-lifecycle.md, "Rewind and edit"), as ADK Python's
-- Runner.rewind_async writes it: a rewind event -- author "user", a new
-- invocation id, actions.rewind_before_invocation_id, a state delta that
-- restores the session's own keys, an artifact delta that restores its
-- artifacts -- and nothing deleted.  The events from the first event of
-- the rewound invocation up to the rewind event are then "rewound": every
-- reader of the history skips them.
--
-- Which events are rewound (of those before p_before_seq, for a fork) is
-- ADK's rule (its _apply_rewinds): walk the
-- session back from the newest event; a rewind event jumps the walk to
-- the first event of the invocation it names (to itself alone when there
-- is none before it), and everything it jumped over is rewound -- also
-- rewind events, so rewinding a rewind brings back what it had rewound.
-- (A rewind event is one whose rewind_before_invocation_id is a string:
-- writers that store every field of ADK's EventActions store it as null
-- on every other event.)  The result is kept on the session row, adk.sessions.rewound (the seqs
-- of rewound events as one multirange), recomputed by a trigger whenever
-- a rewind event is inserted, by whichever writer: ADK Python's rewind
-- events are honoured as ours are.  Readers use adk.live_events.  (Here,
-- before the readers; adk_rewind itself is in 89_rewind.sql.)
-- ---------------------------------------------------------------------
ALTER TABLE adk.sessions ADD COLUMN rewound int8multirange NOT NULL DEFAULT '{}';
COMMENT ON COLUMN adk.sessions.rewound IS
    'the seqs of the session''s rewound events (rewind events included), which every reader of its history skips';

CREATE FUNCTION adk._rewound(p_app text, p_user text, p_session text,
                             p_before_seq bigint DEFAULT NULL) RETURNS int8multirange
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    r record;
    result int8multirange := '{}';
    floor bigint := 9223372036854775807;
    first_seq bigint;
BEGIN
    FOR r IN SELECT e.seq, e.event_data #>> '{actions,rewind_before_invocation_id}' AS target
               FROM adk.events e
              WHERE e.app_name = p_app AND e.user_id = p_user AND e.session_id = p_session
                AND (e.event_data #>> '{actions,rewind_before_invocation_id}') IS NOT NULL
                AND e.seq < coalesce(p_before_seq, 9223372036854775807)
              ORDER BY e.seq DESC
    LOOP
        CONTINUE WHEN r.seq >= floor;    -- inside a range already jumped over
        SELECT min(e.seq) INTO first_seq FROM adk.events e
         WHERE e.app_name = p_app AND e.user_id = p_user AND e.session_id = p_session
           AND e.invocation_id = r.target AND e.seq < r.seq;
        first_seq := coalesce(first_seq, r.seq);
        result := result + int8multirange(int8range(first_seq, r.seq, '[]'));
        floor := first_seq;
    END LOOP;
    RETURN result;
END
$$;

-- A rewind event, from any writer, recomputes its session's rewound
-- seqs (adk._session_rewound_set, 88_turn_statements.sql, run as the
-- writer of the row).  Which rows are rewind events the function decides
-- (src/store/rewound_trigger.c): a WHEN clause here was read from its
-- stored text and prepared again by every INSERT into adk.events.
CREATE FUNCTION adk._events_after_rewind() RETURNS trigger
    AS 'MODULE_PATHNAME', 'adk_events_after_rewind' LANGUAGE C;
CREATE TRIGGER adk_events_after_rewind
    AFTER INSERT ON adk.events
    FOR EACH ROW EXECUTE FUNCTION adk._events_after_rewind();

-- The events every reader of a history reads: not the rewound ones.
-- (Queried for one session, the planner reads its session row once.)
CREATE VIEW adk.live_events WITH (security_invoker = true) AS
SELECT e.*
  FROM adk.events e
  JOIN adk.sessions s
    ON s.app_name OPERATOR(pg_catalog.=) e.app_name
   AND s.user_id OPERATOR(pg_catalog.=) e.user_id
   AND s.id OPERATOR(pg_catalog.=) e.session_id
 WHERE NOT (s.rewound OPERATOR(pg_catalog.@>) e.seq);
COMMENT ON VIEW adk.live_events IS
    'adk.events without the rewound events (adk.sessions.rewound): the history as prompts, compaction, routing and memory read it';
