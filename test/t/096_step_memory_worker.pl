# A job worker's memory is bounded by the step it runs: each step of a run works in a context emptied when the step
# returns, and each run's memory goes when it ends.  A plugin records the
# worker's own memory (the sum over pg_backend_memory_contexts) from
# inside the runs:
#  - one queued run of a loop agent with 1,000 iterations, each answered by
#    before_agent (a plugin call and a stored event per step, no model
#    round), peaks within 1 MB of its own first 10 iterations (before the
#    step context: about 58 MB more);
#  - 1,000 queued runs (one model call each) through one worker holding
#    one run at a time: its memory at the last runs is within 1 MB of what
#    it was at the 100th (a guard: each run's memory already went with
#    the run before the step context; measured growth, 16 kB).
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

my $node = adk_node(
	'step_memory',
	'adk.max_workers' => 1,
	'adk.worker_concurrency' => 1,
	# The histories a worker keeps between runs (docs/workers.md) are a
	# cache bounded by adk.history_carry_size (8 MB by default; tested in
	# 106_history_carry_sessions.pl): 0 keeps only the last run's session,
	# so what grows over 1,000 runs of 1,000 sessions here is a leak.
	'adk.history_carry_size' => 0,
	max_worker_processes => 8);

adk_install(
	$node, 'sk-test', qq{
	SELECT adk_define_model('m', 'openai', '$url', 'gpt-test', api_key_secret => 'k');
	CREATE TABLE mem96 (app text, session text, bytes bigint, at timestamptz DEFAULT clock_timestamp());
	CREATE FUNCTION mem96_record(ctx jsonb) RETURNS void LANGUAGE sql AS \$\$
	  INSERT INTO mem96 (app, session, bytes)
	  SELECT ctx ->> 'app_name', ctx ->> 'session_id', sum(total_bytes) FROM pg_backend_memory_contexts \$\$;
	CREATE FUNCTION mem96_answer(ctx jsonb) RETURNS jsonb LANGUAGE plpgsql AS \$\$
	BEGIN
	  IF ctx ->> 'agent' NOT LIKE 'leaf%' THEN
	    RETURN NULL;
	  END IF;
	  PERFORM mem96_record(ctx);
	  RETURN jsonb_build_object('role', 'model', 'parts',
	                            jsonb_build_array(jsonb_build_object('text', repeat('x', 2000))));
	END \$\$;
	CREATE FUNCTION mem96_model(ctx jsonb) RETURNS jsonb LANGUAGE plpgsql AS \$\$
	BEGIN
	  PERFORM mem96_record(ctx);
	  RETURN NULL;
	END \$\$;
	SELECT adk_define_plugin('answer', before_agent => 'mem96_answer(jsonb)');
	SELECT adk_define_plugin('model_probe', after_model => 'mem96_model(jsonb)');
	SELECT adk_define_agent('leaf10', model => 'm');
	SELECT adk_define_agent('leaf1000', model => 'm');
	SELECT adk_define_agent('loop10', kind => 'loop', sub_agents => ARRAY['leaf10'], max_iterations => 10);
	SELECT adk_define_agent('loop1000', kind => 'loop', sub_agents => ARRAY['leaf1000'], max_iterations => 1000);
	SELECT adk_define_app('wf10', 'loop10', plugins => ARRAY['answer']);
	SELECT adk_define_app('wf1000', 'loop1000', plugins => ARRAY['answer']);
	SELECT adk_define_agent('echo', model => 'm');
	SELECT adk_define_app('echo_app', 'echo', plugins => ARRAY['model_probe']);
});

# 1. many steps of one run
foreach my $app ('wf10', 'wf1000')
{
	my $inv = $node->safe_psql('postgres',
		"SELECT adk_submit('$app', 'u', 's-$app', 'go')");
	is( $node->safe_psql(
			'postgres', "SELECT count(*) FROM adk_wait('$inv', '120 s')"),
		$app eq 'wf10' ? '11' : '1001',
		"$app: the queued run stored one event per iteration");
}
is( $node->safe_psql(
		'postgres', "SELECT app || ':' || count(*) FROM mem96 GROUP BY app ORDER BY app"),
	"wf10:10\nwf1000:1000",
	'the worker recorded its memory at every iteration');
# The 1,000-step run against its own first 10 steps: in the same worker, at
# the same point of its life.  (Against the separate 10-step run, a cache
# that does not grow with steps can differ: the second app's definitions
# took CacheMemoryContext from 1.04 MB used to 1.06 MB, over its 1 MB
# block, so it held 2 MB from the first step of the second run on.)
my ($short, $long, $grow) = split /\|/, $node->safe_psql(
	'postgres', qq{
	WITH r AS (SELECT bytes, row_number() OVER (ORDER BY at) AS step FROM mem96 WHERE app = 'wf1000')
	SELECT (SELECT max(bytes) FROM r WHERE step <= 10),
	       (SELECT max(bytes) FROM r),
	       (SELECT max(bytes) FROM r) - (SELECT max(bytes) FROM r WHERE step <= 10)});
note("worker memory peak of the 1,000-step run: in its first 10 steps $short bytes, in all $long bytes");
cmp_ok($grow, '<', 1024 * 1024,
	'a run of 1,000 steps peaks within 1 MB of its first 10 steps in the worker');

# 2. many runs through one worker
$node->safe_psql('postgres',
	"SELECT count(adk_submit('echo_app', 'u', 'e-' || i, 'hello')) FROM generate_series(1, 1000) i");
$node->poll_query_until('postgres',
	"SELECT count(*) = 1000 FROM adk.jobs WHERE app_name = 'echo_app' AND status = 'completed'", 't')
  or die 'the 1,000 runs did not complete';
is( $node->safe_psql(
		'postgres', "SELECT count(*) FROM mem96 WHERE app = 'echo_app'"),
	'1000', 'each of the 1,000 runs recorded the worker\'s memory');
my ($at100, $last, $runs_grow) = split /\|/, $node->safe_psql(
	'postgres', qq{
	WITH r AS (SELECT bytes, row_number() OVER (ORDER BY at) AS n FROM mem96 WHERE app = 'echo_app')
	SELECT (SELECT max(bytes) FROM r WHERE n BETWEEN 91 AND 100),
	       (SELECT max(bytes) FROM r WHERE n > 990),
	       (SELECT max(bytes) FROM r WHERE n > 990) - (SELECT max(bytes) FROM r WHERE n BETWEEN 91 AND 100)});
note("worker memory: around run 100 $at100 bytes, at the last runs $last bytes");
cmp_ok($runs_grow, '<', 1024 * 1024,
	'after 1,000 runs the worker uses within 1 MB of what it did after 100');

$node->stop;
done_testing();
