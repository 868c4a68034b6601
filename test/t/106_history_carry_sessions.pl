# A job worker keeps what its runs assembled of several sessions' histories
# (src/runner/prompt_carry.c, up to adk.history_carry_size), so its next
# job on any of them goes on from it, with jobs of other sessions run in
# between or at the same time.  The worker logs, at DEBUG1, each run that
# takes a kept history.  One worker runs every job (adk.max_workers = 1),
# with adk.verify_incremental on: each request built from a kept history
# is built again from the history read from the store, and the run fails
# when the two differ.
use strict;
use warnings;
use File::Temp qw(tempdir);
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::Bin/../perl";
use AdkTest qw(:DEFAULT wait_jobs_done);

my $tmp = tempdir(CLEANUP => 1);
my ($server, $base) = start_model_server($tmp);

my $node = adk_node(
	'history_carry',
	'adk.max_workers' => 1,
	'adk.worker_idle_timeout' => "'5min'",
	'adk.verify_incremental' => 'on',
	log_min_messages => 'debug1',
	max_worker_processes => 8);
adk_install(
	$node, 'sk-carry', qq{
	SELECT adk_define_model('m', 'openai', '$base/v1', 'gpt-test', api_key_secret => 'k');
	SELECT adk_define_agent('chat', model => 'm', instruction => 'You answer.');
	SELECT adk_define_app('capp', 'chat');
	SELECT adk_create_session('capp', 'u', s) FROM unnest(ARRAY['a', 'b', 'c']) s;
});

my %pids;

# jobs on the sessions of @sessions, submitted together and waited for;
# their invocation ids
sub jobs
{
	my ($message, @sessions) = @_;
	my @invs = map {
		$node->safe_psql('postgres', "SELECT adk_submit('capp', 'u', '$_', '$message $_')")
	} @sessions;
	my $list = join(',', map { "'$_'" } @invs);
	defined(wait_jobs_done($node, "invocation_id IN ($list)", 60))
	  or die "jobs $list did not end";
	$pids{$_} = 1 for split /\n/,
	  $node->safe_psql('postgres', "SELECT worker_pid FROM adk.jobs WHERE invocation_id IN ($list)");
	return @invs;
}

# how many runs on session $s took what the worker kept of it
sub taken
{
	my ($s) = @_;
	my $log = slurp_file($node->logfile);
	my @hits = ($log =~ /the run on session "$s" goes on from the history the backend kept of it/g);
	return scalar(@hits);
}

# the messages of the last request of invocation $inv: role:content
sub request_of
{
	my ($inv) = @_;
	return $node->safe_psql(
		'postgres', qq{
	SELECT string_agg((m ->> 'role') || ':' || (m ->> 'content'), ' | ' ORDER BY i)
	  FROM adk.model_calls c, jsonb_array_elements(c.request -> 'messages') WITH ORDINALITY AS x(m, i)
	 WHERE c.id = (SELECT max(id) FROM adk.model_calls WHERE invocation_id = '$inv')
	   AND m ->> 'role' <> 'system'});
}

# one job after another: a, b, c, then a, b, c again
my @invs;
push @invs, jobs('one', $_) for qw(a b c);
is(join(',', map { taken($_) } qw(a b c)), '0,0,0', 'a first job on a session takes nothing');
push @invs, jobs('two', $_) for qw(a b c);
is(join(',', map { taken($_) } qw(a b c)),
	'1,1,1', "each session's second job goes on from what the worker kept, other sessions' jobs run in between");
is(request_of($invs[3]), 'user:one a | assistant:echo: one a | user:two a', 'its request holds the first turn');

# another writer's event on b between two of its jobs
$node->safe_psql(
	'postgres', q{
	SELECT adk_append_event('capp', 'u', 'b', '{"author": "user", "content":
	         {"role": "user", "parts": [{"text": "written by hand"}]}}')});

# three jobs in flight at once in the worker
push @invs, jobs('three', qw(a b c));
is(join(',', map { taken($_) } qw(a b c)), '2,2,2', 'jobs run at the same time each go on from their own session');
is(request_of($invs[7]),
	'user:one b | assistant:echo: one b | user:two b | assistant:echo: two b | user:written by hand | user:three b',
	"another writer's event between two jobs is sent");

# adk.history_carry_size 0: only the last run's session is kept
$node->safe_psql('postgres', "ALTER SYSTEM SET adk.history_carry_size = 0");
$node->reload;
sleep 1;
push @invs, jobs('four', $_) for qw(a b a);
is(join(',', map { taken($_) } qw(a b c)),
	'3,2,2', "past adk.history_carry_size only the last run's session is kept");

is(scalar(keys %pids), 1, 'one worker ran every job');
is( $node->safe_psql(
		'postgres', "SELECT string_agg(DISTINCT status, ',') FROM adk.invocations"),
	'completed',
	'every run completed (no request differed from the one made from the store)');

$node->stop;
done_testing();
