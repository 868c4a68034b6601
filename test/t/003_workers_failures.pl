# Background workers when things go wrong: cancelling a run during a slow
# model call (in a worker, queued, and adk_run in another backend); a job
# worker killed with SIGKILL (crash restart) or pg_terminate_backend in the
# middle of a run; retries; a run that raises; a server restart with jobs
# queued; adk.max_workers lowered; retention of finished jobs.  No job is
# ever left 'running', and sessions stay consistent.
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
use Time::HiRes qw(time);

my $tmp = tempdir(CLEANUP => 1);
# the bundled local model server, on a free port
my ($server, $url) = start_model_server($tmp);
$url .= "/v1";

my $node = adk_node(
	'failures',
	'adk.max_workers' => 4,
	max_worker_processes => 16,
	restart_after_crash => 'on');
$node->safe_psql(
	'postgres', qq{
	CREATE EXTENSION adk_runner;
	SELECT adk_set_secret('k', 'sk-test', ARRAY['127.0.0.1']);
	SELECT adk_define_model('m', 'openai', '$url', 'gpt-test', api_key_secret => 'k');
	SELECT adk_define_model('slow', 'openai', '$url', 'gpt-latency-4000', api_key_secret => 'k');
	SELECT adk_define_model('broken', 'openai', '$url', 'fault-500', api_key_secret => 'k',
	                        options => '{"retries": 0}');
	SELECT adk_define_agent('echo', model => 'm');
	SELECT adk_define_app('echo_app', 'echo');
	SELECT adk_define_agent('slowpoke', model => 'slow');
	SELECT adk_define_app('slow_app', 'slowpoke');
	SELECT adk_define_agent('broken_agent', model => 'broken');
	SELECT adk_define_app('broken_app', 'broken_agent');
	CREATE ROLE outsider IN ROLE adk_user;
});

# The run of $inv has stored its user event and is in its model call.
sub wait_in_model_call
{
	my ($inv) = @_;
	$node->poll_query_until('postgres',
		"SELECT EXISTS (SELECT 1 FROM adk.events WHERE invocation_id = '$inv')")
	  or die "run $inv never started";
	select(undef, undef, undef, 0.3);
}

# seq is 1, 2, 3, ... and the session's last_seq is the last of them
sub session_consistent
{
	my ($app, $session) = @_;
	my $ok = $node->safe_psql(
		'postgres', qq{
	SELECT (SELECT coalesce(bool_and(seq = n), true)
	          FROM (SELECT seq, row_number() OVER (ORDER BY seq) AS n FROM adk.events
	                 WHERE app_name = '$app' AND session_id = '$session') e)
	   AND (SELECT last_seq FROM adk.sessions WHERE app_name = '$app' AND id = '$session')
	       = (SELECT count(*) FROM adk.events WHERE app_name = '$app' AND session_id = '$session')});
	diag $node->safe_psql('postgres',
		"SELECT seq, invocation_id, event_data ->> 'author' FROM adk.events WHERE app_name = '$app' AND session_id = '$session' ORDER BY seq")
	  if $ok ne 't';
	return $ok;
}

# --- cancel a running job during a slow model call
my $inv = $node->safe_psql('postgres',
	"SELECT adk_submit('slow_app', 'u', 'c1', 'take your time')");
wait_in_model_call($inv);
my ($cancelled, $cancel_ms) = cancel_and_time($node, $inv);
is($cancelled, 't', 'adk_cancel of a running job returns true');
ok(defined $cancel_ms && $cancel_ms < 1000,
	"the job stopped within a fraction of a second of adk_cancel (${cancel_ms} ms; the model call takes 4 s)");
diag "cancel latency (worker, in-flight model call): ${cancel_ms} ms";
is( $node->safe_psql(
		'postgres', qq{
	SELECT j.status || ',' || i.status || ',' || j.error || ',' || i.error_code
	  FROM adk.jobs j JOIN adk.invocations i USING (invocation_id) WHERE invocation_id = '$inv'}),
	'cancelled,cancelled,cancelled,CANCELLED',
	'the job and the invocation end cancelled');
is($node->safe_psql('postgres', "SELECT string_agg(node_path || ' ' || status, ',') FROM adk.run_states WHERE invocation_id = '$inv'"),
	'slowpoke cancelled', 'its root node\'s adk.run_states row ends cancelled too');
is( $node->safe_psql(
		'postgres', qq{SELECT string_agg(event_data ->> 'author', ',') FROM adk_wait('$inv')}),
	'user', 'the events committed before the cancel are kept (adk_wait returns them)');
is(session_consistent('slow_app', 'c1'), 't', 'the session is consistent');
is($node->safe_psql('postgres', "SELECT adk_cancel('$inv')"),
	'f', 'adk_cancel of an ended run returns false');

# --- a queued job, then adk_interrupt on the session
my $first = $node->safe_psql('postgres',
	"SELECT adk_submit('slow_app', 'u', 'c2', 'first')");
my $second = $node->safe_psql('postgres',
	"SELECT adk_submit('slow_app', 'u', 'c2', 'second')");
wait_in_model_call($first);
is($node->safe_psql('postgres', "SELECT status FROM adk.jobs WHERE invocation_id = '$second'"),
	'queued', 'the second job of a session waits for the first');
my ($ret, $out, $err) = $node->psql('postgres', "SET ROLE outsider; SELECT adk_cancel('$second')");
like($err, qr/permission denied to cancel run/, 'another role may not cancel the job');
is($node->safe_psql('postgres', "SELECT adk_cancel('$second')"),
	't', 'adk_cancel of a queued job');
is($node->safe_psql('postgres', "SELECT status FROM adk.jobs WHERE invocation_id = '$second'"),
	'cancelled', 'the queued job is cancelled at once');
is($node->safe_psql('postgres', "SELECT adk_interrupt('slow_app', 'u', 'c2')"),
	'1', 'adk_interrupt stops the running job of the session');
$node->poll_query_until('postgres',
	"SELECT status = 'cancelled' FROM adk.jobs WHERE invocation_id = '$first'")
  or die 'not cancelled';
pass('the interrupted job ends cancelled');
is( $node->safe_psql('postgres',
		"SELECT EXISTS (SELECT 1 FROM adk.events WHERE invocation_id = '$second')"),
	'f', 'the cancelled queued job never ran');

# --- adk_interrupt stops adk_run in another backend
my $bg = $node->background_psql('postgres', on_error_stop => 0);
$bg->query_safe("SET application_name = 'sync_runner'");
$bg->query_until(qr/^$/,
	"SELECT count(*) FROM adk_run('slow_app', 'u', 'c3', 'synchronous');\n");
$node->poll_query_until('postgres',
	"SELECT wait_event_type = 'Extension' FROM pg_stat_activity WHERE application_name = 'sync_runner' AND state = 'active'"
) or die 'adk_run never waited';
is($node->safe_psql('postgres', "SELECT adk_interrupt('slow_app', 'u', 'c3')"),
	'1', 'adk_interrupt finds the run of adk_run in another backend');
my ($o2, $e2) = $bg->query("SELECT 'alive'");
like($bg->{stderr} . ($e2 // ''), qr/canceling statement due to user request/,
	'adk_run there raised 57014');
$bg->quit;

# adk_interrupt while adk_run waits between FETCHes of a cursor: the
# signal finds the backend idle (PostgreSQL drops it then), so the run
# sees the request at the next FETCH and ends there, cancelled, keeping
# what it stored
$bg = $node->background_psql('postgres', on_error_stop => 0);
$bg->query_safe(q{BEGIN; DECLARE c CURSOR FOR SELECT (adk_run('echo_app', 'u', 'c7', 'cursor',
	NULL, '{"yield_user_message": true}')).event_data ->> 'author'});
is($bg->query_safe('FETCH 1 FROM c'), 'user', 'the cursor returns the user message first');
is($node->safe_psql('postgres', "SELECT adk_interrupt('echo_app', 'u', 'c7')"),
	'1', 'adk_interrupt finds the run waiting between FETCHes');
is($bg->query_safe('FETCH ALL FROM c'), '', 'the next FETCH returns no more rows');
$bg->query_safe('COMMIT');
is( $node->safe_psql(
		'postgres',
		"SELECT i.status || ',' || i.error_code || ',' || (SELECT count(*) FROM adk.events e WHERE e.invocation_id = i.invocation_id)
		   FROM adk.invocations i WHERE i.app_name = 'echo_app' AND i.session_id = 'c7'"),
	'cancelled,CANCELLED,1', 'the invocation ends cancelled with the user message kept');
$bg->quit;

# a backend whose runs have ended (normally, by error in a savepoint,
# stopped early by LIMIT) is not signalled by adk_interrupt
$bg = $node->background_psql('postgres', on_error_stop => 0);
$bg->query_safe(q{SELECT count(*) FROM adk_run('echo_app', 'u', 'c6', 'one')});
$bg->query_safe(q{SELECT (adk_run('echo_app', 'u', 'c6', 'two', NULL, '{"yield_user_message": true}')).seq LIMIT 1});
$bg->query_safe(q{DO $$ BEGIN PERFORM count(*) FROM adk_run('no_such_app', 'u', 'c6', 'bad');
	EXCEPTION WHEN others THEN NULL; END $$});
$bg->query_safe(q{BEGIN; SAVEPOINT a; SELECT count(*) FROM adk_run('echo_app', 'u', 'c6', 'three')});
is( $node->safe_psql(
		'postgres', "SELECT adk_interrupt('echo_app', 'u', 'c6') + adk_interrupt('no_such_app', 'u', 'c6')"),
	'0', 'adk_interrupt finds no run in a backend whose runs have ended');
is($bg->query_safe("SELECT 'still here'; COMMIT;"), 'still here', 'that backend was not signalled');
$bg->quit;

# --- adk_wait timeout: SQLSTATE 03000, the run goes on
$inv = $node->safe_psql('postgres',
	"SELECT adk_submit('slow_app', 'u', 'c4', 'wait for me')");
($ret, $out, $err) = $node->psql('postgres',
	"\\set VERBOSITY verbose\nSELECT * FROM adk_wait('$inv', '200 ms')");
like($err, qr/03000: run "\Q$inv\E" did not end within 00:00:00.2/,
	'adk_wait raises SQLSTATE 03000 after its timeout');
is($node->safe_psql('postgres', "SELECT count(*) FROM adk_wait('$inv', '30 s')"),
	'2', 'the run went on, and a second adk_wait returns its events');

# --- a run that raises: failed with the message; retries re-queue it
# (bad options are refused by adk_submit itself; a session the app does
# not create makes the run raise)
my ($rc, $out, $err) = $node->psql('postgres',
	q{SELECT adk_submit('echo_app', 'u', 'e1', 'x', NULL, '{"strem": true, "retries": 1}')});
like($err, qr/invalid option "strem"/, 'adk_submit refuses an unknown option when the job is queued');
$node->safe_psql('postgres',
	q{SELECT adk_define_app('no_create_app', 'echo', auto_create_session => false)});
$inv = $node->safe_psql('postgres',
	q{SELECT adk_submit('no_create_app', 'u', 'e1', 'x', NULL, '{"retries": 1}')});
$node->safe_psql('postgres', "SELECT count(*) FROM adk_wait('$inv', '30 s')");
is( $node->safe_psql(
		'postgres', "SELECT status || ',' || attempts || ',' || error FROM adk.jobs WHERE invocation_id = '$inv'"),
	'failed,2,session "e1" does not exist for app "no_create_app" and user "u"',
	'a run that raises fails with the message, after its retries');
$inv = $node->safe_psql('postgres', "SELECT adk_submit('broken_app', 'u', 'e2', 'x')");
$node->safe_psql('postgres', "SELECT count(*) FROM adk_wait('$inv', '30 s')");
like( $node->safe_psql(
		'postgres', "SELECT j.status || ',' || i.status || ',' || j.error FROM adk.jobs j JOIN adk.invocations i USING (invocation_id) WHERE invocation_id = '$inv'"),
	qr/^failed,failed,server_error: /,
	'a failed invocation (model error) fails its job');

# --- pg_terminate_backend of a worker mid-run
$inv = $node->safe_psql('postgres',
	"SELECT adk_submit('slow_app', 'u', 't1', 'terminate me')");
wait_in_model_call($inv);
my $pid = $node->safe_psql('postgres', "SELECT worker_pid FROM adk.jobs WHERE invocation_id = '$inv'");
ok($node->safe_psql('postgres', "SELECT pg_terminate_backend($pid)") eq 't', 'worker terminated');
$node->poll_query_until('postgres',
	"SELECT status <> 'running' FROM adk.jobs WHERE invocation_id = '$inv'")
  or die 'still running';
like( $node->safe_psql(
		'postgres', "SELECT j.status || ',' || i.status || ',' || i.error_code || ',' || j.error FROM adk.jobs j JOIN adk.invocations i USING (invocation_id) WHERE invocation_id = '$inv'"),
	qr/^failed,failed,WORKER_LOST,the worker running the job \(pid $pid\) stopped/,
	'a terminated worker\'s job fails, with the reason');
is(session_consistent('slow_app', 't1'), 't', 'the session is consistent');

# --- SIGKILL a worker mid-run: crash restart, recovery, a retry
my $k1 = $node->safe_psql('postgres', "SELECT adk_submit('slow_app', 'u', 'k1', 'kill me')");
my $k2 = $node->safe_psql('postgres',
	q{SELECT adk_submit('slow_app', 'u', 'k2', 'kill me twice', NULL, '{"retries": 1}')});
wait_in_model_call($k1);
wait_in_model_call($k2);
$pid = $node->safe_psql('postgres', "SELECT worker_pid FROM adk.jobs WHERE invocation_id = '$k1'");
kill 'KILL', $pid;
# the postmaster restarts everything; the launcher recovers the jobs.  A
# poll that starts while the crash restart is under way can lose its psql
# (broken pipe), so such a poll is tried again.
my $recovered = 0;
for (1 .. 30)
{
	$recovered = eval {
		$node->poll_query_until('postgres',
			"SELECT count(*) = 0 FROM adk.jobs WHERE invocation_id = '$k1' AND status = 'running'");
	};
	last if $recovered;
	sleep 1;
}
$recovered or die 'k1 still running';
like( $node->safe_psql(
		'postgres', "SELECT j.status || ',' || i.status || ',' || j.error FROM adk.jobs j JOIN adk.invocations i USING (invocation_id) WHERE invocation_id = '$k1'"),
	qr/^failed,failed,the server restarted while the job was running/,
	'after a worker is killed, its job fails (the server restarted), never left running');
is(session_consistent('slow_app', 'k1'), 't', 'the killed job\'s session is consistent');
$node->poll_query_until('postgres',
	"SELECT status = 'completed' FROM adk.jobs WHERE invocation_id = '$k2'")
  or diag $node->safe_psql('postgres', "SELECT * FROM adk.jobs WHERE invocation_id = '$k2'");
is( $node->safe_psql(
		'postgres', "SELECT status || ',' || attempts FROM adk.jobs WHERE invocation_id = '$k2'"),
	'completed,2', 'the job with retries left ran again and completed');
is(session_consistent('slow_app', 'k2'), 't', 'its session is consistent');

# --- adk.max_workers lowered to 0: workers leave; queued jobs wait ...
$node->safe_psql('postgres', 'ALTER SYSTEM SET adk.max_workers = 0; SELECT pg_reload_conf();');
$node->poll_query_until('postgres',
	"SELECT count(*) = 0 FROM pg_stat_activity WHERE backend_type = 'adk_runner job worker'")
  or die 'workers stayed';
pass('with adk.max_workers = 0 the job workers exit');
$node->safe_psql('postgres',
	"SELECT adk_submit('echo_app', 'u', 'r' || i, 'after restart') FROM generate_series(1, 3) i");
sleep 1;
is($node->safe_psql('postgres', "SELECT count(*) FROM adk.jobs WHERE session_id LIKE 'r_' AND status = 'queued'"),
	'3', 'jobs stay queued while no worker may run');
# ... and run after a restart
$node->safe_psql('postgres', 'ALTER SYSTEM SET adk.max_workers = 2');
$node->restart;
$node->poll_query_until('postgres',
	"SELECT count(*) = 3 FROM adk.jobs WHERE session_id LIKE 'r_' AND status = 'completed'")
  or die 'queued jobs did not run after the restart';
pass('jobs queued before a restart run after it');
is($node->safe_psql('postgres', "SELECT count(*) FROM adk.jobs WHERE status IN ('running', 'queued')"),
	'0', 'no job is left running or queued');

# --- retention
$node->safe_psql('postgres', "ALTER SYSTEM SET adk.job_retention = '1s'; SELECT pg_reload_conf();");
sleep 2;
($ret, $out, $err) = $node->psql('postgres',
	"SELECT count(*) FROM adk_wait(adk_submit('echo_app', 'u', 'late', 'x'), '30 s')");
like($err, qr/cannot wait for a run queued in the same transaction/,
	'adk_wait refuses to wait for a job its own transaction queued');
$inv = $node->safe_psql('postgres', "SELECT adk_submit('echo_app', 'u', 'late', 'x')");
$node->safe_psql('postgres', "SELECT count(*) FROM adk_wait('$inv', '30 s')");
$node->poll_query_until('postgres',
	"SELECT count(*) = 0 FROM adk.jobs WHERE finished_at < clock_timestamp() - interval '5 s'")
  or die 'old jobs kept';
pass('finished jobs older than adk.job_retention are purged');

$node->stop;
my $log = slurp_file($node->logfile);
unlike($log, qr/TRAP|terminated by signal 11|PANIC/, 'no crash in the server log (other than the SIGKILL)');
$server->kill_kill;
done_testing();
