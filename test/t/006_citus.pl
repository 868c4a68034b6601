# Citus (docs/operations.md): a coordinator and two workers.  adk_distribute() and
# the layouts it refuses; 8 concurrent appenders on one session (dense seq,
# every row in the shards, none in the coordinator's own tables); the
# weather adk_run turn; a HITL pause and resume with adk.pending_interrupts;
# compaction; adk_submit (a background worker on the coordinator);
# adk_list_sessions; adk_delete_session with its side rows; ADK-JS-style
# plain INSERT / UPDATE; adk_undistribute(); DROP EXTENSION ... CASCADE.
#
# Citus is not packaged for Debian 12: the test runs when citus.so is
# installed in the PostgreSQL tree under test and is skipped otherwise
# (test/ci.sh counts a skipped file neither as passed nor as failed).
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

my $coord = PostgreSQL::Test::Cluster->new('coordinator');
my $pkglibdir = $coord->config_data('--pkglibdir');
plan skip_all => "citus.so is not installed in $pkglibdir (Citus is not packaged for Debian 12)"
  unless -f "$pkglibdir/citus.so";

my $tmp = tempdir(CLEANUP => 1);
my ($server, $url) = start_model_server($tmp);
$url .= "/v1";

my @workers = map { PostgreSQL::Test::Cluster->new("worker$_") } (1, 2);
for my $node ($coord, @workers)
{
	$node->init;
	$node->append_conf(
		'postgresql.conf', qq{
shared_preload_libraries = 'citus,adk_runner'
max_prepared_transactions = 20
max_worker_processes = 24
adk.database = 'postgres'
adk.max_workers = 2
});
	$node->start;
	$node->safe_psql('postgres', 'CREATE EXTENSION citus');
}
# on workers the library is loaded too (their shards' triggers are C), but
# only the coordinator runs background workers
$_->safe_psql('postgres', 'ALTER SYSTEM SET adk.max_workers = 0') for @workers;
$_->restart for @workers;

$coord->safe_psql('postgres',
	"SELECT citus_set_coordinator_host('" . $coord->host . "', " . $coord->port . ")");
$coord->safe_psql('postgres',
	"SELECT citus_add_node('" . $_->host . "', " . $_->port . ")")
  for @workers;
$coord->safe_psql('postgres', 'CREATE EXTENSION adk_runner');
is($workers[0]->safe_psql('postgres', "SELECT count(*) FROM pg_extension WHERE extname = 'adk_runner'"),
	'1', 'CREATE EXTENSION adk_runner reaches the workers');

sub sq { return $coord->safe_psql('postgres', shift); }

sub fails
{
	my ($sql, $re, $name) = @_;
	my ($ret, $out, $err) = $coord->psql('postgres', $sql);
	ok($ret != 0, "$name: fails");
	like($err, $re, "$name: says why");
}

# definitions, and a session with events before distributing
sq(qq{
	SET log_statement = 'none';
	SELECT adk_set_secret('k', 'sk-test', ARRAY['127.0.0.1']);
	RESET log_statement;
	SELECT adk_define_model('m', 'openai', '$url', 'gpt-test', api_key_secret => 'k');
	CREATE FUNCTION get_weather(city text) RETURNS jsonb LANGUAGE sql AS \$\$
	  SELECT jsonb_build_object('city', city, 'forecast', 'sunny', 'temperature_c', 25) \$\$;
	CREATE FUNCTION request_approval(item text) RETURNS jsonb LANGUAGE sql AS \$\$
	  SELECT jsonb_build_object('status', 'pending', 'item', item) \$\$;
	SELECT adk_define_tool('get_weather(text)'::regprocedure);
	SELECT adk_define_tool('request_approval(text)'::regprocedure, long_running => true);
	SELECT adk_define_agent('weather_agent', model => 'm', instruction => 'You answer weather questions.',
	                        tools => ARRAY['get_weather', 'request_approval']);
	SELECT adk_define_app('weather_app', 'weather_agent');
	SELECT adk_define_app('comp_app', 'weather_agent',
	                      compaction => '{"compaction_interval": 2, "overlap_size": 1}');
	SELECT adk_create_session('weather_app', 'u', 'before', '{"app:tier": "gold"}');
});

# --- unsupported layouts are refused, and never written silently ---------
# events distributed alone: an append would place its row on a worker that
# has no session (or, without our check, in the coordinator's shell)
sq(q{
	SET citus.enable_unsafe_triggers = on;
	SELECT create_distributed_table('adk.events', 'session_id');
});
fails(q{SELECT adk_append_event('weather_app', 'u', 'before', '{"author": "user"}')},
	qr/Citus manages adk.sessions or adk.events in a layout adk_runner does not support/,
	'an append with only adk.events distributed');
fails(q{SELECT adk_distribute()},
	qr/Citus manages adk.events, adk.events_p0 in a layout adk_runner does not support.*HINT:  SELECT adk_undistribute\(\)/s,
	'adk_distribute() over a layout of its own');
sq('SELECT adk_undistribute()');
is(sq(q{SELECT count(*) FROM pg_dist_partition WHERE logicalrelid::text LIKE 'adk.%'}),
	'0', 'adk_undistribute() takes it back');
sq(q{
	SELECT adk_append_event('weather_app', 'u', 'before', ('{"author": "user", "id": "b-' || i || '"}')::jsonb)
	  FROM generate_series(1, 3) i;
});
# sessions distributed by the wrong column
sq(q{SET citus.enable_unsafe_triggers = on; SELECT create_distributed_table('adk.sessions', 'app_name')});
fails(q{SELECT adk_append_event('weather_app', 'u', 'before', '{"author": "user"}')},
	qr/Citus manages adk.sessions or adk.events in a layout adk_runner does not support/,
	'an append with adk.sessions distributed by app_name');
fails(q{SELECT adk_distribute()}, qr/Citus manages adk.sessions, adk.sessions_p0 in a layout/,
	'adk_distribute() over it');
sq('SELECT adk_undistribute()');
is(sq(q{SELECT string_agg(id || ':' || seq, ',' ORDER BY seq) FROM adk.events WHERE session_id = 'before'}),
	'b-1:1,b-2:2,b-3:3', 'adk_undistribute() takes it back, the rows as they were');
is(sq(q{SELECT last_seq FROM adk.sessions WHERE id = 'before'}), '3', 'and the session row');

# --- adk_distribute() --------------------------------------------------
sq('SELECT adk_distribute()');
is( sq(q{
	SELECT string_agg(p.logicalrelid::text || ':' || p.partmethod::text || ':' ||
	                  coalesce(column_to_column_name(p.logicalrelid, p.partkey), '-') || ':' ||
	                  (p.colocationid = s.colocationid), ' ' ORDER BY p.logicalrelid::text)
	  FROM pg_dist_partition p,
	       (SELECT colocationid FROM pg_dist_partition WHERE logicalrelid = 'adk.sessions'::regclass) s}),
	'adk.adk_internal_metadata:n:-:false adk.app_states:n:-:false adk.compactions:h:session_id:true '
	  . 'adk.events:h:session_id:true adk.events_p0:h:session_id:true adk.run_states:h:session_id:true '
	  . 'adk.sessions:h:id:true adk.sessions_p0:h:id:true adk.user_states:n:-:false',
	'adk_distribute(): sessions by id, events, run states, compactions colocated, state as reference tables');
is(sq(q{SELECT count(*) FROM adk._citus_tables() WHERE supported}), '9', 'the layout is the supported one');
sq('SELECT adk_distribute()');
pass('adk_distribute() a second time changes nothing');
is(sq(q{SELECT string_agg(id || ':' || seq, ',' ORDER BY seq) FROM adk.events WHERE session_id = 'before'}),
	'b-1:1,b-2:2,b-3:3', 'events stored before keep their seq (the copy does not place them again)');

# Rows on the workers, counted there, shard by shard; and the coordinator's
# own tables (the shells) hold nothing.
sub shard_count
{
	my ($table, $where) = @_;
	my $total = 0;
	my $shard_tables = 0;
	for my $w (@workers)
	{
		my $shards = sq(qq{
			SELECT string_agg(shard_name(s.logicalrelid, s.shardid), ' ')
			  FROM pg_dist_shard s JOIN pg_dist_placement p USING (shardid)
			  JOIN pg_dist_node n USING (groupid)
			 WHERE s.logicalrelid = '$table'::regclass AND n.nodeport = } . $w->port);
		$shard_tables++ if $shards ne '';
		for my $s (split / /, $shards)
		{
			$total += $w->safe_psql('postgres', "SELECT count(*) FROM $s WHERE $where");
		}
	}
	die "no shards of $table on the workers" if $shard_tables != 2;
	return $total;
}
sub shell_size
{
	return sq(qq{SELECT pg_relation_size('$_[0]')});
}

# --- 8 concurrent appenders on one session ------------------------------
sq(q{SELECT adk_create_session('weather_app', 'u', 'race')});
my @h;
for my $a (1 .. 8)
{
	my $script = "$tmp/appender$a.sql";
	open my $fh, '>', $script or die;
	print $fh
	  "SELECT adk_append_event('weather_app', 'u', 'race', '{\"author\": \"a$a\", \"actions\": {\"state_delta\": {\"n$a\": $_}}}') IS NOT NULL;\n"
	  for 1 .. 25;
	close $fh;
	push @h,
	  IPC::Run::start(
		[ 'psql', '-X', '-q', '-v', 'ON_ERROR_STOP=1', '-d', $coord->connstr('postgres'), '-f', $script ],
		'>', "$tmp/appender$a.out", '2>&1');
}
my $failed = 0;
for my $a (0 .. 7)
{
	$h[$a]->finish;
	$failed++ if $h[$a]->result != 0;
}
is($failed, 0, '8 concurrent appenders on one session: no error')
  or diag(slurp_file("$tmp/appender1.out"));
is( sq(q{
	SELECT count(*) || ',' || count(DISTINCT seq) || ',' || min(seq) || ',' || max(seq) || ',' ||
	       bool_and(("timestamp" > lag_ts) IS NOT FALSE)
	  FROM (SELECT seq, "timestamp", lag("timestamp") OVER (ORDER BY seq) AS lag_ts
	          FROM adk.events WHERE session_id = 'race') e}),
	'200,200,1,200,true', 'seq is dense and time strictly increasing');
is(sq(q{SELECT last_seq || ',' || (SELECT count(*) FROM jsonb_object_keys(state)) FROM adk.sessions WHERE id = 'race'}),
	'200,8', 'the session row: last_seq 200, every state delta merged');
is(shard_count('adk.events_p0', "session_id = 'race'"), 200, 'all 200 events are in the shards on the workers');
is(shell_size('adk.events_p0') . ',' . shell_size('adk.sessions_p0'), '0,0',
	"the coordinator's own events and sessions tables hold nothing");

# --- the weather turn --------------------------------------------------
is( sq(q{
	SELECT string_agg(seq || ':' || (event_data ->> 'author'), ' ' ORDER BY seq)
	  FROM adk_run('weather_app', 'u', 'w1', 'What is the weather in Hangzhou?')}),
	'2:weather_agent 3:weather_agent 4:weather_agent', 'adk_run: the weather turn');
is( sq(q{
	SELECT string_agg(coalesce(event_data #>> '{content,parts,0,text}',
	                           event_data #>> '{content,parts,0,function_call,name}',
	                           event_data #>> '{content,parts,0,function_response,name}'), ' | ' ORDER BY seq)
	  FROM adk.events WHERE session_id = 'w1'}),
	'What is the weather in Hangzhou? | get_weather | get_weather | The weather in Hangzhou is sunny, 25°C.',
	'its four events, in order');
is(shard_count('adk.events_p0', "session_id = 'w1'"), 4, 'in the shards');
is(sq(q{SELECT count(*) FROM adk.model_calls c JOIN adk.invocations i USING (invocation_id) WHERE i.session_id = 'w1'}),
	'2', 'two model calls in the ledger (on the coordinator)');

# --- HITL: pause, adk.pending_interrupts, resume -------------------------
is(sq(q{SELECT count(*) FROM adk_run('weather_app', 'u', 'h1', 'call request_approval({"item": "laptop"})')}),
	'2', 'a long-running call pauses the run');
is( sq(q{SELECT status || ',' || cardinality(interrupt_ids) FROM adk.run_states WHERE session_id = 'h1'}),
	'waiting,1', 'its run state waits on one call');
is(sq(q{SELECT session_id || ',' || tool || ',' || (args ->> 'item') FROM adk.pending_interrupts}),
	'h1,request_approval,laptop', 'adk.pending_interrupts shows it');
my $call = sq(q{SELECT call_id FROM adk.pending_interrupts WHERE session_id = 'h1'});
is( sq(qq{
	SELECT string_agg(event_data ->> 'author', ' ' ORDER BY seq)
	  FROM adk_run('weather_app', 'u', 'h1',
	               adk_function_response('$call', 'request_approval', '{"approved": true}'))}),
	'weather_agent', 'the answer resumes it: the model answers');
is( sq(q{SELECT status || ',' || cardinality(interrupt_ids) || ',' || cardinality(answered_ids) FROM adk.run_states WHERE session_id = 'h1'}),
	'completed,0,1', 'the run state is completed');
is(sq('SELECT count(*) FROM adk.pending_interrupts'), '0', 'nothing pending');
is(sq(q{SELECT count(DISTINCT invocation_id) FROM adk.events WHERE session_id = 'h1'}), '1',
	'the resume continued the same invocation');

# --- compaction ----------------------------------------------------------
sq(qq{SELECT count(*) FROM adk_run('comp_app', 'u', 'c1', 'hello $_')}) for 1 .. 2;
is( sq(q{SELECT kind || ':' || from_seq || '-' || to_seq FROM adk.compactions WHERE session_id = 'c1'}),
	'sliding_window:1-4', 'a sliding-window compaction after two invocations');
is( sq(q{SELECT count(*) FROM adk.events WHERE session_id = 'c1' AND event_data -> 'actions' ? 'compaction'}),
	'1', 'its compaction event is stored');
is( sq(q{SELECT jsonb_array_length(adk_prompt('comp_app', 'u', 'c1') -> 'messages') > 0}),
	't', 'adk_prompt reads it');

# --- adk_submit: a background worker on the coordinator ------------------
my $inv = sq(q{SELECT adk_submit('weather_app', 'u', 'sub1', 'What is the weather in Hangzhou?')});
is(sq(qq{SELECT count(*) FROM adk_wait('$inv', '60 s')}), '4', 'adk_submit + adk_wait: the run\'s four events');
is(sq(qq{SELECT status FROM adk.jobs WHERE invocation_id = '$inv'}), 'completed', 'the job completed');
is(shard_count('adk.events_p0', "session_id = 'sub1'"), 4, 'its events are in the shards');

# --- adk_list_sessions ---------------------------------------------------
is( sq(q{
	SELECT string_agg(session_id || ':' || (state ->> 'app:tier') || ':' || last_seq, ' ' ORDER BY session_id)
	  FROM adk_list_sessions('weather_app', 'u')}),
	'before:gold:3 h1:gold:5 race:gold:200 sub1:gold:4 w1:gold:4',
	'adk_list_sessions: every session of the user, with the merged app: state');
is(sq(q{SELECT count(*) FROM adk_list_sessions('weather_app')}), '5', 'and of the app');

# --- ADK-JS-style plain statements ---------------------------------------
sq(q{
	INSERT INTO adk.events (id, app_name, user_id, session_id, invocation_id, "timestamp", event_data)
	VALUES ('js-1', 'weather_app', 'u', 'w1', 'js-inv', '2000-01-01', '{"id": "js-1", "author": "user", "timestamp": 946684800000}');
	UPDATE adk.sessions SET state = state || '{"js": true}', update_time = '2000-01-01'
	 WHERE app_name = 'weather_app' AND user_id = 'u' AND id = 'w1';
	INSERT INTO adk.events (id, app_name, user_id, session_id, invocation_id, "timestamp", event_data)
	VALUES ('js-2', 'weather_app', 'u', 'w1', 'js-inv', now(), '{"id": "js-2", "author": "agent"}');
});
is( sq(q{
	SELECT string_agg(id || ':' || seq, ',' ORDER BY seq) || ',' ||
	       bool_and((event_data ->> 'timestamp')::bigint = (extract(epoch FROM "timestamp") * 1000)::bigint)
	  FROM adk.events WHERE session_id = 'w1' AND seq > 4}),
	'js-1:5,js-2:6,true', 'plain INSERTs get the next seq, and event_data.timestamp equals the column');
is( sq(q{
	SELECT (update_time >= (SELECT max("timestamp") FROM adk.events WHERE session_id = 'w1')) || ',' ||
	       (state ->> 'js') || ',' || last_seq
	  FROM adk.sessions WHERE id = 'w1'}),
	'true,true,6', 'a plain UPDATE of the session: update_time never falls behind its events');
is(shard_count('adk.events_p0', "session_id = 'w1'"), 6, 'in the shards');

# --- adk_delete_session with its side rows -------------------------------
sq(q{SELECT adk_delete_session('weather_app', 'u', 'h1')});
sq(q{SELECT adk_delete_session('comp_app', 'u', 'c1')});
is( sq(q{
	SELECT (SELECT count(*) FROM adk.sessions WHERE id IN ('h1', 'c1')) || ',' ||
	       (SELECT count(*) FROM adk.events WHERE session_id IN ('h1', 'c1')) || ',' ||
	       (SELECT count(*) FROM adk.run_states WHERE session_id = 'h1') || ',' ||
	       (SELECT count(*) FROM adk.compactions WHERE session_id = 'c1')}),
	'0,0,0,0', 'adk_delete_session: the session, its events, run states and compactions');
is(shard_count('adk.events_p0', "session_id IN ('h1', 'c1')") . ',' . shard_count('adk.run_states', 'true'),
	'0,0', 'gone from the shards too');
fails(q{SELECT adk_delete_session('weather_app', 'u', 'h1')}, qr/session "h1" does not exist/,
	'deleting it again');

# --- adk_undistribute(), and back ----------------------------------------
my $before = sq(q{SELECT count(*) || ',' || sum(seq) FROM adk.events});
sq('SELECT adk_undistribute()');
is(sq(q{SELECT count(*) FROM pg_dist_partition}), '0', 'adk_undistribute(): Citus manages nothing of ours');
is(sq(q{SELECT count(*) || ',' || sum(seq) FROM adk.events}), $before, 'every event is back, with its seq');
is(sq(q{SELECT max(seq) FROM adk_run('weather_app', 'u', 'race', 'What is the weather in Hangzhou?')}),
	'204', 'a run on the local tables continues the session');
sq('SELECT adk_distribute()');
is(sq(q{SELECT count(*) FROM adk._citus_tables() WHERE supported}), '9', 'adk_distribute() again');
is(sq(q{SELECT max(seq) FROM adk_run('weather_app', 'u', 'race', 'What is the weather in Hangzhou?')}),
	'208', 'and the session goes on distributed');

# --- DROP EXTENSION ... CASCADE ------------------------------------------
sq('DROP EXTENSION adk_runner CASCADE');
is( sq(q{SELECT (SELECT count(*) FROM pg_dist_partition) || ',' || (SELECT count(*) FROM pg_namespace WHERE nspname = 'adk')}),
	'0,0', 'DROP EXTENSION adk_runner CASCADE on Citus');
is($workers[1]->safe_psql('postgres', "SELECT count(*) FROM pg_extension WHERE extname = 'adk_runner'"),
	'0', 'and on the workers');

$_->stop for ($coord, @workers);
done_testing();
