# Upgrading from the last release: a server that ran the previous
# release's library and schema, filled with what users keep (sessions with
# events and state of every scope, a paused long-running call, a pending
# confirmation, a running and a queued job, artifacts, memory, budgets, a
# compaction, tenancy settings), gets this build's library as a package
# upgrade would install it, restarts, and is updated with ALTER EXTENSION
# adk_runner UPDATE.
#
#   - between the restart and the update, the new library refuses to work
#     on the old schema with a clear error and a hint, and the job workers
#     wait (they log it once) instead of failing the queued runs;
#   - after the update, the schema equals a fresh install of this version
#     (pg_dump --schema-only of both, compared whole: nothing may differ);
#   - every row is still there and readable through the API; the paused
#     call and the confirmation resume exactly once; the jobs run.
#
# It needs the tree test/scripts/upgrade_tree.sh prepares (test/ci.sh does,
# and passes its path in ADK_UPGRADE_TREE); without one it skips.
use strict;
use warnings;
use File::Copy qw(copy);
use File::Temp qw(tempdir);
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::Bin/../perl";
use AdkTest;

my $tree = $ENV{ADK_UPGRADE_TREE};
plan skip_all => 'ADK_UPGRADE_TREE is not set (test/scripts/upgrade_tree.sh prepares it; test/ci.sh does)'
  unless $tree && -d $tree;
my $dest = "$tree/../../../..";
my $new_so = "$dest/adk_runner.so.new";
# the release's library, as on a server that runs it (a second run of
# this test finds the new one there)
copy("$dest/adk_runner.so.old", "$tree/lib/adk_runner.so") or die "copy the release's library: $!";
my $release = slurp_file("$dest/release");
chomp $release;
my ($lib_version) = (slurp_file("$tree/../../../share/postgresql/"
		  . (split m{/}, $tree)[-1] . "/extension/adk_runner.control") =~ /default_version = '([^']+)'/);
ok($release && $lib_version && $release ne $lib_version,
	"upgrading from release $release to $lib_version");

# every C function any shipped script creates resolves in the new library
# (a database at an older release calls them until it is updated)
my %symbols = map { $_ => 1 } grep { /\S/ }
  map { (split ' ')[-1] } split /\n/, `nm -D --defined-only '$new_so'`;
my @missing;
for my $script (glob("$FindBin::Bin/../../sql/releases/adk_runner--*.sql"),
	glob("$FindBin::Bin/../../adk_runner--*.sql"))
{
	my $sql = slurp_file($script);
	while ($sql =~ /'MODULE_PATHNAME',\s*'([^']+)'/g)
	{
		push @missing, "$1 (" . (split m{/}, $script)[-1] . ')' unless $symbols{$1};
	}
}
ok(scalar(keys %symbols) > 100, 'the new library exports its symbols');
is(join(', ', @missing), '', 'every C symbol of every shipped script is in the new library');

my $tmp = tempdir(CLEANUP => 1);
my ($server, $url) = start_model_server($tmp);

my $node = PostgreSQL::Test::Cluster->new('upgrade', install_path => $tree);
$node->init;
$node->append_conf('postgresql.conf', qq{
shared_preload_libraries = 'adk_runner'
adk.database = 'postgres'
adk.max_workers = 1
adk.worker_concurrency = 1
});
$node->start;

# ---------------------------------------------------------------------
# The previous release, filled
# ---------------------------------------------------------------------
$node->safe_psql('postgres', qq{
	CREATE EXTENSION adk_runner VERSION '$release';
	SET log_statement = 'none';
	SELECT adk_set_secret('k', 'sk-upgrade', ARRAY['127.0.0.1']);
	RESET log_statement;
	SELECT adk_define_model('gpt', 'openai', '$url/v1', 'gpt-4o', api_key_secret => 'k');
	SELECT adk_define_model('slow', 'openai', '$url/v1', 'gpt-latency-4000', api_key_secret => 'k');
	CREATE TABLE tickets (item text);
	CREATE FUNCTION request_approval(item text) RETURNS jsonb LANGUAGE sql AS
	  \$\$ INSERT INTO tickets VALUES (item) RETURNING jsonb_build_object('status', 'pending') \$\$;
	CREATE TABLE payments (amount int, to_account text);
	CREATE FUNCTION send_payment(amount integer, to_account text) RETURNS jsonb LANGUAGE sql AS
	  \$\$ INSERT INTO payments VALUES (amount, to_account) RETURNING jsonb_build_object('paid', amount) \$\$;
	SELECT adk_define_tool('request_approval(text)'::regprocedure, long_running => true);
	SELECT adk_define_tool('send_payment(integer,text)'::regprocedure, require_confirmation => true);
	SELECT adk_define_agent('helper', model => 'gpt', tools => ARRAY['request_approval', 'send_payment']);
	SELECT adk_define_agent('sleeper', model => 'slow');
	SELECT adk_define_app('app', 'helper', compaction => '{"compaction_interval": 100, "overlap_size": 1}');
	SELECT adk_define_app('slow_app', 'sleeper');
	SELECT adk_define_app('tenant_app', 'helper', tenancy => 'role');
	INSERT INTO adk.budgets (app_name, period, max_tokens) VALUES ('app', 'total', 1000000);
	SELECT adk_create_session('app', 'u', 's1',
	    '{"app:motto": "be kind", "user:name": "Ann", "topic": "upgrades", "temp:x": 1}');
});
$node->safe_psql('postgres', q{
	SELECT count(*) FROM adk_run('app', 'u', 's1', 'hello');
	SELECT count(*) FROM adk_run('app', 'u', 's1', 'and again');
	SELECT adk_append_event('app', 'u', 's1',
	    '{"author": "user", "invocation_id": "e-ext", "content": {"role": "user", "parts": [{"text": "from outside"}]},
	      "actions": {"state_delta": {"topic": "still upgrades", "user:seen": true}}}');
	SELECT count(*) FROM adk_run('app', 'u', 's2', 'call request_approval({"item": "laptop"})');
	SELECT count(*) FROM adk_run('app', 'u', 's3', 'call send_payment({"amount": 100, "to_account": "ACME"})');
	SELECT adk_save_artifact('app', 'u', 's1', 'notes.txt', 'version one', 'text/plain');
	SELECT adk_save_artifact('app', 'u', 's1', 'notes.txt', 'version two', 'text/plain');
	SELECT adk_add_session_to_memory('app', 'u', 's1');
	SELECT adk_compact('app', 'u', 's1');
});
# a job that runs (the slow model holds it) and one queued behind it: one
# worker holding one run
my $running = $node->safe_psql('postgres',
	q{SELECT adk_submit('slow_app', 'u', 'j1', 'a slow question', options => '{"retries": 1}')});
$node->poll_query_until('postgres',
	"SELECT status = 'running' FROM adk.jobs WHERE invocation_id = '$running'")
  or die "the slow job did not start";
my $queued = $node->safe_psql('postgres',
	q{SELECT adk_submit('app', 'u', 'j2', 'a queued question')});

my (%before, %queries);
for my $q (
	['events', q{SELECT count(*) FROM adk.events WHERE session_id NOT IN ('j1', 'j2')}],
	['sessions', q{SELECT count(*) FROM adk.sessions WHERE id NOT IN ('j1', 'j2')}],
	['state', q{SELECT adk_get_session('app', 'u', 's1') -> 'state'}],
	['model_calls', q{SELECT count(*) FROM adk.model_calls c
	    WHERE NOT EXISTS (SELECT 1 FROM adk.invocations i
	                       WHERE i.invocation_id = c.invocation_id AND i.session_id IN ('j1', 'j2'))}],
	['artifacts', q{SELECT count(*) FROM adk.artifacts}],
	['memory', 'SELECT count(*) FROM adk.memory'],
	['compactions', 'SELECT count(*) FROM adk.compactions'],
	['budget_spend', 'SELECT sum(model_calls) FROM adk.budget_spend'],
	['pending', 'SELECT count(*) FROM adk.pending_interrupts'],
	['tenancy', q{SELECT tenancy FROM adk.apps WHERE name = 'tenant_app'}])
{
	$queries{ $q->[0] } = $q->[1];
	$before{ $q->[0] } = $node->safe_psql('postgres', $q->[1]);
}
is($before{pending}, '2', 'the old release holds a paused call and a pending confirmation');
like($before{state}, qr/"app:motto": "be kind".*"user:name": "Ann"/s, 'state of every scope before');
ok($before{compactions} >= 1, 'a compaction is recorded');

# ---------------------------------------------------------------------
# The package upgrade: the new library, a restart
# ---------------------------------------------------------------------
$node->stop('fast');
copy($new_so, "$tree/lib/adk_runner.so") or die "copy the new library: $!";
my $log_offset = -s $node->logfile;
$node->start;

my ($rc, $out, $err) = $node->psql('postgres',
	q{SELECT count(*) FROM adk_run('app', 'u', 's1', 'before the update')});
like($err, qr/extension "adk_runner" is installed at version \Q$release\E, but its library is version \Q$lib_version\E/,
	'before the update: adk_run refuses the old schema');
like($err, qr/HINT:\s+Run ALTER EXTENSION adk_runner UPDATE/, 'the error says what to do');
($rc, $out, $err) = $node->psql('postgres',
	q{SELECT adk_append_event('app', 'u', 's1', '{"author": "user"}')});
like($err, qr/installed at version \Q$release\E/, 'before the update: appends are refused too');
is($node->safe_psql('postgres', $queries{events}), $before{events},
	'nothing was written before the update');
ok( $node->poll_query_until('postgres',
		"SELECT pg_read_file('" . $node->logfile . "', $log_offset, 1000000) LIKE '%queued runs wait%'"),
	'the workers log that they wait for the update');
sleep 2;
is( $node->safe_psql('postgres',
		"SELECT string_agg(status, ',' ORDER BY id) FROM adk.jobs WHERE invocation_id IN ('$running', '$queued')"),
	'running,queued', 'the workers touch no job before the update');
my $waits = () = slurp_file($node->logfile, $log_offset) =~ /queued runs wait/g;
ok($waits >= 1 && $waits <= 3, "the wait is logged once per worker process ($waits)");

# ---------------------------------------------------------------------
# ALTER EXTENSION ... UPDATE
# ---------------------------------------------------------------------
$node->safe_psql('postgres', 'ALTER EXTENSION adk_runner UPDATE');
is($node->safe_psql('postgres', q{SELECT extversion FROM pg_extension WHERE extname = 'adk_runner'}),
	$lib_version, "updated to $lib_version");

# (a) the schema equals a fresh install's: the extension's members are
# made plain objects in two scratch databases, one updated from the
# release and one installed fresh, and pg_dump --schema-only compared.
$node->safe_psql('postgres', 'CREATE DATABASE via_update');
$node->safe_psql('postgres', 'CREATE DATABASE fresh');
$node->safe_psql('via_update',
	"CREATE EXTENSION adk_runner VERSION '$release'; ALTER EXTENSION adk_runner UPDATE");
$node->safe_psql('fresh', 'CREATE EXTENSION adk_runner');
# (pg_dump prints an extension object's privileges only where they differ
# from those its scripts left, recorded in pg_init_privs: forgotten there
# too, so that the privileges are compared whole)
my $unmember = q{
	DELETE FROM pg_init_privs i USING pg_depend d
	 WHERE d.refclassid = 'pg_extension'::regclass AND d.deptype = 'e'
	   AND d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'adk_runner')
	   AND i.classoid = d.classid AND i.objoid = d.objid;
	DELETE FROM pg_depend
	 WHERE refclassid = 'pg_extension'::regclass AND deptype = 'e'
	   AND refobjid = (SELECT oid FROM pg_extension WHERE extname = 'adk_runner')};
my %dump;
for my $db ('via_update', 'fresh')
{
	$node->safe_psql($db, $unmember);
	my $file = "$tmp/$db.sql";
	$node->command_ok(
		[ 'pg_dump', '--schema-only', '-d', $node->connstr($db), '-f', $file ],
		"pg_dump --schema-only of $db");
	# (pg_dump's \restrict key is new in every dump)
	($dump{$db} = slurp_file($file)) =~ s/^\\(un)?restrict .*$//mg;
	open(my $fh, '>', "$tmp/$db.clean.sql") or die $!;
	print $fh $dump{$db};
	close $fh;
}
ok(length($dump{fresh}) > 100000, 'the fresh dump holds the whole schema');
like($dump{fresh}, qr/GRANT SELECT ON TABLE adk\.model_definitions TO adk_user/,
	'and its privileges');
if ($dump{via_update} eq $dump{fresh})
{
	pass('the updated schema equals a fresh install (pg_dump --schema-only)');
}
else
{
	my $diff = `diff -u $tmp/fresh.clean.sql $tmp/via_update.clean.sql | head -n 80`;
	fail('the updated schema equals a fresh install (pg_dump --schema-only)');
	diag($diff);
}

# the jobs: the queued one runs, the one the restart cut off is retried
ok( $node->poll_query_until('postgres',
		"SELECT string_agg(status, ',' ORDER BY id) = 'completed,completed' FROM adk.jobs"
		  . " WHERE invocation_id IN ('$running', '$queued')"),
	'both jobs complete after the update');
is( $node->safe_psql('postgres',
		q{SELECT count(*) FROM adk.events WHERE session_id = 'j2' AND event_data ->> 'author' = 'helper'}),
	'1', 'the queued job answered');

# (b) every row is still there and readable through the API
for my $k ('events', 'sessions', 'model_calls')
{
	is($node->safe_psql('postgres', $queries{$k}), $before{$k}, "$k kept");
}
is($node->safe_psql('postgres', q{SELECT adk_get_session('app', 'u', 's1') -> 'state'}),
	$before{state}, 'state of every scope kept');
is( $node->safe_psql('postgres',
		q{SELECT jsonb_array_length(adk_get_session('app', 'u', 's1') -> 'events')}),
	$node->safe_psql('postgres', q{SELECT count(*) FROM adk.events WHERE session_id = 's1'}),
	'the session reads back with all its events');
is( $node->safe_psql('postgres',
		q{SELECT count(*) FROM adk.model_calls c JOIN adk.invocations i USING (invocation_id)
		   WHERE c.app_name IS DISTINCT FROM i.app_name OR c.user_id IS DISTINCT FROM i.user_id}),
	'0', "the release's model calls of runs belong to their run's user");
is( $node->safe_psql('postgres',
		q{SELECT convert_from(adk_load_artifact('app', 'u', 's1', 'notes.txt'), 'UTF8')}),
	'version two', 'artifacts read back');
is($node->safe_psql('postgres', q{SELECT count(*) > 0 FROM adk_search_memory('app', 'u', 'again')}),
	't', 'memory searches');
is($node->safe_psql('postgres', 'SELECT count(*) FROM adk.compactions'), $before{compactions},
	'compactions kept');
is( $node->safe_psql('postgres',
		qq{SELECT sum(model_calls) - (SELECT count(*) FROM adk.model_calls WHERE invocation_id = '$queued')
		     FROM adk.budget_spend}),
	$before{budget_spend}, 'budget spend kept (and counting)');
is($node->safe_psql('postgres', q{SELECT tenancy FROM adk.apps WHERE name = 'tenant_app'}),
	'role', 'tenancy settings kept');

# (c) the paused call and the confirmation resume exactly once
my $call = $node->safe_psql('postgres',
	q{SELECT call_id FROM adk.pending_interrupts WHERE session_id = 's2'});
is( $node->safe_psql('postgres',
		qq{SELECT count(*) > 0 FROM adk_run('app', 'u', 's2',
		   adk_function_response('$call', 'request_approval', '{"approved": true}'))}),
	't', 'the paused long-running call resumes');
is( $node->safe_psql('postgres',
		q{SELECT count(DISTINCT invocation_id) FROM adk.events WHERE session_id = 's2'}),
	'1', 'in the invocation that paused');
is($node->safe_psql('postgres', 'SELECT count(*) FROM tickets'), '1', 'the long-running tool ran once');
my $confirm = $node->safe_psql('postgres',
	q{SELECT call_id FROM adk.pending_interrupts WHERE session_id = 's3'});
my $answer = qq{adk_function_response('$confirm', 'adk_request_confirmation', '{"confirmed": true}')};
$node->safe_psql('postgres', "SELECT count(*) FROM adk_run('app', 'u', 's3', $answer)");
is($node->safe_psql('postgres', "SELECT count(*) FROM adk_run('app', 'u', 's3', $answer)"),
	'0', 'a repeated confirmation runs nothing');
is($node->safe_psql('postgres', 'SELECT count(*) FROM payments'), '1', 'the confirmed tool ran once');
is($node->safe_psql('postgres', 'SELECT count(*) FROM adk.pending_interrupts'), '0', 'nothing pending');

# the update brought no error into the log
unlike(slurp_file($node->logfile, $log_offset), qr/FATAL|PANIC|server process .* was terminated/,
	'no worker died');

$node->stop;
done_testing();
