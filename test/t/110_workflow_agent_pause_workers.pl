# An agent node whose agent pauses, through a background worker
# (docs/workflows.md "Human input"): a queued workflow run whose agent
# node calls a long-running tool holds that node while the other branch
# -- a slow agent node -- goes on in the worker, each step committed; the
# job and its invocation then wait on the node's call.  The answer
# resumes that agent in its lane: its model gets the answer as the tool's
# result, the node's output is the agent's answer, and the join after the
# two branches runs once.  The rows a rebuild derives are the live ones.
# An agent item of a parallel worker pauses and resumes the same way.
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

my $node = adk_node('wfpause', 'adk.max_workers' => 2);
adk_install(
	$node, 'sk-test', q{
	CREATE TABLE wfp_tickets (item text);
	CREATE FUNCTION wfp_request(item text) RETURNS jsonb LANGUAGE sql AS $$
	    INSERT INTO wfp_tickets VALUES (item) RETURNING jsonb_build_object('status', 'pending') $$;
	COMMENT ON FUNCTION wfp_request(text) IS 'File a request; a person answers it later.';
	SELECT adk_define_tool('wfp_request(text)'::regprocedure, long_running => true);
});
$node->safe_psql(
	'postgres', qq{
	SELECT adk_define_model('wfp_fast', 'openai', '$url', 'gpt-test', api_key_secret => 'k');
	SELECT adk_define_model('wfp_slow', 'openai', '$url', 'gpt-latency-500', api_key_secret => 'k');
	SELECT adk_define_agent('wfp_filer', model => 'wfp_fast', instruction => 'You file requests.',
	                        tools => ARRAY['wfp_request']);
	SELECT adk_define_agent('wfp_slowpoke', model => 'wfp_slow', instruction => 'You think slowly.');
	SELECT adk_define_workflow('wfp_flow',
	    '[{"agent": "wfp_filer"}, {"agent": "wfp_slowpoke"}, {"name": "J", "kind": "join"}]',
	    '[{"from": "START", "to": "wfp_filer"}, {"from": "START", "to": "wfp_slowpoke"},
	      {"from": "wfp_filer", "to": "J"}, {"from": "wfp_slowpoke", "to": "J"}]');
	SELECT adk_define_app('wfp_app', 'wfp_flow');
});

my $inv = $node->safe_psql('postgres',
	qq{SELECT adk_submit('wfp_app', 'u', 's1', 'call wfp_request({"item": "desk"})')});
$node->safe_psql('postgres', "SELECT count(*) FROM adk_wait('$inv', '30 s')");
is( $node->safe_psql(
		'postgres', qq{
	SELECT j.status || ',' || i.status FROM adk.jobs j JOIN adk.invocations i USING (invocation_id)
	 WHERE invocation_id = '$inv'}),
	'waiting,waiting', 'the job and its invocation wait');
is( $node->safe_psql(
		'postgres', qq{
	SELECT string_agg(node_path || ':' || status || ':' || cardinality(interrupt_ids), ' ' ORDER BY node_path)
	  FROM adk.run_states WHERE invocation_id = '$inv'}),
	'wfp_flow/wfp_filer@1:waiting:1 wfp_flow/wfp_slowpoke@1:completed:0',
	'the filer\'s node waits on its call; the other branch went on and completed');
is( $node->safe_psql(
		'postgres', "SELECT tool || ':' || agent FROM adk.pending_interrupts WHERE session_id = 's1'"),
	'wfp_request:wfp_filer', 'the pending call is the filer\'s');
is($node->safe_psql('postgres', 'SELECT count(*) FROM wfp_tickets'), '1', 'the tool ran once');

# the answer (through adk_run: an answer queued with adk_submit runs as a
# job of its own invocation) resumes the filer in its lane
is( $node->safe_psql(
		'postgres', qq{
	SELECT count(DISTINCT invocation_id) || ',' || min(invocation_id)
	  FROM adk_run('wfp_app', 'u', 's1',
	               adk_function_response((SELECT call_id FROM adk.pending_interrupts WHERE session_id = 's1'),
	                                     'wfp_request', '{"approved": true}'))}),
	"1,$inv", 'the answer resumes the invocation the worker paused');
is( $node->safe_psql(
		'postgres', qq{
	SELECT string_agg(node_path || ':' || status || ':' || coalesce(output::text, '-'), ' ' ORDER BY node_path)
	  FROM adk.run_states WHERE invocation_id = '$inv'}),
	'wfp_flow/J@1:completed:{"wfp_filer": "Tool wfp_request returned: {\\"approved\\":true}.", '
	  . '"wfp_slowpoke": "echo: call wfp_request({\\"item\\": \\"desk\\"})"} '
	  . 'wfp_flow/wfp_filer@1:completed:"Tool wfp_request returned: {\\"approved\\":true}." '
	  . 'wfp_flow/wfp_slowpoke@1:completed:"echo: call wfp_request({\\"item\\": \\"desk\\"})"',
	'the filer\'s model got the answer as its tool\'s result; the join ran with both outputs');
is( $node->safe_psql(
		'postgres', qq{
	SELECT count(*) FROM adk.events
	 WHERE invocation_id = '$inv' AND event_data #>> '{node_info,path}' = 'wfp_flow/J\@1'}),
	'1', 'the join ran once');
is($node->safe_psql('postgres', "SELECT status FROM adk.invocations WHERE invocation_id = '$inv'"),
	'completed', 'the invocation completed');
is($node->safe_psql('postgres', 'SELECT count(*) FROM wfp_tickets'), '1', 'the tool did not run again');

# the rows a rebuild derives from the events are the live ones
$node->safe_psql('postgres', qq{
	CREATE TABLE wfp_live AS SELECT * FROM adk.run_states WHERE session_id = 's1';
	DELETE FROM adk.run_states WHERE session_id = 's1';
	SELECT adk_rebuild_run_states('wfp_app', 'u', 's1');
});
is( $node->safe_psql(
		'postgres', q{
	SELECT count(*) FROM (
	  (SELECT invocation_id, node_path, status, interrupt_ids, answered_ids, agent, updated_at, output,
	          attempt, triggered_by, branch, graph_hash FROM wfp_live
	   EXCEPT
	   SELECT invocation_id, node_path, status, interrupt_ids, answered_ids, agent, updated_at, output,
	          attempt, triggered_by, branch, graph_hash FROM adk.run_states WHERE session_id = 's1')
	  UNION ALL
	  (SELECT invocation_id, node_path, status, interrupt_ids, answered_ids, agent, updated_at, output,
	          attempt, triggered_by, branch, graph_hash FROM adk.run_states WHERE session_id = 's1'
	   EXCEPT
	   SELECT invocation_id, node_path, status, interrupt_ids, answered_ids, agent, updated_at, output,
	          attempt, triggered_by, branch, graph_hash FROM wfp_live)) x}),
	'0', 'rebuilt rows equal the live ones');

# an agent item of a parallel worker, through a worker: the item whose
# agent calls the tool waits, the other completes; the job waits, and the
# answer resumes that item's agent; the parallel worker completes with
# both outputs in item order
$node->safe_psql(
	'postgres', q{
	CREATE FUNCTION wfp_split(ctx jsonb, input jsonb) RETURNS jsonb LANGUAGE sql AS $$
	    SELECT jsonb_build_object('output', to_jsonb(string_to_array(input #>> '{parts,0,text}', '|'))) $$;
	SELECT adk_define_workflow('wfp_items',
	    '[{"name": "split", "function": "public.wfp_split(jsonb,jsonb)"},
	      {"name": "each", "kind": "parallel_worker", "worker": "wfp_filer"}, {"agent": "wfp_filer"}]',
	    '[{"from": "START", "to": "split"}, {"from": "split", "to": "each"}]');
	SELECT adk_define_app('wfp_items_app', 'wfp_items');
});
my $inv2 = $node->safe_psql('postgres',
	qq{SELECT adk_submit('wfp_items_app', 'u', 's2', 'plain chair|call wfp_request({"item": "lamp"})')});
$node->safe_psql('postgres', "SELECT count(*) FROM adk_wait('$inv2', '30 s')");
is( $node->safe_psql(
		'postgres', qq{
	SELECT j.status || ',' || i.status FROM adk.jobs j JOIN adk.invocations i USING (invocation_id)
	 WHERE invocation_id = '$inv2'}),
	'waiting,waiting', 'the item job and its invocation wait');
is( $node->safe_psql(
		'postgres', qq{
	SELECT string_agg(node_path || ':' || status || ':' || cardinality(interrupt_ids), ' ' ORDER BY node_path)
	  FROM adk.run_states WHERE invocation_id = '$inv2'}),
	'wfp_items/each@1:running:0 wfp_items/split@1:completed:0 '
	  . 'wfp_items/wfp_filer@1:completed:0 wfp_items/wfp_filer@2:waiting:1',
	'the pausing item waits, the other completed, the parallel worker runs');
is( $node->safe_psql(
		'postgres', qq{
	SELECT (r.event_data -> 'output')::text FROM adk_run('wfp_items_app', 'u', 's2',
	               adk_function_response((SELECT call_id FROM adk.pending_interrupts WHERE session_id = 's2'),
	                                     'wfp_request', '{"approved": 2}')) r
	 WHERE r.event_data #>> '{node_info,path}' = 'wfp_items/each\@1'}),
	'["echo: plain chair", "Tool wfp_request returned: {\"approved\":2}."]',
	'the answer resumes the item\'s agent; the parallel worker completes in item order');
is($node->safe_psql('postgres', "SELECT status FROM adk.invocations WHERE invocation_id = '$inv2'"),
	'completed', 'the item invocation completed');

$node->stop;
done_testing();
