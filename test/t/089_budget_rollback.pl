# A rolled-back adk_run is not free.  A role with a budget of 3 model
# calls runs the app and rolls back each time (ROLLBACK, ROLLBACK TO
# SAVEPOINT, a backend terminated while its call is in flight): every call
# is still charged, the fourth call is refused with BUDGET_EXCEEDED, the
# ledger keeps a row for each rolled-back call (rolled_back, no bodies),
# and the runs' events and invocations are gone with their transactions.
# Another database than adk.database gets its charges written too.
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
$url .= "/v1";

my $node = adk_node('budget_rollback');

adk_install(
	$node, 'sk-test', qq{
	SELECT adk_define_model('m', 'openai', '$url', 'gpt-test', api_key_secret => 'k');
	SELECT adk_define_model('hang', 'openai', '$url', 'fault-hang', api_key_secret => 'k');
	SELECT adk_define_agent('a', model => 'm');
	SELECT adk_define_agent('h', model => 'hang');
	SELECT adk_define_app('bud_app', 'a', tenancy => 'role');
	SELECT adk_define_app('hang_app', 'h', tenancy => 'role');
	SELECT adk_define_app('race_app', 'a', tenancy => 'role');
	CREATE ROLE alice LOGIN IN ROLE adk_user;
	INSERT INTO adk.budgets (app_name, role_name, period, max_model_calls)
	VALUES ('bud_app', 'alice', 'total', 3), ('hang_app', 'alice', 'total', 1),
	       ('race_app', 'alice', 'total', 1);
});

sub run_as_alice
{
	my ($app, $session) = @_;
	return "SELECT string_agg(coalesce(event_data ->> 'error_code', event_data ->> 'author'), ',' ORDER BY seq)"
	  . " FROM adk_run('$app', 'alice', '$session', 'hello')";
}

# three calls, each rolled back: two by ROLLBACK, one by ROLLBACK TO SAVEPOINT
for my $i (1 .. 2)
{
	is( $node->safe_psql(
			'postgres',
			"BEGIN; SET LOCAL ROLE alice; " . run_as_alice('bud_app', "s$i") . "; ROLLBACK;"),
		'a',
		"run $i answers, then its transaction rolls back");
}
is( $node->safe_psql(
		'postgres',
		"BEGIN; SET LOCAL ROLE alice; SAVEPOINT p; "
		  . run_as_alice('bud_app', 's3')
		  . "; ROLLBACK TO SAVEPOINT p; COMMIT;"),
	'a',
	'run 3 answers, then its savepoint rolls back');

# the fourth is refused at once: the launcher need not have written the
# charges yet (they count while pending)
is( $node->safe_psql(
		'postgres',
		"SET ROLE alice; " . run_as_alice('bud_app', 's4')),
	'BUDGET_EXCEEDED',
	'the fourth call is refused: the rolled-back calls were charged');

# the launcher writes the charges and the ledger rows
ok( $node->poll_query_until(
		'postgres',
		"SELECT model_calls = 3 FROM adk.budget_usage WHERE app_name = 'bud_app'"),
	'the launcher wrote the three rolled-back calls to the budget');
# (psql, not safe_psql: without the column the test goes on, failed)
my (undef, $ledger) = $node->psql(
	'postgres', q{
	SELECT count(*) || ',' || bool_and(rolled_back) || ',' || bool_and(request IS NULL AND response IS NULL)
	       || ',' || bool_and(role_name = 'alice') || ',' || sum((input_tokens + output_tokens > 0)::int)
	  FROM adk.model_calls WHERE model = 'm'});
is($ledger, '3,true,true,true,3',
	'the ledger keeps a row per rolled-back call: marked, without bodies, with its tokens');
is( $node->safe_psql(
		'postgres', q{
	SELECT (SELECT count(*) FROM adk.events WHERE app_name = 'bud_app')
	       || ',' || (SELECT string_agg(session_id || ' ' || status, ',') FROM adk.invocations
	                   WHERE app_name = 'bud_app')}),
	'2,s4 failed',
	'the rolled-back runs left no events and no invocations');

# a run waiting for the budget's lock while the holder rolls back: the
# charge is pending before the lock is released, so the waiting run sees
# the budget spent (without it, it would take the rolled-back call)
my $s1 = $node->background_psql('postgres');
$s1->query_safe("SET ROLE alice; BEGIN");
is($s1->query_safe(run_as_alice('race_app', 'r1')), 'a', 'the first run holds the budget');
my $s2 = $node->background_psql('postgres', on_error_stop => 0);
$s2->query_safe("SET application_name = 'racer'; SET ROLE alice");
$s2->query_until(qr/^$/, run_as_alice('race_app', 'r2') . ";\n");
$node->poll_query_until('postgres',
	"SELECT wait_event_type = 'Lock' FROM pg_stat_activity WHERE application_name = 'racer'")
  or die 'the second run never waited for the budget';
$s1->query_safe("ROLLBACK");
ok( $node->poll_query_until(
		'postgres',
		"SELECT error_code = 'BUDGET_EXCEEDED' AND model_calls = 0 FROM adk.invocations WHERE session_id = 'r2'"),
	'the waiting run is refused when the holder rolls back');
$s1->quit;
$s2->quit;

# a backend terminated while its call is in flight: the call counts
my $bg = $node->background_psql('postgres', on_error_stop => 0);
$bg->query_safe("SET application_name = 'hanging'; SET ROLE alice; BEGIN");
$bg->query_until(qr/^$/, run_as_alice('hang_app', 'h1') . ";\n");
$node->poll_query_until('postgres',
	"SELECT wait_event_type = 'Extension' FROM pg_stat_activity WHERE application_name = 'hanging' AND state = 'active'"
) or die 'the call never showed its wait';
$node->safe_psql('postgres',
	"SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'hanging'");
eval { $bg->quit; };
ok( $node->poll_query_until(
		'postgres',
		"SELECT model_calls = 1 FROM adk.budget_usage WHERE app_name = 'hang_app'"),
	'the call of a terminated backend is charged');
is( $node->safe_psql(
		'postgres',
		"SET ROLE alice; " . run_as_alice('hang_app', 'h2')),
	'BUDGET_EXCEEDED',
	'and the next call is refused');

# another database than adk.database: a spent writer connected to it
# writes its charges and ledger rows
$node->safe_psql('postgres', 'CREATE DATABASE other');
$node->safe_psql(
	'other', qq{
	CREATE EXTENSION adk_runner;
	SELECT adk_set_secret('k', 'sk-test', ARRAY['127.0.0.1']);
	SELECT adk_define_model('m', 'openai', '$url', 'gpt-test', api_key_secret => 'k');
	SELECT adk_define_agent('a', model => 'm');
	SELECT adk_define_app('bud_app', 'a', tenancy => 'role');
	INSERT INTO adk.budgets (app_name, role_name, period, max_model_calls)
	VALUES ('bud_app', 'alice', 'total', 1);
});
is( $node->safe_psql(
		'other',
		"BEGIN; SET LOCAL ROLE alice; " . run_as_alice('bud_app', 'o1') . "; ROLLBACK;"),
	'a',
	'a run in another database answers, then rolls back');
is( $node->safe_psql('other', "SET ROLE alice; " . run_as_alice('bud_app', 'o2')),
	'BUDGET_EXCEEDED',
	'the next call there is refused');
ok( $node->poll_query_until(
		'other',
		"SELECT model_calls = 1 FROM adk.budget_usage WHERE app_name = 'bud_app'"),
	'a spent writer wrote the charge in the other database');
my (undef, $other_ledger) = $node->psql('other',
	"SELECT count(*) || ',' || bool_and(rolled_back) FROM adk.model_calls");
is($other_ledger, '1,true', 'and its ledger row');

$node->stop;
done_testing();
