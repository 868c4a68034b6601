# Session retention by the launcher: with an app's idle TTL set, the
# launcher deletes expired sessions by itself, in batches of at most 100
# sessions per transaction (watched from outside: the count never drops by
# more than 100 between two looks), passes over a session another
# transaction holds (SKIP LOCKED) without waiting for it, and leaves the
# sessions of other apps and the active ones alone.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time usleep);
use FindBin;
use lib "$FindBin::Bin/../perl";
use AdkTest;

my $node = adk_node('retention');
adk_install(
	$node, 'sk-test', q{
	SELECT adk_define_model('m', 'openai', 'http://127.0.0.1:9/v1', 'gpt-test', api_key_secret => 'k');
	SELECT adk_define_agent('ag', model => 'm');
	SELECT adk_define_app('keep', 'ag');
	SELECT adk_define_app('ttl', 'ag');
});

# one session held by another transaction, committed first
$node->safe_psql('postgres', q{
	INSERT INTO adk.sessions (id, app_name, user_id, state, create_time, update_time)
	VALUES ('held', 'ttl', 'u', '{}', now() - interval '3 days', now() - interval '3 days')});
my $holder = $node->background_psql('postgres');
$holder->query_safe(q{BEGIN; SELECT 1 FROM adk.sessions WHERE id = 'held' FOR UPDATE});

# 250 expired sessions with an event each, 10 in another app, 5 active
# ones, and the TTL, in one transaction: the launcher's next round finds
# them all at once
$node->safe_psql('postgres', q{
	BEGIN;
	INSERT INTO adk.sessions (id, app_name, user_id, state, create_time, update_time)
	SELECT 'old' || i, 'ttl', 'u' || (i % 7), '{}', now() - interval '3 days', now() - interval '2 days'
	  FROM generate_series(1, 250) i;
	INSERT INTO adk.events (id, app_name, user_id, session_id, invocation_id, "timestamp", event_data, seq)
	SELECT 'e' || i, 'ttl', 'u' || (i % 7), 'old' || i, 'inv' || i, now() - interval '2 days',
	       jsonb_build_object('id', 'e' || i, 'author', 'user'), 1
	  FROM generate_series(1, 250) i;
	INSERT INTO adk.sessions (id, app_name, user_id, state, create_time, update_time)
	SELECT 'other' || i, 'keep', 'u', '{}', now() - interval '3 days', now() - interval '2 days'
	  FROM generate_series(1, 10) i;
	INSERT INTO adk.sessions (id, app_name, user_id, state, create_time, update_time)
	SELECT 'new' || i, 'ttl', 'u', '{}', now() - interval '3 days', now()
	  FROM generate_series(1, 5) i;
	SELECT adk_define_app_retention('ttl', idle_ttl => '1 day');
	COMMIT;});

# watch the expired sessions go
my $count_sql = q{SELECT count(*) FROM adk.sessions WHERE app_name = 'ttl' AND id LIKE 'old%'};
my @seen = (250);
my $t0 = time;
while (time - $t0 < 120)
{
	my $n = $node->safe_psql('postgres', $count_sql);
	push @seen, $n if $n != $seen[-1];
	last if $n == 0;
	usleep(20_000);
}
is($seen[-1], 0, 'the launcher deleted every expired session by itself');
my @drops = map { $seen[ $_ - 1 ] - $seen[$_] } 1 .. $#seen;
note('counts seen: ' . join(' ', @seen));
ok(@drops >= 3, 'in several transactions (' . scalar(@drops) . ')');
ok(!grep({ $_ > 100 } @drops), 'none of them deleting more than 100 sessions');
is($node->safe_psql('postgres', q{SELECT count(*) FROM adk.events WHERE app_name = 'ttl'}),
	'0', 'their events went with them');
is( $node->safe_psql(
		'postgres',
		q{SELECT string_agg(app_name || '/' || id, ' ' ORDER BY app_name, id) FROM adk.sessions
		   WHERE id = 'held' OR id LIKE 'new%' OR id = 'other1'}),
	'keep/other1 ttl/held ttl/new1 ttl/new2 ttl/new3 ttl/new4 ttl/new5',
	'the held session, the active ones and another app\'s are left');
is($node->safe_psql('postgres', q{SELECT count(*) FROM adk.sessions WHERE app_name = 'keep'}),
	'10', 'all of the other app\'s');
is( $node->safe_psql(
		'postgres', q{SELECT count(*) FROM adk.sessions_due WHERE app_name = 'ttl' AND NOT waiting}),
	'1', 'the held session is still due');
$holder->query_safe('ROLLBACK');
$holder->quit;

# the launcher is still running its rounds
like($node->safe_psql('postgres', q{SELECT count(*) FROM pg_stat_activity
	WHERE application_name = 'adk_runner launcher'}), qr/^1$/, 'the launcher is alive');

$node->stop;
done_testing();
