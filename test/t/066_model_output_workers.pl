# Model output in background workers: a number PostgreSQL cannot store in a
# model's tool arguments (1e-20000) is a stored error event with its ledger
# row, and its job fails as a failed invocation does (with the model's
# error, not an ERROR raised out of the run); big integers keep their
# digits; all three providers, unary and streamed.
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
my ($server, $url) = start_model_server($tmp);

my $node = adk_node('model_output_workers', 'adk.max_workers' => 2, max_worker_processes => 16);

$node->safe_psql(
	'postgres', qq{
	CREATE EXTENSION adk_runner;
	SELECT adk_set_secret('k', 'sk-test', ARRAY['127.0.0.1']);
	CREATE FUNCTION mo_take(x jsonb) RETURNS jsonb LANGUAGE sql AS \$\$ SELECT jsonb_build_object('got', x) \$\$;
	COMMENT ON FUNCTION mo_take(jsonb) IS 'Returns what it got.';
	SELECT adk_define_tool('mo_take(jsonb)'::regprocedure);
	SELECT adk_define_model('m_' || p, p, '$url' || CASE p WHEN 'openai' THEN '/v1' ELSE '' END,
	                        'mo-plain', api_key_secret => 'k', options => '{"retries": 0}'),
	       adk_define_agent('a_' || p, model => 'm_' || p, tools => ARRAY['mo_take']),
	       adk_define_app('app_' || p, 'a_' || p)
	  FROM unnest(ARRAY['openai', 'gemini', 'anthropic']) p;
});

for my $p ('openai', 'gemini', 'anthropic')
{
	for my $stream ('false', 'true')
	{
		my $what = "$p" . ($stream eq 'true' ? ' streamed' : '');
		my $inv = $node->safe_psql('postgres',
			qq{SELECT adk_submit('app_$p', 'u', 'num-$p-$stream', 'call mo_take({"x": "\@\@raw:1e-20000\@\@"})',
			                     NULL, '{"stream": $stream}')});
		my $codes = $node->safe_psql(
			'postgres', qq{
			SELECT string_agg(coalesce(event_data ->> 'error_code', event_data ->> 'author'), ',' ORDER BY seq)
			  FROM adk_wait('$inv', '60 s')});
		like($codes, qr/^user,MALFORMED_(RESPONSE|FUNCTION_CALL)$/,
			"$what: 1e-20000 is a stored error event");
		like( $node->safe_psql(
				'postgres', qq{
			SELECT j.status || ',' || i.status || ',' || (i.error_code LIKE 'MALFORMED_%') || ',' ||
			       (SELECT count(*) FROM adk.model_calls c
			         WHERE c.invocation_id = j.invocation_id AND c.error_code LIKE 'MALFORMED_%') || ',' || j.error
			  FROM adk.jobs j JOIN adk.invocations i USING (invocation_id)
			 WHERE j.invocation_id = '$inv'}),
			qr/^failed,failed,true,1,MALFORMED_(RESPONSE|FUNCTION_CALL): /,
			"$what: a failed invocation with the model's error, and its ledger row");

		$inv = $node->safe_psql('postgres',
			qq{SELECT adk_submit('app_$p', 'u', 'big-$p-$stream',
			                     'call mo_take({"x": 123456789012345678901234567890})', NULL, '{"stream": $stream}')});
		is( $node->safe_psql(
				'postgres', qq{
			SELECT string_agg(coalesce(event_data #>> '{content,parts,0,function_call,args,x}',
			                           event_data #>> '{content,parts,0,function_response,response,got}'), ',' ORDER BY seq)
			  FROM adk_wait('$inv', '60 s')}),
			'123456789012345678901234567890,123456789012345678901234567890',
			"$what: a big integer keeps its digits in the call and the tool's argument");
	}
}

$node->stop;
$server->kill_kill;
done_testing();
