# A graph workflow node's wait between retry attempts stalls nothing else
# in a job worker (docs/workers.md, docs/workflows.md "Node settings"):
# with one worker holding two runs, one run's node waits 3 s before its
# second attempt while the other run completes meanwhile; the waiting run
# then completes too, its row counting 2 attempts.
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
my $node = adk_node('wfretrywait', 'adk.max_workers' => 1);
adk_install(
	$node, 'sk-test', q{
	CREATE SEQUENCE rw_calls;
	GRANT USAGE ON SEQUENCE rw_calls TO PUBLIC;
	CREATE FUNCTION rw_flaky(ctx jsonb, input jsonb) RETURNS jsonb LANGUAGE plpgsql AS $$
	BEGIN
	    IF nextval('rw_calls') <= 1 THEN
	        RAISE EXCEPTION 'not yet';
	    END IF;
	    RETURN jsonb_build_object('output', ctx ->> 'node');
	END $$;
	CREATE FUNCTION rw_quick(ctx jsonb, input jsonb) RETURNS jsonb LANGUAGE sql AS $$
	    SELECT jsonb_build_object('output', ctx ->> 'node') $$;
	SELECT adk_define_workflow('rw_wait',
	    '[{"name": "b", "function": "public.rw_flaky(jsonb,jsonb)",
	       "retry": {"max_attempts": 2, "initial_delay": 3, "jitter": 0}}]',
	    '[{"from": "START", "to": "b"}]');
	SELECT adk_define_workflow('rw_quick',
	    '[{"name": "q", "function": "public.rw_quick(jsonb,jsonb)"}]',
	    '[{"from": "START", "to": "q"}]');
	SELECT adk_define_app('rw_wait_app', 'rw_wait');
	SELECT adk_define_app('rw_quick_app', 'rw_quick');
});

my $t0 = Time::HiRes::time;
my $slow = $node->safe_psql('postgres', "SELECT adk_submit('rw_wait_app', 'u', 's1', 'go')");
$node->poll_query_until('postgres', "SELECT is_called FROM rw_calls")
  or die 'the first attempt did not run';
my $quick = $node->safe_psql('postgres', "SELECT adk_submit('rw_quick_app', 'u', 's2', 'go')");
is( $node->safe_psql(
		'postgres', qq{
	SELECT string_agg(event_data ->> 'output', ' ' ORDER BY seq)
	  FROM adk_wait('$quick', '30 s') WHERE event_data ->> 'author' = 'rw_quick'}),
	'q', 'the other run completes');
my $quick_s = Time::HiRes::time - $t0;
ok($quick_s < 2.5, "within the first run's 3 s wait ($quick_s s)");
is( $node->safe_psql(
		'postgres', "SELECT count(DISTINCT worker_pid) = 1
	  FROM adk.jobs WHERE invocation_id IN ('$slow', '$quick')"),
	't', 'one worker ran both');
is($node->safe_psql('postgres', "SELECT status FROM adk.jobs WHERE invocation_id = '$slow'"),
	'running', 'the retrying run still waits');

is( $node->safe_psql(
		'postgres', qq{
	SELECT string_agg(event_data ->> 'output', ' ' ORDER BY seq)
	  FROM adk_wait('$slow', '30 s') WHERE event_data ->> 'author' = 'rw_wait'}),
	'b', 'the retrying run completes after its wait');
ok(Time::HiRes::time - $t0 >= 3, 'not before its wait was over');
is( $node->safe_psql(
		'postgres', qq{
	SELECT string_agg(node_path || ':' || status || ':' || attempt, ' ') FROM adk.run_states
	 WHERE invocation_id = '$slow' AND node_path LIKE '%@%'}),
	'rw_wait/b@1:completed:2', 'its row counts 2 attempts');

$node->stop;
done_testing();
