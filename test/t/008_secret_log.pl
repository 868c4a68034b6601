# Storing a key without it reaching the server log, as an adk_admin member
# who is not a superuser: docs/models.md gives the way.  The server logs
# every statement and its duration (log_statement = 'all',
# log_min_duration_statement = 0); the old advice, SET log_statement =
# 'none', is refused for such a role.  The key goes in as COPY data (psql's
# \copy from a file), which no statement logging writes out, and the
# statement that stores it names no key -- also when it fails.
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

my $node = plain_node(
	'secret_log',
	log_statement => "'all'",
	log_min_duration_statement => 0,
	log_min_error_statement => "'info'");
$node->safe_psql(
	'postgres', q{
	CREATE EXTENSION adk_runner;
	CREATE ROLE alice LOGIN;
	GRANT adk_admin TO alice;
});

# the old advice is not for alice
my ($rc, $out, $err) = $node->psql('postgres', "SET log_statement = 'none'",
	extra_params => [ '-U', 'alice' ]);
like($err, qr/permission denied to set parameter "log_statement"/,
	'SET log_statement is refused for an adk_admin member');

# the advice: the key from a file, as COPY data, into a temporary table
my $key = 'sk-never-logged-' . join('', map { ('a' .. 'z')[ rand 26 ] } 1 .. 24);
open(my $fh, '>', "$tmp/key.txt") or die;
print $fh "$key\n";
close($fh);
my $script = qq{
BEGIN;
CREATE TEMP TABLE new_secret (value text) ON COMMIT DROP;
\\copy new_secret FROM '$tmp/key.txt'
SELECT adk_set_secret('openai-key', (SELECT value FROM new_secret), ARRAY['api.openai.com']);
COMMIT;
};
($rc, $out, $err) = $node->psql('postgres', $script, extra_params => [ '-U', 'alice', '-v', 'ON_ERROR_STOP=1' ]);
is($rc, 0, 'the key is stored following the advice') or diag($err);

# the same when the call fails: the statement that fails names no key
$script = qq{
BEGIN;
CREATE TEMP TABLE new_secret (value text) ON COMMIT DROP;
\\copy new_secret FROM '$tmp/key.txt'
SELECT adk_set_secret('other-key', (SELECT value FROM new_secret), ARRAY[]::text[]);
COMMIT;
};
($rc, $out, $err) = $node->psql('postgres', $script, extra_params => [ '-U', 'alice' ]);
like($err, qr/needs the hosts it may be sent to/, 'a failing call raises');

# what was stored is the key (compared by digest: a literal would be logged)
is($node->safe_psql('postgres', "SELECT md5(value) FROM adk.secrets WHERE name = 'openai-key'"),
	md5_hex_of($key), 'the stored value is the key from the file');

# the old advice, followed by alice: the SET fails, and the key given as a
# literal lands in the log (which shows the log is the one we look at)
my $naive = 'sk-logged-literal-0123456789';
$node->psql(
	'postgres', qq{
SET log_statement = 'none';
SELECT adk_set_secret('naive-key', '$naive', ARRAY['api.openai.com']);
RESET log_statement;
}, extra_params => [ '-U', 'alice' ], on_error_stop => 0);

$node->stop;
my $log = slurp_file($node->logfile);
like($log, qr/\Q$naive\E/, 'the old advice leaves the key in the statement log');
like($log, qr/new_secret FROM STDIN/, 'the COPY statements are in the statement log');
unlike($log, qr/\Q$key\E/, 'the key given as COPY data is nowhere in the server log');

sub md5_hex_of
{
	require Digest::MD5;
	return Digest::MD5::md5_hex($_[0]);
}

done_testing();
