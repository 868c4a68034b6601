# Background workers, the happy paths: adk_submit -> adk_wait; NOTIFY
# adk_events; 50 jobs over 8 sessions with adk.max_workers = 4 (all done,
# never more than one per session at once, each session's runs in submit order); a
# trigger on an orders table firing an agent whose tool writes back to the
# table (rolled-back writes queue nothing); jobs run as the role that
# queued them; and without shared_preload_libraries adk_submit says that
# no workers run.
use strict;
use warnings;
use File::Temp qw(tempdir);
use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::Bin/../perl";
use AdkTest;

my $tmp = tempdir(CLEANUP => 1);

# the bundled local model server, on a free port
my ($server, $url) = start_model_server($tmp);
$url .= "/v1";

my $node = adk_node('workers', 'adk.max_workers' => 4, max_worker_processes => 16);

adk_install(
	$node, 'sk-test', qq{
	SELECT adk_define_model('m', 'openai', '$url', 'gpt-test', api_key_secret => 'k');
	SELECT adk_define_model('m100', 'openai', '$url', 'gpt-latency-100', api_key_secret => 'k');
	SELECT adk_define_agent('echo', model => 'm');
	SELECT adk_define_app('echo_app', 'echo');
	SELECT adk_define_agent('echo100', model => 'm100');
	SELECT adk_define_app('echo100_app', 'echo100');
});

my $su = $node->safe_psql('postgres', 'SELECT current_user');

# the launcher is there, named as such
$node->poll_query_until('postgres',
	"SELECT count(*) = 1 FROM pg_stat_activity WHERE backend_type = 'adk_runner launcher'")
  or die 'no launcher';
pass('the launcher runs, backend_type "adk_runner launcher"');

# submit -> wait -> events
my $inv = $node->safe_psql('postgres',
	"SELECT adk_submit('echo_app', 'u1', 's1', 'hello worker')");
like($inv, qr/^e-[0-9a-f-]{36}$/, 'adk_submit returns an invocation id');
is( $node->safe_psql(
		'postgres', qq{
	SELECT string_agg(seq || ':' || (event_data ->> 'author') || ':' ||
	                  (event_data #>> '{content,parts,0,text}'), ' | ' ORDER BY seq)
	  FROM adk_wait('$inv', '30 s')}),
	'1:user:hello worker | 2:echo:echo: hello worker',
	'adk_wait returns the run\'s events in order');
is( $node->safe_psql(
		'postgres', qq{
	SELECT j.status || ',' || j.attempts || ',' || j.role_name || ',' || j.source || ',' ||
	       i.status || ',' || (j.finished_at >= j.started_at) || ',' || (i.backend_pid = j.worker_pid)
	  FROM adk.jobs j JOIN adk.invocations i USING (invocation_id)
	 WHERE invocation_id = '$inv'}),
	"completed,1,$su,adk_submit,completed,true,true",
	'the job and its invocation are completed, run by a worker as the submitter');
is( $node->safe_psql(
		'postgres', qq{
	SELECT count(*) FROM adk_wait('$inv')}),
	'2', 'adk_wait on an ended run returns at once');

# errors: unknown app, bad options, unknown run, timeout (SQLSTATE 03000)
my ($ret, $out, $err) =
  $node->psql('postgres', "SELECT adk_submit('no_app', 'u', 's', 'x')");
like($err, qr/app "no_app" does not exist/, 'adk_submit checks the app');
($ret, $out, $err) = $node->psql('postgres',
	"SELECT adk_submit('echo_app', 'u', 's', 'x', NULL, '{\"retries\": -1}')");
like($err, qr/"retries" must be an integer/, 'adk_submit checks retries');
($ret, $out, $err) = $node->psql('postgres',
	"SELECT adk_submit('echo_app', '', 's', 'x')");
like($err, qr/user id must not be empty/, 'adk_submit checks the ids');
($ret, $out, $err) =
  $node->psql('postgres', "SELECT * FROM adk_wait('e-nope', '1 s')");
like($err, qr/run "e-nope" does not exist/, 'adk_wait on an unknown run raises');

# a rolled-back submit runs nothing
$node->safe_psql(
	'postgres', q{
	BEGIN;
	SELECT adk_submit('echo_app', 'u1', 'rolled-back', 'never');
	ROLLBACK;});
sleep 1;
is( $node->safe_psql(
		'postgres',
		"SELECT (SELECT count(*) FROM adk.jobs WHERE session_id = 'rolled-back') + (SELECT count(*) FROM adk.sessions WHERE id = 'rolled-back')"
	),
	'0',
	'a rolled-back adk_submit queues and runs nothing');

# NOTIFY adk_events for every stored event, adk_jobs when a job ends: by
# default opaque row ids (test/t/007), here the full ids
$node->safe_psql('postgres', 'ALTER SYSTEM SET adk.notify_payload = full; SELECT pg_reload_conf()');
$node->poll_query_until('postgres', q{SELECT current_setting('adk.notify_payload') = 'full'})
  or die 'adk.notify_payload not reloaded';
select(undef, undef, undef, 0.5);	# the idle workers reload too
my $listener = $node->background_psql('postgres');
$listener->query_safe('LISTEN adk_events; LISTEN adk_jobs;');
$inv = $node->safe_psql('postgres',
	"SELECT adk_submit('echo_app', 'u1', 'listened', 'notify me')");
$node->safe_psql('postgres', "SELECT count(*) FROM adk_wait('$inv', '30 s')");
my $notes = $listener->query_safe('SELECT 1');
$notes .= $listener->{stdout} // '';
like(
	$notes,
	qr/"adk_events" with payload "\{"event_id":"[^"]+","app":"echo_app","user":"u1","session":"listened","seq":1,"invocation_id":"$inv","author":"user"\}"/,
	'NOTIFY adk_events for the user event: app, user, session, seq, invocation id, author');
like($notes, qr/"adk_events" with payload "\{"event_id":"[^"]+","app":"echo_app".*"seq":2,"invocation_id":"$inv","author":"echo"\}"/,
	'NOTIFY adk_events for the model event');
like($notes, qr/"adk_jobs" with payload "\{"job_id":\d+,"invocation_id":"$inv","status":"completed"\}"/,
	'NOTIFY adk_jobs when the job ends');
$listener->quit;
# adk_append_event notifies too
$listener = $node->background_psql('postgres');
$listener->query_safe('LISTEN adk_events;');
$node->safe_psql('postgres',
	q{SELECT adk_append_event('echo_app', 'u1', 'listened', '{"author": "someone", "invocation_id": "e-manual"}')});
$notes = $listener->query_safe('SELECT 1') . ($listener->{stdout} // '');
like($notes, qr/"seq":3,"invocation_id":"e-manual","author":"someone"/,
	'adk_append_event sends NOTIFY adk_events too');
$listener->quit;
$node->safe_psql('postgres', 'ALTER SYSTEM RESET adk.notify_payload; SELECT pg_reload_conf()');

# 50 jobs over 8 sessions, 4 workers
$node->safe_psql(
	'postgres', q{
	SELECT adk_submit('echo100_app', 'u2', 'sess-' || (i % 8), 'message ' || i)
	  FROM generate_series(1, 50) i;});
$node->poll_query_until('postgres',
	"SELECT count(*) = 50 FROM adk.jobs WHERE app_name = 'echo100_app' AND status = 'completed'")
  or diag $node->safe_psql('postgres',
	"SELECT status, count(*), max(error) FROM adk.jobs GROUP BY status");
is( $node->safe_psql(
		'postgres',
		"SELECT count(*) FILTER (WHERE status = 'completed') || '/' || count(*) FROM adk.jobs WHERE app_name = 'echo100_app'"
	),
	'50/50',
	'50 jobs over 8 sessions all completed');
is( $node->safe_psql(
		'postgres', q{
	WITH runs AS (
	  SELECT e.session_id, e.seq, e.event_data #>> '{content,parts,0,text}' AS text, j.id AS job
	    FROM adk.events e JOIN adk.jobs j USING (invocation_id)
	   WHERE e.app_name = 'echo100_app' AND e.event_data ->> 'author' = 'user')
	SELECT count(*) FROM (
	  SELECT session_id, array_agg(job ORDER BY seq) = array_agg(job ORDER BY job) AS in_order
	    FROM runs GROUP BY session_id) s WHERE in_order}),
	'8', 'in each session, the runs are stored in submit order');
is( $node->safe_psql(
		'postgres', q{
	SELECT count(*) FROM (
	  SELECT invocation_id, max(seq) - min(seq) + 1 = count(*) AS contiguous
	    FROM adk.events WHERE app_name = 'echo100_app' GROUP BY invocation_id) x
	 WHERE contiguous}),
	'50', 'no two runs of a session interleave');
my $concurrency = $node->safe_psql(
	'postgres', q{
	SELECT max(n) FROM (
	  SELECT (SELECT count(*) FROM adk.jobs o
	           WHERE o.app_name = 'echo100_app'
	             AND o.started_at <= j.started_at AND o.finished_at > j.started_at) AS n
	    FROM adk.jobs j WHERE j.app_name = 'echo100_app') x});
# a worker holds many runs (adk.worker_concurrency): the bound is one run
# per session at a time
ok($concurrency >= 2 && $concurrency <= 8,
	"never more jobs at once than sessions, 8 (max seen: $concurrency)");
is( $node->safe_psql(
		'postgres', q{
	SELECT count(*) FROM (
	  SELECT app_name, user_id, session_id FROM adk.jobs
	   WHERE app_name = 'echo100_app' GROUP BY 1, 2, 3
	  HAVING bool_or(EXISTS (SELECT 1 FROM adk.jobs o
	          WHERE o.app_name = 'echo100_app' AND o.session_id = adk.jobs.session_id
	            AND o.id <> adk.jobs.id AND o.started_at < adk.jobs.finished_at
	            AND o.finished_at > adk.jobs.started_at))) x}),
	'0', 'no two jobs of one session ever ran at the same time');
is( $node->safe_psql(
		'postgres',
		"SELECT count(*) <= 4 FROM pg_stat_activity WHERE backend_type = 'adk_runner job worker'"
	),
	't',
	'job workers show as backend_type "adk_runner job worker"');

# roles: clerk (may write orders) and outsider (may not read secrets)
$node->safe_psql(
	'postgres', q{
	CREATE ROLE clerk LOGIN IN ROLE adk_user;
	CREATE ROLE outsider IN ROLE adk_user;
	CREATE TABLE orders (id serial PRIMARY KEY, customer text NOT NULL,
	                     status text NOT NULL DEFAULT 'new', note text);
	GRANT SELECT, INSERT, UPDATE ON orders TO clerk;
	GRANT USAGE ON SEQUENCE orders_id_seq TO clerk;
	CREATE FUNCTION set_status(order_id integer, status text) RETURNS text
	LANGUAGE sql AS $$
	  UPDATE orders SET status = set_status.status, note = 'set by ' || current_user
	   WHERE id = order_id RETURNING 'order ' || id || ' is ' || orders.status $$;
	COMMENT ON FUNCTION set_status(integer, text) IS 'Set the status of an order.';
	GRANT EXECUTE ON FUNCTION set_status(integer, text) TO adk_user;
	SELECT adk_define_tool('set_status(integer, text)'::regprocedure);
	SELECT adk_define_agent('order_agent', model => 'm', tools => ARRAY['set_status'],
	                        instruction => 'You confirm orders.');
	SELECT adk_define_app('orders_app', 'order_agent');
	ALTER TABLE orders OWNER TO clerk;
});

# the trigger: only the table's owner makes one; columns are checked
($ret, $out, $err) = $node->psql('postgres',
	"SET ROLE outsider; SELECT adk_create_trigger('orders', 'orders_app', 'x', 'customer', 'id')");
like($err, qr/must be owner of table orders/, 'only the table owner may make an adk trigger');
($ret, $out, $err) = $node->psql('postgres',
	"SET ROLE clerk; SELECT adk_create_trigger('orders', 'orders_app', 'x {{nope}}', 'customer', 'id')");
like($err, qr/column "nope" of relation "orders" does not exist/, 'template columns are checked');
($ret, $out, $err) = $node->psql('postgres',
	"SET ROLE clerk; SELECT adk_create_trigger('orders', 'orders_app', 'x', 'customer', 'no_such_col')");
like($err, qr/column "no_such_col" of relation "orders" does not exist/, 'id columns are checked');
my $trigger = $node->safe_psql(
	'postgres', q{
	SET ROLE clerk;
	SELECT adk_create_trigger('orders', 'orders_app',
	  'Order {{id}} from {{customer}} ({{op}} on {{table}}): call set_status({"order_id": {{id}}, "status": "confirmed"})',
	  'customer', 'id', '{INSERT}')});
is($trigger, 'adk_orders_app', 'adk_create_trigger returns the trigger name');

# a committed insert runs once; a rolled-back one queues nothing
$node->safe_psql(
	'postgres', q{
	SET ROLE clerk;
	INSERT INTO orders (customer) VALUES ('alice'), ('bob');
	BEGIN;
	INSERT INTO orders (customer) VALUES ('carol');
	ROLLBACK;});
$node->poll_query_until('postgres',
	"SELECT count(*) = 2 FROM adk.jobs WHERE app_name = 'orders_app' AND status IN ('completed', 'failed')")
  or die 'trigger jobs did not finish';
is( $node->safe_psql(
		'postgres',
		"SELECT string_agg(id || ':' || customer || ':' || status || ':' || coalesce(note, ''), ' ' ORDER BY id) FROM orders"
	),
	'1:alice:confirmed:set by clerk 2:bob:confirmed:set by clerk',
	'the agent\'s tool wrote back to the table, as the role that inserted the row');
is( $node->safe_psql(
		'postgres', q{
	SELECT string_agg(status || ':' || role_name || ':' || user_id || '/' || session_id || ':' || source, ' ' ORDER BY id)
	  FROM adk.jobs WHERE app_name = 'orders_app'}),
	'completed:clerk:alice/1:trigger adk_orders_app on public.orders completed:clerk:bob/2:trigger adk_orders_app on public.orders',
	'one job per committed row, none for the rolled-back one');
is( $node->safe_psql(
		'postgres', q{
	SELECT event_data #>> '{content,parts,0,text}' FROM adk.events
	 WHERE app_name = 'orders_app' AND session_id = '1' AND seq = 1}),
	'Order 1 from alice (INSERT on orders): call set_status({"order_id": 1, "status": "confirmed"})',
	'the message is rendered from the row');
is( $node->safe_psql(
		'postgres', q{
	SELECT string_agg(coalesce(event_data #>> '{content,parts,0,function_call,name}',
	                           event_data #>> '{content,parts,0,function_response,response,result}',
	                           event_data #>> '{content,parts,0,text}'), ' | ' ORDER BY seq)
	  FROM adk.events WHERE app_name = 'orders_app' AND session_id = '2' AND seq > 1}),
	'set_status | order 2 is confirmed | Tool set_status returned: {"result":"order 2 is confirmed"}.',
	'the run: the call, its response, the answer');
is( $node->safe_psql(
		'postgres', q{SET ROLE clerk; SELECT adk_drop_trigger('orders')}),
	'1', 'adk_drop_trigger drops it');
$node->safe_psql('postgres', "INSERT INTO orders (customer) VALUES ('dave')");
sleep 1;
is($node->safe_psql('postgres', "SELECT count(*) FROM adk.jobs WHERE app_name = 'orders_app'"),
	'2', 'no job after the trigger is dropped');

# a job runs as its submitter: outsider may not read the table through a tool
$node->safe_psql(
	'postgres', q{
	CREATE TABLE secrets_table (v text);
	INSERT INTO secrets_table VALUES ('top secret');
	CREATE FUNCTION read_secrets() RETURNS text LANGUAGE sql AS $$ SELECT string_agg(v, ',') FROM secrets_table $$;
	GRANT EXECUTE ON FUNCTION read_secrets() TO adk_user;
	SELECT adk_define_tool('read_secrets()'::regprocedure);
	SELECT adk_define_agent('reader', model => 'm', tools => ARRAY['read_secrets']);
	SELECT adk_define_app('reader_app', 'reader');});
my $inv_out = $node->safe_psql('postgres',
	"SET ROLE outsider; SELECT adk_submit('reader_app', 'u3', 's-out', 'call read_secrets({})')");
my $inv_su = $node->safe_psql('postgres',
	"SELECT adk_submit('reader_app', 'u3', 's-su', 'call read_secrets({})')");
my $resp = q{SELECT string_agg(event_data #>> '{content,parts,0,function_response,response}', '')
	  FROM adk_wait('%s', '30 s') WHERE event_data #> '{content,parts,0,function_response}' IS NOT NULL};
like($node->safe_psql('postgres', sprintf($resp, $inv_out)),
	qr/permission denied for table secrets_table/,
	'a job queued by a role without SELECT cannot read the table through a tool');
like($node->safe_psql('postgres', sprintf($resp, $inv_su)),
	qr/top secret/, 'the same tool reads it in a job queued by a role that may');
is( $node->safe_psql(
		'postgres',
		"SELECT string_agg(i.role_name || '/' || j.role_name, ',' ORDER BY j.id) FROM adk.jobs j JOIN adk.invocations i USING (invocation_id) WHERE j.app_name = 'reader_app'"
	),
	"outsider/outsider,$su/$su",
	'adk.jobs and adk.invocations name the role each job ran as');

# ... and cannot get back to the worker's own user (a superuser)
$node->safe_psql(
	'postgres', q{
	CREATE FUNCTION escalate(how text) RETURNS text LANGUAGE plpgsql AS $$
	BEGIN
	  EXECUTE how;
	  RETURN current_user || '/' || session_user;
	END $$;
	GRANT EXECUTE ON FUNCTION escalate(text) TO adk_user;
	SELECT adk_define_tool('escalate(text)'::regprocedure);
	SELECT adk_define_agent('climber', model => 'm', tools => ARRAY['escalate']);
	SELECT adk_define_app('climber_app', 'climber');});
foreach my $how ('SET SESSION AUTHORIZATION DEFAULT', 'RESET ROLE', "SET ROLE $su")
{
	my $i = $node->safe_psql('postgres',
		qq{SET ROLE outsider; SELECT adk_submit('climber_app', 'u3', 's-climb', 'call escalate({"how": "$how"})')});
	like($node->safe_psql('postgres', sprintf($resp, $i)),
		qr/cannot set parameter|permission denied to set role/,
		"a job's tool cannot $how");
}

# a run that pauses (a long-running tool, HITL) ends its job 'waiting'
$node->safe_psql(
	'postgres', q{
	CREATE FUNCTION request_approval(what text) RETURNS jsonb LANGUAGE sql
	  AS $$ SELECT jsonb_build_object('status', 'pending', 'what', what) $$;
	GRANT EXECUTE ON FUNCTION request_approval(text) TO adk_user;
	SELECT adk_define_tool('request_approval(text)'::regprocedure, long_running => true);
	SELECT adk_define_agent('approver', model => 'm', tools => ARRAY['request_approval']);
	SELECT adk_define_app('approver_app', 'approver');});
$inv = $node->safe_psql('postgres',
	q{SELECT adk_submit('approver_app', 'u5', 's-pause', 'call request_approval({"what": "a new laptop"})')});
$node->safe_psql('postgres', "SELECT count(*) FROM adk_wait('$inv', '30 s')");
is( $node->safe_psql(
		'postgres',
		"SELECT j.status || ',' || i.status FROM adk.jobs j JOIN adk.invocations i USING (invocation_id) WHERE invocation_id = '$inv'"
	),
	'waiting,waiting',
	'a job whose run pauses for a long-running tool ends waiting');

# adk_cancel of that paused run (docs/runs.md "Cancelling a paused run"):
# its job and invocation end cancelled, nothing of it is pending, and no
# worker picks it up again
is($node->safe_psql('postgres', "SELECT adk_cancel('$inv')"),
	't', 'adk_cancel cancels a queued run that paused');
is( $node->safe_psql(
		'postgres',
		"SELECT j.status || ',' || i.status || ',' || (j.finished_at IS NOT NULL) || ','"
		  . " || (SELECT count(*) FROM adk.pending_interrupts p WHERE p.invocation_id = '$inv')"
		  . " FROM adk.jobs j JOIN adk.invocations i USING (invocation_id) WHERE invocation_id = '$inv'"
	),
	'cancelled,cancelled,true,0',
	'its job and invocation end cancelled, nothing pending');

# one worker runs jobs of different roles: nothing one job's tools leave in
# the session (settings, temp tables, advisory locks, prepared statements)
# reaches the next job
$node->safe_psql('postgres', 'ALTER SYSTEM SET adk.max_workers = 1; SELECT pg_reload_conf();');
$node->poll_query_until('postgres',
	"SELECT count(*) <= 1 FROM pg_stat_activity WHERE backend_type = 'adk_runner job worker'")
  or die 'workers stayed';
$node->safe_psql(
	'postgres', q{
	CREATE FUNCTION litter() RETURNS text LANGUAGE plpgsql AS $$
	BEGIN
	  SET work_mem = '77MB';
	  CREATE TEMP TABLE orders (id int);
	  PERFORM pg_advisory_lock(4242);
	  EXECUTE 'PREPARE leftover AS SELECT 1';
	  RETURN 'littered';
	END $$;
	CREATE FUNCTION probe() RETURNS text LANGUAGE sql AS $$
	  SELECT current_setting('work_mem') || ',' ||
	         (SELECT count(*) FROM pg_class WHERE relnamespace = pg_my_temp_schema()) || ',' ||
	         (SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid()) || ',' ||
	         (SELECT count(*) FROM pg_prepared_statements) $$;
	GRANT EXECUTE ON FUNCTION litter(), probe() TO adk_user;
	SELECT adk_define_tool('litter()'::regprocedure);
	SELECT adk_define_tool('probe()'::regprocedure);
	SELECT adk_define_agent('janitor', model => 'm', tools => ARRAY['litter', 'probe']);
	SELECT adk_define_app('janitor_app', 'janitor');});
my $i1 = $node->safe_psql('postgres',
	"SET ROLE outsider; SELECT adk_submit('janitor_app', 'u4', 's-a', 'call litter({})')");
like($node->safe_psql('postgres', sprintf($resp, $i1)), qr/littered/, 'a job litters its session');
my $i2 = $node->safe_psql('postgres',
	"SET ROLE clerk; SELECT adk_submit('janitor_app', 'u4', 's-b', 'call probe({})')");
like($node->safe_psql('postgres', sprintf($resp, $i2)), qr/"4MB,0,0,0"/,
	'the next job in the same worker finds none of it');
is( $node->safe_psql(
		'postgres',
		"SELECT count(DISTINCT worker_pid) FROM adk.jobs WHERE invocation_id IN ('$i1', '$i2')"),
	'1', '(both jobs ran in the same worker)');
$node->safe_psql('postgres', 'ALTER SYSTEM RESET adk.max_workers; SELECT pg_reload_conf();');

# privileges: adk_user may submit, wait, cancel and read adk.jobs
is( $node->safe_psql(
		'postgres', q{
	SELECT bool_and(has_function_privilege('adk_user', f, 'EXECUTE'))
	  FROM unnest(ARRAY['adk_submit(text,text,text,text,jsonb,jsonb)', 'adk_submit(text,text,text,jsonb,jsonb,jsonb)',
	                    'adk_wait(text,interval)', 'adk_cancel(text)', 'adk_interrupt(text,text,text)',
	                    'adk_create_trigger(regclass,text,text,text,text,text[])', 'adk_drop_trigger(regclass,text)']) f}
	)
	  . $node->safe_psql('postgres',
		"SELECT has_table_privilege('adk_user', 'adk.jobs', 'SELECT') AND NOT has_table_privilege('adk_user', 'adk.jobs', 'UPDATE')"),
	'tt',
	'adk_user may use the worker functions and read adk.jobs, not write it');

$node->stop;
my $log = slurp_file($node->logfile);
unlike($log, qr/TRAP|terminated by signal|PANIC/, 'no crash in the server log');

# without shared_preload_libraries: everything synchronous works, adk_submit says no workers run
my $plain = plain_node('plain');
$plain->safe_psql(
	'postgres', qq{
	CREATE EXTENSION adk_runner;
	SELECT adk_set_secret('k', 'sk-test', ARRAY['127.0.0.1']);
	SELECT adk_define_model('m', 'openai', '$url', 'gpt-test', api_key_secret => 'k');
	SELECT adk_define_agent('echo', model => 'm');
	SELECT adk_define_app('echo_app', 'echo');});
is($plain->safe_psql('postgres', "SELECT count(*) FROM adk_run('echo_app', 'u', 's', 'hi')"),
	'1', 'without preload, adk_run works');
($ret, $out, $err) = $plain->psql('postgres',
	"\\set VERBOSITY verbose\nSELECT adk_submit('echo_app', 'u', 's', 'hi')");
like($err, qr/55000: no background workers run queued runs/,
	'without preload, adk_submit raises 55000: no background workers run');
like($err, qr/HINT:  Add adk_runner to shared_preload_libraries/, '... with a hint');
$plain->stop;

$server->kill_kill;
done_testing();
