# Spans of job runs that end early in a worker:
# one job worker holds several runs, each step in a transaction of its own.
#  - adk_cancel of one run while its model call is in flight: its trace is
#    written -- the root ERROR / CANCELLED, the model span in flight ended
#    as abandoned inside its parent -- and the other runs' traces are whole
#    and untouched;
#  - adk_cancel while a SQL tool runs (the step's transaction rolls back):
#    the trace is whole, the spans that transaction had written included;
#  - adk.tool_timeout: the tool's span fails, the run and its trace go on;
#  - a run that raises out of its step: the attempt's trace ends ERROR with
#    the SQLSTATE; a retry is a trace of its own, the same invocation
#    (under a traceparent: a root of its own in the caller's trace);
#  - the worker terminated with runs in flight: their traces end
#    WORKER_LOST, as their jobs do.
use strict;
use warnings;
use File::Temp qw(tempdir);
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time);
use FindBin;
use lib "$FindBin::Bin/../perl";
use AdkTest qw(:DEFAULT wait_jobs_done);

my $tmp = tempdir(CLEANUP => 1);
my ($server, $url) = start_model_server($tmp);
$url .= "/v1";

my $node = adk_node('job_cancel_spans', 'adk.max_workers' => 1);
adk_install(
	$node, 'sk-test', qq{
	SELECT adk_define_model('m0', 'openai', '$url', 'gpt-test', api_key_secret => 'k');
	SELECT adk_define_model('m1500', 'openai', '$url', 'gpt-latency-1500', api_key_secret => 'k');
	SELECT adk_define_model('m5000', 'openai', '$url', 'gpt-latency-5000', api_key_secret => 'k');
	SELECT adk_define_agent('fast', model => 'm1500', instruction => 'You are fast.');
	SELECT adk_define_app('fast_app', 'fast');
	SELECT adk_define_agent('slow', model => 'm5000', instruction => 'You are slow.');
	SELECT adk_define_app('slow_app', 'slow');
	CREATE FUNCTION slow_tool() RETURNS jsonb LANGUAGE sql
	  AS \$\$ SELECT pg_sleep(5); SELECT '{"slept": true}'::jsonb \$\$;
	SELECT adk_define_tool('slow_tool()'::regprocedure);
	SELECT adk_define_agent('sleeper', model => 'm0', tools => ARRAY['slow_tool']);
	SELECT adk_define_app('sleep_app', 'sleeper');
	CREATE SEQUENCE flaky_calls;
	CREATE FUNCTION flaky() RETURNS jsonb LANGUAGE plpgsql AS \$\$
	BEGIN
		-- a sequence is not rolled back with the step: the first call fails
		IF nextval('flaky_calls') = 1 THEN
			RAISE EXCEPTION 'flaky went away' USING ERRCODE = 'admin_shutdown';
		END IF;
		RETURN '{"ok": true}';
	END \$\$;
	SELECT adk_define_tool('flaky()'::regprocedure);
	SELECT adk_define_agent('flake', model => 'm0', tools => ARRAY['flaky']);
	SELECT adk_define_app('flaky_app', 'flake');
	CREATE FUNCTION broken() RETURNS jsonb LANGUAGE plpgsql AS \$\$
	BEGIN
		RAISE EXCEPTION 'broken went away' USING ERRCODE = 'admin_shutdown';
	END \$\$;
	SELECT adk_define_tool('broken()'::regprocedure);
	SELECT adk_define_agent('breaker', model => 'm0', tools => ARRAY['broken']);
	SELECT adk_define_app('broken_app', 'breaker');
});

# what is wrong with the traces of the invocations $where picks: a span
# without its parent (but the root), a span outside its parent's interval,
# an invocation without exactly one root per attempt
sub trace_faults
{
	my ($where) = @_;
	return $node->safe_psql(
		'postgres', qq{
	WITH sp AS (SELECT * FROM adk.spans WHERE invocation_id IN
	              (SELECT invocation_id FROM adk.jobs WHERE $where))
	SELECT coalesce(string_agg(DISTINCT what, E'\\n'), '') FROM (
	  SELECT c.session_id || ': ' || c.name || ' has no parent' AS what FROM sp c
	   WHERE c.parent_span_id IS NOT NULL
	     AND NOT EXISTS (SELECT 1 FROM sp p WHERE p.trace_id = c.trace_id AND p.span_id = c.parent_span_id)
	  UNION ALL
	  SELECT c.session_id || ': ' || c.name || ' outside ' || p.name FROM sp c
	    JOIN sp p ON p.trace_id = c.trace_id AND p.span_id = c.parent_span_id
	   WHERE c.start_time < p.start_time OR c.end_time > p.end_time
	  UNION ALL
	  SELECT j.session_id || ': ' || count(r.*) || ' roots for ' || j.attempts || ' attempts'
	    FROM (SELECT * FROM adk.jobs WHERE $where) j
	    LEFT JOIN sp r ON r.invocation_id = j.invocation_id AND r.parent_span_id IS NULL
	   GROUP BY j.session_id, j.attempts HAVING count(r.*) <> j.attempts) x});
}

# --- adk_cancel of one run among five, its model call in flight
$node->safe_psql('postgres',
	"SELECT adk_submit('slow_app', 'u', 'c' || i, 'wait ' || i) FROM generate_series(1, 5) i");
$node->poll_query_until('postgres', q{
	SELECT count(*) = 5 FROM adk.jobs j WHERE app_name = 'slow_app' AND status = 'running'
	   AND EXISTS (SELECT 1 FROM adk.events e WHERE e.invocation_id = j.invocation_id)})
  or die 'the 5 runs did not start';
is($node->safe_psql('postgres', "SELECT count(DISTINCT worker_pid) FROM adk.jobs WHERE app_name = 'slow_app'"),
	'1', 'one worker holds the five runs');
my $victim = $node->safe_psql('postgres', "SELECT invocation_id FROM adk.jobs WHERE session_id = 'c3'");
is($node->safe_psql('postgres', "SELECT adk_cancel('$victim')"), 't', 'adk_cancel of one run');
ok(wait_jobs_done($node, "app_name = 'slow_app'", 30), 'the five runs ended');
is( $node->safe_psql('postgres', qq{
	SELECT string_agg(j.status, ',' ORDER BY j.session_id) FROM adk.jobs j WHERE app_name = 'slow_app'}),
	'completed,completed,cancelled,completed,completed', 'only the cancelled run stopped');

is( $node->safe_psql('postgres', qq{
	SELECT name || ',' || status_code || ',' || (attributes ->> 'error.type') || ',' ||
	       (attributes ->> 'adk.invocation.status')
	  FROM adk.spans WHERE invocation_id = '$victim' AND parent_span_id IS NULL}),
	'invoke_agent slow,ERROR,CANCELLED,cancelled',
	'the cancelled run has its root span: ERROR, CANCELLED');
is( $node->safe_psql('postgres', qq{
	SELECT c.name || ',' || c.status_code || ',' || (c.attributes ->> 'error.type') || ',' ||
	       (c.attributes ->> 'adk.model.name') || ',' ||
	       (c.start_time >= p.start_time AND c.end_time <= p.end_time)
	  FROM adk.spans c JOIN adk.spans p ON p.span_id = c.parent_span_id AND p.trace_id = c.trace_id
	 WHERE c.invocation_id = '$victim' AND c.kind = 'CLIENT'}),
	'unknown,ERROR,CANCELLED,m5000,true',
	'the model span in flight ended abandoned, inside its parent');
is(trace_faults("app_name = 'slow_app'"), '', 'every trace of the five runs is whole');
is( $node->safe_psql('postgres', qq{
	SELECT string_agg(n::text, ',') FROM (
	  SELECT count(*) FILTER (WHERE status_code <> 'ERROR' AND
	                          (kind <> 'CLIENT' OR name = 'chat gpt-latency-5000')) AS n
	    FROM adk.spans WHERE app_name = 'slow_app' AND invocation_id <> '$victim'
	   GROUP BY trace_id) x}),
	'2,2,2,2', 'the other four traces are whole: a root and its answered model call each');

# --- adk_cancel while a SQL tool runs: the step's transaction rolls back
my $tv = $node->safe_psql('postgres', "SELECT adk_submit('sleep_app', 'u', 't1', 'call slow_tool({})')");
$node->poll_query_until('postgres', q{
	SELECT EXISTS (SELECT 1 FROM pg_stat_activity
	                WHERE backend_type = 'adk_runner job worker' AND wait_event = 'PgSleep')})
  or die 'the tool never ran';
is($node->safe_psql('postgres', "SELECT adk_cancel('$tv')"), 't', 'adk_cancel of a run in its tool');
ok(wait_jobs_done($node, "invocation_id = '$tv'", 30), 'the run ended');
is( $node->safe_psql('postgres', qq{
	SELECT string_agg(name || ':' || status_code || ':' || coalesce(attributes ->> 'error.type', ''), ','
	                  ORDER BY start_time, kind DESC)
	  FROM adk.spans WHERE invocation_id = '$tv'}),
	'invoke_agent sleeper:ERROR:CANCELLED,chat gpt-test:UNSET:,execute_tool slow_tool:ERROR:CANCELLED',
	'its trace: the root and the tool cancelled, the model call the rolled-back step ended kept');
is(trace_faults("invocation_id = '$tv'"), '', 'its trace is whole');

# --- adk.tool_timeout: the tool fails, the run goes on
$node->safe_psql('postgres', "ALTER SYSTEM SET adk.tool_timeout = '300ms'; SELECT pg_reload_conf();");
my $to = $node->safe_psql('postgres', "SELECT adk_submit('sleep_app', 'u', 't2', 'call slow_tool({})')");
ok(wait_jobs_done($node, "invocation_id = '$to'", 30), 'the run with a timed-out tool ended');
is( $node->safe_psql('postgres', qq{
	SELECT string_agg(name || ':' || status_code || ':' || coalesce(attributes ->> 'error.type', ''), ','
	                  ORDER BY start_time, kind DESC)
	  FROM adk.spans WHERE invocation_id = '$to'}),
	'invoke_agent sleeper:UNSET:,chat gpt-test:UNSET:,execute_tool slow_tool:ERROR:tool_error,chat gpt-test:UNSET:',
	'the timed-out tool span failed; the run and its trace went on');
is(trace_faults("invocation_id = '$to'"), '', 'its trace is whole');
$node->safe_psql('postgres', "ALTER SYSTEM RESET adk.tool_timeout; SELECT pg_reload_conf();");

# --- a run that raises out of its step, retried once: two traces
my $fl = $node->safe_psql('postgres',
	q{SELECT adk_submit('flaky_app', 'u', 'f1', 'call flaky({})', NULL, '{"retries": 1}')});
ok(wait_jobs_done($node, "invocation_id = '$fl'", 30), 'the flaky run ended');
is($node->safe_psql('postgres', "SELECT status || ',' || attempts FROM adk.jobs WHERE invocation_id = '$fl'"),
	'completed,2', 'it completed on its second attempt');
is( $node->safe_psql('postgres', qq{
	SELECT string_agg(status_code || ':' || coalesce(attributes ->> 'error.type', '') || ':' ||
	                  (attributes ->> 'adk.invocation.status'), ',' ORDER BY start_time)
	  FROM adk.spans WHERE invocation_id = '$fl' AND parent_span_id IS NULL}),
	'ERROR:57P01:failed,UNSET::completed',
	'the failed attempt\'s root ends ERROR with the SQLSTATE; the retry has a root of its own');
is( $node->safe_psql('postgres', qq{
	SELECT count(DISTINCT trace_id) FROM adk.spans WHERE invocation_id = '$fl'}),
	'2', 'each attempt is a trace of its own');
is( $node->safe_psql('postgres', qq{
	SELECT string_agg(s.name || ':' || s.status_code, ',' ORDER BY s.start_time, s.kind DESC)
	  FROM adk.spans s JOIN adk.spans r ON r.trace_id = s.trace_id AND r.parent_span_id IS NULL
	 WHERE s.invocation_id = '$fl' AND r.status_code = 'ERROR'}),
	'invoke_agent flake:ERROR,chat gpt-test:UNSET,execute_tool flaky:ERROR',
	'the failed attempt\'s trace: its model call and the tool it was in');
is(trace_faults("invocation_id = '$fl'"), '', 'both traces are whole');

# --- a run that raises out of its step, no retries: failed
my $br = $node->safe_psql('postgres', q{SELECT adk_submit('broken_app', 'u', 'b1', 'call broken({})')});
ok(wait_jobs_done($node, "invocation_id = '$br'", 30), 'the broken run ended');
is( $node->safe_psql('postgres', qq{
	SELECT j.status || ',' || r.status_code || ',' || (r.attributes ->> 'error.type') || ',' ||
	       r.status_message
	  FROM adk.jobs j JOIN adk.spans r ON r.invocation_id = j.invocation_id AND r.parent_span_id IS NULL
	 WHERE j.invocation_id = '$br'}),
	'failed,ERROR,57P01,broken went away', 'the failed job\'s root span says why');
is(trace_faults("invocation_id = '$br'"), '', 'its trace is whole');

# --- the same under a traceparent: both roots children of the caller's span
$node->safe_psql('postgres', "SELECT setval('flaky_calls', 1, false)");
my $tp = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
$fl = $node->safe_psql('postgres',
	qq{SELECT adk_submit('flaky_app', 'u', 'f2', 'call flaky({})', NULL,
	                     '{"retries": 1, "traceparent": "$tp"}')});
ok(wait_jobs_done($node, "invocation_id = '$fl'", 30), 'the flaky run under a traceparent ended');
is( $node->safe_psql('postgres', qq{
	SELECT string_agg(trace_id || ':' || coalesce(parent_span_id, '-') || ':' || status_code, ','
	                  ORDER BY start_time)
	  FROM adk.spans WHERE invocation_id = '$fl' AND name = 'invoke_agent flake'}),
	'0af7651916cd43dd8448eb211c80319c:b7ad6b7169203331:ERROR,'
	  . '0af7651916cd43dd8448eb211c80319c:b7ad6b7169203331:UNSET',
	'under a traceparent each attempt is a root of its own under the caller\'s span');

# --- the worker terminated with two runs in flight
$node->safe_psql('postgres',
	"SELECT adk_submit('slow_app', 'u', 'k' || i, 'wait ' || i) FROM generate_series(1, 2) i");
$node->poll_query_until('postgres', q{
	SELECT count(*) = 2 FROM adk.jobs j WHERE session_id LIKE 'k%' AND status = 'running'
	   AND EXISTS (SELECT 1 FROM adk.events e WHERE e.invocation_id = j.invocation_id)})
  or die 'the 2 runs did not start';
my $pid = $node->safe_psql('postgres', "SELECT worker_pid FROM adk.jobs WHERE session_id = 'k1'");
is($node->safe_psql('postgres', "SELECT pg_terminate_backend($pid)"), 't', 'worker terminated');
ok(wait_jobs_done($node, "session_id LIKE 'k%'", 30), 'its runs ended');
is( $node->safe_psql('postgres', qq{
	SELECT string_agg(j.status || ',' || i.error_code || ',' || r.status_code || ',' ||
	                  (r.attributes ->> 'error.type') || ',' || m.name || ',' ||
	                  (m.attributes ->> 'error.type'), ' ' ORDER BY j.session_id)
	  FROM adk.jobs j JOIN adk.invocations i USING (invocation_id)
	  JOIN adk.spans r ON r.invocation_id = j.invocation_id AND r.parent_span_id IS NULL
	  JOIN adk.spans m ON m.parent_span_id = r.span_id AND m.kind = 'CLIENT'
	 WHERE j.session_id LIKE 'k%'}),
	'failed,WORKER_LOST,ERROR,WORKER_LOST,unknown,CANCELLED failed,WORKER_LOST,ERROR,WORKER_LOST,unknown,CANCELLED',
	'the terminated worker\'s runs have their traces: ERROR, WORKER_LOST');
is(trace_faults("session_id LIKE 'k%'"), '', 'their traces are whole');

$node->stop;
done_testing();
