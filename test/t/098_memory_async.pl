# Memory's embeddings drive the stepper: inside a run, the
# embedding request is started in one step and its answer consumed in a
# later one, so a job worker goes on with its other runs meanwhile.  With
# one job worker and an embedding model that takes 4 s:
#  (a) adding a completed invocation to memory (adk.apps.add_to_memory):
#      other sessions' runs end while the run waits for its entries'
#      embeddings; the entries are stored with them;
#  (b) preload_memory: the same while the user's message is embedded
#      before the model call; the semantic match is in the request;
#  (c) load_memory: the same while the call's query is embedded; the
#      function response has the semantic match;
#  (d) an agent used as a tool that lists preload_memory: its model call
#      waits for the user's message's embedding, in the calls round;
#  - a failing embedding model: a foreground run warns and searches with
#    full-text alone, as before;
#  - preload_memory embeds the user's message once per invocation, however
#    many model calls it makes;
#  - adk_cancel of a run parked on its embeddings stops only it, and
#    nothing of it is added to memory.
use strict;
use warnings;
use File::Temp qw(tempdir);
use HTTP::Tiny;
use JSON::PP;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time);
use FindBin;
use lib "$FindBin::Bin/../perl";
use AdkTest qw(:DEFAULT wait_jobs_done);

my $tmp = tempdir(CLEANUP => 1);
my ($server, $url) = start_model_server($tmp);
END { $server->kill_kill if $server; }
my $base = $url;
$url .= "/v1";

# how many requests the model server had for a model
sub server_requests
{
	my ($model) = @_;
	my $r = HTTP::Tiny->new(timeout => 10)->get("$base/_stats");
	die "GET /_stats: $r->{status}" unless $r->{success};
	return decode_json($r->{content})->{models}{$model} // 0;
}

my $node = adk_node('memory_async', 'adk.max_workers' => 1, max_worker_processes => 16);

adk_install(
	$node, 'sk-test', qq{
	SELECT adk_define_model('fast', 'openai', '$url', 'gpt-test', api_key_secret => 'k');
	SELECT adk_define_model('slow2', 'openai', '$url', 'gpt-latency-2000', api_key_secret => 'k');
	SELECT adk_define_model('emb_fast', 'openai', '$url', 'emb-test', api_key_secret => 'k');
	SELECT adk_define_model('emb_slow', 'openai', '$url', 'emb-latency-4000', api_key_secret => 'k');
	SELECT adk_define_model('emb_bad', 'openai', '$url', 'fault-500', api_key_secret => 'k',
	                        options => '{"retries": 0}');
	SELECT adk_define_agent('ag', model => 'fast');
	SELECT adk_define_agent('ag2', model => 'slow2');
	SELECT adk_define_agent('pre', model => 'fast', tools => ARRAY['preload_memory']);
	SELECT adk_define_agent('lm', model => 'fast', tools => ARRAY['load_memory']);
	SELECT adk_define_agent('helper', model => 'fast', description => 'Helps.',
	                        tools => ARRAY['preload_memory']);
	SELECT adk_define_agent('boss', model => 'fast', tools => ARRAY['helper']);
	SELECT adk_define_app('fastapp', 'ag');
	SELECT adk_define_app('app2000', 'ag2');
	SELECT adk_define_app('addapp', 'ag');
	SELECT adk_define_app('preapp', 'pre');
	SELECT adk_define_app('lmapp', 'lm');
	SELECT adk_define_app('toolapp', 'boss');
	SELECT adk_define_app_memory('addapp', add_to_memory => true, embedding_model => 'emb_slow');
	-- what the user said before, embedded by the fast model
	SELECT adk_define_app_memory(a, embedding_model => 'emb_fast') FROM unnest(ARRAY['preapp', 'lmapp', 'toolapp']) a;
	SELECT adk_create_session(a, 'u', 'old') FROM unnest(ARRAY['preapp', 'lmapp', 'toolapp']) a;
	SELECT count(*) FROM unnest(ARRAY['preapp', 'lmapp', 'toolapp']) a,
	       unnest(ARRAY['My dog is called Rex', 'The weather is nice today']) t,
	       LATERAL adk_append_event(a, 'u', 'old', jsonb_build_object('author', 'user',
	                 'content', jsonb_build_object('role', 'user', 'parts', jsonb_build_array(jsonb_build_object('text', t)))));
	SELECT adk_add_session_to_memory(a, 'u', 'old') FROM unnest(ARRAY['preapp', 'lmapp', 'toolapp']) a;
	SELECT adk_define_app_memory(a, embedding_model => 'emb_slow') FROM unnest(ARRAY['preapp', 'lmapp']) a;
	-- the agent-tool's query is the whole message: one word of five is "dog"
	SELECT adk_define_app_memory('toolapp', embedding_model => 'emb_slow', min_similarity => 0.1);
});

# Submit a job, wait until it made $calls model calls (it then waits for
# its embeddings), return its invocation id.
sub submit_and_park
{
	my ($app, $session, $message, $calls) = @_;
	my $inv = $node->safe_psql('postgres',
		"SELECT adk_submit('$app', 'u', '$session', \$m\$$message\$m\$)");
	my $t0 = time;
	# (a run that blocks its worker while embedding ends before it is seen)
	while (time - $t0 < 15)
	{
		last if $node->safe_psql('postgres', qq{
			SELECT (SELECT count(*) FROM adk.model_calls c WHERE c.invocation_id = '$inv') >= $calls
			    OR (SELECT status FROM adk.jobs WHERE invocation_id = '$inv') NOT IN ('queued', 'running')}) eq 't';
		select(undef, undef, undef, 0.02);
	}
	select(undef, undef, undef, 0.3);
	return $inv;
}

# While the run $inv waits for its embeddings, 5 runs on other sessions:
# they must all end, while $inv is still running, well within the
# embedding model's latency.
sub others_go_on
{
	my ($inv, $what, $tag) = @_;
	others_end_first(
		$node, $inv,
		app => 'fastapp',
		tag => $tag,
		what => $what,
		waiting_for => 'its embeddings',
		while => 'the embeddings were made',
		latency => 'they take 4 s');
}

sub job_status
{
	my ($inv) = @_;
	return $node->safe_psql('postgres', qq{
		SELECT j.status || '/' || i.status
		  FROM adk.jobs j JOIN adk.invocations i USING (invocation_id) WHERE j.invocation_id = '$inv'});
}

# --- (a) a completed invocation added to memory
my $inv = submit_and_park('addapp', 'a1', 'remember my cat Tom', 1);
others_go_on($inv, 'add to memory', 'f1_');
ok(defined wait_jobs_done($node, "invocation_id = '$inv'", 30), 'add to memory: the run ended');
is(job_status($inv), 'completed/completed', 'add to memory: the run completed');
is( $node->safe_psql('postgres', qq{
	SELECT string_agg(author || ':' || array_length(embedding, 1), ',' ORDER BY id)
	  FROM adk.memory WHERE app_name = 'addapp' AND session_id = 'a1'}),
	'user:64,ag:64', 'add to memory: both entries are stored, with their embeddings');
# the vectors are the ones the model gives for those texts
is( $node->safe_psql('postgres', qq{
	SELECT bool_and(adk._cosine(m.embedding, (SELECT v FROM adk._embed('emb_fast', ARRAY[m.text]) v)) > 0.9999)
	  FROM adk.memory m WHERE app_name = 'addapp' AND session_id = 'a1'}),
	't', 'add to memory: each entry has its own text\'s embedding');

# --- (b) preload_memory: the user's message embedded before the model call
$inv = submit_and_park('preapp', 'p1', 'canine', 0);
others_go_on($inv, 'preload_memory', 'f2_');
ok(defined wait_jobs_done($node, "invocation_id = '$inv'", 30), 'preload_memory: the run ended');
is(job_status($inv), 'completed/completed', 'preload_memory: the run completed');
my $request = $node->safe_psql('postgres',
	"SELECT request::text FROM adk.model_calls WHERE invocation_id = '$inv'");
like($request, qr/<PAST_CONVERSATIONS>\\nTime: [^\\]+\\nuser: My dog is called Rex\\n<\/PAST_CONVERSATIONS>/,
	'preload_memory: the semantic match (no shared word) is in the request, alone');
unlike($request, qr/weather/, 'preload_memory: nothing else');

# --- (c) load_memory: the call's query embedded in the calls round
$inv = submit_and_park('lmapp', 'l1', 'call load_memory({"query": "canine"})', 1);
others_go_on($inv, 'load_memory', 'f3_');
ok(defined wait_jobs_done($node, "invocation_id = '$inv'", 30), 'load_memory: the run ended');
is(job_status($inv), 'completed/completed', 'load_memory: the run completed');
is( $node->safe_psql('postgres', qq{
	SELECT string_agg(m ->> 'author' || ':' || (m #>> '{content,parts,0,text}'), ',')
	  FROM adk.events e,
	       jsonb_array_elements(e.event_data #> '{content,parts,0,function_response,response,memories}') m
	 WHERE e.invocation_id = '$inv'}),
	'user:My dog is called Rex', 'load_memory: the function response has the semantic match');
is( $node->safe_psql('postgres',
	"SELECT count(*) FROM adk.model_calls WHERE invocation_id = '$inv'"),
	'2', 'load_memory: the model was called again with the response');
# the same results as adk_search_memory gives from SQL (waiting in the call)
is( $node->safe_psql('postgres',
	"SELECT string_agg(author || ':' || text, ',') FROM adk_search_memory('lmapp', 'u', 'canine')"),
	'user:My dog is called Rex', 'load_memory: adk_search_memory finds the same');

# --- (d) an agent-tool with preload_memory
$inv = submit_and_park('toolapp', 't1', 'call helper({"request": "canine"})', 1);
others_go_on($inv, 'agent-tool preload_memory', 'f4_');
ok(defined wait_jobs_done($node, "invocation_id = '$inv'", 30), 'agent-tool preload_memory: the run ended');
is(job_status($inv), 'completed/completed', 'agent-tool preload_memory: the run completed');
is( $node->safe_psql('postgres', qq{
	SELECT string_agg(model, ',' ORDER BY id) FROM adk.model_calls WHERE invocation_id = '$inv'}),
	'fast,fast,fast', 'agent-tool preload_memory: the caller, the agent-tool, the caller again');
like( $node->safe_psql('postgres', qq{
	SELECT request::text FROM adk.model_calls WHERE invocation_id = '$inv' ORDER BY id OFFSET 1 LIMIT 1}),
	qr/internal name is \\"helper\\".*<PAST_CONVERSATIONS>\\nTime: [^\\]+\\nuser: My dog is called Rex\\n<\/PAST_CONVERSATIONS>/,
	'agent-tool preload_memory: the semantic match is in the agent-tool\'s request');

# --- a failing embedding model: full-text search, with a warning
$node->safe_psql('postgres', "SELECT adk_define_app_memory('preapp', embedding_model => 'emb_bad')");
my ($ret, $out, $err) = $node->psql('postgres',
	"SELECT count(*) FROM adk_run('preapp', 'u', 'p2', 'is my dog fine')");
is($ret, 0, 'failing embeddings: the run went on');
like($err, qr/WARNING:  memory search without embeddings: embedding model "emb_bad" failed with HTTP status 500/,
	'failing embeddings: a warning says so');
like( $node->safe_psql('postgres', qq{
	SELECT request::text FROM adk.model_calls WHERE model = 'fast'
	   AND invocation_id = (SELECT invocation_id FROM adk.invocations WHERE session_id = 'p2')}),
	qr/user: My dog is called Rex/, 'failing embeddings: the full-text match is in the request');

# --- preload_memory: one embedding of the message for all the model calls
# (its load_memory call embeds its own query: two embedding requests)
$node->safe_psql('postgres', q{
	SELECT adk_define_agent('pre2', model => 'fast', tools => ARRAY['preload_memory', 'load_memory']);
	SELECT adk_define_app('preapp2', 'pre2');
	SELECT adk_define_app_memory('preapp2', embedding_model => 'emb_fast', min_similarity => 0.1);
	SELECT adk_create_session('preapp2', 'u', 'old');
	SELECT adk_append_event('preapp2', 'u', 'old', '{"author": "user", "content": {"role": "user", "parts": [{"text": "My dog is called Rex"}]}}');
	SELECT adk_add_session_to_memory('preapp2', 'u', 'old');
});
my $before = server_requests('emb-test');
$node->safe_psql('postgres',
	q{SELECT count(*) FROM adk_run('preapp2', 'u', 'p3', 'call load_memory({"query": "canine"})')});
is( $node->safe_psql('postgres', qq{
	SELECT count(*) FILTER (WHERE request::text LIKE '%<PAST_CONVERSATIONS>%user: My dog is called Rex%') || '/' || count(*)
	  FROM adk.model_calls
	 WHERE invocation_id = (SELECT invocation_id FROM adk.invocations WHERE session_id = 'p3')}),
	'2/2', 'preload once: both model calls have the semantic match');
is(server_requests('emb-test') - $before, 2,
	'preload once: the message was embedded once (and load_memory\'s query once)');

# --- cancel a run parked on its embeddings
$node->safe_psql('postgres',
	"SELECT adk_submit('app2000', 'u', 'w' || i, 'wait ' || i) FROM generate_series(1, 3) i");
$inv = submit_and_park('addapp', 'c1', 'hello cancel', 1);
cancel_among_others(
	$node, $inv,
	what => 'the run waiting for its embeddings',
	app => 'app2000',
	others => 3);
is(job_status($inv), 'cancelled/cancelled', 'cancel: the run ended cancelled');
# the embeddings' 4 s are long over: nothing of the cancelled run came late
select(undef, undef, undef, 4);
is($node->safe_psql('postgres', "SELECT count(*) FROM adk.memory WHERE session_id = 'c1'"),
	'0', 'cancel: nothing of the cancelled run was added to memory');

$node->stop;
done_testing();
