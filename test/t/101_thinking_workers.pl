# Thinking in queued runs (docs/models.md, "Thinking"): a job worker's
# tool loop, its model calls multiplexed, sends Gemini's thought
# signatures and Anthropic's signed thinking blocks back as a run in a
# backend does (the local model server refuses the next request
# otherwise); adk.store_thoughts is the server's setting there, not the
# queuing session's: a session's SET does not reach the worker, a reload
# of postgresql.conf does.  With it off, a worker's Anthropic tool loop
# still sends its thinking blocks back, text and signature, within the
# run, and stores none of the text.
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

my $node = adk_node('thinking', 'adk.max_workers' => 2, max_worker_processes => 16);

adk_install(
	$node, 'sk-test', qq{
	CREATE FUNCTION lookup(x text) RETURNS jsonb LANGUAGE sql AS \$\$ SELECT jsonb_build_object('x', x) \$\$;
	SELECT adk_define_tool('lookup(text)'::regprocedure);
	SELECT adk_define_model('gem', 'gemini', '$url', 'gemini-think', api_key_secret => 'k');
	SELECT adk_define_model('claude', 'anthropic', '$url', 'claude-think', api_key_secret => 'k');
	SELECT adk_define_agent('gem_agent', model => 'gem', tools => ARRAY['lookup'],
	                        generate_config => '{"thinking": {"budget_tokens": 1024, "include_thoughts": true}}');
	SELECT adk_define_agent('claude_agent', model => 'claude', tools => ARRAY['lookup'],
	                        generate_config => '{"thinking": {"effort": "low"}}');
	SELECT adk_define_app('gem_app', 'gem_agent');
	SELECT adk_define_app('claude_app', 'claude_agent');
});

# what a queued run stored: each event's parts by kind, and its error
sub run_queued
{
	my ($app, $session, $msg, $before) = @_;
	$before //= '';
	return $node->safe_psql(
		'postgres', qq{
	$before
	SELECT adk_submit('$app', 'u1', '$session', '$msg') AS inv \\gset
	SELECT string_agg(coalesce(event_data ->> 'error_code',
	                           (SELECT string_agg(CASE WHEN p ? 'function_call' THEN 'call'
	                                                   WHEN p ? 'function_response' THEN 'response'
	                                                   WHEN p ->> 'thought' = 'true' THEN 'thought'
	                                                   ELSE 'text' END
	                                              || CASE WHEN p ? 'thought_signature' THEN '+sig' ELSE '' END,
	                                              ',' ORDER BY n)
	                              FROM jsonb_array_elements(event_data #> '{content,parts}')
	                                   WITH ORDINALITY AS x(p, n))),
	                  ' | ' ORDER BY seq)
	  FROM adk_wait(:'inv', '60 s')});
}

# 1. tool loops in a worker: both runs complete, the second request of
#    each carried what the provider wants back
is(run_queued('gem_app', 's1', 'call lookup({"x": "a"})'),
	'text | thought,call+sig | response | thought,text',
	'Gemini tool loop in a worker: thought signature sent back');
is(run_queued('claude_app', 's1', 'call lookup({"x": "b"})'),
	'text | thought+sig,call | response | thought+sig,text',
	'Anthropic tool loop in a worker: signed thinking block sent back');
is( $node->safe_psql(
		'postgres', q{
	SELECT string_agg(jsonb_path_query_array(request, '$.messages[1].content[*].type')::text, ' ')
	  FROM adk.model_calls WHERE model = 'claude' AND request #>> '{messages,1,role}' = 'assistant'}),
	'["thinking", "tool_use"]',
	'its thinking block came before the tool_use block');
is( $node->safe_psql(
		'postgres', q{
	SELECT count(*) FILTER (WHERE reasoning_tokens > 0) || '/' || count(*)
	  FROM adk.model_calls WHERE model = 'gem'}),
	'2/2',
	'reasoning tokens in the worker\'s ledger rows');

# 2. a session's SET is its own: the worker keeps thoughts
is(run_queued('gem_app', 's2', 'Hello', 'SET adk.store_thoughts = off;'),
	'text | thought,text',
	'a queuing session\'s adk.store_thoughts does not reach the worker');

# 3. the server's setting does, on reload
$node->append_conf('postgresql.conf', "adk.store_thoughts = off\n");
$node->reload;
$node->poll_query_until('postgres', "SELECT current_setting('adk.store_thoughts') = 'off'")
  or die 'no reload';
# the worker handles the reload when it next wakes; a run or two may pass
my ($parts, $session);
for my $i (1 .. 20)
{
	$session = "s3-$i";
	$parts = run_queued('gem_app', $session, 'call lookup({"x": "c"})');
	last if $parts !~ /thought/;
}
is($parts, 'text | call+sig | response | text',
	'postgresql.conf off: no thought text, the signature kept, the loop completes');
is( $node->safe_psql(
		'postgres', qq{
	SELECT count(*) FROM adk.events WHERE session_id = '$session' AND event_data::text LIKE '%Thinking about%'}),
	'0', 'nothing stored holds thought text');

# 4. off, Anthropic: the run keeps the thinking it did not store and
#    sends it back (the server checks the signature against the text)
is(run_queued('claude_app', 's4', 'call lookup({"x": "d"})'),
	'text | call | response | text',
	'postgresql.conf off: Anthropic tool loop in a worker completes');
is( $node->safe_psql(
		'postgres', q{
	SELECT jsonb_path_query_array(c.request, '$.messages[1].content[*].type')::text || ' ' ||
	       (c.request #>> '{messages,1,content,0,thinking}') || ' ' ||
	       (c.request #> '{messages,1,content,0}' ? 'signature')
	  FROM adk.model_calls c JOIN adk.invocations i USING (invocation_id)
	 WHERE i.session_id = 's4' AND c.request #>> '{messages,1,role}' = 'assistant'}),
	'["thinking", "tool_use"]  true',
	'the ledger\'s copy of the second request: the block signed, its text emptied');
is( $node->safe_psql(
		'postgres', q{
	SELECT (SELECT count(*) FROM adk.events WHERE session_id = 's4' AND event_data::text LIKE '%Thinking about%') +
	       (SELECT count(*) FROM adk.model_calls c JOIN adk.invocations i USING (invocation_id)
	         WHERE i.session_id = 's4' AND (c.request::text || c.response::text || coalesce(c.response_body, ''))
	                                       LIKE '%Thinking about%')}),
	'0', 'no event or ledger row of it holds thought text');

done_testing();
