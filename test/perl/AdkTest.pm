# Helpers shared by the TAP tests under test/t.
package AdkTest;

use strict;
use warnings;
use Exporter 'import';
use IPC::Run;
use PostgreSQL::Test::Utils;
use Test::More;

our @EXPORT = qw(start_model_server);

# Every server started here is stopped when the test ends, however it ends
# (a die, BAIL_OUT, a failed poll), so no test leaves one running.
my @servers;

END
{
	local $?;
	foreach my $h (@servers)
	{
		eval { $h->kill_kill if $h->pumpable; };
	}
}

# Start the bundled local model server on a free port, logging to
# $tmp/model_server.log; extra arguments go to server.py.  Returns the
# IPC::Run harness (the server lives as long as it does) and the base URL
# (http://127.0.0.1:PORT).
sub start_model_server
{
	my ($tmp, @extra) = @_;
	my $server = IPC::Run::start(
		[
			'/usr/bin/python3', 'test/model_server/server.py',
			'--port', '0', '--port-file', "$tmp/port",
			'--log', "$tmp/model_server.log", @extra
		],
		'>', "$tmp/server.out", '2>&1');
	push @servers, $server;
	for (1 .. 200)
	{
		last if -s "$tmp/port";
		select(undef, undef, undef, 0.05);
	}
	my $port = -s "$tmp/port" ? slurp_file("$tmp/port") : '';
	chomp $port;
	ok($port =~ /^\d+$/, 'local model server started')
	  or BAIL_OUT('the local model server did not start: ' . slurp_file("$tmp/server.out"));
	return ($server, "http://127.0.0.1:$port");
}

1;
