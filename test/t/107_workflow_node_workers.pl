# Graph workflow node settings in background workers (docs/workflows.md
# "Node settings", docs/workers.md): a queued run's node is retried and
# bounded by its timeout as in adk_run, its attempts counted on its
# committed adk.run_states row; adk_cancel during a wait between attempts
# (no step: the worker's other runs go on, test/t/108) cancels the job at
# once, not after the wait, and adk_interrupt so stops
# adk_run in another backend.
use strict;
use warnings;
use File::Temp qw(tempdir);
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes;
use FindBin;
use lib "$FindBin::Bin/../perl";
use AdkTest;

my $tmp = tempdir(CLEANUP => 1);
my ($server, $url) = start_model_server($tmp);

my $node = adk_node('wfnodeworkers', 'adk.max_workers' => 2);
adk_install(
	$node, 'sk-test', q{
	CREATE SEQUENCE wn_calls;
	CREATE TABLE wn_cfg (fails integer);
	INSERT INTO wn_cfg VALUES (2);
	GRANT USAGE ON SEQUENCE wn_calls TO PUBLIC;
	CREATE FUNCTION wn_flaky(ctx jsonb, input jsonb) RETURNS jsonb LANGUAGE plpgsql AS $$
	BEGIN
	    IF nextval('wn_calls') <= (SELECT fails FROM wn_cfg) THEN
	        RAISE EXCEPTION 'not yet';
	    END IF;
	    RETURN jsonb_build_object('output', ctx ->> 'node');
	END $$;
	CREATE FUNCTION wn_slow(ctx jsonb, input jsonb) RETURNS jsonb LANGUAGE sql AS $$
	    SELECT '{"output": "woke"}'::jsonb FROM pg_sleep(30) $$;
	SELECT adk_define_workflow('wn_retry',
	    '[{"name": "b", "function": "public.wn_flaky(jsonb,jsonb)",
	       "retry": {"max_attempts": 3, "initial_delay": 0.05, "jitter": 0}}]',
	    '[{"from": "START", "to": "b"}]');
	SELECT adk_define_workflow('wn_timeout',
	    '[{"name": "slow", "function": "public.wn_slow(jsonb,jsonb)", "timeout": 0.2}]',
	    '[{"from": "START", "to": "slow"}]');
	SELECT adk_define_workflow('wn_wait',
	    '[{"name": "b", "function": "public.wn_flaky(jsonb,jsonb)",
	       "retry": {"max_attempts": 5, "initial_delay": 60, "jitter": 0}}]',
	    '[{"from": "START", "to": "b"}]');
	SELECT adk_define_app('wn_retry_app', 'wn_retry');
	SELECT adk_define_app('wn_timeout_app', 'wn_timeout');
	SELECT adk_define_app('wn_wait_app', 'wn_wait');
});

# --- retry: two failed attempts, then the node's output
my $inv = $node->safe_psql('postgres', "SELECT adk_submit('wn_retry_app', 'u', 's1', 'go')");
is( $node->safe_psql(
		'postgres', qq{
	SELECT string_agg((event_data #>> '{node_info,path}') || '=' || coalesce(event_data ->> 'output', '-'),
	                  ' ' ORDER BY seq)
	  FROM adk_wait('$inv', '30 s') WHERE event_data ->> 'author' = 'wn_retry'}),
	'wn_retry/b@1=b', 'a queued run\'s node is retried until it gives its output, one event');
is( $node->safe_psql(
		'postgres', qq{
	SELECT string_agg(node_path || ':' || status || ':' || attempt, ' ') FROM adk.run_states
	 WHERE invocation_id = '$inv' AND node_path LIKE '%@%'}),
	'wn_retry/b@1:completed:3', 'its committed row counts 3 attempts');
is( $node->safe_psql(
		'postgres', "SELECT j.status || ',' || i.status FROM adk.jobs j JOIN adk.invocations i USING (invocation_id)
	  WHERE invocation_id = '$inv'"),
	'completed,completed', 'the job and the invocation completed');

# --- timeout: the function is stopped, the node fails, the job ends
my $t0 = Time::HiRes::time;
$inv = $node->safe_psql('postgres', "SELECT adk_submit('wn_timeout_app', 'u', 's2', 'go')");
is( $node->safe_psql(
		'postgres', qq{
	SELECT string_agg(event_data ->> 'error_code' || ': ' || (event_data ->> 'error_message'), ' ')
	  FROM adk_wait('$inv', '30 s') WHERE event_data ? 'error_code'}),
	'WORKFLOW_NODE_FAILED: node "slow" of workflow "wn_timeout" failed: it ran longer than its timeout (200 ms) and was stopped',
	'a queued run\'s node that runs past its timeout fails with a clear message');
ok(Time::HiRes::time - $t0 < 20, 'the worker stopped it, not the function\'s 30 s');
is( $node->safe_psql(
		'postgres', qq{
	SELECT j.status || ',' || (SELECT string_agg(status, ',') FROM adk.run_states r
	                            WHERE r.invocation_id = j.invocation_id AND r.node_path LIKE '%@%')
	  FROM adk.jobs j WHERE invocation_id = '$inv'}),
	'failed,failed', 'the job ends failed, as its invocation, the node\'s row failed');

# --- adk_cancel during a 60 s wait between attempts
$node->safe_psql('postgres', "UPDATE wn_cfg SET fails = 100; SELECT setval('wn_calls', 1, false)");
$inv = $node->safe_psql('postgres', "SELECT adk_submit('wn_wait_app', 'u', 's3', 'go')");
$node->poll_query_until('postgres',
	"SELECT is_called FROM wn_calls")
  or die 'the first attempt did not run';
# it is in its wait now: the first attempt failed
Time::HiRes::sleep(0.3);
my ($cancelled, $cancel_ms) = cancel_and_time($node, $inv);
is($cancelled, 't', 'adk_cancel of a run waiting to retry a node returns true');
ok(defined $cancel_ms && $cancel_ms < 5000,
	'it stopped within the wait, not after it (' . ($cancel_ms // '?') . ' ms; the wait is 60 s)');
is( $node->safe_psql(
		'postgres', qq{
	SELECT j.status || ',' || coalesce(i.status, '-') || ',' || (SELECT last_value FROM wn_calls)
	  FROM adk.jobs j LEFT JOIN adk.invocations i USING (invocation_id) WHERE invocation_id = '$inv'}),
	'cancelled,cancelled,1',
	'the job ends cancelled after one attempt, as its invocation: the wait is no step, the first attempt\'s step had committed');

# --- adk_interrupt during a wait between attempts of adk_run in another
# backend: the user's cancel stops the whole run there (57014), at once
$node->safe_psql('postgres', "SELECT setval('wn_calls', 1, false)");
my $bg = $node->background_psql('postgres', on_error_stop => 0);
$bg->query_safe("SET application_name = 'sync_runner'");
$t0 = Time::HiRes::time;
$bg->query_until(qr/^$/, "SELECT count(*) FROM adk_run('wn_wait_app', 'u', 's4', 'go');\n");
$node->poll_query_until('postgres',
	"SELECT wait_event_type = 'Extension' AND (SELECT is_called FROM wn_calls)
	   FROM pg_stat_activity WHERE application_name = 'sync_runner' AND state = 'active'")
  or die 'adk_run never waited to retry';
is($node->safe_psql('postgres', "SELECT adk_interrupt('wn_wait_app', 'u', 's4')"),
	'1', 'adk_interrupt finds adk_run waiting to retry a node');
my ($o, $e) = $bg->query("SELECT 'alive'");
like($bg->{stderr} . ($e // ''), qr/canceling statement due to user request/,
	'adk_run there raised 57014');
ok(Time::HiRes::time - $t0 < 20, 'within the wait, not after its 60 s');
is($node->safe_psql('postgres',
	"SELECT count(*) FROM adk.events WHERE app_name = 'wn_wait_app' AND session_id = 's4'"),
	'0', 'nothing of the cancelled run is stored');
$bg->quit;

$node->stop;
done_testing();
