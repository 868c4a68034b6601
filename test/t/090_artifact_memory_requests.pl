# Artifacts and memory as the model server receives them: the request
# bodies recorded by the local model server (GET /_requests), not the
# ledger.  load_artifacts puts the artifacts into the next request (inline
# data for OpenAI and Gemini, text for a text artifact); an inline image with
# save_input_blobs_as_artifacts reaches the model as a placeholder, never as
# base64; preload_memory's <PAST_CONVERSATIONS> block is in the system
# instruction; load_memory's answer is the tool result.
use strict;
use warnings;
use File::Temp qw(tempdir);
use HTTP::Tiny;
use JSON::PP;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::Bin/../perl";
use AdkTest;

my $tmp = tempdir(CLEANUP => 1);
my ($server, $url) = start_model_server($tmp);
# the server goes with the test, however it ends
END { $server->kill_kill if $server; }
my $http = HTTP::Tiny->new(timeout => 10);

# the provider requests the server received since the last reset
sub requests
{
	my $r = $http->get("$url/_requests");
	die "GET /_requests: $r->{status}" unless $r->{success};
	return @{ decode_json($r->{content}) };
}

sub reset_server
{
	my $r = $http->post("$url/_reset");
	die "POST /_reset: $r->{status}" unless $r->{success};
}

my $node = plain_node('main');
$node->safe_psql('postgres', 'CREATE EXTENSION adk_runner');
$node->safe_psql(
	'postgres', qq{
	SELECT adk_set_secret('k', 'sk-tap-artifacts', ARRAY['127.0.0.1']);
	SELECT adk_define_model('o', 'openai', '$url/v1', 'gpt-test', api_key_secret => 'k');
	SELECT adk_define_model('g', 'gemini', '$url', 'gemini-test', api_key_secret => 'k');
	SELECT adk_define_agent('oa', model => 'o', tools => ARRAY['load_artifacts']);
	SELECT adk_define_agent('ga', model => 'g', tools => ARRAY['load_artifacts']);
	SELECT adk_define_app('oapp', 'oa');
	SELECT adk_define_app('gapp', 'ga');
	SELECT adk_create_session(a, 'ann', 's1') FROM unnest(ARRAY['oapp', 'gapp']) a;
	SELECT adk_save_artifact(a, 'ann', 's1', 'notes.txt', convert_to('Rex is a dog.', 'UTF8'), 'text/plain'),
	       adk_save_artifact(a, 'ann', 's1', 'pic.png', decode('89504e470d0a1a0a', 'hex'), 'image/png')
	  FROM unnest(ARRAY['oapp', 'gapp']) a;
});
my $png64 = 'iVBORw0KGgo=';

# --- load_artifacts, OpenAI
reset_server();
$node->safe_psql('postgres',
	q{SELECT count(*) FROM adk_run('oapp', 'ann', 's1', 'call load_artifacts({"artifact_names": ["notes.txt", "pic.png"]})')}
);
my @req = requests();
is(scalar @req, 2, 'openai: two model requests');
like($req[0]{body}{messages}[0]{content}, qr/You have a list of artifacts:\n  \["notes.txt", "pic.png"\]/,
	'openai: the first request lists the artifacts in the system message');
my @msgs = @{ $req[1]{body}{messages} };
is($msgs[-3]{role}, 'tool', 'openai: the tool result comes first');
is_deeply($msgs[-2]{content},
	[ { type => 'text', text => 'Artifact notes.txt is:' }, { type => 'text', text => 'Rex is a dog.' } ],
	'openai: the text artifact follows as text');
is_deeply(
	$msgs[-1]{content},
	[
		{ type => 'text', text => 'Artifact pic.png is:' },
		{ type => 'image_url', image_url => { url => "data:image/png;base64,$png64" } }
	],
	'openai: the image artifact follows as an image_url data URL');

# --- load_artifacts, Gemini
reset_server();
$node->safe_psql('postgres',
	q{SELECT count(*) FROM adk_run('gapp', 'ann', 's1', 'call load_artifacts({"artifact_names": ["pic.png"]})')});
@req = requests();
is(scalar @req, 2, 'gemini: two model requests');
my $last = $req[1]{body}{contents}[-1];
is($last->{role}, 'user', 'gemini: the artifact is a user content');
is_deeply(
	$last->{parts},
	[ { text => 'Artifact pic.png is:' }, { inlineData => { mimeType => 'image/png', data => $png64 } } ],
	'gemini: the image artifact is inlineData');
like(encode_json($req[1]{body}{contents}[-2]), qr/functionResponse/,
	'gemini: after the function response');

# --- an inline image with save_input_blobs_as_artifacts
reset_server();
$node->safe_psql(
	'postgres', q{
	SELECT adk_define_app('blobs', 'oa', save_input_blobs_as_artifacts => true);
	SELECT count(*) FROM adk_run('blobs', 'ann', 'b1',
	  '{"role": "user", "parts": [{"text": "what is this?"},
	    {"inline_data": {"mime_type": "image/png", "data": "iVBORw0KGgo=", "display_name": "cat.png"}}]}'::jsonb);
});
@req = requests();
is(scalar @req, 1, 'blobs: one model request');
is_deeply(
	$req[0]{body}{messages}[-1]{content},
	[
		{ type => 'text', text => 'what is this?' },
		{ type => 'text', text => 'Uploaded file: cat.png. It is saved into artifacts' }
	],
	'blobs: the model gets the placeholder');
unlike(encode_json($req[0]{body}), qr/\Q$png64\E/, 'blobs: no base64 reaches the model');
is( $node->safe_psql(
		'postgres', q{SELECT count(*) FROM adk.events WHERE app_name = 'blobs' AND event_data::text LIKE '%iVBORw0KGgo%'}),
	'0',
	'blobs: no base64 in adk.events');
is( $node->safe_psql(
		'postgres', q{SELECT encode(adk_load_artifact('blobs', 'ann', 'b1', 'cat.png'), 'hex')}),
	'89504e470d0a1a0a',
	'blobs: the image is an artifact');

# --- preload_memory and load_memory
$node->safe_psql(
	'postgres', q{
	SELECT adk_define_agent('pm', model => 'o', instruction => 'Be brief.', tools => ARRAY['preload_memory']);
	SELECT adk_define_agent('lm', model => 'o', tools => ARRAY['load_memory']);
	SELECT adk_define_app('pmapp', 'pm');
	SELECT adk_define_app('lmapp', 'lm');
	SELECT adk_create_session(a, 'ann', 'old') FROM unnest(ARRAY['pmapp', 'lmapp']) a;
	SELECT adk_append_event(a, 'ann', 'old',
	         '{"author": "user", "content": {"role": "user", "parts": [{"text": "My dog is called Rex"}]}}')
	  FROM unnest(ARRAY['pmapp', 'lmapp']) a;
	SELECT adk_add_session_to_memory(a, 'ann', 'old') FROM unnest(ARRAY['pmapp', 'lmapp']) a;
});
reset_server();
$node->safe_psql('postgres',
	q{SELECT count(*) FROM adk_run('pmapp', 'ann', 'new', 'what is my dog called')});
@req = requests();
like(
	$req[0]{body}{messages}[0]{content},
	qr/^Be brief\.\n\nYou are an agent\. Your internal name is "pm"\.\n\nThe following content is from your previous conversations with the user\.\nThey may be useful for answering the user's current query\.\n<PAST_CONVERSATIONS>\nTime: [^\n]+\nuser: My dog is called Rex\n<\/PAST_CONVERSATIONS>\n$/,
	'preload_memory: the memories are in the system message');
ok(!exists $req[0]{body}{tools}, 'preload_memory: no tool is declared');

reset_server();
$node->safe_psql('postgres',
	q{SELECT count(*) FROM adk_run('lmapp', 'ann', 'new', 'call load_memory({"query": "dog"})')});
@req = requests();
is(scalar @req, 2, 'load_memory: two model requests');
my $tool_msg = $req[1]{body}{messages}[-1];
is($tool_msg->{role}, 'tool', 'load_memory: the second request ends with the tool result');
my $result = decode_json($tool_msg->{content});
is($result->{memories}[0]{content}{parts}[0]{text}, 'My dog is called Rex', 'load_memory: the memory is in the result');
is($result->{memories}[0]{author}, 'user', 'load_memory: with its author');

# another user gets none of it
reset_server();
$node->safe_psql('postgres',
	q{SELECT count(*) FROM adk_run('lmapp', 'bob', 'new', 'call load_memory({"query": "dog"})')});
@req = requests();
is($req[1]{body}{messages}[-1]{content}, '{"memories":[]}', 'load_memory: another user finds nothing');

$node->stop;
done_testing();
