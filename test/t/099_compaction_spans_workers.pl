# Spans of compaction's summarizer in a job worker that holds many runs at
# once: the summarizer's span begins in one
# step's transaction and ends in a later one's, while the worker steps the
# other runs.  10 sessions with tail retention and 10 with the sliding
# window, two queued turns each, summarizers answering after 200 ms, one
# worker: each second turn has exactly one summarizer span, of its kind,
# under the right parent (the sub-agent's span for tail retention, the
# root for the sliding window), inside its parent's interval, named by its
# ledger row; every ledger row names exactly one model span.
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

my $node = adk_node('compaction_spans', 'adk.max_workers' => 1);

adk_install(
	$node, 'sk-test', qq{
	SELECT adk_define_model('m0', 'openai', '$url', 'gpt-test', api_key_secret => 'k');
	SELECT adk_define_model('msum', 'openai', '$url', 'gpt-summ-latency-200', api_key_secret => 'k',
	                        options => '{"max_output_tokens": 30}');
	SELECT adk_define_agent('a', model => 'm0', instruction => 'You are a.');
	SELECT adk_define_agent('wf', kind => 'sequential', sub_agents => ARRAY['a']);
	SELECT adk_define_app('tail_app', 'wf',
	  compaction => '{"token_threshold": 1, "event_retention_size": 1, "summarizer_model": "msum"}');
	SELECT adk_define_app('win_app', 'wf',
	  compaction => '{"compaction_interval": 2, "summarizer_model": "msum"}');
});

my $t0 = time;
$node->safe_psql(
	'postgres', q{
	SELECT adk_submit(app, 'u', app || i, 'hello ' || turn)
	  FROM generate_series(1, 2) turn, generate_series(1, 10) i,
	       unnest(ARRAY['tail_app', 'win_app']) app
	 ORDER BY turn, i, app;
});
my $done;
while (time - $t0 < 90)
{
	my $left = $node->safe_psql('postgres',
		"SELECT count(*) FROM adk.jobs WHERE status IN ('queued', 'running')");
	if ($left eq '0') { $done = 1; last; }
	select(undef, undef, undef, 0.05);
}
ok($done, '40 runs in one worker ended');
is( $node->safe_psql(
		'postgres', q{
	SELECT count(*) FILTER (WHERE status = 'completed' AND compaction_error IS NULL) || '/' || count(*)
	  FROM adk.invocations}),
	'40/40',
	'every run completed, every compaction with it');
is( $node->safe_psql(
		'postgres', q{SELECT kind || ' ' || count(*) FROM adk.compactions GROUP BY kind ORDER BY kind}),
	"sliding_window 10\ntail_retention 10",
	'one compaction per session');

# per session: the summarizer span of its kind, under its parent, in its
# interval, named by its ledger row
is( $node->safe_psql(
		'postgres', q{
	SELECT kind || ' under ' || parent || CASE WHEN root THEN ' (root)' ELSE '' END || ': '
	       || count(*) || ' spans, ' || count(*) FILTER (WHERE inside) || ' inside, '
	       || count(*) FILTER (WHERE named) || ' named by their ledger row'
	  FROM (SELECT c.attributes ->> 'adk.compaction.kind' AS kind, p.name AS parent,
	               p.parent_span_id IS NULL AS root,
	               c.start_time >= p.start_time AND c.end_time <= p.end_time AS inside,
	               m.model IS NOT DISTINCT FROM 'msum' AND c.status_code = 'UNSET'
	               AND (c.attributes ->> 'gen_ai.usage.input_tokens')::int > 0 AS named
	          FROM adk.spans c
	          JOIN adk.spans p ON p.span_id = c.parent_span_id AND p.trace_id = c.trace_id
	          LEFT JOIN adk.model_calls m ON m.span_id = c.span_id AND m.trace_id = c.trace_id
	         WHERE c.attributes ? 'adk.compaction.kind') x
	 GROUP BY kind, parent, root ORDER BY kind}),
	"sliding_window under invoke_agent wf (root): 10 spans, 10 inside, 10 named by their ledger row\n"
	  . "tail_retention under invoke_agent a: 10 spans, 10 inside, 10 named by their ledger row",
	'each summarizer span of its kind, under its parent, named by its ledger row');
is( $node->safe_psql(
		'postgres', q{
	SELECT count(DISTINCT c.invocation_id) || ' ' || bool_and(c.session_id ~ ('^' || i.app_name))::text
	  FROM adk.spans c JOIN adk.invocations i USING (invocation_id)
	 WHERE c.attributes ? 'adk.compaction.kind'}),
	'20 true',
	'one summarizer span in each second turn, in its own session');

# every ledger row names exactly one span, a model span, of its own run;
# every model span is named by at most one row
is( $node->safe_psql(
		'postgres', q{
	SELECT count(*) FILTER (WHERE (SELECT count(*) FROM adk.spans s
	                                WHERE s.span_id = m.span_id AND s.trace_id = m.trace_id
	                                  AND s.kind = 'CLIENT' AND s.invocation_id = m.invocation_id) = 1)
	       || '/' || count(*)
	  FROM adk.model_calls m}),
	'60/60', 'each of the 60 ledger rows names exactly one model span of its run');
is( $node->safe_psql(
		'postgres', q{
	SELECT count(*) FROM adk.spans s WHERE s.kind = 'CLIENT'
	   AND (SELECT count(*) FROM adk.model_calls m WHERE m.span_id = s.span_id AND m.trace_id = s.trace_id) <> 1}),
	'0', 'each model span is named by one ledger row');

# each agent span sums the tokens of the model spans below it, the
# summarizer's included
is(agent_usage_mismatches($node), '0',
	'every agent span sums the usage of the model spans below it');

$node->stop;
done_testing();
