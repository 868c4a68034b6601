# Helpers shared by the TAP tests under test/t.
package AdkTest;

use strict;
use warnings;
use Exporter 'import';
use IPC::Run;
use PostgreSQL::Test::Utils;
use PostgreSQL::Test::Cluster;
use Test::More;
use Time::HiRes ();

our @EXPORT = qw(start_model_server adk_node plain_node adk_install cancel_and_time
  cancel_among_others others_end_first agent_usage_mismatches);

# on request only (use AdkTest qw(:DEFAULT wait_jobs_done)): some tests
# still have a wait_jobs_done($where, $timeout) of their own
our @EXPORT_OK = qw(wait_jobs_done);

# Every server started here is stopped when the test ends, however it ends
# (a die, BAIL_OUT, a failed poll), so no test leaves one running.
my @servers;

END
{
	local $?;
	foreach my $h (@servers)
	{
		eval { $h->kill_kill if $h->pumpable; };
	}
}

# Start the bundled local model server on a free port, logging to
# $tmp/model_server.log; extra arguments go to server.py.  Returns the
# IPC::Run harness (the server lives as long as it does) and the base URL
# (http://127.0.0.1:PORT).
sub start_model_server
{
	my ($tmp, @extra) = @_;
	my $server = IPC::Run::start(
		[
			'/usr/bin/python3', 'test/model_server/server.py',
			'--port', '0', '--port-file', "$tmp/port",
			'--log', "$tmp/model_server.log", @extra
		],
		'>', "$tmp/server.out", '2>&1');
	push @servers, $server;
	for (1 .. 200)
	{
		last if -s "$tmp/port";
		select(undef, undef, undef, 0.05);
	}
	my $port = -s "$tmp/port" ? slurp_file("$tmp/port") : '';
	chomp $port;
	ok($port =~ /^\d+$/, 'local model server started')
	  or BAIL_OUT('the local model server did not start: ' . slurp_file("$tmp/server.out"));
	return ($server, "http://127.0.0.1:$port");
}

# A new node with the extension preloaded and its job workers serving the
# database postgres, started.  postgresql.conf gets
#   shared_preload_libraries = 'adk_runner'
#   adk.database = 'postgres'
# then each of @settings, name => value pairs written in the order given
# as "name = value" (the value verbatim: quote strings yourself), e.g.
#   adk_node('workers', 'adk.max_workers' => 4, max_worker_processes => 16)
sub adk_node
{
	my ($name, @settings) = @_;
	return plain_node($name, shared_preload_libraries => "'adk_runner'",
		'adk.database' => "'postgres'", @settings);
}

# A new node, started, without the extension preloaded (what is
# synchronous works; no job workers): postgresql.conf gets each of
# @settings as adk_node writes them, e.g.
#   plain_node('main', log_min_messages => 'debug1')
sub plain_node
{
	my ($name, @settings) = @_;
	my $conf = "\n";
	while (@settings)
	{
		my ($k, $v) = splice(@settings, 0, 2);
		$conf .= "$k = $v\n";
	}
	my $node = PostgreSQL::Test::Cluster->new($name);
	$node->init;
	$node->append_conf('postgresql.conf', $conf);
	$node->start;
	return $node;
}

# In one psql session on database postgres: CREATE EXTENSION adk_runner,
# the secret 'k' = $secret for host 127.0.0.1 (set with log_statement
# off, so it is not logged), then the statements $sql (models, agents,
# apps, ...).
sub adk_install
{
	my ($node, $secret, $sql) = @_;
	$node->safe_psql(
		'postgres', qq{
	CREATE EXTENSION adk_runner;
	SET log_statement = 'none';
	SELECT adk_set_secret('k', '$secret', ARRAY['127.0.0.1']);
	RESET log_statement;
$sql});
}

# Wait until no job matching the SQL condition $where is queued or
# running, polling adk.jobs every 20 ms for at most $timeout seconds.
# Returns the seconds it took, undef on timeout.  (A query error dies.)
sub wait_jobs_done
{
	my ($node, $where, $timeout) = @_;
	my $t0 = Time::HiRes::time;
	while (Time::HiRes::time - $t0 < $timeout)
	{
		my $out = $node->safe_psql('postgres',
			"SELECT count(*) FROM adk.jobs WHERE ($where) AND status IN ('queued', 'running')");
		return Time::HiRes::time - $t0 if $out eq '0';
		select(undef, undef, undef, 0.02);
	}
	return undef;
}

# adk_cancel('$inv') in one backend, then wait there (at most 30 s, every
# 5 ms) until its job is no longer 'running'.  Returns what adk_cancel
# returned ('t' or 'f', undef if the DO block failed) and the milliseconds
# from the call until the job left 'running'.
sub cancel_and_time
{
	my ($node, $inv) = @_;
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
	return $err =~ /cancelled=(\w+) cancel_ms=(\d+)/;
}

# Five checks that adk_cancel stops only the run $inv, one of the runs of a
# job worker: with the $o{others} runs of app $o{app} running beside it,
# adk_cancel('$inv') returns true and the job leaves 'running' within
# 1000 ms (cancel_and_time); the $o{others} others are still running, all
# end (wait_jobs_done, 30 s at most) and completed.  The first check is
# named "cancel: adk_cancel of $o{what} returns true", the others
# "cancel: ...".
sub cancel_among_others
{
	my ($node, $inv, %o) = @_;
	my ($cancelled, $cancel_ms) = cancel_and_time($node, $inv);
	is($cancelled, 't', "cancel: adk_cancel of $o{what} returns true");
	ok(defined $cancel_ms && $cancel_ms < 1000,
		'cancel: it stopped within a fraction of a second (' . ($cancel_ms // '?') . ' ms)');
	is($node->safe_psql('postgres',
		"SELECT count(*) FROM adk.jobs WHERE app_name = '$o{app}' AND status = 'running'"),
		$o{others}, 'cancel: the worker\'s other runs go on');
	ok(defined wait_jobs_done($node, "app_name = '$o{app}'", 30), 'cancel: the other runs end');
	is( $node->safe_psql('postgres', qq{
	SELECT string_agg(DISTINCT j.status || '/' || i.status, ',')
	  FROM adk.jobs j JOIN adk.invocations i USING (invocation_id) WHERE j.app_name = '$o{app}'}),
		'completed/completed', 'cancel: the others completed');
}

# Three checks that a job worker goes on with other runs while the run
# $inv is parked (waiting for $o{waiting_for}): submits 5 runs of app
# $o{app} on sessions "$o{tag}1" .. "$o{tag}5", then checks they all ended
# within 2.5 s (wait_jobs_done, 30 s at most), that $inv was still
# 'running' then, and that all 5 finished before it.  The checks are
# named "$o{what}: ..."; $o{while} and $o{latency} go into the first
# one's name ("5 other runs ended while $o{while} (N s; $o{latency})").
sub others_end_first
{
	my ($node, $inv, %o) = @_;
	my ($app, $tag, $what) = @o{qw(app tag what)};
	$node->safe_psql('postgres',
		"SELECT adk_submit('$app', 'u', '$tag' || i, 'hi ' || i) FROM generate_series(1, 5) i");
	my $took = wait_jobs_done($node, "app_name = '$app' AND session_id LIKE '$tag%'", 30);
	my $status = $node->safe_psql('postgres',
		"SELECT status FROM adk.jobs WHERE invocation_id = '$inv'");
	ok(defined $took && $took < 2.5,
		"$what: 5 other runs ended while $o{while} ("
		  . sprintf('%.2f', $took // -1) . " s; $o{latency})");
	is($status, 'running', "$what: the run waiting for $o{waiting_for} was still running then");
	is( $node->safe_psql('postgres', qq{
		SELECT count(*) FROM adk.jobs o, adk.jobs w
		 WHERE o.app_name = '$app' AND o.session_id LIKE '$tag%'
		   AND w.invocation_id = '$inv'
		   AND o.status = 'completed' AND o.finished_at < coalesce(w.finished_at, 'infinity')}),
		'5', "$what: all 5 finished before it");
}

# How many agent spans (name 'invoke_agent ...') in adk.spans have a
# gen_ai.usage.input_tokens other than the sum of the CLIENT (model) spans
# below them, at any depth: '0' when every agent span sums its model calls.
sub agent_usage_mismatches
{
	my ($node) = @_;
	return $node->safe_psql(
		'postgres', q{
	SELECT count(*) FROM adk.spans a
	 WHERE a.name LIKE 'invoke_agent %'
	   AND (a.attributes ->> 'gen_ai.usage.input_tokens')::bigint <>
	       (WITH RECURSIVE d AS (SELECT a.span_id
	                             UNION ALL
	                             SELECT c.span_id FROM adk.spans c JOIN d ON c.parent_span_id = d.span_id)
	        SELECT coalesce(sum((m.attributes ->> 'gen_ai.usage.input_tokens')::bigint), 0)
	          FROM adk.spans m JOIN d ON d.span_id = m.span_id WHERE m.kind = 'CLIENT')});
}

1;
