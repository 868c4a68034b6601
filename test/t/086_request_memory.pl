# A run's memory is bounded by the bytes of the request it sends: a run
# whose one model call sends a 16 MB history raises its backend's peak
# resident memory (VmHWM of /proc/self/status, over the same backend's
# after a small run) by less than 4 times the request's bytes.  Measured
# (test/bench/request_memory.sh): 17.2 times before the request's copies
# were cut, 6.3 with the ledger's copy compressed early, 3.2 now that
# the history read goes once the contents are made, the provider's
# messages reference the contents' text, and the ledger's jsonb is made
# and compressed before the text is printed.  The same for a job worker
# holding four such runs at once: each run holds its request's contents
# and its text (and the ledger's compressed copy) while it waits, and the
# worker builds one request at a time (about 2 more copies while it is
# built), so it peaks at less than 4 x 2 + 4 times one request's bytes.
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
my ($server, $url) = start_model_server($tmp);
$url .= "/v1";

my $node = adk_node(
	'request_memory',
	'adk.max_workers' => 1,
	'adk.worker_concurrency' => 4,
	'adk.worker_idle_timeout' => "'5min'",
	shared_buffers => "'16MB'",
	max_worker_processes => 8);

# sessions of 12 events of 1/12 of 16 MB each, the last a model turn
my $mb = 16;
adk_install(
	$node, 'sk-test', qq{
	SELECT adk_define_model('m', 'openai', '$url', 'gpt-test', api_key_secret => 'k');
	SELECT adk_define_model('slow', 'openai', '$url', 'gpt-test-latency-1500', api_key_secret => 'k');
	SELECT adk_define_agent('a', model => 'm');
	SELECT adk_define_agent('s', model => 'slow');
	SELECT adk_define_app('big', 'a');
	SELECT adk_define_app('big_jobs', 's');
	CREATE FUNCTION vmhwm_kb(pid int DEFAULT NULL) RETURNS bigint LANGUAGE sql AS \$\$
	  SELECT substring(pg_read_file('/proc/' || coalesce(pid::text, 'self') || '/status')
	                   FROM 'VmHWM:\\s+(\\d+) kB')::bigint \$\$;
	CREATE FUNCTION fill(app text, session text) RETURNS void LANGUAGE sql AS \$\$
	  SELECT adk_create_session(app, 'u', session);
	  SELECT adk_append_event(app, 'u', session,
	           jsonb_build_object('author', CASE WHEN i % 2 = 1 THEN 'user' ELSE 'a' END,
	                              'content', jsonb_build_object(
	                                'role', CASE WHEN i % 2 = 1 THEN 'user' ELSE 'model' END,
	                                'parts', jsonb_build_array(jsonb_build_object(
	                                  'text', i || ' ' || repeat('history ', $mb * 1048576 / 12 / 8))))))
	    FROM generate_series(1, 12) i;
	\$\$;
	SELECT fill('big', 'big');
	SELECT fill('big_jobs', 'j' || j) FROM generate_series(1, 4) j;
	SELECT adk_create_session('big', 'u', 'warm');
});

# 1. adk_run in this backend
my $grow = $node->safe_psql(
	'postgres', q{
	SELECT count(*) FROM (SELECT adk_run('big', 'u', 'warm', 'hi')) x;
	SELECT vmhwm_kb() AS base \gset
	SELECT count(*) FROM (SELECT adk_run('big', 'u', 'big', 'hi')) x;
	SELECT (vmhwm_kb() - :base) * 1024;
});
$grow = (split /\n/, $grow)[-1];
my $req = $node->safe_psql('postgres',
	q{SELECT max(octet_length(request::text)) FROM adk.model_calls});
ok($req > 15 * 1048576, "the request carried the history ($req bytes)");
my $ratio = $grow / $req;
note sprintf("adk_run: peak %.1f MB over the baseline, %.1f x the request", $grow / 1048576, $ratio);
cmp_ok($ratio, '<', 4, 'adk_run: peak memory under 4 x the request');

# 2. a job worker holding four such runs at once (each model call takes
# 1.5 s, so their requests are in flight together)
$node->safe_psql('postgres',
	q{SELECT adk_submit('big_jobs', 'u', 'warm', 'hi')});
wait_jobs_done($node, 'true', 60) // die 'warm-up job not done';
my $wpid = $node->safe_psql('postgres',
	q{SELECT pid FROM pg_stat_activity WHERE application_name = 'adk_runner job worker'});
ok($wpid =~ /^\d+$/, 'one job worker');
my $wbase = $node->safe_psql('postgres', "SELECT vmhwm_kb($wpid)");
$node->safe_psql('postgres',
	q{SELECT adk_submit('big_jobs', 'u', 'j' || j, 'hi') FROM generate_series(1, 4) j});
wait_jobs_done($node, 'true', 120) // die 'jobs not done';
my $wpid2 = $node->safe_psql('postgres',
	q{SELECT pid FROM pg_stat_activity WHERE application_name = 'adk_runner job worker'});
is($wpid2, $wpid, 'the same worker ran them');
my $wgrow = ($node->safe_psql('postgres', "SELECT vmhwm_kb($wpid)") - $wbase) * 1024;
is($node->safe_psql('postgres',
		q{SELECT count(*) FROM adk.model_calls c JOIN adk.invocations i USING (invocation_id)
		  WHERE i.session_id LIKE 'j_' AND c.error_code IS NULL}),
	'4', 'four requests sent');
my $wratio = $wgrow / $req;
note sprintf("worker, 4 runs: peak %.1f MB over the baseline, %.1f x one request", $wgrow / 1048576, $wratio);
cmp_ok($wratio, '<', 4 * 2 + 4, 'worker: peak memory under 4 x 2 + 4 x one request');

$node->stop;
done_testing();
