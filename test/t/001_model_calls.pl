# Model calls under a real server: cancellation of an in-flight call by
# pg_cancel_backend (how fast, which SQLSTATE, the wait event shown while
# waiting), and API keys never reaching the server log, the model server's
# log or the ledger -- through successes, provider errors and cancels.
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

my $key = 'sk-tap-secret-8f3a9c1e77';
my $tmp = tempdir(CLEANUP => 1);

# the bundled local model server, on a free port
my ($server, $url) = start_model_server($tmp, '--require-key', $key);

my $node = plain_node('main', log_min_messages => 'debug1');
$node->safe_psql('postgres', 'CREATE EXTENSION adk_runner');
# Cluster.pm logs every statement; a key given as an SQL literal is the
# caller's to keep out of the statement log (see docs/models.md).
$node->safe_psql(
	'postgres', qq{
	SET log_statement = 'none';
	SELECT adk_set_secret('k', '$key', ARRAY['127.0.0.1']);
	SELECT adk_set_secret('wrong', 'sk-wrong-key-000', ARRAY['127.0.0.1']);
	RESET log_statement;
	SELECT adk_define_model('m', 'openai', '$url/v1', 'gpt-test', api_key_secret => 'k');
	SELECT adk_define_model('g', 'gemini', '$url', 'gemini-test', api_key_secret => 'k');
	SELECT adk_define_model('a', 'anthropic', '$url', 'claude-test', api_key_secret => 'k');
	SELECT adk_define_model('bad', 'openai', '$url/v1', 'gpt-test', api_key_secret => 'wrong');
	SELECT adk_define_model('e500', 'openai', '$url/v1', 'fault-500', api_key_secret => 'k', options => '{"retries": 1}');
	SELECT adk_define_model('hang', 'openai', '$url/v1', 'fault-hang', api_key_secret => 'k');
});
my $contents = q{'[{"role": "user", "parts": [{"text": "hello"}]}]'};

# the key is sent (the server requires it) ...
is( $node->safe_psql(
		'postgres',
		"SELECT string_agg(adk_generate(m, $contents) #>> '{content,parts,0,text}', ',') FROM unnest(ARRAY['m','g','a']) m"
	),
	'echo: hello,echo: hello,echo: hello',
	'each provider authenticates with the stored key');
is( $node->safe_psql(
		'postgres', "SELECT adk_generate('bad', $contents) ->> 'error_code'"),
	'invalid_api_key',
	'a wrong key is the provider\'s 401 error, as a response');
is( $node->safe_psql(
		'postgres', "SELECT adk_generate('e500', $contents) ->> 'error_code'"),
	'server_error', 'a 500 is an error response');
$node->safe_psql('postgres',
	"SELECT count(*) FROM adk_generate_stream('m', $contents)");

# cancel an in-flight call: the backend shows the wait, stops within a
# fraction of a second with 57014, and lives on
my $bg = $node->background_psql('postgres', on_error_stop => 0);
$bg->query_safe("SET application_name = 'hanging'");
$bg->query_until(qr/^$/, "SELECT adk_generate('hang', $contents);\n");
$node->poll_query_until('postgres',
	"SELECT wait_event_type = 'Extension' FROM pg_stat_activity WHERE application_name = 'hanging' AND state = 'active'"
) or die 'the call never showed its wait';
pass('an in-flight call shows wait event type Extension in pg_stat_activity');
my ($stdout, $stderr);
$node->psql(
	'postgres', q{
	DO $$
	DECLARE p int; t0 timestamptz;
	BEGIN
		SELECT pid INTO p FROM pg_stat_activity WHERE application_name = 'hanging';
		t0 := clock_timestamp();
		PERFORM pg_cancel_backend(p);
		LOOP
			PERFORM pg_stat_clear_snapshot();
			EXIT WHEN NOT EXISTS (SELECT 1 FROM pg_stat_activity WHERE pid = p AND state = 'active')
			       OR clock_timestamp() - t0 > interval '30 s';
			PERFORM pg_sleep(0.002);
		END LOOP;
		RAISE NOTICE 'cancel_ms=%', round(extract(epoch FROM clock_timestamp() - t0) * 1000);
	END $$;},
	stdout => \$stdout,
	stderr => \$stderr);
my ($cancel_ms) = $stderr =~ /cancel_ms=(\d+)/;
ok(defined $cancel_ms && $cancel_ms < 30000, 'pg_cancel_backend stopped the in-flight call');
note "an in-flight call stopped ${cancel_ms} ms after pg_cancel_backend";
diag "cancel latency: ${cancel_ms} ms";
my ($out, $err) = $bg->query("SELECT 'alive'");
like($bg->{stderr} . $err, qr/canceling statement due to user request/,
	'the cancelled call raised 57014 (canceling statement due to user request)');
$bg->{stderr} = '';
($out, $err) = $bg->query("SELECT 'alive'");
is($out, 'alive', 'the backend lives on after the cancel');
$bg->quit;

# keys appear nowhere
my $ledger = $node->safe_psql('postgres',
	"SELECT count(*) FROM adk.model_calls c, adk.secrets s WHERE strpos(c::text, s.value) > 0"
);
is($ledger, '0', 'no key in adk.model_calls');
is( $node->safe_psql('postgres', 'SELECT count(*) > 5 FROM adk.model_calls'),
	't', 'the ledger has the calls');
$node->stop;
my $pglog = slurp_file($node->logfile);
unlike($pglog, qr/\Q$key\E/, 'no key in the PostgreSQL server log');
$server->kill_kill;
my $mslog = slurp_file("$tmp/model_server.log");
ok(length($mslog) > 0, 'the model server logged the requests');
unlike($mslog . slurp_file("$tmp/server.out"),
	qr/\Q$key\E|sk-wrong-key-000/, 'no key in the model server log');

done_testing();
