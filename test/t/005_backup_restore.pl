# Backup and restore the way a DBA does it: pg_dump -Fc then pg_restore
# into a new empty database, and pg_dump | psql.  Every kind of data the
# extension keeps -- definitions, sessions with app/user/session state,
# events, run states, compactions, invocations, jobs, the model-call
# ledger, and the sequences behind them -- comes back row for row; a
# restored session goes on (seq continues, no duplicate ids, a pending
# long-running call can still be answered).
use strict;
use warnings;
use File::Temp qw(tempdir);
use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::Bin/../perl";
use AdkTest;

my $tmp = tempdir(CLEANUP => 1);
my ($server, $url) = start_model_server($tmp);

my $node = adk_node('backup', 'adk.max_workers' => 2);

# data of every kind
$node->safe_psql(
	'postgres', qq{
	CREATE EXTENSION adk_runner;
	SELECT adk_set_secret('k', 'sk-backup-tap', ARRAY['127.0.0.1']);
	SELECT adk_define_model('local', 'openai', '$url/v1', 'gpt-test', api_key_secret => 'k');
	CREATE FUNCTION get_weather(city text) RETURNS jsonb LANGUAGE sql AS
	  \$\$ SELECT jsonb_build_object('city', city, 'forecast', 'sunny') \$\$;
	CREATE FUNCTION request_approval(item text) RETURNS jsonb LANGUAGE sql AS
	  \$\$ SELECT jsonb_build_object('status', 'pending') \$\$;
	CREATE FUNCTION plug_event(e jsonb) RETURNS jsonb LANGUAGE sql AS \$\$ SELECT NULL::jsonb \$\$;
	SELECT adk_define_tool('get_weather(text)'::regprocedure);
	SELECT adk_define_tool('request_approval(text)'::regprocedure, long_running => true);
	SELECT adk_define_plugin('noop', on_event => 'plug_event(jsonb)'::regprocedure);
	SELECT adk_define_agent('helper', model => 'local', instruction => 'You help.', tools => ARRAY['get_weather']);
	SELECT adk_define_agent('root', model => 'local', instruction => 'You route.',
	                        tools => ARRAY['get_weather', 'request_approval'], sub_agents => ARRAY['helper']);
	SELECT adk_define_workflow('flow', '[{"agent": "helper"}, {"name": "weather", "tool": "get_weather", "retry": {}},
	                                     {"name": "both", "kind": "join"}]',
	                           '[{"from": "START", "to": "helper"}, {"from": "START", "to": "weather"},
	                             {"from": "helper", "to": "both"}, {"from": "weather", "to": "both"}]');
	SELECT adk_define_app('app1', 'root', plugins => ARRAY['noop'],
	                      compaction => '{"compaction_interval": 2, "overlap_size": 1}');
	SELECT adk_create_session('app1', 'u1', 's1', '{"k": 1, "app:a": 2, "user:u": 3, "temp:t": 4}');
	SELECT adk_append_event('app1', 'u1', 's1', '{"author": "user", "content": {"role": "user", "parts": [{"text": "hi"}]},
	                        "actions": {"state_delta": {"k": 5, "app:b": 6, "user:v": 7}}}');
	SELECT count(*) FROM adk_run('app1', 'u1', 's2', 'What is the weather in Paris?');
	SELECT count(*) FROM adk_run('app1', 'u1', 's2', 'call request_approval({"item": "laptop"})');
});
my $inv = $node->safe_psql('postgres', "SELECT adk_submit('app1', 'u2', 's3', 'hello worker')");
$node->safe_psql('postgres', "SELECT count(*) FROM adk_wait('$inv', '60 s')");

# every table of the extension that holds data, and its sequences
my @tables = qw(secrets models tools plugins agents apps app_states user_states
  sessions events run_states compactions invocations jobs model_calls
  workflows workflow_nodes workflow_edges);
my $contents_sql = join(
	"\nUNION ALL ",
	map {
		"SELECT '$_', count(*), md5(coalesce(string_agg(t::text, E'\\n' ORDER BY t::text), '')) FROM adk.$_ t"
	} @tables)
  . "\nUNION ALL SELECT 'jobs_id_seq', last_value, is_called::text FROM adk.jobs_id_seq"
  . "\nUNION ALL SELECT 'model_calls_id_seq', last_value, is_called::text FROM adk.model_calls_id_seq";
my $original = $node->safe_psql('postgres', $contents_sql);

# every kind is there to be restored
my %n = map { my @f = split /\|/; ($f[0] => $f[1]) } split /\n/, $original;
for my $t (@tables)
{
	ok($n{$t} > 0, "the original has rows in adk.$t");
}
is( $node->safe_psql(
		'postgres',
		"SELECT status, cardinality(interrupt_ids) FROM adk.run_states r WHERE session_id = 's2'"
		  . " ORDER BY (SELECT min(e.seq) FROM adk.events e WHERE e.session_id = r.session_id AND e.invocation_id = r.invocation_id)"),
	"completed|0\nwaiting|1",
	'the original has a run waiting on a long-running call (after a first turn that completed: a row per invocation)');

# 1. pg_dump -Fc, pg_restore into a new empty database
$node->command_ok([ 'pg_dump', '-Fc', '-f', "$tmp/adk.dump", 'postgres' ], 'pg_dump -Fc');
$node->safe_psql('postgres', 'CREATE DATABASE restored_fc');
$node->command_ok([ 'pg_restore', '--exit-on-error', '-d', 'restored_fc', "$tmp/adk.dump" ],
	'pg_restore into an empty database');
is($node->safe_psql('restored_fc', $contents_sql),
	$original, 'pg_restore: every table and sequence as in the original');

# 2. pg_dump | psql
$node->safe_psql('postgres', 'CREATE DATABASE restored_sql');
$node->command_ok(
	[
		'bash', '-c',
		'set -o pipefail; pg_dump postgres | psql -X -q -v ON_ERROR_STOP=1 -d restored_sql >/dev/null'
	],
	'pg_dump | psql');
is($node->safe_psql('restored_sql', $contents_sql),
	$original, 'pg_dump | psql: every table and sequence as in the original');

# 3. a data-only restore into a database that has the extension already,
# with the triggers disabled
$node->safe_psql('postgres', 'CREATE DATABASE restored_data');
$node->safe_psql('restored_data',
	'CREATE EXTENSION adk_runner; CREATE FUNCTION get_weather(city text) RETURNS jsonb LANGUAGE sql AS $$ SELECT NULL::jsonb $$;'
	  . ' CREATE FUNCTION request_approval(item text) RETURNS jsonb LANGUAGE sql AS $$ SELECT NULL::jsonb $$;'
	  . ' CREATE FUNCTION plug_event(e jsonb) RETURNS jsonb LANGUAGE sql AS $$ SELECT NULL::jsonb $$;');
$node->command_ok(
	[
		'pg_restore', '--exit-on-error', '--data-only', '--disable-triggers', '-d', 'restored_data',
		"$tmp/adk.dump"
	],
	'pg_restore --data-only --disable-triggers');
is($node->safe_psql('restored_data', $contents_sql),
	$original, 'pg_restore --data-only: every table and sequence as in the original');

# a restored workflow keeps its graph hash, and is checked again on change
for my $db (qw(restored_fc restored_sql))
{
	is($node->safe_psql($db, q{SELECT graph_hash = adk._workflow_hash(name) FROM adk.workflows WHERE name = 'flow'}),
		't', "$db: the restored workflow's hash is its graph's");
	my ($ret, $out, $err) = $node->psql($db,
		q{INSERT INTO adk.workflow_edges (workflow, from_node, to_node) VALUES ('flow', 'both', 'START')});
	like($err, qr/node "both" of workflow "flow" points to START/, "$db: the restored workflow is checked");
}

# a restored session goes on
for my $db (qw(restored_fc restored_sql))
{
	my $last = $node->safe_psql($db,
		"SELECT last_seq FROM adk.sessions WHERE app_name = 'app1' AND user_id = 'u1' AND id = 's1'");
	my $id = $node->safe_psql($db,
		q{SELECT adk_append_event('app1', 'u1', 's1', '{"author": "user"}') ->> 'id'});
	is($node->safe_psql($db, "SELECT seq FROM adk.events WHERE id = '$id'"),
		$last + 1, "$db: an appended event continues the restored session's seq");
	is( $node->safe_psql(
			$db, q{
		SELECT (adk_get_session('app1', 'u1', 's1') -> 'state')::text}),
		'{"k": 5, "app:a": 2, "app:b": 6, "user:u": 3, "user:v": 7}',
		"$db: the restored session's merged state");

	# the pending long-running call is answered in the restored database
	my $call = $node->safe_psql($db,
		"SELECT interrupt_ids[1] FROM adk.run_states WHERE session_id = 's2' AND status = 'waiting'");
	ok($call ne '', "$db: the restored run waits on its call");
	my $max_call = $node->safe_psql($db, 'SELECT max(id) FROM adk.model_calls');
	ok( $node->safe_psql(
			$db, qq{
		SELECT count(*) > 0 FROM adk_run('app1', 'u1', 's2',
		         adk_function_response('$call', 'request_approval', '{"approved": true}'))}) eq 't',
		"$db: the restored run resumes");
	is( $node->safe_psql(
			$db, q{
		SELECT count(*) = max(seq) AND count(DISTINCT id) = count(*)
		  FROM adk.events WHERE app_name = 'app1' AND user_id = 'u1' AND session_id = 's2'}),
		't',
		"$db: seq stays dense and ids unique after new events");
	is( $node->safe_psql(
			$db, "SELECT status FROM adk.run_states r WHERE session_id = 's2' ORDER BY (SELECT min(e.seq) FROM adk.events e WHERE e.session_id = r.session_id AND e.invocation_id = r.invocation_id)"),
		"completed\ncompleted", "$db: the restored run state is completed by the answer");
	is( $node->safe_psql(
			$db, "SELECT count(*) > 0 AND min(id) > $max_call FROM adk.model_calls WHERE id > $max_call"),
		't',
		"$db: the ledger's ids continue after the restored ones");
	is( $node->safe_psql(
			$db, q{SELECT string_agg(status, ',' ORDER BY started_at) FROM adk.invocations
		 WHERE session_id = 's2'}),
		'completed,completed',
		"$db: the restored invocation that waited has completed");
}

# A job keeps its role by name: role OIDs are not the same in another
# cluster, so a restored row's role_oid is looked up again from role_name
# (and is 0, never another role, when no role has that name).
is( $node->safe_psql(
		'restored_fc', q{
	BEGIN;
	INSERT INTO adk.jobs (invocation_id, app_name, user_id, session_id, message, role_oid, role_name, source, status)
	SELECT 'e-role-1', 'app1', 'u1', 's9', '{}', 4242424, current_user, 'restore', 'completed';
	INSERT INTO adk.jobs (invocation_id, app_name, user_id, session_id, message, role_oid, role_name, source, status)
	SELECT 'e-role-2', 'app1', 'u1', 's9', '{}', 10, 'no_such_role', 'restore', 'queued';
	SELECT string_agg((role_oid = (SELECT oid FROM pg_roles WHERE rolname = current_user))::text
	                  || ':' || role_oid::text, ',' ORDER BY invocation_id)
	  FROM adk.jobs WHERE invocation_id LIKE 'e-role-%';
	ROLLBACK;
}),
	'true:' . $node->safe_psql('postgres', 'SELECT oid FROM pg_roles WHERE rolname = current_user') . ',false:0',
	'a job row takes the OID of the role it names, or none');

$node->stop;
$server->kill_kill;
done_testing();
