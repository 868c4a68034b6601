# Multiplexed job workers: one worker holds many runs
# and advances whichever can go on while the others wait for their model.
#  - 200 queued runs on 200 sessions, adk.max_workers = 2, model latency
#    500 ms: all complete in a few latencies (one run at a time per worker
#    would take 50 s), each session's events in order, nothing mixed up;
#  - cancel one run among 50 in flight in one worker: only it stops;
#  - kill -9 a worker holding 50 runs: every one is failed or re-queued
#    (and then completed), none left running, no session with a gap;
#  - a role that queued 2,000 jobs does not hold up a second role's job,
#    nor its own job of another app, for more than one scheduling round;
#  - foreground adk_runs and queued jobs on one session, 20 rounds: no
#    invocation's events interleave with another's;
#  - adk.tool_timeout stops a long SQL tool (its worker's other runs wait
#    for it otherwise): the model gets an error response;
#  - 1,000 runs through one worker: its memory stays flat.
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

my $node = adk_node(
	'multiplexed',
	'adk.max_workers' => 2,
	max_worker_processes => 16,
	max_connections => 40,
	restart_after_crash => 'on');

adk_install(
	$node, 'sk-test', qq{
	SELECT adk_define_model('m0', 'openai', '$url', 'gpt-test', api_key_secret => 'k');
	SELECT adk_define_model('m200', 'openai', '$url', 'gpt-latency-200', api_key_secret => 'k');
	SELECT adk_define_model('m500', 'openai', '$url', 'gpt-latency-500', api_key_secret => 'k');
	SELECT adk_define_model('m3000', 'openai', '$url', 'gpt-latency-3000', api_key_secret => 'k');
	SELECT adk_define_agent('a0', model => 'm0');
	SELECT adk_define_app('app0', 'a0');
	SELECT adk_define_agent('a200', model => 'm200');
	SELECT adk_define_app('app200', 'a200');
	SELECT adk_define_agent('a500', model => 'm500');
	SELECT adk_define_app('app500', 'a500');
	SELECT adk_define_agent('a3000', model => 'm3000');
	SELECT adk_define_app('app3000', 'a3000');
	CREATE FUNCTION note(x text) RETURNS jsonb LANGUAGE sql AS \$\$ SELECT jsonb_build_object('noted', x) \$\$;
	SELECT adk_define_tool('note(text)'::regprocedure);
	SELECT adk_define_agent('tooly', model => 'm200', tools => ARRAY['note']);
	SELECT adk_define_app('tool_app', 'tooly');
	CREATE FUNCTION slow_tool() RETURNS jsonb LANGUAGE sql AS \$\$ SELECT pg_sleep(5); SELECT '{"slept": true}'::jsonb \$\$;
	SELECT adk_define_tool('slow_tool()'::regprocedure);
	SELECT adk_define_agent('sleeper', model => 'm0', tools => ARRAY['slow_tool']);
	SELECT adk_define_app('sleep_app', 'sleeper');
});

# every session of app: seq 1, 2, 3, ... matching last_seq, and every event
# of the session from an invocation of that session
sub sessions_consistent
{
	my ($app) = @_;
	return $node->safe_psql(
		'postgres', qq{
	SELECT coalesce(bool_and(ok), true) FROM (
	  SELECT s.id, s.last_seq = count(e.seq) AND coalesce(bool_and(e.seq = e.n), true)
	         AND coalesce(bool_and(i.session_id = s.id), true) AS ok
	    FROM adk.sessions s
	    LEFT JOIN (SELECT session_id, app_name, seq, invocation_id,
	                      row_number() OVER (PARTITION BY session_id ORDER BY seq) AS n
	                 FROM adk.events) e ON e.app_name = s.app_name AND e.session_id = s.id
	    LEFT JOIN adk.invocations i ON i.invocation_id = e.invocation_id
	   WHERE s.app_name = '$app' GROUP BY s.id, s.last_seq) c});
}

# AdkTest's wait_jobs_done, but through a crash restart: a query error
# (the server restarting after the kill -9 below) means "not yet", and it
# polls every 50 ms.
sub wait_jobs_settled
{
	my ($where, $timeout) = @_;
	my $t0 = time;
	while (time - $t0 < $timeout)
	{
		# (the server may be restarting after a crash: errors mean "not yet")
		my ($ret, $out) = $node->psql('postgres',
			"SELECT count(*) FROM adk.jobs WHERE ($where) AND status IN ('queued', 'running')");
		return time - $t0 if $ret == 0 && $out eq '0';
		select(undef, undef, undef, 0.05);
	}
	return undef;
}

# --- 200 runs on 200 sessions, 2 workers, 500 ms per model call
my $t0 = time;
$node->safe_psql('postgres',
	"SELECT adk_submit('app500', 'u', 's' || i, 'hello ' || i) FROM generate_series(1, 200) i");
my $max_workers = 0;
my $done;
while (time - $t0 < 60)
{
	my ($w, $left) = split /\|/, $node->safe_psql('postgres', qq{
		SELECT (SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'adk_runner job worker'),
		       (SELECT count(*) FROM adk.jobs WHERE app_name = 'app500' AND status IN ('queued', 'running'))});
	$max_workers = $w if $w > $max_workers;
	if ($left eq '0') { $done = time - $t0; last; }
	select(undef, undef, undef, 0.05);
}
ok(defined $done, '200 queued runs on 200 sessions all ended');
diag sprintf("200 runs, 500 ms model latency, adk.max_workers = 2: %.2f s (%.0f runs/s)",
	$done // -1, 200 / ($done || 1));
ok(defined $done && $done < 10,
	'with two workers they took a few latencies, not 200 x 500 ms / 2 = 50 s (' . sprintf('%.1f', $done // -1) . ' s)');
ok($max_workers <= 2, "never more than adk.max_workers job workers ($max_workers)");
is( $node->safe_psql('postgres', qq{
	SELECT count(*) FILTER (WHERE j.status = 'completed' AND i.status = 'completed' AND i.model_calls = 1)
	  FROM adk.jobs j JOIN adk.invocations i USING (invocation_id) WHERE j.app_name = 'app500'}),
	'200', 'adk.jobs and adk.invocations: 200 completed, one model call each');
is( $node->safe_psql('postgres', qq{
	SELECT count(*) FROM (
	  SELECT session_id FROM adk.events WHERE app_name = 'app500'
	   GROUP BY session_id
	  HAVING count(*) = 2 AND count(DISTINCT invocation_id) = 1
	     AND min(event_data ->> 'author') = 'a500' AND max(event_data ->> 'author') = 'user'
	     AND bool_and((seq = 1) = (event_data ->> 'author' = 'user'))
	     AND bool_and(event_data #>> '{content,parts,0,text}' LIKE '%' || substr(session_id, 2) || '%'
	                  OR event_data ->> 'author' <> 'user')) s}),
	'200', 'each session: its user event then the model\'s answer, one invocation, in order');
is(sessions_consistent('app500'), 't', 'no session with a gap, a duplicate or another session\'s event');
is( $node->safe_psql('postgres',
	"SELECT count(DISTINCT worker_pid) <= 2 AND count(*) = 200 FROM adk.jobs WHERE app_name = 'app500'"),
	't', 'the runs were spread over at most two workers');

# --- cancel one run among 50 in flight in one worker
$node->safe_psql('postgres', 'ALTER SYSTEM SET adk.max_workers = 1; SELECT pg_reload_conf();');
$node->poll_query_until('postgres',
	"SELECT count(*) <= 1 FROM pg_stat_activity WHERE backend_type = 'adk_runner job worker'")
  or die 'workers stayed';
$node->safe_psql('postgres',
	"SELECT adk_submit('app3000', 'u', 'c' || i, 'wait ' || i) FROM generate_series(1, 50) i");
$node->poll_query_until('postgres', qq{
	SELECT count(*) = 50 FROM adk.jobs j WHERE app_name = 'app3000' AND status = 'running'
	   AND EXISTS (SELECT 1 FROM adk.events e WHERE e.invocation_id = j.invocation_id)})
  or die 'the 50 runs did not start';
is($node->safe_psql('postgres', "SELECT count(DISTINCT worker_pid) FROM adk.jobs WHERE app_name = 'app3000'"),
	'1', 'one worker holds the 50 runs');
my $victim = $node->safe_psql('postgres', "SELECT invocation_id FROM adk.jobs WHERE session_id = 'c17'");
my ($cancelled, $cancel_ms) = cancel_and_time($node, $victim);
is($cancelled, 't', 'adk_cancel of one run among 50 returns true');
ok(defined $cancel_ms && $cancel_ms < 1000,
	"it stopped within a fraction of a second (" . ($cancel_ms // '?') . " ms; its model call takes 3 s)");
is($node->safe_psql('postgres', qq{
	SELECT count(*) FROM adk.jobs WHERE app_name = 'app3000' AND status = 'running'}),
	'49', 'the other 49 runs go on');
ok(defined wait_jobs_settled("app_name = 'app3000'", 30), 'the other 49 end');
is( $node->safe_psql('postgres', qq{
	SELECT string_agg(DISTINCT j.status || '/' || i.status, ',')
	  FROM adk.jobs j JOIN adk.invocations i USING (invocation_id)
	 WHERE j.app_name = 'app3000' AND j.invocation_id <> '$victim'}),
	'completed/completed', 'only the cancelled run stopped: the others completed');
is( $node->safe_psql('postgres', qq{
	SELECT j.status || ',' || i.status || ',' || i.error_code || ',' ||
	       (SELECT string_agg(event_data ->> 'author', ',') FROM adk.events e WHERE e.invocation_id = j.invocation_id)
	  FROM adk.jobs j JOIN adk.invocations i USING (invocation_id) WHERE j.invocation_id = '$victim'}),
	'cancelled,cancelled,CANCELLED,user', 'the cancelled run ended cancelled, with its user event kept');
is($node->safe_psql('postgres',
	"SELECT count(*) FROM adk.model_calls WHERE invocation_id = '$victim'"),
	'0', 'its model call was stopped, not recorded');

# --- kill -9 a worker holding 50 runs
$node->safe_psql('postgres', qq{
	SELECT adk_submit('app3000', 'u', 'k' || i, 'kill ' || i, NULL,
	                  CASE WHEN i % 2 = 0 THEN '{"retries": 1}'::jsonb END)
	  FROM generate_series(1, 50) i});
$node->poll_query_until('postgres', qq{
	SELECT count(*) = 50 FROM adk.jobs j WHERE session_id LIKE 'k%' AND status = 'running'
	   AND EXISTS (SELECT 1 FROM adk.events e WHERE e.invocation_id = j.invocation_id)})
  or die 'the 50 runs did not start';
my $pid = $node->safe_psql('postgres',
	"SELECT DISTINCT worker_pid FROM adk.jobs WHERE session_id LIKE 'k%' AND status = 'running'");
like($pid, qr/^\d+$/, 'one worker holds the 50 runs');
kill 'KILL', $pid;
# the postmaster restarts everything; the launcher recovers the jobs
ok( $node->poll_query_until('postgres',
		"SELECT count(*) = 0 FROM adk.jobs WHERE session_id LIKE 'k%' AND status IN ('queued', 'running')"),
	'after kill -9 no run is left running or queued');
is( $node->safe_psql('postgres', qq{
	SELECT string_agg(k || ':' || n, ',' ORDER BY k) FROM (
	  SELECT (substr(j.session_id, 2)::int % 2 = 0)::text || ':' || j.status || '/' || i.status AS k, count(*) AS n
	    FROM adk.jobs j JOIN adk.invocations i USING (invocation_id) WHERE j.session_id LIKE 'k%'
	   GROUP BY 1) x}),
	'false:failed/failed:25,true:completed/completed:25',
	'the 25 runs without retries failed; the 25 with a retry ran again and completed');
is(sessions_consistent('app3000'), 't', 'no session with a gap or a duplicate');
is( $node->safe_psql('postgres', qq{
	SELECT count(*) FILTER (WHERE event_data ->> 'author' = 'a3000' AND NOT event_data ? 'error_code') || ' ' ||
	       count(*) FILTER (WHERE event_data ->> 'error_code' = 'WORKER_LOST') || ' ' ||
	       count(*) FILTER (WHERE event_data ->> 'author' = 'user')
	  FROM adk.events WHERE session_id LIKE 'k%'}),
	'25 25 50',
	'one answer per completed run, a WORKER_LOST error event per failed one, one user event per run');

# --- fairness: 2,000 jobs of one role, then one of another
# A restart, not a reload: a worker woken by the first submission before
# the reload's SIGHUP reaches it would claim at the old concurrency, and
# "one scheduling round" would be 64 runs (seen under load).
$node->safe_psql('postgres', qq{
	ALTER SYSTEM SET adk.worker_concurrency = 4;
	CREATE ROLE busy_role LOGIN; CREATE ROLE other_role LOGIN;
	GRANT adk_user TO busy_role, other_role;});
$node->restart;
$node->safe_psql('postgres', qq{
	SET ROLE busy_role;
	SELECT count(adk_submit('app200', 'u', 'f' || i, 'busy ' || i)) FROM generate_series(1, 2000) i;});
$node->safe_psql('postgres', qq{
	SET ROLE other_role; SELECT adk_submit('app200', 'u', 'other', 'me too');});
$node->safe_psql('postgres', qq{
	SET ROLE busy_role; SELECT adk_submit('app500', 'u', 'other_app', 'another app');});
ok(defined wait_jobs_settled("role_name = 'other_role'", 60), 'the second role\'s job ran');
ok(defined wait_jobs_settled("session_id = 'other_app'", 60), 'the first role\'s job of another app ran');
my $before = $node->safe_psql('postgres', qq{
	SELECT count(*) FROM adk.jobs a
	 WHERE a.role_name = 'busy_role' AND a.started_at <
	       (SELECT coalesce(started_at, 'infinity') FROM adk.jobs WHERE role_name = 'other_role')});
ok($before <= 8,
	"the second role's job started within one scheduling round: after $before of the first role's 2,000 (a worker holds 4)");
$before = $node->safe_psql('postgres', qq{
	SELECT count(*) FROM adk.jobs a
	 WHERE a.app_name = 'app200' AND a.role_name = 'busy_role' AND a.started_at <
	       (SELECT coalesce(started_at, 'infinity') FROM adk.jobs WHERE session_id = 'other_app')});
ok($before <= 8,
	"a job of another app of the same role started within one scheduling round: after $before of the 2,000");
$node->safe_psql('postgres', "UPDATE adk.jobs SET status = 'cancelled' WHERE status = 'queued'");
wait_jobs_settled('true', 30);
$node->safe_psql('postgres', 'ALTER SYSTEM RESET adk.worker_concurrency; SELECT pg_reload_conf();');

# --- a foreground adk_run and a queued job on one session, 20 rounds
for my $r (1 .. 20)
{
	my $inv = $node->safe_psql('postgres',
		"SELECT adk_submit('tool_app', 'u', 'shared', 'call note({\"x\": \"job $r\"})')");
	$node->poll_query_until('postgres',
		"SELECT EXISTS (SELECT 1 FROM adk.events WHERE invocation_id = '$inv')")
	  or die 'the job did not start';
	$node->safe_psql('postgres',
		"SELECT count(*) FROM adk_run('tool_app', 'u', 'shared', 'call note({\"x\": \"fg $r\"})')");
}
ok(defined wait_jobs_settled("session_id = 'shared'", 30), 'the 20 jobs ended');
is( $node->safe_psql('postgres', qq{
	SELECT count(*) FILTER (WHERE n = max_seq - min_seq + 1) || '/' || count(*)
	  FROM (SELECT invocation_id, count(*) AS n, min(seq) AS min_seq, max(seq) AS max_seq
	          FROM adk.events WHERE session_id = 'shared' GROUP BY invocation_id) i}),
	'40/40', 'no invocation\'s events interleave with another\'s (20 jobs, 20 foreground runs)');
is( $node->safe_psql('postgres', qq{
	SELECT count(*) FROM adk.events WHERE session_id = 'shared'}),
	'160', 'every run stored its four events (user, call, response, answer)');
is(sessions_consistent('tool_app'), 't', 'the session is consistent');

# --- adk.tool_timeout bounds a long SQL tool
$node->safe_psql('postgres', "ALTER SYSTEM SET adk.tool_timeout = '300ms'; SELECT pg_reload_conf();");
my $slow = $node->safe_psql('postgres', "SELECT adk_submit('sleep_app', 'u', 'zz', 'call slow_tool({})')");
$t0 = time;
my $took = wait_jobs_settled("invocation_id = '$slow'", 30);
ok(defined $took && $took < 3, sprintf('the 5 s tool was stopped after adk.tool_timeout (run took %.1f s)', $took // -1));
like( $node->safe_psql('postgres', qq{
	SELECT j.status || ': ' || (e.event_data #>> '{content,parts,0,function_response,response,error}')
	  FROM adk.jobs j JOIN adk.events e USING (invocation_id)
	 WHERE j.invocation_id = '$slow' AND e.event_data @? '\$.content.parts[*].function_response'}),
	qr/^completed: tool "slow_tool" ran longer than "adk.tool_timeout" \(300 ms\)/,
	'the model got an error response, and the run completed');
$node->safe_psql('postgres', "ALTER SYSTEM RESET adk.tool_timeout; SELECT pg_reload_conf();");

# --- memory: 1,000 runs through one worker
sub worker_rss_kb
{
	my $p = $node->safe_psql('postgres',
		"SELECT pid FROM pg_stat_activity WHERE backend_type = 'adk_runner job worker' LIMIT 1");
	return undef unless $p =~ /^\d+$/;
	my $status = slurp_file("/proc/$p/status");
	return $status =~ /RssAnon:\s+(\d+)/ ? ($p, $1) : undef;
}
$node->safe_psql('postgres',
	"SELECT adk_submit('app0', 'u', 'mem' || i, 'hi') FROM generate_series(1, 200) i");
wait_jobs_settled("app_name = 'app0'", 60);
my ($p1, $rss1) = worker_rss_kb();
$node->safe_psql('postgres',
	"SELECT adk_submit('app0', 'u', 'mem' || (i % 200), 'again') FROM generate_series(1, 1000) i");
ok(defined wait_jobs_settled("app_name = 'app0'", 120), '1,000 more runs through one worker ended');
my ($p2, $rss2) = worker_rss_kb();
diag "job worker RssAnon after 200 runs: $rss1 kB, after 1,200: $rss2 kB";
ok(defined $rss2 && $p1 == $p2 && $rss2 - $rss1 < 5 * 1024,
	'the worker\'s memory stayed flat (within 5 MB) over 1,000 runs');

$node->stop;
my $log = slurp_file($node->logfile);
unlike($log, qr/TRAP|terminated by signal 11|PANIC/, 'no crash in the server log (other than the SIGKILL)');
$server->kill_kill;
done_testing();
