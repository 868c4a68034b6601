# Spans of runs that are concurrent inside, in a job worker that holds many
# of them at once: 10 runs of a parallel agent
# (three lanes whose models answer after 300, 100 and 200 ms) and 10 runs
# whose model calls three agents used as tools, all in one worker.  Each
# model span hangs under the agent that made the call -- its own lane, its
# own run --, the ledger row of each request names that span, no span lies
# outside its parent, and every run's tree has the shape of the sequential
# equivalent.
use strict;
use warnings;
use File::Temp qw(tempdir);
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time);
use FindBin;
use lib "$FindBin::Bin/../perl";
use AdkTest;

my $tmp = tempdir(CLEANUP => 1);
my ($server, $url) = start_model_server($tmp);
$url .= "/v1";

my $node = adk_node('span_nesting', 'adk.max_workers' => 1);

adk_install(
	$node, 'sk-test', qq{
	SELECT adk_define_model('m300', 'openai', '$url', 'gpt-latency-300', api_key_secret => 'k');
	SELECT adk_define_model('m100', 'openai', '$url', 'gpt-latency-100', api_key_secret => 'k');
	SELECT adk_define_model('m200', 'openai', '$url', 'gpt-latency-200', api_key_secret => 'k');
	SELECT adk_define_model('m0', 'openai', '$url', 'gpt-test', api_key_secret => 'k');
	SELECT adk_define_agent('pa', model => 'm300', instruction => 'You are pa.');
	SELECT adk_define_agent('pb', model => 'm100', instruction => 'You are pb.');
	SELECT adk_define_agent('pc', model => 'm200', instruction => 'You are pc.');
	SELECT adk_define_agent('par', kind => 'parallel', sub_agents => ARRAY['pa', 'pb', 'pc']);
	SELECT adk_define_app('par_app', 'par');
	SELECT adk_define_agent('tx', model => 'm300', instruction => 'You are tx.', description => 'X.');
	SELECT adk_define_agent('ty', model => 'm100', instruction => 'You are ty.', description => 'Y.');
	SELECT adk_define_agent('tz', model => 'm200', instruction => 'You are tz.', description => 'Z.');
	SELECT adk_define_agent('boss', model => 'm0', instruction => 'You are boss.',
	                        tools => ARRAY['tx', 'ty', 'tz']);
	SELECT adk_define_app('boss_app', 'boss');
});

my $t0 = time;
$node->safe_psql(
	'postgres', q{
	SELECT adk_submit('par_app', 'u', 'par' || i, 'all three, please') FROM generate_series(1, 10) i;
	SELECT adk_submit('boss_app', 'u', 'boss' || i,
	                  'call tx({"request": "one"}) call ty({"request": "two"}) call tz({"request": "three"})')
	  FROM generate_series(1, 10) i;
});
my $done;
while (time - $t0 < 60)
{
	my $left = $node->safe_psql('postgres',
		"SELECT count(*) FROM adk.jobs WHERE status IN ('queued', 'running')");
	if ($left eq '0') { $done = 1; last; }
	select(undef, undef, undef, 0.05);
}
ok($done, '20 runs in one worker ended');
is( $node->safe_psql(
		'postgres', q{
	SELECT count(*) FILTER (WHERE status = 'completed') || '/' || count(*) FROM adk.invocations}),
	'20/20',
	'every run completed');
# per session: model spans under the agent that made them, the ledger
# naming them, intervals nested
my $bad = $node->safe_psql(
	'postgres', q{
	WITH sp AS (SELECT c.*, p.name AS pname, p.attributes AS pattrs, p.start_time AS pstart,
	                   p.end_time AS pend, p.session_id AS psession
	              FROM adk.spans c LEFT JOIN adk.spans p
	                ON p.span_id = c.parent_span_id AND p.trace_id = c.trace_id)
	SELECT string_agg(DISTINCT session_id || ': ' || what, E'\n') FROM (
	  SELECT session_id, 'a model span not under an agent' AS what FROM sp
	   WHERE kind = 'CLIENT' AND pname NOT LIKE 'invoke_agent %'
	  UNION ALL
	  SELECT session_id, 'a parent in another session or missing' FROM sp
	   WHERE parent_span_id IS NOT NULL AND psession IS DISTINCT FROM session_id
	  UNION ALL
	  SELECT session_id, 'a span outside its parent' FROM sp
	   WHERE pname IS NOT NULL AND (start_time < pstart OR end_time > pend)
	  UNION ALL
	  SELECT sp.session_id, 'a request that is not its parent agent''s' FROM sp
	    JOIN adk.model_calls m ON m.span_id = sp.span_id
	   WHERE sp.kind = 'CLIENT'
	     AND split_part(m.request #>> '{messages,0,content}', E'\n', 1)
	         <> 'You are ' || (sp.pattrs ->> 'gen_ai.agent.name') || '.'
	  UNION ALL
	  SELECT sp.session_id, 'a model span the ledger does not name once' FROM sp
	   WHERE sp.kind = 'CLIENT'
	     AND (SELECT count(*) FROM adk.model_calls m WHERE m.span_id = sp.span_id) <> 1
	  UNION ALL
	  SELECT session_id, 'a span not ended well' FROM sp WHERE status_code = 'ERROR'
	) x});
is($bad, '', 'every span under the right parent, in its interval, named by its ledger row');

# the shape of each run's tree: what the sequential equivalent gives
my $shapes = $node->safe_psql(
	'postgres', q{
	WITH RECURSIVE t AS (
	  SELECT session_id, span_id, (attributes ->> 'gen_ai.operation.name')::text AS path
	    FROM adk.spans WHERE parent_span_id IS NULL
	  UNION ALL
	  SELECT c.session_id, c.span_id, t.path || '/' ||
	         CASE WHEN c.kind = 'CLIENT' THEN c.attributes ->> 'gen_ai.request.model'
	              ELSE c.attributes ->> 'gen_ai.operation.name' END
	    FROM adk.spans c JOIN t ON c.parent_span_id = t.span_id),
	per_session AS (
	  SELECT session_id, string_agg(path, ',' ORDER BY path) AS shape FROM t GROUP BY 1)
	SELECT kind || ' ' || count(*) || ' ' || shape
	  FROM (SELECT regexp_replace(session_id, '[0-9]+$', '') AS kind, shape FROM per_session) k
	 GROUP BY kind, shape ORDER BY kind});
is( $shapes,
	join("\n",
		'boss 10 invoke_agent,invoke_agent/execute_tool,invoke_agent/execute_tool,invoke_agent/execute_tool,'
		  . 'invoke_agent/execute_tool/invoke_agent,invoke_agent/execute_tool/invoke_agent,'
		  . 'invoke_agent/execute_tool/invoke_agent,'
		  . 'invoke_agent/execute_tool/invoke_agent/gpt-latency-100,'
		  . 'invoke_agent/execute_tool/invoke_agent/gpt-latency-200,'
		  . 'invoke_agent/execute_tool/invoke_agent/gpt-latency-300,'
		  . 'invoke_agent/gpt-test,invoke_agent/gpt-test',
		'par 10 invoke_workflow,invoke_workflow/invoke_agent,invoke_workflow/invoke_agent,'
		  . 'invoke_workflow/invoke_agent,invoke_workflow/invoke_agent/gpt-latency-100,'
		  . 'invoke_workflow/invoke_agent/gpt-latency-200,'
		  . 'invoke_workflow/invoke_agent/gpt-latency-300'),
	'every run has the tree of its sequential equivalent');

# each agent span sums the tokens of the model spans below it
is(agent_usage_mismatches($node), '0',
	'every agent span sums the usage of its own model calls');

$node->stop;
done_testing();
