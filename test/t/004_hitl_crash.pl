# Human in the loop under a crash: the backend running a resumed invocation
# is killed (pg_terminate_backend) while the resumed flow waits on the
# model.  The answer, the continuation and the run_states row were one
# transaction, so nothing of the resume is left: the interrupt is still
# pending, the invocation still waiting -- and answering it again resumes
# the same invocation, once.
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

my $node = plain_node('hitl');
$node->safe_psql('postgres', 'CREATE EXTENSION adk_runner');
# every model call of this agent takes two seconds
$node->safe_psql(
	'postgres', qq{
	SELECT adk_set_secret('k', 'sk-hitl-tap', ARRAY['127.0.0.1']);
	SELECT adk_define_model('slow', 'openai', '$url/v1', 'gpt-latency-2000', api_key_secret => 'k');
	CREATE TABLE tickets (item text);
	CREATE FUNCTION request_approval(item text) RETURNS jsonb LANGUAGE sql AS
	  \$\$ INSERT INTO tickets VALUES (item) RETURNING jsonb_build_object('status', 'pending') \$\$;
	SELECT adk_define_tool('request_approval(text)'::regprocedure, long_running => true);
	SELECT adk_define_agent('approver', model => 'slow', tools => ARRAY['request_approval']);
	SELECT adk_define_app('hitl', 'approver');
});

# the first turn pauses on the long-running call
is( $node->safe_psql(
		'postgres',
		q{SELECT count(*) FROM adk_run('hitl', 'u', 's', 'call request_approval({"item": "laptop"})')}),
	'2',
	'the first turn stops after the long-running call');
my $call = $node->safe_psql('postgres',
	"SELECT call_id FROM adk.pending_interrupts WHERE session_id = 's'");
ok($call ne '', 'the call is pending');
my $state_before = $node->safe_psql('postgres',
	"SELECT status, interrupt_ids, answered_ids FROM adk.run_states WHERE session_id = 's'");
like($state_before, qr/^waiting\|\{\Q$call\E\}\|\{\}$/, 'run_states waits on the call');

# resume in a second backend, and kill it while the resumed flow waits on
# the model
my $answer = qq{adk_function_response('$call', 'request_approval', '{"approved": true}')};
my $bg = $node->background_psql('postgres', on_error_stop => 0);
$bg->query_safe("SET application_name = 'resumer'");
$bg->query_until(qr/^$/, "SELECT count(*) FROM adk_run('hitl', 'u', 's', $answer);\n");
$node->poll_query_until('postgres',
	"SELECT wait_event_type = 'Extension' FROM pg_stat_activity WHERE application_name = 'resumer' AND state = 'active'"
) or die 'the resumed run never reached its model call';
pass('the resumed run waits on the model');
# inside its transaction the resume has happened: the answer is stored,
# the row is marked -- but nothing of it is visible outside
is( $node->safe_psql('postgres',
		"SELECT count(*) FROM adk.events WHERE session_id = 's'"),
	'3', 'the resume in flight is not visible');
is( $node->safe_psql(
		'postgres',
		"SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'resumer'"),
	't',
	'the resuming backend is terminated');
$node->poll_query_until('postgres',
	"SELECT count(*) = 0 FROM pg_stat_activity WHERE application_name = 'resumer'")
  or die 'the resuming backend did not go away';
eval { $bg->quit; };

# nothing of the resume is left: the interrupt is pending, the invocation
# waiting, the row as it was
is( $node->safe_psql('postgres',
		"SELECT count(*) FROM adk.events WHERE session_id = 's'"),
	'3', 'no event of the killed resume is stored');
is( $node->safe_psql('postgres',
		"SELECT call_id FROM adk.pending_interrupts WHERE session_id = 's'"),
	$call, 'the interrupt is still pending');
is( $node->safe_psql('postgres',
		"SELECT status, interrupt_ids, answered_ids FROM adk.run_states WHERE session_id = 's'"),
	$state_before, 'run_states is as before the resume');
is( $node->safe_psql('postgres',
		"SELECT status || ' ' || resumed FROM adk.invocations"),
	'waiting 0', 'the invocation is still waiting, never resumed');

# answer again: the same invocation resumes, once
is( $node->safe_psql(
		'postgres',
		"SELECT string_agg(event_data #>> '{content,parts,0,text}', '') FROM adk_run('hitl', 'u', 's', $answer)"),
	'Tool request_approval returned: {"approved":true}.',
	'the second answer resumes the flow and the model answers');
is( $node->safe_psql('postgres',
		"SELECT count(DISTINCT invocation_id) || ' ' || count(*) FROM adk.events WHERE session_id = 's'"),
	'1 5', 'one invocation: call, response, answer, model answer');
is( $node->safe_psql('postgres',
		"SELECT status || ' ' || resumed || ' ' || model_calls FROM adk.invocations"),
	'completed 1 2', 'the invocation completed, resumed once');
is( $node->safe_psql('postgres',
		"SELECT status || ' ' || cardinality(interrupt_ids) || ' ' || (answered_ids = ARRAY['$call']) FROM adk.run_states WHERE session_id = 's'"),
	'completed 0 true', 'run_states: answered, completed');
is($node->safe_psql('postgres', 'SELECT count(*) FROM tickets'),
	'1', 'the tool ran once');
# and the rows still derive from the events
is( $node->safe_psql(
		'postgres', q{
	CREATE TEMP TABLE before AS SELECT * FROM adk.run_states;
	DELETE FROM adk.run_states;
	SELECT adk_rebuild_run_states();
	SELECT count(*) FROM (SELECT * FROM before EXCEPT SELECT * FROM adk.run_states
	                      UNION ALL
	                      (SELECT * FROM adk.run_states EXCEPT SELECT * FROM before)) d;}),
	"1\n0", 'adk_rebuild_run_states gives the same rows');

$node->stop;
$server->kill_kill;
done_testing();
