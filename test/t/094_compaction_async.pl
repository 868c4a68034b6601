# Compaction drives the stepper: a run's summarizer call is
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
use AdkTest qw(:DEFAULT wait_jobs_done);

my $tmp = tempdir(CLEANUP => 1);
my ($server, $url) = start_model_server($tmp);
$url .= "/v1";

my $node = adk_node('compaction_async', 'adk.max_workers' => 1, max_worker_processes => 16);

my $long = 'tell me about compaction ' . ('and more words ' x 12);
adk_install(
	$node, 'sk-test', qq{
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
	others_end_first(
		$node, $inv,
		app => 'fastapp',
		tag => $tag,
		what => $what,
		waiting_for => 'its summarizer',
		while => 'the summarizer answered',
		latency => 'it takes 3 s');
}

# --- the sliding window, after the run
my $inv = submit_and_park('slide', 's1', 'hello slide');
others_go_on($inv, 'sliding window', 'f1_');
ok(defined wait_jobs_done($node, "invocation_id = '$inv'", 30), 'sliding window: the run ended');
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
ok(defined wait_jobs_done($node, "invocation_id = '$inv'", 30), 'tail retention: the run ended');
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
ok(defined wait_jobs_done($node, "app_name = 'fastapp' AND session_id LIKE 'f3_%'", 30)
	  && defined wait_jobs_done($node, "invocation_id = '$inv'", 30),
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
cancel_among_others(
	$node, $inv,
	what => 'the run waiting for its summarizer',
	app => 'app2000',
	others => 3);
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
