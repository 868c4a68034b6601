# A provider that echoes the API key back, in runs a background worker
# makes: for each provider, streamed and not, the key never reaches
# adk.jobs.error, adk.invocations.error_message, events, adk.event_log,
# tool arguments or the ledger -- "[REDACTED]" does.
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
my $key = 'sk-tap-009-ECHOED-9876543210';

my $node = adk_node('key_echo', 'adk.max_workers' => 2, max_worker_processes => 16);

adk_install(
	$node, $key, qq{
	CREATE TABLE lookup_args (q text);
	CREATE FUNCTION lookup(q text) RETURNS jsonb LANGUAGE sql AS
	  \$\$ INSERT INTO lookup_args VALUES (q) RETURNING jsonb_build_object('found', q) \$\$;
	COMMENT ON FUNCTION lookup(text) IS 'Look something up.';
	SELECT adk_define_tool('lookup(text)'::regprocedure);
	SELECT adk_define_model(p, p, '$url' || CASE p WHEN 'openai' THEN '/v1' ELSE '' END, p || '-test',
	                        api_key_secret => 'k', options => '{"retries": 0}')
	  FROM unnest(ARRAY['openai', 'gemini', 'anthropic']) p;
	SELECT adk_define_agent('a_' || p, model => p, tools => ARRAY['lookup'])
	  FROM unnest(ARRAY['openai', 'gemini', 'anthropic']) p;
	SELECT adk_define_app('app_' || p, 'a_' || p)
	  FROM unnest(ARRAY['openai', 'gemini', 'anthropic']) p;
});

my %say = (
	text => 'repeat after me: [[echo-key]]',
	call => 'call lookup({"q": "[[echo-key]]"})',
	error => 'who am I? [[fault:key-error]]');
my @invs;
for my $p (qw(openai gemini anthropic))
{
	for my $stream (qw(false true))
	{
		for my $how (sort keys %say)
		{
			my $inv = $node->safe_psql('postgres',
				"SELECT adk_submit('app_$p', 'u', '$how-$stream', \$t\$$say{$how}\$t\$, NULL, '{\"stream\": $stream}')"
			);
			push @invs, $inv;
		}
	}
}
for my $inv (@invs)
{
	$node->safe_psql('postgres', "SELECT count(*) FROM adk_wait('$inv', '60 s')");
}

is( $node->safe_psql(
		'postgres',
		"SELECT count(*) FROM adk.jobs WHERE status IN ('completed', 'failed')"),
	'18',
	'every job ran in a worker');
is( $node->safe_psql(
		'postgres', q{
	SELECT string_agg(j.app_name || ' ' || j.status || ' ' || coalesce(j.error, '-'), ' | ' ORDER BY j.app_name)
	  FROM adk.jobs j WHERE j.session_id = 'error-false'}),
	'app_anthropic failed authentication_error: Incorrect API key provided: [REDACTED]. | app_gemini failed UNAUTHENTICATED: Incorrect API key provided: [REDACTED]. | app_openai failed invalid_api_key: Incorrect API key provided: [REDACTED].',
	'a job failed by the provider\'s error: adk.jobs.error has the key redacted');
is( $node->safe_psql(
		'postgres', q{
	SELECT count(*) FROM adk.invocations
	 WHERE session_id LIKE 'error-%' AND status = 'failed' AND error_message IS NOT NULL}),
	'6',
	'the failed runs\' invocations have an error message');
is( $node->safe_psql(
		'postgres', q{
	SELECT string_agg(DISTINCT event_data #>> '{content,parts,0,text}', ' | ')
	  FROM adk.events WHERE session_id LIKE 'text-%' AND event_data ->> 'author' <> 'user'}),
	'echo: repeat after me: [REDACTED]',
	'echoed text is stored redacted (streamed and not)');
is( $node->safe_psql(
		'postgres', q{
	SELECT string_agg(DISTINCT function_calls::text, ' | ')
	  FROM adk.event_log WHERE session_id LIKE 'call-%' AND function_calls IS NOT NULL}),
	'lookup({"q": "[REDACTED]"})',
	'function-call arguments in adk.event_log are redacted');
is($node->safe_psql('postgres', "SELECT string_agg(DISTINCT q, ',') || ' x' || count(*) FROM lookup_args"),
	'[REDACTED] x6', 'the tool got the redacted arguments');
is( $node->safe_psql(
		'postgres', q{
	SELECT count(*)
	  FROM (SELECT j::text FROM adk.jobs j
	        UNION ALL SELECT i::text FROM adk.invocations i
	        UNION ALL SELECT e::text FROM adk.events e
	        UNION ALL SELECT l::text FROM adk.event_log l
	        UNION ALL SELECT c::text FROM adk.model_calls c
	        UNION ALL SELECT s::text FROM adk.sessions s
	        UNION ALL SELECT a::text FROM lookup_args a) AS stored(t)
	 WHERE strpos(t, (SELECT value FROM adk.secrets WHERE name = 'k')) > 0}),
	'0',
	'the key is in no stored row');

$node->stop;
my $log = slurp_file($node->logfile);
unlike($log, qr/\Q$key\E/, 'nor in the server log');
$server->kill_kill;
done_testing();
