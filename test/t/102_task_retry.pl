# A retried queued run that was inside a task goes on in the task's
# isolation scope (docs/agent-modes.md, docs/workers.md), and the task
# node's adk.run_states row counts the attempt (docs/runs.md).  A job worker is
# killed (SIGKILL: the server's crash restart) while an agent the task
# agent uses as a tool waits for its model -- the task agent's call is
# stored, its response is not: the retry runs the stored call in the
# task's scope, in the task's node, and the task goes on there.  (A
# retry after the task's own model call was stored with its response --
# the next model call in flight -- goes on from the user's open task.)
use strict;
use warnings;
use File::Temp qw(tempdir);
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::Bin/../perl";
use AdkTest qw(:DEFAULT wait_jobs_done);

my $tmp = tempdir(CLEANUP => 1);
my ($server, $base) = start_model_server($tmp);
my $url = "$base/v1";

my $node = adk_node(
	'task_retry',
	'adk.max_workers' => 2,
	max_worker_processes => 16,
	restart_after_crash => 'on');
adk_install(
	$node, 'sk-task', qq{
	SELECT adk_define_model('fast', 'openai', '$url', 'gpt-test', api_key_secret => 'k');
	SELECT adk_define_model('slow', 'openai', '$url', 'gpt-latency-3000', api_key_secret => 'k');
	-- an agent the task agent uses as a tool: its model is slow, so that
	-- the worker is killed while the task's call waits for it
	SELECT adk_define_agent('helper', model => 'slow', description => 'Helps.');
	SELECT adk_define_agent('saver', model => 'fast', mode => 'task', description => 'Saves an item.',
	                        tools => ARRAY['helper']);
	SELECT adk_define_agent('boss', model => 'fast', sub_agents => ARRAY['saver']);
	SELECT adk_define_app('tapp', 'boss');
});

# the session's events: author, scoped (s) or not (-), what the part is
sub events_of
{
	my ($app, $session) = @_;
	return $node->safe_psql(
		'postgres', qq{
	SELECT string_agg(event_data ->> 'author' || CASE WHEN event_data ? 'isolation_scope' THEN ':s' ELSE ':-' END || ':' ||
	                  coalesce('call ' || (event_data #>> '{content,parts,0,function_call,name}'),
	                           'resp ' || (event_data #>> '{content,parts,0,function_response,name}'),
	                           CASE WHEN event_data ? 'error_code' THEN 'error ' || (event_data ->> 'error_code') END,
	                           'text'), ' | ' ORDER BY seq)
	  FROM adk.events WHERE app_name = '$app' AND session_id = '$session'});
}

# a query tried again while the server restarts after a crash
sub poll_through_restart
{
	my ($sql) = @_;
	for (1 .. 60)
	{
		my $ok = eval { $node->poll_query_until('postgres', $sql) };
		return 1 if $ok;
		sleep 1;
	}
	return 0;
}

sub kill_worker_of
{
	my ($inv) = @_;
	my $pid = $node->safe_psql('postgres', "SELECT worker_pid FROM adk.jobs WHERE invocation_id = '$inv'");
	kill 'KILL', $pid;
	poll_through_restart("SELECT count(*) = 0 FROM adk.jobs WHERE invocation_id = '$inv' AND status IN ('queued', 'running')")
	  or die "job $inv did not end after the crash";
}

# --- killed while the task agent's call waits for the agent it calls
my $inv = $node->safe_psql('postgres',
	q{SELECT adk_submit('tapp', 'u', 'in_tool', 'call saver({"request": "call helper({\"request\": \"hi\"})"})', NULL, '{"retries": 1}')});
$node->poll_query_until('postgres',
	"SELECT count(*) = 3 FROM adk.events WHERE invocation_id = '$inv'")
  or die 'the task never called its tool: ' . events_of('tapp', 'in_tool');
is(events_of('tapp', 'in_tool'), 'user:-:text | boss:-:call saver | saver:s:call helper',
	'in_tool: the task\'s call is stored, the agent it calls waits for its model');
kill_worker_of($inv);
is($node->safe_psql('postgres', "SELECT status || ' ' || attempts FROM adk.jobs WHERE invocation_id = '$inv'"),
	'completed 2', 'in_tool: completed in its second attempt');
is( events_of('tapp', 'in_tool'),
	'user:-:text | boss:-:call saver | saver:s:call helper | saver:s:resp helper | saver:s:text',
	'in_tool: the retry ran the stored call in the task\'s scope, and the task went on there');
is( $node->safe_psql(
		'postgres', qq{
	SELECT count(*) FILTER (WHERE NOT event_data ? 'isolation_scope') || ' ' ||
	       count(DISTINCT event_data ->> 'isolation_scope') || ' ' ||
	       bool_and(event_data ->> 'isolation_scope' = (SELECT event_data #>> '{content,parts,0,function_call,id}'
	                                                     FROM adk.events WHERE invocation_id = '$inv' AND seq = 2)) || ' ' ||
	       bool_and(event_data #>> '{node_info,path}' = 'boss/saver\@' || (event_data ->> 'isolation_scope'))
	  FROM adk.events WHERE invocation_id = '$inv' AND event_data ->> 'author' = 'saver'}),
	'0 1 true true', 'in_tool: every task event in the delegating call\'s scope, in the task\'s node');
is($node->safe_psql('postgres', "SELECT agent FROM adk.active_tasks WHERE app_name = 'tapp' AND session_id = 'in_tool'"),
	'saver', 'in_tool: the task is still open (it answered without finish_task)');
# the task's node was started twice, its coordinator's once (the retry
# went on inside the task): adk.run_states.attempt (docs/runs.md)
is( $node->safe_psql(
		'postgres', qq{
	SELECT string_agg(regexp_replace(node_path, '\@.*', '\@<call id>') || ' ' || status || ' ' || attempt,
	                  ' | ' ORDER BY node_path)
	  FROM adk.run_states WHERE invocation_id = '$inv'}),
	'boss completed 1 | boss/saver@<call id> running 2',
	'in_tool: the task node\'s row counts two attempts, the coordinator\'s one');

done_testing();
