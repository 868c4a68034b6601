# Tenancy and budgets in the background workers: a gateway queues a run
# of a 'claim' app for the end user it asserted, and the job worker runs
# it for that user (the session is created on the way, the check passes
# with the user the job was queued for) while a tool inside the job still
# cannot switch users; a 'role' app's job runs for its role; a job over
# budget ends failed with BUDGET_EXCEEDED and makes no model call.
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

my $node = adk_node('tenancy_workers', 'adk.max_workers' => 2, max_worker_processes => 16);

adk_install(
	$node, 'sk-test', qq{
	SELECT adk_define_model('m', 'openai', '$url', 'gpt-test', api_key_secret => 'k');
	CREATE FUNCTION switch_user(user_id text) RETURNS jsonb LANGUAGE plpgsql AS \$\$
	BEGIN
	    PERFORM adk_set_user(user_id);
	    RETURN jsonb_build_object('now', adk_asserted_user());
	END \$\$;
	SELECT adk_define_tool('switch_user(text)'::regprocedure);
	SELECT adk_define_agent('a', model => 'm', tools => ARRAY['switch_user']);
	SELECT adk_define_app('claim_app', 'a', tenancy => 'claim');
	SELECT adk_define_app('role_app', 'a', tenancy => 'role');
	CREATE ROLE web IN ROLE adk_gateway;
	CREATE ROLE alice IN ROLE adk_user;
});

# the gateway queues a run for its asserted user; the worker runs it
my $inv = $node->safe_psql(
	'postgres', q{
	BEGIN;
	SET LOCAL ROLE web;
	SELECT adk_set_user('customer-1');
	SELECT adk_submit('claim_app', 'customer-1', 's1', 'call switch_user({"user_id": "customer-2"})');
	COMMIT;
});
$inv = (split /\n/, $inv)[-1];
like($inv, qr/^e-/, 'a gateway queues a run for the user it asserted');

# waiting names the run's user: the gateway asserts it again
my $events = $node->safe_psql(
	'postgres', qq{
	BEGIN;
	SET LOCAL ROLE web;
	SELECT adk_set_user('customer-1');
	SELECT string_agg(event_data ->> 'author', ',' ORDER BY seq) FROM adk_wait('$inv', '60 s');
	COMMIT;
});
is((split /\n/, $events)[-1], 'user,a,a,a', 'the job ran for the asserted user');
is( $node->safe_psql(
		'postgres', qq{
	SELECT status || ',' || role_name || ',' || user_id FROM adk.invocations WHERE invocation_id = '$inv'}),
	'completed,web,customer-1',
	'the job ran as the gateway, for customer-1');
like(
	$node->safe_psql(
		'postgres', qq{
	SELECT function_responses FROM adk.event_log
	 WHERE invocation_id = '$inv' AND function_responses IS NOT NULL}),
	qr/cannot change the asserted end user while a run is active/,
	'a tool inside the job cannot switch the user');

# without an assertion, row-level security hides the run
my ($ret, $out, $err) = $node->psql('postgres',
	"SET ROLE web; SELECT count(*) FROM adk_wait('$inv', '1 s')");
like($err, qr/run "\Q$inv\E" does not exist/,
	'without the user asserted, the run is not visible to adk_wait');

# a 'role' app: alice's job runs for alice; bob's name is refused at submit
$inv = $node->safe_psql('postgres',
	"SET ROLE alice; SELECT adk_submit('role_app', 'alice', 's1', 'hello')");
$inv = (split /\n/, $inv)[-1];
is( $node->safe_psql(
		'postgres', qq{
	SET ROLE alice;
	SELECT string_agg(event_data ->> 'author', ',' ORDER BY seq) FROM adk_wait('$inv', '60 s')}),
	'user,a', 'a role app\'s job runs for its role');
($ret, $out, $err) = $node->psql('postgres',
	"SET ROLE alice; SELECT adk_submit('role_app', 'bob', 's1', 'hello')");
like($err, qr/permission denied for user "bob" of app "role_app"/,
	'a job for another user is refused when it is queued');

# a job over budget: failed, BUDGET_EXCEEDED, no model call
$node->safe_psql('postgres',
	"INSERT INTO adk.budgets (app_name, user_id, period, max_model_calls) VALUES ('role_app', 'alice', 'day', 0)"
);
$inv = $node->safe_psql('postgres',
	"SET ROLE alice; SELECT adk_submit('role_app', 'alice', 's1', 'hello again')");
$inv = (split /\n/, $inv)[-1];
is( $node->safe_psql(
		'postgres', qq{
	SET ROLE alice;
	SELECT string_agg(coalesce(event_data ->> 'error_code', event_data ->> 'author'), ',' ORDER BY seq)
	  FROM adk_wait('$inv', '60 s')}),
	'user,BUDGET_EXCEEDED', 'the job stops at the budget');
is( $node->safe_psql(
		'postgres', qq{
	SELECT i.status || ',' || i.model_calls || ',' || (SELECT count(*) FROM adk.model_calls c WHERE c.invocation_id = i.invocation_id)
	  FROM adk.invocations i WHERE i.invocation_id = '$inv'}),
	'failed,0,0', 'the job failed without a model call');

$node->stop;
done_testing();
