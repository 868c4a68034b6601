# The caller's search_path never reaches the extension's own SQL in the
# background workers either (the in-backend functions are in
# sql/521_search_path).  A member of adk_user shadows the operators and
# functions the extension uses (the same shadows as sql/52), queues runs
# with adk_submit, waits with adk_wait, cancels and interrupts, and fires
# a trigger on her own table; her tool, running in the worker as her,
# puts her schema first in the worker's search_path for the rest of the
# job.  No shadow may run as another role (the worker's superuser, the
# schema owner), and she must not become superuser.  Her tool still runs
# as her with the search_path of the worker's session.  Also: what LISTEN
# adk_events / adk_jobs hands a role with no adk grants.
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
# the server goes with the test, even one that dies half-way
END { $server->kill_kill if $server; }
$url .= "/v1";

my $node = adk_node('search_path_worker', 'adk.max_workers' => 2);

# the shadows of sql/521_search_path.sql, from "the shadows" to "shadows end"
my $regress = slurp_file("$FindBin::Bin/../../sql/521_search_path.sql");
$regress =~ /^(-- the shadows:.*?)^-- shadows end$/ms
  or die 'no shadows in sql/521_search_path.sql';
my $shadows = $1;

$node->safe_psql(
	'postgres', qq{
	CREATE EXTENSION adk_runner;
	CREATE ROLE regress_alice LOGIN IN ROLE adk_user;
	CREATE SCHEMA regress_alice AUTHORIZATION regress_alice;
	CREATE TABLE public.shadow_log (what text, who text, context text);
	GRANT INSERT ON public.shadow_log TO PUBLIC;
	SELECT adk_set_secret('k', 'sk-test', ARRAY['127.0.0.1']);
	SELECT adk_define_model('m', 'openai', '$url', 'gpt-test', api_key_secret => 'k');
	-- her tool: reports who runs it, and puts her schema first for the
	-- rest of the worker's session
	CREATE FUNCTION public.sp_tool(note text) RETURNS jsonb LANGUAGE plpgsql AS \$\$
	BEGIN
	  PERFORM pg_catalog.set_config('search_path', 'regress_alice, public, pg_catalog', false);
	  RETURN pg_catalog.jsonb_build_object('user', current_user::text,
	                                       'path', pg_catalog.current_setting('search_path'));
	END \$\$;
	SELECT adk_define_tool('public.sp_tool(text)'::regprocedure, description => 'Who runs me.');
	SELECT adk_define_agent('sp_agent', model => 'm', tools => ARRAY['sp_tool']);
	SELECT adk_define_app('sp_app', 'sp_agent', compaction => '{"compaction_interval": 2}');
	SET ROLE regress_alice;
	$shadows
});

my $as_alice = "SET ROLE regress_alice; SET search_path = regress_alice, public, pg_catalog;";

# adk_submit + adk_wait: the tool call, its response, the answer, and a
# compaction at the end of the invocation
my $inv = $node->safe_psql('postgres',
	qq{$as_alice SELECT adk_submit('sp_app', 'regress_alice', 'w1', 'call sp_tool({"note": "x"})')});
like($inv, qr/^e-/, 'adk_submit as her, with her schema first');
is( $node->safe_psql(
		'postgres',
		qq{$as_alice SELECT count(*) >= 3 FROM adk_wait('$inv', '60 s')}),
	't', 'adk_wait as her returns the run\'s events');
# a second run in the same session: more events, another compaction
$inv = $node->safe_psql('postgres',
	qq{$as_alice SELECT adk_submit('sp_app', 'regress_alice', 'w1', 'call sp_tool({"note": "y"})')});
$node->safe_psql('postgres', qq{$as_alice SELECT count(*) FROM adk_wait('$inv', '60 s')});
is( $node->safe_psql(
		'postgres',
		q{SELECT string_agg(status, ',' ORDER BY id) FROM adk.jobs WHERE session_id = 'w1'}),
	'completed,completed',
	'both jobs completed');
is( $node->safe_psql(
		'postgres', q{
	SELECT DISTINCT e.event_data #> '{content,parts,0,function_response,response}'
	  FROM adk.events e
	 WHERE e.session_id = 'w1'
	   AND e.event_data #>> '{content,parts,0,function_response,name}' = 'sp_tool'}),
	'{"path": "regress_alice, public, pg_catalog", "user": "regress_alice"}',
	'the tool ran in the worker as her (and set her search_path)');
ok( $node->safe_psql(
		'postgres',
		q{SELECT count(*) FROM adk.compactions WHERE session_id = 'w1'}) > 0,
	'the worker compacted the session after her tool changed search_path');

# adk_cancel on a queued run, adk_interrupt on a session
$node->safe_psql(
	'postgres', qq{
	$as_alice
	BEGIN;
	SELECT adk_submit('sp_app', 'regress_alice', 'w2', 'never') AS inv \\gset
	SELECT adk_cancel(:'inv');
	COMMIT;
	BEGIN;
	SELECT adk_submit('sp_app', 'regress_alice', 'w3', 'never either');
	SELECT adk_interrupt('sp_app', 'regress_alice', 'w3');
	COMMIT;
});
is( $node->safe_psql(
		'postgres',
		q{SELECT string_agg(status, ',' ORDER BY id) FROM adk.jobs WHERE session_id IN ('w2', 'w3')}),
	'cancelled,cancelled',
	'adk_cancel and adk_interrupt as her cancel her queued runs');

# a trigger on her own table fires a run; the job runs her tool
$node->safe_psql(
	'postgres', qq{
	$as_alice
	CREATE TABLE regress_alice.orders (id bigint, customer text, note text);
	SELECT adk_create_trigger('regress_alice.orders', 'sp_app',
	                          'call sp_tool({"note": "order {{id}}"})', 'customer', 'customer');
	INSERT INTO regress_alice.orders VALUES (1, 'regress_alice', 'first');
});
$node->poll_query_until('postgres',
	q{SELECT count(*) = 1 FROM adk.jobs WHERE session_id = 'regress_alice' AND status NOT IN ('queued', 'running')})
  or die 'the triggered job did not end';
is( $node->safe_psql(
		'postgres',
		q{SELECT status || ',' || source || ',' || role_name FROM adk.jobs WHERE session_id = 'regress_alice'}),
	'completed,trigger adk_sp_app on regress_alice.orders,regress_alice',
	'the row trigger queued a run, completed as her');
$node->safe_psql('postgres',
	qq{$as_alice SELECT adk_drop_trigger('regress_alice.orders')});

# a privileged writer with her schema first: the BEFORE INSERT trigger on
# adk.events places the event with search_path pinned
$node->safe_psql(
	'postgres', q{
	SET search_path = regress_alice, public, pg_catalog;
	INSERT INTO adk.events (id, app_name, user_id, session_id, invocation_id, "timestamp", event_data)
	VALUES ('ev-direct', 'sp_app', 'regress_alice', 'w1', 'e-direct', '2026-01-01 00:00:00+00',
	        '{"author": "user", "actions": {"state_delta": {"x": 1, "app:y": 2, "user:z": 3}}}');
});

# nothing ran as another role; she is not superuser
is($node->safe_psql('postgres', 'SELECT count(*) FROM public.shadow_log'),
	'0', 'no shadow ran as another role')
  or diag($node->safe_psql('postgres',
	'SELECT what, who, context FROM public.shadow_log ORDER BY 1, 2'));
is( $node->safe_psql(
		'postgres', q{SELECT rolsuper FROM pg_roles WHERE rolname = 'regress_alice'}),
	'f', 'she did not become superuser');

# LISTEN adk_events / adk_jobs: any role may listen, even one with no adk
# grants; by default it learns row ids only, which it cannot look up
$node->safe_psql('postgres', 'CREATE ROLE regress_nobody LOGIN');
my $listener = $node->background_psql('postgres');
$listener->query_safe('SET ROLE regress_nobody; LISTEN adk_events; LISTEN adk_jobs;');
$inv = $node->safe_psql('postgres',
	qq{$as_alice SELECT adk_submit('sp_app', 'regress_alice', 'listened-to', 'hello')});
$node->safe_psql('postgres', qq{$as_alice SELECT count(*) FROM adk_wait('$inv', '60 s')});
$node->safe_psql('postgres',
	q{SELECT adk_append_event('sp_app', 'regress_alice', 'listened-to', '{"author": "someone"}')});
my $notes = $listener->query_safe('SELECT 1');
$notes .= $listener->{stdout} // '';
my @events = $notes =~ /"adk_events" with payload "(\{[^"]*"event_id":"[^"]*"[^}]*\})"/g;
my @jobs = $notes =~ /"adk_jobs" with payload "(\{[^}]*\})"/g;
ok(@events >= 3, 'the listener got NOTIFY adk_events for every event');
ok(@jobs >= 1, 'the listener got NOTIFY adk_jobs');
unlike($notes, qr/sp_app|regress_alice|listened-to|\Q$inv\E/,
	'no app, user, session or invocation id in any payload');
like($events[0] // '', qr/^\{"event_id":"[^"]+"\}$/, 'adk_events carries the event id only');
like($jobs[-1] // '', qr/^\{"job_id":\d+,"status":"completed"\}$/,
	'adk_jobs carries the job id and its status');
my ($event_id) = ($events[0] // '') =~ /"event_id":"([^"]+)"/;
my ($job_id) = ($jobs[-1] // '') =~ /"job_id":(\d+)/;
$event_id //= '';
$job_id //= 0;
my ($ret, $out, $err) = $node->psql('postgres',
	qq{SET ROLE regress_nobody; SELECT session_id FROM adk.events WHERE id = '$event_id'});
like($err, qr/permission denied for schema adk/, 'the listener cannot look the event up');
is( $node->safe_psql(
		'postgres',
		qq{$as_alice SELECT e.session_id || ',' || j.invocation_id
		     FROM adk.events e, adk.jobs j WHERE e.id = '$event_id' AND j.id = $job_id}),
	"listened-to,$inv",
	'a reader with the privileges looks both up');
$listener->quit;

# adk.notify_payload = full: the ids themselves (superusers decide)
($ret, $out, $err) = $node->psql('postgres',
	qq{$as_alice SET adk.notify_payload = full});
like($err, qr/permission denied to set parameter "adk.notify_payload"/,
	'adk.notify_payload is not a user\'s to set');
$node->append_conf('postgresql.conf', 'adk.notify_payload = full');
$node->reload;
$node->poll_query_until('postgres', q{SELECT current_setting('adk.notify_payload') = 'full'})
  or die 'adk.notify_payload not reloaded';
select(undef, undef, undef, 0.5);	# the idle workers reload too
$listener = $node->background_psql('postgres');
$listener->query_safe('LISTEN adk_events; LISTEN adk_jobs;');
$inv = $node->safe_psql('postgres',
	qq{$as_alice SELECT adk_submit('sp_app', 'regress_alice', 'listened-to', 'again')});
$node->safe_psql('postgres', qq{$as_alice SELECT count(*) FROM adk_wait('$inv', '60 s')});
$notes = $listener->query_safe('SELECT 1') . ($listener->{stdout} // '');
like($notes,
	qr/"adk_events" with payload "\{"event_id":"[^"]+","app":"sp_app","user":"regress_alice","session":"listened-to","seq":\d+,"invocation_id":"$inv","author":"user"\}"/,
	'with adk.notify_payload = full, adk_events carries the ids');
like($notes, qr/"adk_jobs" with payload "\{"job_id":\d+,"invocation_id":"$inv","status":"completed"\}"/,
	'with adk.notify_payload = full, adk_jobs carries the invocation id');
$listener->quit;

is($node->safe_psql('postgres', 'SELECT count(*) FROM public.shadow_log'),
	'0', 'no shadow ran as another role while notifying either');

$node->stop;
done_testing();
