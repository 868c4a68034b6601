# An agent node's timeout and retry in a job worker (docs/workers.md,
# docs/workflows.md "Node settings"): the worker notices the node's
# deadline while the model call hangs (it is not waiting on that call
# alone), cancels it, and runs the node again in a fresh lane after the
# retry's wait -- meanwhile another run on the same worker completes.
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

# one worker: both runs are its
my $node = adk_node('wfagentretry', 'adk.max_workers' => 1);
adk_install(
	$node, 'sk-test', qq{
	SELECT adk_define_model('ar_fast', 'openai', '$url', 'gpt-test', api_key_secret => 'k',
	                        options => '{"retries": 0}');
	SELECT adk_define_agent('ar_writer', model => 'ar_fast', mode => 'single_turn', instruction => 'Write.');
	SELECT adk_define_workflow('ar_retry',
	    '[{"agent": "ar_writer", "timeout": 1.5,
	       "retry": {"max_attempts": 2, "initial_delay": 2, "jitter": 0}}]',
	    '[{"from": "START", "to": "ar_writer"}]');
	SELECT adk_define_workflow('ar_quick',
	    '[{"name": "q", "agent": "ar_writer"}]', '[{"from": "START", "to": "q"}]');
	SELECT adk_define_app('ar_retry_app', 'ar_retry');
	SELECT adk_define_app('ar_quick_app', 'ar_quick');
});

my $t0 = Time::HiRes::time;
# its first model call hangs (the model server answers the same request
# the second time)
my $slow = $node->safe_psql('postgres',
	"SELECT adk_submit('ar_retry_app', 'u', 's1', 'tea [[fault:hang-once]]')");
$node->poll_query_until('postgres',
	"SELECT count(*) > 0 FROM adk.run_states WHERE invocation_id = '$slow' AND node_path LIKE '%@%'")
  or die 'the node did not start';
my $quick = $node->safe_psql('postgres', "SELECT adk_submit('ar_quick_app', 'u', 's2', 'go')");
is( $node->safe_psql(
		'postgres', qq{
	SELECT string_agg(event_data ->> 'output', ' ' ORDER BY seq)
	  FROM adk_wait('$quick', '30 s') WHERE event_data ->> 'author' = 'ar_quick'}),
	'echo: go', 'the other run completes');
my $quick_s = Time::HiRes::time - $t0;
ok($quick_s < 3.5, "while the first run's call hangs, before its timeout and retry wait are over ($quick_s s)");

is( $node->safe_psql(
		'postgres', qq{
	SELECT string_agg(event_data ->> 'output', ' ' ORDER BY seq)
	  FROM adk_wait('$slow', '60 s') WHERE event_data ->> 'author' = 'ar_retry'}),
	'echo: tea [[fault:hang-once]]', 'the retried node completes');
my $slow_s = Time::HiRes::time - $t0;
ok($slow_s >= 3.5, "after its timeout (1.5 s) and its wait (2 s) ($slow_s s)");
ok($slow_s < 30, "not after the hung call (300 s) ($slow_s s)");
is( $node->safe_psql(
		'postgres', qq{
	SELECT string_agg(node_path || ':' || status || ':' || attempt, ' ') FROM adk.run_states
	 WHERE invocation_id = '$slow' AND node_path LIKE '%@%'}),
	'ar_retry/ar_writer@1:completed:2', 'its row counts 2 attempts');
is( $node->safe_psql(
		'postgres', "SELECT count(DISTINCT worker_pid) = 1
	  FROM adk.jobs WHERE invocation_id IN ('$slow', '$quick')"),
	't', 'one worker ran both');

$node->stop;
done_testing();
