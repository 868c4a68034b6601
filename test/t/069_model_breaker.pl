# The circuit breaker of fallback models (docs/models.md, "Fallback
# models"), in shared memory: failures counted in one backend open it for
# the others and for the job workers; while it is open requests start on
# the fallback without sending anything to the model; after the cool-down
# it is half open: an answer closes it, a failure opens it again at once.
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

my $node = adk_node(
	'breaker',
	'adk.max_workers' => 1,
	'adk.breaker_failures' => 3,
	'adk.breaker_window' => "'60s'",
	'adk.breaker_cooldown' => "'2s'");

adk_install(
	$node, 'sk-tap-069', qq{
	SELECT adk_define_model('primary', 'openai', '$url/v1', 'fault-overloaded',
	                        api_key_secret => 'k', options => '{"retries": 0}');
	SELECT adk_define_model('backup', 'anthropic', '$url', 'claude-backup', api_key_secret => 'k');
	SELECT adk_define_fallbacks('primary', ARRAY['backup']);
	SELECT adk_define_agent('agent', model => 'primary');
	SELECT adk_define_app('app', 'agent');
});

my $q = q{'[{"role": "user", "parts": [{"text": "hi"}]}]'};

# one call, in a backend of its own: which model answered, and how
sub call
{
	return $node->safe_psql('postgres',
		    "SELECT coalesce(r #>> '{custom_metadata,fallback_model}', 'primary') || ' '"
		  . " || coalesce(r #>> '{custom_metadata,error_code}', '-') || ' '"
		  . " || coalesce(r #>> '{content,parts,0,text}', r ->> 'error_code')"
		  . " FROM adk_generate('primary', $q) r");
}

sub breaker
{
	return $node->safe_psql('postgres',
		"SELECT state || ' ' || failures || ' ' || times_opened FROM adk.model_breakers WHERE model = 'primary'"
	);
}

sub primary_requests
{
	return $node->safe_psql('postgres',
		"SELECT count(*) FROM adk.model_calls WHERE model = 'primary'");
}

# two runs of the job worker fail over where the worker polls its calls,
# between its steps (outside any transaction)
my @runs = map {
	$node->safe_psql('postgres', "SELECT adk_submit('app', 'u', 'w$_', 'hello worker $_')")
} (1, 2);
for my $r (@runs)
{
	$node->safe_psql('postgres', "SELECT count(*) FROM adk_wait('$r', '60 s')");
	is( $node->safe_psql(
			'postgres', qq{SELECT string_agg(model || ':' || fallback_attempt, ',' ORDER BY id)
			  || ' ' || (SELECT status FROM adk.invocations WHERE invocation_id = '$r')
			  FROM adk.model_calls WHERE invocation_id = '$r'}),
		'primary:0,backup:1 completed',
		'a worker run: the primary failed, the fallback answered');
}
is(breaker(), 'closed 2 0', 'two failures counted');

# a third failure, in a backend of its own, opens the breaker
is(call(), 'backup server_error echo: hi', 'a backend: 503, the fallback answers');
is(breaker(), 'open 0 1', 'the third failure in the window opens the breaker');
is(primary_requests(), '3', 'three requests went to the primary');

# open: other backends, and a job worker, skip the primary
is(call(), 'backup CIRCUIT_OPEN echo: hi', 'another backend starts on the fallback');
is( $node->safe_psql(
		'postgres', q{SELECT fallback_attempt || ' ' || fallback_from || ' ' || http_status
		  FROM adk.model_calls ORDER BY id DESC LIMIT 1}),
	'1 primary 200',
	'its ledger row: attempt 1, fallen back from the primary');
my $inv = $node->safe_psql('postgres', "SELECT adk_submit('app', 'u', 's1', 'hello from a worker')");
$node->safe_psql('postgres', "SELECT count(*) FROM adk_wait('$inv', '60 s')");
is( $node->safe_psql(
		'postgres', qq{SELECT string_agg(model || ':' || fallback_attempt, ',' ORDER BY id)
		  FROM adk.model_calls WHERE invocation_id = '$inv'}),
	'backup:1',
	'the job worker skipped the primary too');
is( $node->safe_psql(
		'postgres', qq{SELECT event_data #>> '{custom_metadata,error_code}' FROM adk.events
		  WHERE invocation_id = '$inv' AND event_data ->> 'author' = 'agent'}),
	'CIRCUIT_OPEN',
	'its event says why');
is(primary_requests(), '3', 'nothing more was sent to the primary');

# the primary recovers; after the cool-down the breaker is half open and
# the next request tries the primary, whose answer closes the breaker
$node->safe_psql('postgres', "UPDATE adk.models SET model = 'gpt-primary' WHERE name = 'primary'");
sleep(3);
is(breaker(), 'half_open 0 1', 'half open after the cool-down');
is(call(), 'primary - echo: hi', 'the primary answers again');
is(breaker(), 'closed 0 1', 'and its answer closed the breaker');

# half open, one failure opens it again at once
$node->safe_psql('postgres', "UPDATE adk.models SET model = 'fault-overloaded' WHERE name = 'primary'");
call() for (1 .. 3);
is(breaker(), 'open 0 2', 'opened again by three failures');
sleep(3);
is(breaker(), 'half_open 0 2', 'half open again');
is(call(), 'backup server_error echo: hi', 'the trial request fails over');
is(breaker(), 'open 0 3', 'one failure while half open reopens the breaker');

$node->stop;
done_testing();
