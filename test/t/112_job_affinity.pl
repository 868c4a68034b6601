# Session-affine claiming (docs/workers.md, "Order"): a session's next
# queued run is claimed by the job worker that ran its last one, which
# kept what that run assembled of the history (src/runner/prompt_carry.c;
# the worker logs each run that goes on from it at DEBUG1), so with three
# workers a session's later runs go on from the kept history (24 of 24
# here; with adk.worker_affinity_delay = 0, 16 ran in the same worker and
# 18 went on from what it kept, in one run).  Other workers take the run
# once adk.worker_affinity_delay has passed when that worker is busy (it
# holds adk.worker_concurrency runs), and at once when it is gone.  With
# adk.verify_incremental on, every request made from a kept history is
# made again from the store and must be the same.
use strict;
use warnings;
use File::Temp qw(tempdir);
use HTTP::Tiny;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::Bin/../perl";
use AdkTest qw(:DEFAULT wait_jobs_done);

my $tmp = tempdir(CLEANUP => 1);
my ($server, $base) = start_model_server($tmp);

my $node = adk_node(
	'job_affinity',
	'adk.max_workers' => 3,
	'adk.worker_concurrency' => 2,
	'adk.worker_affinity_delay' => "'2s'",
	'adk.worker_idle_timeout' => "'5min'",
	'adk.verify_incremental' => 'on',
	log_min_messages => 'debug1',
	max_worker_processes => 12);
adk_install(
	$node, 'sk-affine', qq{
	SELECT adk_define_model('m', 'openai', '$base/v1', 'gpt-test', api_key_secret => 'k');
	SELECT adk_define_agent('chat', model => 'm', instruction => 'You answer.');
	SELECT adk_define_app('capp', 'chat');
	SELECT adk_create_session('capp', 'u', 's' || i) FROM generate_series(1, 8) i;
});
my @sessions = map { "s$_" } 1 .. 8;

# how many runs took what their worker kept of their session
sub taken
{
	my $log = slurp_file($node->logfile);
	my @hits = ($log =~ /the run on session "s\d+" goes on from the history the backend kept of it/g);
	return scalar(@hits);
}

# The three workers up first (the launcher starts one for each of three
# claimable runs, and idle ones wait 5 min): a worker that runs the
# sessions' first turns before the others have started keeps every later
# turn (each is held for it), and the test would see one worker only.
$node->safe_psql(
	'postgres', q{
	SELECT adk_create_session('capp', 'u', 'warm' || i) FROM generate_series(1, 3) i;
	SELECT count(adk_submit('capp', 'u', 'warm' || i, 'Warm up')) FROM generate_series(1, 3) i});
ok(defined(wait_jobs_done($node, 'true', 120)), 'the warm-up runs ended');
my $up = 0;
for (1 .. 600)
{
	$up = $node->safe_psql('postgres',
		"SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'adk_runner job worker'");
	last if $up == 3;
	select(undef, undef, undef, 0.05);
}
is($up, '3', 'three job workers run');
# Eight sessions, four runs each, all queued in one transaction: a
# worker holds two runs at a time, so the sessions' first runs spread
# over the three workers, and each session's later runs wait for the one
# before.
$node->safe_psql(
	'postgres', q{
	SELECT count(adk_submit('capp', 'u', 's' || i, 'Turn ' || t || ' of s' || i))
	  FROM generate_series(1, 4) t, generate_series(1, 8) i});
ok(defined(wait_jobs_done($node, 'true', 120)), 'the 32 runs ended');
is($node->safe_psql('postgres', "SELECT string_agg(DISTINCT status, ',') FROM adk.invocations"),
	'completed', 'every run completed (no request differed from the one made from the store)');
my $workers = $node->safe_psql('postgres',
	"SELECT count(DISTINCT worker_pid) FROM adk.jobs WHERE session_id ~ '^s[0-9]'");
cmp_ok($workers, '>=', 2, "several workers ran the sessions' runs ($workers)");
my $same = $node->safe_psql(
	'postgres', q{
	SELECT count(*) FROM adk.jobs j
	 WHERE j.session_id ~ '^s[0-9]'
	   AND j.worker_pid = (SELECT p.worker_pid FROM adk.jobs p
	                        WHERE p.session_id = j.session_id AND p.id < j.id
	                        ORDER BY p.id DESC LIMIT 1)});
my $taken = taken();
note("of 24 later runs: $same in the worker that ran the session's run before, $taken went on from what it kept");
cmp_ok($same, '>=', 20, 'a later run runs in the worker that ran the run before (at least 20 of 24)');
cmp_ok($taken, '>=', 20, 'and goes on from the history that worker kept');

# The sessions' last workers, and the one that ran the most of them.
my %last;
for (split /\n/,
	$node->safe_psql(
		'postgres', q{
	SELECT DISTINCT ON (session_id) session_id || ' ' || worker_pid
	  FROM adk.jobs WHERE session_id ~ '^s[0-9]' ORDER BY session_id, id DESC}))
{
	my ($s, $pid) = split / /;
	push @{ $last{$pid} }, $s;
}
my ($busy) = sort { @{ $last{$b} } <=> @{ $last{$a} } or $a <=> $b } keys %last;
my @own = @{ $last{$busy} };
SKIP:
{
	skip 'no worker ran the last runs of three sessions', 5 if @own < 3;

	# That worker busy: one run at a time, and a run of one of its
	# sessions that takes the model 8 s.
	$node->safe_psql('postgres', 'ALTER SYSTEM SET adk.worker_concurrency = 1');
	$node->reload;
	my $res = HTTP::Tiny->new->post("$base/_config",
		{ content => '{"latency_ms": 8000}', headers => { 'Content-Type' => 'application/json' } });
	ok($res->{success}, 'the model answers after 8 s');
	sleep 1;
	my $slow = $node->safe_psql('postgres', "SELECT adk_submit('capp', 'u', '$own[0]', 'Slow')");
	my $running = 0;
	for (1 .. 500)
	{
		$running = $node->safe_psql('postgres',
			"SELECT worker_pid FROM adk.jobs WHERE invocation_id = '$slow' AND status = 'running'");
		last if $running;
		select(undef, undef, undef, 0.02);
	}
	is($running, $busy, "the slow run runs in its session's last worker");

	# Another of its sessions' run: held for it for adk.worker_affinity_delay
	# (2 s), then another worker takes it, long before the slow run ends.
	my $held = $node->safe_psql('postgres', "SELECT adk_submit('capp', 'u', '$own[1]', 'Held')");
	my $row = '';
	for (1 .. 500)
	{
		$row = $node->safe_psql(
			'postgres', qq{
		SELECT worker_pid || ' ' || extract(epoch FROM started_at - submitted_at)
		  FROM adk.jobs WHERE invocation_id = '$held' AND started_at IS NOT NULL});
		last if $row;
		select(undef, undef, undef, 0.02);
	}
	my ($pid, $wait) = split / /, $row;
	ok( defined $wait && $pid != $busy && $wait >= 1.8 && $wait < 6,
		"a run whose last worker is busy is taken by another after the delay (waited "
		  . ($wait // 'forever') . ' s)');

	# The busy worker stops: its third session's run is anybody's at once,
	# with a delay of 30 s.
	$node->safe_psql('postgres', "ALTER SYSTEM SET adk.worker_affinity_delay = '30s'");
	$node->reload;
	sleep 1;
	$node->safe_psql('postgres', "SELECT pg_terminate_backend($busy)");
	for (1 .. 500)
	{
		last
		  if $node->safe_psql('postgres', "SELECT count(*) FROM pg_stat_activity WHERE pid = $busy")
		  eq '0';
		select(undef, undef, undef, 0.02);
	}
	my $orphan = $node->safe_psql('postgres', "SELECT adk_submit('capp', 'u', '$own[2]', 'Orphan')");
	$row = '';
	for (1 .. 1500)
	{
		$row = $node->safe_psql(
			'postgres', qq{
		SELECT worker_pid || ' ' || extract(epoch FROM started_at - submitted_at)
		  FROM adk.jobs WHERE invocation_id = '$orphan' AND started_at IS NOT NULL});
		last if $row;
		select(undef, undef, undef, 0.02);
	}
	($pid, $wait) = split / /, $row;
	ok(defined $wait && $pid != $busy && $wait < 10,
		'a run whose last worker is gone is taken at once (waited ' . ($wait // 'forever') . ' s)');
	ok(defined(wait_jobs_done($node, 'true', 60)), 'every run ended');
}

$node->stop;
done_testing();
