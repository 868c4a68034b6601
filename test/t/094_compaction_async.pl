# Compaction drives the stepper (issue 12 §2): a run's summarizer call is
# started in one step and consumed in a later one, so a job worker goes on
# with its other runs while the summarizer answers.  With one job worker
# and a summarizer that takes 3 s:
#  - the sliding window (after the run): other sessions' queued runs end
#    while the summarizer is in flight; the compaction event is stored and
#    the next prompt uses it;
#  - tail retention (before a model call): the same, and the run's own
#    model call is sent after the summary, with it;
#  - a failing summarizer: the run completes, the failure is in
#    adk.invocations.compaction_error, the other runs were not held up;
#  - adk_cancel of a run parked on its summarizer stops only it, and its
#    summarizer call is dropped, not recorded.
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

my $node = PostgreSQL::Test::Cluster->new('compaction_async');
$node->init;
$node->append_conf(
	'postgresql.conf', qq{
shared_preload_libraries = 'adk_runner'
adk.database = 'postgres'
adk.max_workers = 1
max_worker_processes = 16
});
$node->start;

my $long = 'tell me about compaction ' . ('and more words ' x 12);
$node->safe_psql(
	'postgres', qq{
	CREATE EXTENSION adk_runner;
	SET log_statement = 'none';
	SELECT adk_set_secret('k', 'sk-test', ARRAY['127.0.0.1']);
	RESET log_statement;
	SELECT adk_define_model('fast', 'openai', '$url', 'gpt-test', api_key_secret => 'k');
	SELECT adk_define_model('slow2', 'openai', '$url', 'gpt-latency-2000', api_key_secret => 'k');
	SELECT adk_define_model('summ_slow', 'openai', '$url', 'gpt-summ-latency-3000', api_key_secret => 'k');
	SELECT adk_define_model('summ_bad', 'openai', '$url', 'fault-500-latency-1500', api_key_secret => 'k',
	                        options => '{"retries": 0}');
	SELECT adk_define_agent('ag', model => 'fast');
	SELECT adk_define_agent('ag2', model => 'slow2');
	SELECT adk_define_app('fastapp', 'ag');
	SELECT adk_define_app('app2000', 'ag2');
	SELECT adk_define_app('slide', 'ag',
	       compaction => '{"compaction_interval": 1, "summarizer_model": "summ_slow"}');
	SELECT adk_define_app('tail', 'ag',
	       compaction => '{"compaction_interval": 100, "token_threshold": 30, "event_retention_size": 1, "summarizer_model": "summ_slow"}');
	SELECT adk_define_app('badslide', 'ag',
	       compaction => '{"compaction_interval": 1, "summarizer_model": "summ_bad"}');
});

sub wait_jobs_done
{
	my ($where, $timeout) = @_;
	my $t0 = time;
	while (time - $t0 < $timeout)
	{
		my $out = $node->safe_psql('postgres',
			"SELECT count(*) FROM adk.jobs WHERE ($where) AND status IN ('queued', 'running')");
		return time - $t0 if $out eq '0';
		select(undef, undef, undef, 0.02);
	}
	return undef;
}

# Submit a job, wait until its agent has answered (its summarizer is then
# in flight), return its invocation id.
sub submit_and_park
{
	my ($app, $session, $message) = @_;
	my $inv = $node->safe_psql('postgres',
		"SELECT adk_submit('$app', 'u', '$session', \$m\$$message\$m\$)");
	$node->poll_query_until('postgres', qq{
		SELECT count(*) > 0 FROM adk.model_calls c
		 WHERE c.invocation_id = '$inv' AND c.model = 'fast'})
	  or die "the run of $app did not get to its compaction";
	select(undef, undef, undef, 0.3);
	return $inv;
}

# While the run $inv waits for its summarizer, 5 runs on other sessions:
# they must all end, while $inv is still running, well within the
# summarizer's latency.
sub others_go_on
{
	my ($inv, $what, $tag) = @_;
	my $t0 = time;
	$node->safe_psql('postgres',
		"SELECT adk_submit('fastapp', 'u', '$tag' || i, 'hi ' || i) FROM generate_series(1, 5) i");
	my $took = wait_jobs_done("app_name = 'fastapp' AND session_id LIKE '$tag%'", 30);
	my $status = $node->safe_psql('postgres',
		"SELECT status FROM adk.jobs WHERE invocation_id = '$inv'");
	ok(defined $took && $took < 2.5,
		"$what: 5 other runs ended while the summarizer answered ("
		  . sprintf('%.2f', $took // -1) . ' s; it takes 3 s)');
	is($status, 'running', "$what: the run waiting for its summarizer was still running then");
	is( $node->safe_psql('postgres', qq{
		SELECT count(*) FROM adk.jobs o, adk.jobs w
		 WHERE o.app_name = 'fastapp' AND o.session_id LIKE '$tag%'
		   AND w.invocation_id = '$inv'
		   AND o.status = 'completed' AND o.finished_at < coalesce(w.finished_at, 'infinity')}),
		'5', "$what: all 5 finished before it");
}

# --- the sliding window, after the run
my $inv = submit_and_park('slide', 's1', 'hello slide');
others_go_on($inv, 'sliding window', 'f1_');
ok(defined wait_jobs_done("invocation_id = '$inv'", 30), 'sliding window: the run ended');
is( $node->safe_psql('postgres', qq{
	SELECT j.status || '/' || i.status || '/' || coalesce(i.compaction_error, 'no error')
	  FROM adk.jobs j JOIN adk.invocations i USING (invocation_id) WHERE j.invocation_id = '$inv'}),
	'completed/completed/no error', 'sliding window: the run completed, no compaction error');
is( $node->safe_psql('postgres', qq{
	SELECT string_agg(c.kind || ':' || c.from_seq || '-' || c.to_seq || ':' || (e.event_data ->> 'invocation_id' = '$inv'), ',')
	  FROM adk.compactions c JOIN adk.events e
	    ON e.app_name = c.app_name AND e.user_id = c.user_id AND e.session_id = c.session_id AND e.seq = c.seq
	 WHERE c.app_name = 'slide' AND c.session_id = 's1'}),
	'sliding_window:1-2:true', 'sliding window: the compaction event of the run is stored, covering seq 1-2');
like( $node->safe_psql('postgres', "SELECT adk_prompt('slide', 'u', 's1')::text"),
	qr/echo: The following is a conversation history.*hello slide/,
	'sliding window: the next prompt has the summary');

# --- tail retention, before the model call
$node->safe_psql('postgres', "SELECT count(*) FROM adk_run('tail', 'u', 't1', \$m\$$long\$m\$)");
is($node->safe_psql('postgres', "SELECT count(*) FROM adk.compactions WHERE app_name = 'tail'"),
	'0', 'tail retention: nothing to compact in the first turn');
$inv = $node->safe_psql('postgres',
	"SELECT adk_submit('tail', 'u', 't1', \$m\$second $long\$m\$)");
$node->poll_query_until('postgres', qq{
	SELECT count(*) > 0 FROM adk.jobs WHERE invocation_id = '$inv' AND status = 'running'})
  or die 'the tail run did not start';
select(undef, undef, undef, 0.3);
others_go_on($inv, 'tail retention', 'f2_');
ok(defined wait_jobs_done("invocation_id = '$inv'", 30), 'tail retention: the run ended');
is( $node->safe_psql('postgres', qq{
	SELECT j.status || '/' || i.status || '/' || coalesce(i.compaction_error, 'no error')
	  FROM adk.jobs j JOIN adk.invocations i USING (invocation_id) WHERE j.invocation_id = '$inv'}),
	'completed/completed/no error', 'tail retention: the run completed, no compaction error');
is( $node->safe_psql('postgres', qq{
	SELECT string_agg(c.kind || ':' || (e.event_data ->> 'invocation_id' = '$inv'), ',')
	  FROM adk.compactions c JOIN adk.events e
	    ON e.app_name = c.app_name AND e.user_id = c.user_id AND e.session_id = c.session_id AND e.seq = c.seq
	 WHERE c.app_name = 'tail' AND c.session_id = 't1'}),
	'tail_retention:true', 'tail retention: the run stored one compaction event');
is( $node->safe_psql('postgres', qq{
	SELECT string_agg(model, ',' ORDER BY id) FROM adk.model_calls WHERE invocation_id = '$inv'}),
	'summ_slow,fast', 'tail retention: the summarizer, then the agent\'s model call');
is( $node->safe_psql('postgres', qq{
	SELECT request::text LIKE '%echo: The following is a conversation history%'
	  FROM adk.model_calls WHERE invocation_id = '$inv' AND model = 'fast'}),
	't', 'tail retention: the agent\'s request carried the summary');
is( $node->safe_psql('postgres', qq{
	SELECT event_data #>> '{content,parts,0,text}' LIKE 'echo: second%'
	  FROM adk.events WHERE invocation_id = '$inv' AND event_data ->> 'author' = 'ag'}),
	't', 'tail retention: the agent answered the second turn');

# --- a failing summarizer
$inv = submit_and_park('badslide', 'b1', 'hello bad');
$node->safe_psql('postgres',
	"SELECT adk_submit('fastapp', 'u', 'f3_' || i, 'hi ' || i) FROM generate_series(1, 5) i");
ok(defined wait_jobs_done("app_name = 'fastapp' AND session_id LIKE 'f3_%'", 30)
	  && defined wait_jobs_done("invocation_id = '$inv'", 30),
	'failing summarizer: every run ended');
is( $node->safe_psql('postgres', qq{
	SELECT count(*) FROM adk.jobs o, adk.jobs w
	 WHERE o.app_name = 'fastapp' AND o.session_id LIKE 'f3_%' AND w.invocation_id = '$inv'
	   AND o.status = 'completed' AND o.finished_at < w.finished_at}),
	'5', 'failing summarizer: the other runs were not held up by it');
like( $node->safe_psql('postgres', qq{
	SELECT j.status || '/' || i.status || '/' || coalesce(i.compaction_error, 'no error')
	  FROM adk.jobs j JOIN adk.invocations i USING (invocation_id) WHERE j.invocation_id = '$inv'}),
	qr{^completed/completed/sliding window compaction failed: .*summ_bad.*failed},
	'failing summarizer: the run completed, the failure is its compaction_error');
is($node->safe_psql('postgres', "SELECT count(*) FROM adk.compactions WHERE app_name = 'badslide'"),
	'0', 'failing summarizer: no compaction stored');

# --- cancel a run parked on its summarizer
$node->safe_psql('postgres',
	"SELECT adk_submit('app2000', 'u', 'w' || i, 'wait ' || i) FROM generate_series(1, 3) i");
$inv = submit_and_park('slide', 'c1', 'hello cancel');
my ($ret, $out, $err) = $node->psql(
	'postgres', qq{
	DO \$\$
	DECLARE t0 timestamptz := clock_timestamp(); ok boolean;
	BEGIN
		ok := adk_cancel('$inv');
		LOOP
			EXIT WHEN (SELECT status FROM adk.jobs WHERE invocation_id = '$inv') <> 'running'
			       OR clock_timestamp() - t0 > interval '30 s';
			PERFORM pg_sleep(0.005);
		END LOOP;
		RAISE NOTICE 'cancelled=% cancel_ms=%', ok, round(extract(epoch FROM clock_timestamp() - t0) * 1000);
	END \$\$;});
my ($cancelled, $cancel_ms) = $err =~ /cancelled=(\w+) cancel_ms=(\d+)/;
is($cancelled, 't', 'cancel: adk_cancel of the run waiting for its summarizer returns true');
ok(defined $cancel_ms && $cancel_ms < 1000,
	'cancel: it stopped within a fraction of a second (' . ($cancel_ms // '?') . ' ms)');
is($node->safe_psql('postgres',
	"SELECT count(*) FROM adk.jobs WHERE app_name = 'app2000' AND status = 'running'"),
	'3', 'cancel: the worker\'s other runs go on');
ok(defined wait_jobs_done("app_name = 'app2000'", 30), 'cancel: the other runs end');
is( $node->safe_psql('postgres', qq{
	SELECT string_agg(DISTINCT j.status || '/' || i.status, ',')
	  FROM adk.jobs j JOIN adk.invocations i USING (invocation_id) WHERE j.app_name = 'app2000'}),
	'completed/completed', 'cancel: the others completed');
is( $node->safe_psql('postgres', qq{
	SELECT j.status || '/' || i.status
	  FROM adk.jobs j JOIN adk.invocations i USING (invocation_id) WHERE j.invocation_id = '$inv'}),
	'cancelled/cancelled', 'cancel: the run ended cancelled');
is( $node->safe_psql('postgres', qq{
	SELECT count(*) FROM adk.model_calls WHERE invocation_id = '$inv' AND model = 'summ_slow'}),
	'0', 'cancel: its summarizer call was dropped, not recorded');
is($node->safe_psql('postgres', "SELECT count(*) FROM adk.compactions WHERE session_id = 'c1'"),
	'0', 'cancel: no compaction stored');
# the summarizer's 3 s are long over: nothing of the cancelled run came late
select(undef, undef, undef, 3);
is( $node->safe_psql('postgres', qq{
	SELECT (SELECT count(*) FROM adk.model_calls WHERE invocation_id = '$inv' AND model = 'summ_slow')
	     + (SELECT count(*) FROM adk.compactions WHERE session_id = 'c1')}),
	'0', 'cancel: nothing of the dropped summarizer arrived later');

$node->stop;
done_testing();
