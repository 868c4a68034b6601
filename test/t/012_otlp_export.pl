# The OTLP exporter (worker/otlp.c): every committed span reaches the
# receiver exactly once -- in batches, across a receiver outage (connection
# refused), a receiver answering 503, a server restart with spans still
# queued, and a span whose lower id commits after higher ones; rolled-back
# spans never; the payload has the OTLP/HTTP JSON shape (the receiver,
# test/otlp_receiver/receiver.py, checks it and refuses anything else); the
# credential goes only to a host its secret allows; no API key in any payload.
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
$url .= "/v1";

my $store = "$tmp/received.jsonl";
my $fail_file = "$tmp/fail";
my $receiver;
my $rport = 0;

# the receiver; on a restart, the same port
sub start_receiver
{
	unlink "$tmp/rport";
	$receiver = IPC::Run::start(
		[
			'/usr/bin/python3', 'test/otlp_receiver/receiver.py',
			'--port', $rport, '--port-file', "$tmp/rport",
			'--store', $store, '--fail-file', $fail_file,
			'--require-header', 'Authorization: Bearer otlp-token-123'
		],
		'>', "$tmp/receiver.out", '2>&1');
	for (1 .. 200)
	{
		last if -s "$tmp/rport";
		select(undef, undef, undef, 0.05);
	}
	BAIL_OUT('the receiver did not start: ' . slurp_file("$tmp/receiver.out"))
	  unless -s "$tmp/rport";
	$rport = slurp_file("$tmp/rport");
	chomp $rport;
}

sub stop_receiver
{
	$receiver->signal('TERM');
	$receiver->finish;
}

# every span the receiver accepted, as "trace/span" => times received
sub received
{
	my %seen;
	return \%seen unless -e $store;
	for my $line (split /\n/, slurp_file($store))
	{
		my ($t) = $line =~ /"traceId": "([0-9a-f]+)"/;
		my ($s) = $line =~ /"spanId": "([0-9a-f]+)"/;
		$seen{"$t/$s"}++;
	}
	return \%seen;
}

start_receiver();

my $node = adk_node(
	'otlp',
	'adk.otlp_endpoint' => qq{'http://127.0.0.1:$rport'},
	'adk.otlp_secret' => q{'otlp'},
	'adk.otlp_interval' => q{'100ms'},
	'adk.otlp_batch_size' => 5,
	max_worker_processes => 16);
$node->safe_psql(
	'postgres', qq{
	CREATE EXTENSION adk_runner;
	SET log_statement = 'none';
	SELECT adk_set_secret('k', 'sk-otlp-model-key-0123456789', ARRAY['127.0.0.1']);
	SELECT adk_set_secret('otlp', 'Bearer otlp-token-123', ARRAY['127.0.0.1']);
	SELECT adk_set_secret('otlp_elsewhere', 'Bearer otlp-token-123', ARRAY['collector.example.com']);
	RESET log_statement;
	SELECT adk_define_model('m', 'openai', '$url', 'gpt-test', api_key_secret => 'k');
	CREATE FUNCTION get_weather(city text) RETURNS jsonb LANGUAGE sql AS
	  \$\$ SELECT jsonb_build_object('city', city, 'forecast', 'sunny', 'temperature_c', 25) \$\$;
	SELECT adk_define_tool('get_weather(text)'::regprocedure);
	SELECT adk_define_agent('w', model => 'm', tools => ARRAY['get_weather']);
	SELECT adk_define_app('w_app', 'w');
	SELECT adk_define_app('w2_app', 'w');
});
$node->poll_query_until('postgres',
	"SELECT count(*) = 1 FROM pg_stat_activity WHERE backend_type = 'adk_runner otlp exporter'")
  or die 'no exporter';
pass('the exporter runs, backend_type "adk_runner otlp exporter"');

my $turn = 0;

sub weather_turn
{
	$turn++;
	return $node->safe_psql('postgres',
		"SELECT count(*) FROM adk_run('w_app', 'u', 's$turn', 'What is the weather in Paris?')");
}

# every committed span received exactly once, nothing else
sub delivered_exactly_once
{
	my ($what) = @_;
	my $ok = $node->poll_query_until('postgres',
		'SELECT count(*) = 0 FROM adk.span_exports');
	ok($ok, "$what: the queue drains");
	my $rows = $node->safe_psql('postgres',
		"SELECT trace_id || '/' || span_id FROM adk.spans ORDER BY id");
	my %want = map { $_ => 1 } split /\n/, $rows;
	my $got = received();
	my @missing = grep { !$got->{$_} } sort keys %want;
	my @twice = grep { $got->{$_} > 1 } sort keys %$got;
	my @extra = grep { !$want{$_} } sort keys %$got;
	is(scalar(@missing), 0, "$what: every committed span was received")
	  or diag "missing: @missing";
	is(scalar(@twice), 0, "$what: none twice") or diag "twice: @twice";
	is(scalar(@extra), 0, "$what: nothing else (no rolled-back span)")
	  or diag "extra: @extra";
	return scalar(keys %want);
}

# --- the happy path: three turns (12 spans, batches of 5) and a rolled-back one
weather_turn() for 1 .. 3;
$node->safe_psql('postgres',
	"BEGIN; SELECT count(*) FROM adk_run('w_app', 'u', 'rolled-back', 'What is the weather in Rome?'); ROLLBACK;");
is(delivered_exactly_once('three turns'), 12, 'four spans per weather turn');
cmp_ok($node->safe_psql('postgres', 'SELECT batches FROM adk.otlp_export_state'),
	'>=', 3, 'in batches of at most adk.otlp_batch_size');

# the tree survived the trip: parents as in adk.spans
my $parents = $node->safe_psql('postgres',
	"SELECT span_id || '>' || coalesce(parent_span_id, '') FROM adk.spans ORDER BY id");
my %parent_of = map { split />/, $_, 2 } split /\n/, $parents;
my $same = 1;
for my $line (split /\n/, slurp_file($store))
{
	my ($s) = $line =~ /"spanId": "([0-9a-f]+)"/;
	my ($p) = $line =~ /"parentSpanId": "([0-9a-f]+)"/;
	$same = 0 if ($parent_of{$s} // 'x') ne ($p // '');
}
ok($same, 'every span arrived with its parent span id');
like(slurp_file($store), qr/"name": "execute_tool get_weather"/, 'the tool span arrived');
like(slurp_file($store), qr/"key": "gen_ai.usage.input_tokens", "value": \{"intValue": "\d+"\}/,
	'token counts as OTLP intValue strings');

# --- receiver outage: connection refused, spans stay queued, then all arrive
stop_receiver();
weather_turn() for 1 .. 2;
$node->poll_query_until('postgres',
	"SELECT failures > 0 AND last_error LIKE '%CONNECTION%' FROM adk.otlp_export_state")
  or diag $node->safe_psql('postgres', 'SELECT * FROM adk.otlp_export_state');
pass('the exporter saw the outage');
is($node->safe_psql('postgres', 'SELECT count(*) FROM adk.span_exports'),
	'8', 'the spans of the outage wait in the queue');
start_receiver();
delivered_exactly_once('receiver outage');

# --- the receiver answers 503: retried, not lost, not doubled
my $failures = $node->safe_psql('postgres', 'SELECT failures FROM adk.otlp_export_state');
open(my $fh, '>', $fail_file) or die;
close $fh;
weather_turn();
$node->poll_query_until('postgres',
	"SELECT failures > $failures AND last_error LIKE '%503%' FROM adk.otlp_export_state")
  or die 'no 503 seen';
pass('a 503 is a failure');
unlink $fail_file;
delivered_exactly_once('503');

# --- a server restart with spans queued (the receiver down meanwhile)
stop_receiver();
weather_turn() for 1 .. 2;
$node->restart;
is($node->safe_psql('postgres', 'SELECT count(*) FROM adk.span_exports'),
	'8', 'the queue survived the restart');
start_receiver();
delivered_exactly_once('server restart');

# --- commit order is not id order: a span with a lower id commits last
# (another app: a run holds its app's state row until it commits)
my $slow = $node->background_psql('postgres');
$slow->query_safe(
	"BEGIN; SELECT count(*) FROM adk_run('w2_app', 'u', 'slow', 'What is the weather in Oslo?')");
weather_turn();
$node->poll_query_until('postgres', 'SELECT count(*) = 0 FROM adk.span_exports')
  or die 'the later turn was not exported';
$slow->query_safe('COMMIT');
$slow->quit;
ok( $node->safe_psql(
		'postgres',
		"SELECT min(id) < (SELECT min(id) FROM adk.spans WHERE session_id = 's$turn') FROM adk.spans WHERE session_id = 'slow'"
	) eq 't',
	'the slow turn holds lower span ids than the turn committed before it');
is(delivered_exactly_once('late commit'), 12 + 8 + 4 + 8 + 8, 'every span of every turn');

# --- the credential goes only to a host its secret allows
$node->append_conf('postgresql.conf', "adk.otlp_secret = 'otlp_elsewhere'");
$node->reload;
my $accepted = received();
weather_turn();
$node->poll_query_until('postgres',
	"SELECT last_error LIKE '%may not be sent to \"127.0.0.1:$rport\"%' FROM adk.otlp_export_state")
  or diag $node->safe_psql('postgres', 'SELECT * FROM adk.otlp_export_state');
pass('a secret not bound to the endpoint host: no export, and the state says why');
is(scalar(keys %{ received() }), scalar(keys %$accepted), 'nothing was sent meanwhile');
$node->append_conf('postgresql.conf', "adk.otlp_secret = 'otlp'");
$node->reload;
delivered_exactly_once('secret bound again');

# a binding by scheme, host and port, compared as libcurl reads the
# endpoint (as a model's key is)
$node->safe_psql('postgres',
	"SET log_statement = 'none'; SELECT adk_set_secret('otlp_scheme', 'Bearer otlp-token-123', ARRAY['http://127.0.0.1:$rport'])");
$node->append_conf('postgresql.conf', "adk.otlp_secret = 'otlp_scheme'");
$node->reload;
weather_turn();
delivered_exactly_once('secret bound to http://host:port');
$node->append_conf('postgresql.conf', "adk.otlp_secret = 'otlp'");
$node->reload;

# --- a queued run (a job worker commits per event) joins the caller's
# trace with adk_submit's options.traceparent, and is exported like the rest
my $inv = $node->safe_psql('postgres',
	q{SELECT adk_submit('w_app', 'u', 'queued', 'What is the weather in Nice?', NULL,
	                    '{"traceparent": "00-5bf92f3577b34da6a3ce929d0e0e4736-10f067aa0ba902b7-01"}')});
$node->safe_psql('postgres', "SELECT count(*) FROM adk_wait('$inv', '30 s')");
is( $node->safe_psql(
		'postgres',
		"SELECT count(*) || ' ' || count(*) FILTER (WHERE parent_span_id = '10f067aa0ba902b7')
		   FROM adk.spans WHERE invocation_id = '$inv' AND trace_id = '5bf92f3577b34da6a3ce929d0e0e4736'"),
	'4 1', 'the queued run: four spans in the caller\'s trace, its root a child of the caller\'s span');
delivered_exactly_once('queued run');

# --- shape and secrets
my $stats = `curl -s http://127.0.0.1:$rport/_stats`;
like($stats, qr/"rejected": 0/, 'the receiver refused no payload (shape checked)')
  or diag $stats;
unlike(slurp_file($store), qr/sk-otlp-model-key|otlp-token-123/, 'no key in any payload');
unlike(slurp_file($node->logfile), qr/otlp-token-123|sk-otlp-model-key/, 'no key in the server log');

stop_receiver();
$server->kill_kill;
$node->stop;
done_testing();
