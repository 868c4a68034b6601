-- ---------------------------------------------------------------------
-- Scale-out on Citus (docs/operations.md).
--
-- adk_distribute() lays the store out the one way the extension supports:
--
--   adk.sessions                     distributed by id
--   adk.events                       distributed by session_id, colocated
--   adk.run_states, adk.compactions  distributed by session_id, colocated
--   adk.app_states, adk.user_states,
--   adk.adk_internal_metadata        reference tables
--   everything else (definitions, secrets, invocations, model calls,
--   jobs)                            on the coordinator, where runs execute
--
-- A session, its events and its side rows are then on one shard: every
-- statement about one session is routed to one worker, and the triggers on
-- those shards reach only colocated shards (the events trigger bumps the
-- session row of its own shard).  adk_undistribute() turns every table back
-- into a plain local table.  Anything of ours that Citus manages in another
-- layout is refused, by these functions and by every append (which would
-- otherwise write where no read looks).
-- ---------------------------------------------------------------------

-- The layout: relation, how Citus should hold it, by which column.
CREATE FUNCTION adk._citus_layout(OUT rel regclass, OUT kind text, OUT dist_column text)
RETURNS SETOF record
LANGUAGE sql IMMUTABLE SET search_path = pg_catalog, pg_temp AS $$
    VALUES ('adk.sessions'::pg_catalog.regclass, 'distributed', 'id'),
           ('adk.events'::pg_catalog.regclass, 'distributed', 'session_id'),
           ('adk.run_states'::pg_catalog.regclass, 'distributed', 'session_id'),
           ('adk.compactions'::pg_catalog.regclass, 'distributed', 'session_id'),
           ('adk.app_states'::pg_catalog.regclass, 'reference', NULL),
           ('adk.user_states'::pg_catalog.regclass, 'reference', NULL),
           ('adk.adk_internal_metadata'::pg_catalog.regclass, 'reference', NULL)
$$;

-- Our tables Citus manages, and whether each is where the layout wants it
-- (the partitions of adk.sessions and adk.events follow their parents).
CREATE FUNCTION adk._citus_tables(OUT rel regclass, OUT supported boolean)
RETURNS SETOF record
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    IF NOT EXISTS (SELECT FROM pg_catalog.pg_extension x WHERE x.extname OPERATOR(pg_catalog.=) 'citus') THEN
        RETURN;
    END IF;
    RETURN QUERY EXECUTE $q$
        SELECT p.logicalrelid::pg_catalog.regclass,
               coalesce(CASE l.kind
                   WHEN 'reference' THEN p.partmethod OPERATOR(pg_catalog.=) 'n'
                                     AND p.repmodel OPERATOR(pg_catalog.=) 't'
                   ELSE p.partmethod OPERATOR(pg_catalog.=) 'h'
                    AND pg_catalog.column_to_column_name(p.logicalrelid, p.partkey)
                        OPERATOR(pg_catalog.=) l.dist_column
                    AND p.colocationid OPERATOR(pg_catalog.=)
                        (SELECT s.colocationid FROM pg_catalog.pg_dist_partition s
                          WHERE s.logicalrelid OPERATOR(pg_catalog.=) 'adk.sessions'::pg_catalog.regclass)
                   END, false)
          FROM pg_catalog.pg_dist_partition p
          JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) p.logicalrelid
          LEFT JOIN pg_catalog.pg_inherits i ON i.inhrelid OPERATOR(pg_catalog.=) c.oid
          LEFT JOIN adk._citus_layout() l
            ON l.rel OPERATOR(pg_catalog.=) coalesce(i.inhparent, c.oid)
         WHERE c.relnamespace OPERATOR(pg_catalog.=) 'adk'::pg_catalog.regnamespace
         ORDER BY p.logicalrelid::pg_catalog.regclass::pg_catalog.text
    $q$;
END
$$;

CREATE FUNCTION adk_distribute() RETURNS void
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    l record;
    bad text;
BEGIN
    IF NOT EXISTS (SELECT FROM pg_catalog.pg_extension x WHERE x.extname OPERATOR(pg_catalog.=) 'citus') THEN
        RAISE EXCEPTION 'Citus is not installed in this database'
            USING ERRCODE = '0A000',
                  HINT = 'CREATE EXTENSION citus, add the worker nodes, then SELECT adk_distribute().';
    END IF;
    SELECT pg_catalog.string_agg(t.rel::pg_catalog.text, ', ') INTO bad
      FROM adk._citus_tables() t WHERE NOT t.supported;
    IF bad IS NOT NULL THEN
        RAISE EXCEPTION 'Citus manages % in a layout adk_runner does not support', bad
            USING ERRCODE = '0A000',
                  DETAIL = 'Sessions must be distributed by id, events, run states and compactions by session_id colocated with them, app and user state as reference tables, everything else kept on the coordinator.',
                  HINT = 'SELECT adk_undistribute(), then SELECT adk_distribute().';
    END IF;
    -- our triggers run on the shards; each reaches only its own colocated
    -- shards (citus.enable_unsafe_triggers is what allows that)
    PERFORM pg_catalog.set_config('citus.enable_unsafe_triggers', 'on', true);
    -- events already stored are copied into the shards as they are: the
    -- triggers that place new events and apply rewinds are off while they
    -- are (adk.sessions.rewound is copied with the sessions; the lock this
    -- takes holds off other writers until commit)
    ALTER TABLE adk.events DISABLE TRIGGER adk_events_before_insert;
    ALTER TABLE adk.events DISABLE TRIGGER adk_events_after_rewind;
    FOR l IN SELECT * FROM adk._citus_layout() LOOP
        CONTINUE WHEN EXISTS (SELECT FROM adk._citus_tables() t WHERE t.rel OPERATOR(pg_catalog.=) l.rel);
        IF l.kind OPERATOR(pg_catalog.=) 'reference' THEN
            EXECUTE 'SELECT pg_catalog.create_reference_table($1)' USING l.rel;
        ELSIF l.rel OPERATOR(pg_catalog.=) 'adk.sessions'::pg_catalog.regclass THEN
            EXECUTE 'SELECT pg_catalog.create_distributed_table($1, $2, colocate_with => ''none'')'
                USING l.rel, l.dist_column;
        ELSE
            EXECUTE 'SELECT pg_catalog.create_distributed_table($1, $2, colocate_with => ''adk.sessions'')'
                USING l.rel, l.dist_column;
        END IF;
        -- the rows are in the shards now: empty the coordinator's own copy
        -- (adk_undistribute() puts them back from the shards)
        EXECUTE 'SELECT pg_catalog.truncate_local_data_after_distributing_table($1)' USING l.rel;
    END LOOP;
    ALTER TABLE adk.events ENABLE TRIGGER adk_events_before_insert;
    ALTER TABLE adk.events ENABLE TRIGGER adk_events_after_rewind;
END
$$;
COMMENT ON FUNCTION adk_distribute() IS
    'On Citus: distribute sessions by id with events, run states and compactions colocated by session_id, app/user state as reference tables; the rest stays on the coordinator. Refuses any other layout.';

-- Citus's undistribute_table() cannot take a table that belongs to an
-- extension (it rebuilds the table under a new name), so each of ours is
-- taken back in place, the way DROP TABLE takes a distributed table apart:
-- its rows are kept aside, its partition detached (Citus cannot take a
-- partition's metadata apart alone), its shards and metadata removed, then
-- the partition attached again and the rows put back as they were --
-- triggers off (session_replication_role = replica), so events keep their
-- seq and time, as with pg_restore --disable-triggers.
CREATE FUNCTION adk_undistribute() RETURNS void
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    t record;
    part regclass;
    rels regclass[];
    r regclass;
    tg name;
    n integer := 0;
BEGIN
    IF NOT EXISTS (SELECT FROM adk._citus_tables()) THEN
        RETURN;
    END IF;
    PERFORM pg_catalog.set_config('citus.enable_unsafe_triggers', 'on', true);
    FOR t IN SELECT c.rel FROM adk._citus_tables() c
              WHERE NOT EXISTS (SELECT FROM pg_catalog.pg_inherits i
                                 WHERE i.inhrelid OPERATOR(pg_catalog.=) c.rel)
    LOOP
        n := n OPERATOR(pg_catalog.+) 1;
        EXECUTE pg_catalog.format('CREATE TEMP TABLE adk_undistribute_%s ON COMMIT DROP AS SELECT * FROM %s',
                                  n, t.rel);
        SELECT i.inhrelid::pg_catalog.regclass INTO part FROM pg_catalog.pg_inherits i
         WHERE i.inhparent OPERATOR(pg_catalog.=) t.rel;
        rels := ARRAY[t.rel];
        IF part IS NOT NULL THEN
            -- on the coordinator only: the workers' own copies stay as
            -- they are, the shards go with their parent's
            PERFORM pg_catalog.set_config('citus.enable_ddl_propagation', 'off', true);
            EXECUTE pg_catalog.format('ALTER TABLE %s DETACH PARTITION %s', t.rel, part);
            PERFORM pg_catalog.set_config('citus.enable_ddl_propagation', 'on', true);
            rels := rels OPERATOR(pg_catalog.||) part;
        END IF;
        FOREACH r IN ARRAY rels LOOP
            -- (the workers take a partition's metadata apart with its parent's)
            PERFORM pg_catalog.master_remove_distributed_table_metadata_from_workers(
                        r, n.nspname, c.relname)
               FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) c.relnamespace
              WHERE c.oid OPERATOR(pg_catalog.=) r AND r IS DISTINCT FROM part;
            PERFORM pg_catalog.citus_drop_all_shards(r, n.nspname, c.relname,
                                                     r IS NOT DISTINCT FROM part)
               FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) c.relnamespace
              WHERE c.oid OPERATOR(pg_catalog.=) r;
            PERFORM pg_catalog.master_remove_partition_metadata(r, n.nspname, c.relname)
               FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) c.relnamespace
              WHERE c.oid OPERATOR(pg_catalog.=) r;
            -- what Citus left on the coordinator's own table: its TRUNCATE
            -- trigger, and the rows it held before it was distributed
            FOR tg IN SELECT g.tgname FROM pg_catalog.pg_trigger g
                       WHERE g.tgrelid OPERATOR(pg_catalog.=) r
                         AND g.tgfoid OPERATOR(pg_catalog.=) 'pg_catalog.citus_truncate_trigger'::pg_catalog.regproc
            LOOP
                EXECUTE pg_catalog.format('DROP TRIGGER %I ON %s', tg, r);
            END LOOP;
            EXECUTE pg_catalog.format('TRUNCATE %s', r);
        END LOOP;
        IF part IS NOT NULL THEN
            PERFORM pg_catalog.set_config('citus.enable_ddl_propagation', 'off', true);
            EXECUTE pg_catalog.format('ALTER TABLE %s ATTACH PARTITION %s FOR VALUES WITH (MODULUS 1, REMAINDER 0)',
                                      t.rel, part);
            PERFORM pg_catalog.set_config('citus.enable_ddl_propagation', 'on', true);
        END IF;
        PERFORM pg_catalog.set_config('session_replication_role', 'replica', true);
        EXECUTE pg_catalog.format('INSERT INTO %s SELECT * FROM adk_undistribute_%s', t.rel, n);
        PERFORM pg_catalog.set_config('session_replication_role', 'origin', true);
    END LOOP;
END
$$;
COMMENT ON FUNCTION adk_undistribute() IS
    'On Citus: turn every table of adk_runner that Citus manages back into a local table on the coordinator.';

-- DROP EXTENSION adk_runner with our tables on Citus: take them back
-- first (Citus cannot drop an extension's distributed partitioned tables:
-- it drops the workers' copies with the extension before the shards).  At
-- ddl_command_start the extension being dropped is known only from the
-- statement's text.
CREATE FUNCTION adk._drop_extension_undistribute() RETURNS event_trigger
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    nsp name;
BEGIN
    IF pg_catalog.current_query() OPERATOR(pg_catalog.~*) '\madk_runner\M'
       AND EXISTS (SELECT FROM adk._citus_tables()) THEN
        SELECT n.nspname INTO nsp
          FROM pg_catalog.pg_extension x
          JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) x.extnamespace
         WHERE x.extname OPERATOR(pg_catalog.=) 'adk_runner';
        EXECUTE pg_catalog.format('SELECT %I.adk_undistribute()', nsp);
    END IF;
END
$$;
CREATE EVENT TRIGGER adk_drop_extension_undistribute ON ddl_command_start
    WHEN TAG IN ('DROP EXTENSION')
    EXECUTE FUNCTION adk._drop_extension_undistribute();

REVOKE ALL ON FUNCTION adk_distribute(), adk_undistribute() FROM PUBLIC;
REVOKE ALL ON FUNCTION adk._citus_layout(), adk._citus_tables(), adk._drop_extension_undistribute()
    FROM PUBLIC;
