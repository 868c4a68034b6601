# Graph workflows through background workers (docs/workflows.md "What
# runs", "Human input"): a queued run of a workflow -- a fan-out, a join, a
# route -- runs in a worker as in adk_run, each activation's event and
# adk.run_states row committed; a node that asks for human input pauses
# the queued invocation, and the answer resumes it.  Agent nodes of a
# fan-out have their model calls in flight together in a worker too.
use strict;
use warnings;
use File::Temp qw(tempdir);
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::Bin/../perl";
use AdkTest;

my $tmp = tempdir(CLEANUP => 1);
my ($server, $url) = start_model_server($tmp);

my $node = adk_node('wfworkers', 'adk.max_workers' => 2);
adk_install(
	$node, 'sk-test', q{
	CREATE FUNCTION wfw_tag(ctx jsonb, input jsonb) RETURNS jsonb LANGUAGE sql AS $$
	    SELECT jsonb_build_object('output', ctx ->> 'node', 'route', 'on') $$;
	CREATE FUNCTION wfw_ask(ctx jsonb, input jsonb) RETURNS jsonb LANGUAGE sql AS $$
	    SELECT jsonb_build_object('request_input', jsonb_build_object('interrupt_id', 'wfw-ask', 'message', 'Go on?')) $$;
	SELECT adk_define_workflow('wfw_flow',
	    '[{"name": "a", "function": "public.wfw_tag(jsonb,jsonb)"},
	      {"name": "b", "function": "public.wfw_tag(jsonb,jsonb)"},
	      {"name": "c", "function": "public.wfw_tag(jsonb,jsonb)"},
	      {"name": "J", "kind": "join"},
	      {"name": "ask", "function": "public.wfw_ask(jsonb,jsonb)"},
	      {"name": "end", "function": "public.wfw_tag(jsonb,jsonb)"}]',
	    '[{"from": "START", "to": "a"}, {"from": "a", "to": "b"}, {"from": "a", "to": "c"},
	      {"from": "b", "to": "J"}, {"from": "c", "to": "J"},
	      {"from": "J", "to": "ask", "route": "never"}, {"from": "J", "to": "end", "default": true}]');
	SELECT adk_define_workflow('wfw_pause',
	    '[{"name": "ask", "function": "public.wfw_ask(jsonb,jsonb)"},
	      {"name": "end", "function": "public.wfw_tag(jsonb,jsonb)"}]',
	    '[{"from": "START", "to": "ask"}, {"from": "ask", "to": "end"}]');
	SELECT adk_define_app('wfw_app', 'wfw_flow');
	SELECT adk_define_app('wfw_pause_app', 'wfw_pause');
});
$node->safe_psql(
	'postgres', qq{
	SELECT adk_define_model('wfw_slow', 'openai', '$url', 'gpt-latency-500', api_key_secret => 'k');
	SELECT adk_define_agent('wfw_' || x, model => 'wfw_slow', instruction => 'You are ' || x || '.')
	  FROM unnest(ARRAY['a', 'b', 'c']) x;
	SELECT adk_define_workflow('wfw_agents',
	    '[{"agent": "wfw_a"}, {"agent": "wfw_b"}, {"agent": "wfw_c"}, {"name": "J", "kind": "join"}]',
	    '[{"from": "START", "to": "wfw_a"}, {"from": "START", "to": "wfw_b"}, {"from": "START", "to": "wfw_c"},
	      {"from": "wfw_a", "to": "J"}, {"from": "wfw_b", "to": "J"}, {"from": "wfw_c", "to": "J"}]');
	SELECT adk_define_app('wfw_agents_app', 'wfw_agents');
});

my $inv = $node->safe_psql('postgres', "SELECT adk_submit('wfw_app', 'u', 's1', 'go')");
is( $node->safe_psql(
		'postgres', qq{
	SELECT string_agg((event_data #>> '{node_info,path}') || '=' || coalesce(event_data ->> 'output', '-'),
	                  ' ' ORDER BY seq)
	  FROM adk_wait('$inv', '30 s') WHERE event_data ->> 'author' = 'wfw_flow'}),
	'wfw_flow/a@1=a wfw_flow/b@1=b wfw_flow/c@1=c wfw_flow/J@1={"b": "b", "c": "c"} wfw_flow/end@1=end',
	'a queued workflow runs in a worker: fan-out, join, default edge');
is( $node->safe_psql(
		'postgres', qq{
	SELECT string_agg(node_path || ':' || status || ':' || attempt, ' ' ORDER BY node_path)
	  FROM adk.run_states WHERE invocation_id = '$inv'}),
	'wfw_flow/J@1:completed:1 wfw_flow/a@1:completed:1 wfw_flow/b@1:completed:1 '
	  . 'wfw_flow/c@1:completed:1 wfw_flow/end@1:completed:1',
	'each activation has its row, completed, one attempt');
is( $node->safe_psql(
		'postgres', "SELECT j.status || ',' || i.status FROM adk.jobs j JOIN adk.invocations i USING (invocation_id)
	  WHERE invocation_id = '$inv'"),
	'completed,completed', 'the job and the invocation completed');

# a pause in a worker, an answer through a worker
my $p = $node->safe_psql('postgres', "SELECT adk_submit('wfw_pause_app', 'u', 's2', 'go')");
$node->safe_psql('postgres', "SELECT count(*) FROM adk_wait('$p', '30 s')");
is( $node->safe_psql(
		'postgres', qq{
	SELECT i.status || ',' || (SELECT string_agg(call_id || ':' || tool, ' ') FROM adk.pending_interrupts
	                            WHERE session_id = 's2')
	  FROM adk.invocations i WHERE invocation_id = '$p'}),
	'waiting,wfw-ask:adk_request_input', 'the queued run pauses: its node waits on the request');
# the answer, through adk_run (an answer queued with adk_submit runs as a
# job of its own invocation: it resumes nothing, for any paused run)
is( $node->safe_psql(
		'postgres', qq{
	SELECT count(DISTINCT invocation_id) || ',' || min(invocation_id)
	  FROM adk_run('wfw_pause_app', 'u', 's2',
	               adk_function_response('wfw-ask', 'adk_request_input', '{"go": true}'))}),
	"1,$p", 'the answer resumes the invocation the worker paused');
is( $node->safe_psql(
		'postgres', qq{
	SELECT string_agg(node_path || ':' || status || ':' || coalesce(output::text, '-'), ' ' ORDER BY node_path)
	  FROM adk.run_states WHERE invocation_id = '$p'}),
	'wfw_pause/ask@1:completed:{"go": true} wfw_pause/end@1:completed:"end"',
	'resumed: the answer is the node\'s output, its successor ran');
is($node->safe_psql('postgres', "SELECT status FROM adk.invocations WHERE invocation_id = '$p'"),
	'completed', 'the invocation completed');

# three agent nodes after START, each a model call of 500 ms: in a worker
# their calls are in flight together -- the job takes about one latency
# (three one after another would take 1.5 s); the join has all three
my $ag = $node->safe_psql('postgres', "SELECT adk_submit('wfw_agents_app', 'u', 's3', 'views')");
is( $node->safe_psql(
		'postgres', qq{
	SELECT event_data -> 'output'
	  FROM adk_wait('$ag', '30 s') WHERE event_data #>> '{node_info,path}' = 'wfw_agents/J\@1'
	   AND event_data ? 'output'}),
	'{"wfw_a": "echo: views", "wfw_b": "echo: views", "wfw_c": "echo: views"}',
	'the join of three agent nodes, run in a worker, has their answers');
my $took = $node->safe_psql('postgres',
	"SELECT extract(epoch FROM finished_at - started_at) FROM adk.jobs WHERE invocation_id = '$ag'");
note "three 500 ms agent nodes in a worker took $took s";
ok($took >= 0.5 && $took < 1.2,
	"their model calls were in flight together ($took s, not 1.5)");
is( $node->safe_psql(
		'postgres', qq{
	SELECT string_agg(node_path || ':' || status, ' ' ORDER BY node_path)
	  FROM adk.run_states WHERE invocation_id = '$ag'}),
	'wfw_agents/J@1:completed wfw_agents/wfw_a@1:completed wfw_agents/wfw_b@1:completed '
	  . 'wfw_agents/wfw_c@1:completed',
	'each agent node\'s row completed');

$node->stop;
done_testing();
