# Queued runs exactly once.  A job worker is killed (SIGKILL: the server's
# crash restart) at chosen points of its runs -- after the user event,
# after a tool's response while the second model call is in flight -- and
# the retry continues the invocation: each session holds exactly U C R A,
# the tool ran once.  A run that is not retried ends with a WORKER_LOST
# error event.  adk_append_event waits for a queued run's turn.  A paused
# job answered later by adk_run ends completed, finished when it was
# answered.  Connection resets and timeouts are retried within the
# model's retries, then end in an error event.  And the one window that is
# at least once: a SQL tool batched with an agent-tool runs again.
use strict;
use warnings;
use File::Temp qw(tempdir);
use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::Bin/../perl";
use AdkTest qw(:DEFAULT wait_jobs_done);
use Time::HiRes qw(time);
use HTTP::Tiny;
use JSON::PP;

my $tmp = tempdir(CLEANUP => 1);
my ($server, $base) = start_model_server($tmp);
my $url = "$base/v1";

my $node = adk_node(
	'exactly_once',
	'adk.max_workers' => 2,
	max_worker_processes => 16,
	restart_after_crash => 'on');
adk_install(
	$node, 'sk-once', qq{
	SELECT adk_define_model('slow', 'openai', '$url', 'gpt-latency-3000', api_key_secret => 'k');
	SELECT adk_define_model('slower', 'openai', '$url', 'gpt-latency-8000', api_key_secret => 'k');
	SELECT adk_define_model('fast', 'openai', '$url', 'gpt-test', api_key_secret => 'k');
	CREATE TABLE effects (item text);
	CREATE FUNCTION insert_row(item text) RETURNS jsonb LANGUAGE sql AS
	  \$\$ INSERT INTO effects VALUES (item) RETURNING jsonb_build_object('stored', item) \$\$;
	SELECT adk_define_tool('insert_row(text)'::regprocedure);
	CREATE FUNCTION request_approval(item text) RETURNS jsonb LANGUAGE sql AS
	  \$\$ SELECT jsonb_build_object('status', 'pending') \$\$;
	SELECT adk_define_tool('request_approval(text)'::regprocedure, long_running => true);
	SELECT adk_define_agent('writer', model => 'slow', tools => ARRAY['insert_row']);
	SELECT adk_define_app('wapp', 'writer');
	SELECT adk_define_agent('slow_writer', model => 'slower', tools => ARRAY['insert_row']);
	SELECT adk_define_app('swapp', 'slow_writer');
	SELECT adk_define_agent('helper', model => 'slower', description => 'helps');
	SELECT adk_define_agent('mixer', model => 'slow', tools => ARRAY['insert_row', 'helper']);
	SELECT adk_define_app('mixapp', 'mixer');
	SELECT adk_define_agent('approver', model => 'fast', tools => ARRAY['request_approval']);
	SELECT adk_define_app('hitl', 'approver');
});

# the authors of a session's events, in order, with each event's kind:
# U (user), C (model calls), R (responses), A (model answer), E (error)
sub turn_of
{
	my ($app, $session) = @_;
	return $node->safe_psql(
		'postgres', qq{
	SELECT string_agg(CASE WHEN event_data ? 'error_code' THEN 'E'
	                       WHEN event_data ->> 'author' = 'user' THEN 'U'
	                       WHEN event_data::text LIKE '%"function_call"%' THEN 'C'
	                       WHEN event_data::text LIKE '%"function_response"%' THEN 'R'
	                       ELSE 'A' END, ' ' ORDER BY seq)
	  FROM adk.events WHERE app_name = '$app' AND session_id = '$session'});
}

# a query that is tried again while the server restarts after a crash
sub poll_through_restart
{
	my ($sql) = @_;
	for (1 .. 60)
	{
		my $ok = eval { $node->poll_query_until('postgres', $sql) };
		return 1 if $ok;
		sleep 1;
	}
	return 0;
}

# --- kill -9 at chosen points: the retry continues the invocation
my $after_user = $node->safe_psql('postgres',
	q{SELECT adk_submit('swapp', 'u', 'after_user', 'call insert_row({"item": "a"})', NULL, '{"retries": 1}')});
my $after_tool = $node->safe_psql('postgres',
	q{SELECT adk_submit('wapp', 'u', 'after_tool', 'call insert_row({"item": "b"})', NULL, '{"retries": 1}')});
my $lost = $node->safe_psql('postgres',
	q{SELECT adk_submit('swapp', 'u', 'lost', 'call insert_row({"item": "c"})')});
# the one window that is at least once: a SQL tool and an agent-tool in
# one response -- the SQL tool's row commits while the run waits for the
# agent-tool's model, before the response event
my $window = $node->safe_psql('postgres',
	q{SELECT adk_submit('mixapp', 'u', 'window', 'call insert_row({"item": "w"}) call helper({"request": "hi"})', NULL, '{"retries": 1}')});
# after_tool has its call's response stored and its second model call in
# flight; the others have only their user events (their first model call
# takes 8 s)
$node->poll_query_until('postgres',
	"SELECT count(*) = 3 FROM adk.events WHERE invocation_id = '$after_tool'")
  or die 'after_tool never stored its response';
$node->poll_query_until('postgres',
	"SELECT count(*) = 1 FROM effects WHERE item = 'w'")
  or die 'window never committed its tool row';
my $pid = $node->safe_psql('postgres', "SELECT worker_pid FROM adk.jobs WHERE invocation_id = '$after_tool'");
is(turn_of('wapp', 'after_tool'), 'U C R', 'after_tool: the response is stored, the second call in flight');
is(turn_of('swapp', 'after_user'), 'U', 'after_user: only the user event is stored');
is(turn_of('swapp', 'lost'), 'U', 'lost: only the user event is stored');
kill 'KILL', $pid;
poll_through_restart(
	"SELECT count(*) = 0 FROM adk.jobs WHERE status IN ('queued', 'running')")
  or die 'the jobs did not end after the crash';

is($node->safe_psql('postgres', "SELECT status || ' ' || attempts FROM adk.jobs WHERE invocation_id = '$after_user'"),
	'completed 2', 'after_user: completed in its second attempt');
is(turn_of('swapp', 'after_user'), 'U C R A', 'after_user: exactly U C R A');
is($node->safe_psql('postgres', "SELECT status || ' ' || attempts FROM adk.jobs WHERE invocation_id = '$after_tool'"),
	'completed 2', 'after_tool: completed in its second attempt');
is(turn_of('wapp', 'after_tool'), 'U C R A', 'after_tool: exactly U C R A');
is($node->safe_psql('postgres', "SELECT count(*) FROM effects WHERE item = 'b'"),
	'1', 'after_tool: the tool whose response was stored did not run again');
is($node->safe_psql('postgres', "SELECT count(*) FROM effects WHERE item = 'a'"),
	'1', 'after_user: the tool ran once');
is( $node->safe_psql(
		'postgres', qq{
	SELECT count(*) FROM adk.events
	 WHERE invocation_id IN ('$after_user', '$after_tool') AND event_data ->> 'author' = 'user'}),
	'2', 'one user event per retried job');
# what the model was sent: each request holds the user's message once
my $requests = decode_json(HTTP::Tiny->new->get("$base/_requests")->{content});
my ($sent, $most) = (0, 0);
foreach my $r (@$requests)
{
	my $n = grep {
		($_->{role} // '') eq 'user'
		  && grep { /^call insert_row\(\{"item": "[ab]"\}\)$/ } @{ $_->{texts} // [] }
	} @{ $r->{messages} // [] };
	next unless $n;
	$sent++;
	$most = $n if $n > $most;
}
ok($sent >= 4, "the retried jobs' requests are among the model server's ($sent)");
is($most, 1, 'no request to the model carries the user message twice');
is( $node->safe_psql(
		'postgres', qq{
	SELECT count(DISTINCT invocation_id) || ' ' || bool_and(status = 'completed')
	  FROM adk.invocations WHERE invocation_id IN ('$after_user', '$after_tool')}),
	'2 true', 'the invocations completed');
# each retried job started its root node again: its adk.run_states row
# counts two attempts (docs/runs.md)
is( $node->safe_psql(
		'postgres', qq{
	SELECT string_agg(status || ' ' || attempt, ', ' ORDER BY invocation_id = '$after_tool')
	  FROM adk.run_states WHERE invocation_id IN ('$after_user', '$after_tool')}),
	'completed 2, completed 2', 'the retried jobs\' root nodes: completed in their second attempt');

is(turn_of('mixapp', 'window'), 'U C R A', 'window: U C R A after the retry');
is($node->safe_psql('postgres', "SELECT count(*) FROM effects WHERE item = 'w'"),
	'2', 'window: the SQL tool batched with an agent-tool ran again (at least once, as documented)');

# --- a dead run that is not retried says so in its session
is($node->safe_psql('postgres', "SELECT status FROM adk.jobs WHERE invocation_id = '$lost'"),
	'failed', 'lost: the job without retries failed');
is(turn_of('swapp', 'lost'), 'U E', 'lost: an error event closes its turn');
like( $node->safe_psql(
		'postgres', qq{
	SELECT event_data ->> 'author' || ' ' || (event_data ->> 'error_code') || ' ' || (event_data ->> 'error_message')
	  FROM adk.events WHERE invocation_id = '$lost' AND event_data ? 'error_code'}),
	qr/^slow_writer WORKER_LOST the server restarted while the job was running/,
	'lost: the error event is WORKER_LOST, by the agent, with the reason');
is($node->safe_psql('postgres', "SELECT count(*) FROM effects WHERE item = 'c'"),
	'0', 'lost: its tool never ran');
is($node->safe_psql('postgres', "SELECT status || ' ' || attempt FROM adk.run_states WHERE invocation_id = '$lost'"),
	'failed 1', 'lost: its root node\'s row ends failed, in its one attempt');

# --- adk_append_event waits for a queued run's turn
my $appended = $node->safe_psql('postgres',
	q{SELECT adk_submit('wapp', 'u', 'append', 'call insert_row({"item": "d"})')});
$node->poll_query_until('postgres',
	"SELECT count(*) = 1 FROM adk.events WHERE invocation_id = '$appended'")
  or die 'the job never started';
my $t0 = time;
$node->safe_psql('postgres',
	q{SELECT adk_append_event('wapp', 'u', 'append', '{"author": "observer", "content": {"role": "user", "parts": [{"text": "note"}]}}')});
my $waited = time - $t0;
is(turn_of('wapp', 'append'), 'U C R A A', 'the appended event comes after the job\'s whole turn');
is($node->safe_psql('postgres',
		"SELECT event_data ->> 'author' FROM adk.events WHERE session_id = 'append' ORDER BY seq DESC LIMIT 1"),
	'observer', 'the last event is the appended one');
ok($waited > 1, sprintf('adk_append_event waited for the turn (%.1f s)', $waited));
# bounded by adk.session_wait_timeout
my $second = $node->safe_psql('postgres',
	q{SELECT adk_submit('wapp', 'u', 'append', 'call insert_row({"item": "e"})')});
$node->poll_query_until('postgres',
	"SELECT count(*) = 1 FROM adk.events WHERE invocation_id = '$second'")
  or die 'the second job never started';
my ($ret, $out, $err) = $node->psql('postgres',
	q{SET adk.session_wait_timeout = '200ms';
	  SELECT adk_append_event('wapp', 'u', 'append', '{"author": "observer"}')});
like($err, qr/ERROR:  session "append" of app "wapp" is busy.*DETAIL:  Queued run "\Q$second\E" holds it/s,
	'adk_append_event gives up after adk.session_wait_timeout');
defined(wait_jobs_done($node, "invocation_id = '$second'", 30)) or die 'the second job did not end';
is(turn_of('wapp', 'append'), 'U C R A A U C R A', 'the refused append stored nothing');

# --- a job answered later reaches completed, finished when answered
my $paused = $node->safe_psql('postgres',
	q{SELECT adk_submit('hitl', 'u', 'paused', 'call request_approval({"item": "laptop"})')});
$node->poll_query_until('postgres',
	"SELECT status = 'waiting' FROM adk.jobs WHERE invocation_id = '$paused'")
  or die 'the job never paused';
is($node->safe_psql('postgres', "SELECT finished_at IS NULL FROM adk.jobs WHERE invocation_id = '$paused'"),
	't', 'a paused job has not finished');
my $call = $node->safe_psql('postgres',
	"SELECT call_id FROM adk.pending_interrupts WHERE session_id = 'paused'");
my $answered_at = $node->safe_psql('postgres', 'SELECT clock_timestamp()');
$node->safe_psql('postgres',
	"SELECT count(*) FROM adk_run('hitl', 'u', 'paused', adk_function_response('$call', 'request_approval', '{\"approved\": true}'))");
is( $node->safe_psql(
		'postgres', qq{
	SELECT j.status || ' ' || i.status || ' ' || (j.finished_at >= '$answered_at')
	  FROM adk.jobs j JOIN adk.invocations i USING (invocation_id) WHERE invocation_id = '$paused'}),
	'completed completed true', 'the job answered later is completed, finished when answered');

# --- transport errors are retried within retries, then an error event
$node->safe_psql(
	'postgres', qq{
	SELECT adk_define_model('resets_once', 'openai', '$url', 'fault-reset-once', api_key_secret => 'k',
	                        options => '{"retries": 1}');
	SELECT adk_define_model('resets', 'openai', '$url', 'fault-reset', api_key_secret => 'k',
	                        options => '{"retries": 2}');
	SELECT adk_define_model('hangs_once', 'openai', '$url', 'fault-hang-once', api_key_secret => 'k',
	                        options => '{"retries": 1, "timeout_ms": 500}');
	SELECT adk_define_model('hangs', 'openai', '$url', 'fault-hang', api_key_secret => 'k',
	                        options => '{"retries": 1, "timeout_ms": 300}');
	SELECT adk_define_agent(m || '_agent', model => m) FROM unnest(ARRAY['resets_once', 'resets', 'hangs_once', 'hangs']) m;
	SELECT adk_define_app(m || '_app', m || '_agent') FROM unnest(ARRAY['resets_once', 'resets', 'hangs_once', 'hangs']) m;
});
foreach my $case (
	[ 'resets_once', 'U A', '2 ', 'a reset connection is retried' ],
	[ 'hangs_once', 'U A', '2 ', 'a timed-out request is retried' ],
	[ 'resets', 'U E', '3 HTTP_CLIENT_ERROR', 'a connection reset every time ends in an error event after the retries' ],
	[ 'hangs', 'U E', '2 TIMEOUT', 'a hang every time ends in an error event after the retries' ])
{
	my ($m, $turn, $ledger, $name) = @$case;
	$node->safe_psql('postgres', "SELECT count(*) FROM adk_run('${m}_app', 'u', 't_$m', 'hello $m')");
	is(turn_of("${m}_app", "t_$m"), $turn, "$name: $turn");
	is( $node->safe_psql(
			'postgres', qq{
		SELECT m.attempts || ' ' || coalesce(m.error_code, '')
		  FROM adk.model_calls m JOIN adk.invocations i USING (invocation_id)
		 WHERE i.session_id = 't_$m'}),
		$ledger, "$name: attempts and error in the ledger");
}

$node->stop;
my $log = slurp_file($node->logfile);
unlike($log, qr/TRAP|terminated by signal 11|PANIC/, 'no crash in the server log (other than the SIGKILL)');
$server->kill_kill;
done_testing();
