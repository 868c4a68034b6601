# DROP EXTENSION adk_runner with runs in flight: queued runs held by a job
# worker and a foreground adk_run, each waiting on a slow model.
#
#   - without CASCADE it is refused while user objects depend on the
#     extension (a view over adk.events, a trigger running
#     adk._job_trigger), and nothing is dropped;
#   - with CASCADE it waits for the runs' transactions, then drops
#     everything; no process exits with FATAL, the workers stop serving
#     the database, and what remains is what the README lists: the three
#     cluster-wide roles;
#   - CREATE EXTENSION afterwards works again, and so do queued runs.
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
my $node = adk_node('uninstall', 'adk.max_workers' => 2);
my $setup = qq{
	SELECT adk_define_model('slow', 'openai', '$url/v1', 'gpt-latency-8000', api_key_secret => 'k');
	SELECT adk_define_model('fast', 'openai', '$url/v1', 'gpt-4o', api_key_secret => 'k');
	SELECT adk_define_agent('sleeper', model => 'slow');
	SELECT adk_define_agent('helper', model => 'fast');
	SELECT adk_define_app('slow_app', 'sleeper');
	SELECT adk_define_app('app', 'helper');
};
adk_install($node, 'sk-uninstall', $setup);
$node->safe_psql('postgres', q{
	CREATE TABLE orders (id int, customer text, ref text);
	SELECT adk_create_trigger('orders', 'app', 'a new order {{id}}', 'customer', 'ref');
	CREATE VIEW my_events AS SELECT session_id, seq FROM adk.events;
});

my $log_offset = -s $node->logfile;
my @jobs = map {
	$node->safe_psql('postgres', "SELECT adk_submit('slow_app', 'u', 'job-$_', 'question $_')")
} 1 .. 3;
$node->poll_query_until('postgres', q{SELECT count(*) = 3 FROM adk.jobs WHERE status = 'running'})
  or die 'the jobs did not start';
my $fg = $node->background_psql('postgres', on_error_stop => 0);
$fg->query_until(qr/started/, q{SET application_name = 'fg';
\echo started
SELECT count(*) FROM adk_run('slow_app', 'u', 'fg', 'a foreground question');
});
$node->poll_query_until('postgres',
	q{SELECT wait_event_type = 'Extension' FROM pg_stat_activity WHERE application_name = 'fg' AND state = 'active'})
  or die 'the foreground run did not start';
is($node->safe_psql('postgres', q{SELECT count(*) FROM adk.jobs WHERE status = 'running'}),
	'3', 'three queued runs and a foreground run are in flight');

# without CASCADE: refused, nothing dropped
my ($rc, $out, $err) = $node->psql('postgres', 'DROP EXTENSION adk_runner');
like($err, qr/cannot drop extension adk_runner because other objects depend on it/,
	'DROP EXTENSION without CASCADE is refused while user objects depend on it');
like($err, qr/view my_events depends on/, 'it names the dependent view');
is($node->safe_psql('postgres', q{SELECT count(*) FROM pg_extension WHERE extname = 'adk_runner'}),
	'1', 'nothing was dropped');

# with CASCADE, the runs still in flight
$node->safe_psql('postgres', 'SET lock_timeout = 0; DROP EXTENSION adk_runner CASCADE');
pass('DROP EXTENSION adk_runner CASCADE with runs in flight (it waits for their transactions)');
my $fg_out = $fg->query('SELECT 1');
$fg->quit;
is($node->safe_psql('postgres', q{SELECT count(*) FROM pg_namespace WHERE nspname = 'adk'}),
	'0', 'schema adk is gone');
is( $node->safe_psql(
		'postgres', q{SELECT count(*) FROM pg_proc WHERE proname LIKE 'adk\_%'
		               OR probin LIKE '%adk_runner%'}),
	'0', 'no function of the extension is left');
is( $node->safe_psql('postgres',
		q{SELECT count(*) FROM pg_trigger WHERE tgrelid = 'orders'::regclass AND NOT tgisinternal}),
	'0', 'the trigger went with it');
is($node->safe_psql('postgres', q{SELECT count(*) FROM pg_event_trigger}),
	'0', 'no event trigger is left');
is( $node->safe_psql(
		'postgres',
		q{SELECT string_agg(rolname, ',' ORDER BY rolname) FROM pg_roles WHERE rolname LIKE 'adk\_%'}),
	'adk_admin,adk_gateway,adk_user',
	'what remains is the three cluster-wide roles');

# the workers stop serving the database: the job workers exit once their
# runs end (not after adk.worker_idle_timeout)
my $t0 = time;
ok( $node->poll_query_until('postgres',
		q{SELECT count(*) = 0 FROM pg_stat_activity WHERE backend_type = 'adk_runner job worker'}),
	'the job workers exit');
ok(time - $t0 < 30, 'at once: ' . (time - $t0) . ' s after the drop');
sleep 2;
my $log = slurp_file($node->logfile, $log_offset);
unlike($log, qr/FATAL/, 'no process exited with FATAL');
unlike($log, qr/terminated by signal|was terminated/, 'no process crashed');

# and it can be installed again
adk_install($node, 'sk-uninstall', $setup);
my $inv = $node->safe_psql('postgres', q{SELECT adk_submit('app', 'u', 'again', 'hello again')});
ok( $node->poll_query_until('postgres',
		"SELECT status = 'completed' FROM adk.jobs WHERE invocation_id = '$inv'"),
	'after CREATE EXTENSION again, queued runs run');

$node->stop;
done_testing();
