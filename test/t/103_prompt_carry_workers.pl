# A job worker's next run on a session goes on from what its last run on
# it assembled (src/runner/prompt_carry.c), checked against the session
# first: another writer's events between two jobs are sent, a rewind
# between two jobs leaves the rewound turn out, a session deleted and made
# again starts over.  One worker runs every job (adk.max_workers = 1: the
# jobs' worker_pid is the same), with adk.verify_incremental on, which
# makes each request built from a kept history again from the history
# read from the store and fails the run when the two differ.
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
	'prompt_carry',
	'adk.max_workers' => 1,
	'adk.worker_idle_timeout' => "'5min'",
	'adk.verify_incremental' => 'on',
	max_worker_processes => 8);
adk_install(
	$node, 'sk-carry', qq{
	SELECT adk_define_model('m', 'openai', '$base/v1', 'gpt-test', api_key_secret => 'k');
	SELECT adk_define_agent('chat', model => 'm', instruction => 'You answer.');
	SELECT adk_define_app('capp', 'chat');
	SELECT adk_create_session('capp', 'u', 'c');
});

# a job on session c, waited for; its invocation id.  Its run's status
# and its worker go into @status and %pids.
my (@status, %pids);

sub job
{
	my ($message) = @_;
	my $inv = $node->safe_psql('postgres', "SELECT adk_submit('capp', 'u', 'c', '$message')");
	defined(wait_jobs_done($node, "invocation_id = '$inv'", 60))
	  or die "job $inv did not end";
	push @status,
	  $node->safe_psql('postgres', "SELECT status FROM adk.invocations WHERE invocation_id = '$inv'");
	$pids{ $node->safe_psql('postgres', "SELECT worker_pid FROM adk.jobs WHERE invocation_id = '$inv'") } = 1;
	return $inv;
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

my @invs;
push @invs, job('first');
$node->safe_psql(
	'postgres', q{
	SELECT adk_append_event('capp', 'u', 'c', '{"author": "user", "content":
	         {"role": "user", "parts": [{"text": "written by hand"}]}}')});
push @invs, job('second');
is(request_of($invs[-1]),
	'user:first | assistant:echo: first | user:written by hand | user:second',
	"another writer's event between two jobs is sent");

$node->safe_psql('postgres', "SELECT adk_rewind('capp', 'u', 'c', '$invs[-1]')");
push @invs, job('third');
is(request_of($invs[-1]),
	'user:first | assistant:echo: first | user:written by hand | user:third',
	'a rewind between two jobs leaves the rewound turn out');

$node->safe_psql(
	'postgres', q{
	SELECT adk_delete_session('capp', 'u', 'c');
	SELECT adk_create_session('capp', 'u', 'c');});
push @invs, job('fourth');
is(request_of($invs[-1]), 'user:fourth', 'a session made again starts over');

push @invs, job('fifth');
is(request_of($invs[-1]),
	'user:fourth | assistant:echo: fourth | user:fifth',
	'the next job goes on from it');

is(scalar(keys %pids), 1, 'one worker ran every job');
is(join(',', @status), 'completed,completed,completed,completed,completed',
	'every run completed (no request differed from the one made from the store)');

$node->stop;
done_testing();
