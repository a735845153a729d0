#!/usr/bin/perl
# Hostile HTTP against one of murmur's read-only servers (a peer's
# --metrics-addr, murmur watch): tests/e2e/http_hostile.sh.
#   http_hostile.pl HOST PORT GOOD_PATH
# Prints one line per attack, "NAME: what happened", and exits 1 when an
# attack was not refused or cut as docs/metrics.md says ("Safety of the
# HTTP servers"), or when the server stopped answering GOOD_PATH after it.
use strict;
use warnings;
use IO::Socket::INET;
use IO::Select;
use Time::HiRes qw(time sleep);

my ($host, $port, $good) = @ARGV;
die "usage: http_hostile.pl HOST PORT GOOD_PATH\n" unless defined $good;
my $bad = 0;

sub conn {
    my $s = IO::Socket::INET->new(PeerAddr => $host, PeerPort => $port, Proto => 'tcp', Timeout => 5);
    return $s;
}

# Sends raw bytes, returns the status line's code (or "closed"/"timeout").
sub exchange {
    my ($bytes, $wait) = @_;
    my $s = conn() or return "connect failed: $!";
    local $SIG{PIPE} = 'IGNORE';
    print $s $bytes;
    my $sel = IO::Select->new($s);
    my $buf = '';
    my $end = time + ($wait // 10);
    while (time < $end) {
        last unless $sel->can_read($end - time);
        my $n = sysread($s, $buf, 65536, length $buf);
        last unless $n;
        last if $buf =~ /\r\n\r\n/;
    }
    close $s;
    return $buf =~ m{^HTTP/1\.[01] (\d{3})} ? $1 : (length $buf ? "garbage" : "closed");
}

sub expect {
    my ($name, $got, @ok) = @_;
    my $pass = grep { $_ eq $got } @ok;
    printf "%s: %s%s\n", $name, $got, $pass ? "" : " (expected " . join(" or ", @ok) . ")";
    $bad++ unless $pass;
}

sub good_still {
    my ($when) = @_;
    my $code = exchange("GET $good HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    expect("good request $when", $code, "200");
}

good_still("before");
expect("malformed request line", exchange("GARBAGE\r\n\r\n"), "400", "closed");
expect("binary junk", exchange(join('', map { chr(int(rand(256))) } 1 .. 4096) . "\r\n\r\n"), "400", "closed", "garbage");
expect("HTTP/9.9", exchange("GET $good HTTP/9.9\r\n\r\n"), "400", "505", "closed");
expect("huge header (64 KiB)", exchange("GET $good HTTP/1.1\r\nHost: x\r\nX-Big: " . ("a" x 65536) . "\r\n\r\n"),
    "431", "413", "400", "closed");
expect("many headers (2000)", exchange("GET $good HTTP/1.1\r\nHost: x\r\n" . join('', map { "X-$_: y\r\n" } 1 .. 2000) . "\r\n"),
    "431", "413", "400", "closed");
expect("huge URL (64 KiB)", exchange("GET /" . ("a" x 65536) . " HTTP/1.1\r\nHost: x\r\n\r\n"), "414", "431", "400", "closed");
expect("../ traversal", exchange("GET /../../../../etc/passwd HTTP/1.1\r\nHost: x\r\n\r\n"), "404", "400");
expect("encoded traversal", exchange("GET /%2e%2e/%2e%2e/etc/passwd HTTP/1.1\r\nHost: x\r\n\r\n"), "404", "400");
expect("POST", exchange("POST $good HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello"), "405");
expect("PUT", exchange("PUT $good HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n"), "405");
expect("GET with a body", exchange("GET $good HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello"), "400");
good_still("after the malformed requests");

# 1,000 connections at once: at most the server's limit are served, the
# rest are closed at once; none hangs the server.
{
    my @socks;
    for (1 .. 1000) {
        my $s = conn();
        last unless $s;
        push @socks, $s;
    }
    my $opened = @socks;
    # how many the server closed (EOF) within 3 s
    my $sel = IO::Select->new(@socks);
    my %closed;
    my $end = time + 3;
    while (time < $end && keys(%closed) < $opened) {
        for my $s ($sel->can_read(0.2)) {
            my $buf;
            my $n = sysread($s, $buf, 4096);
            if (!$n) { $closed{fileno $s} = 1; $sel->remove($s); }
        }
    }
    my $held = $opened - keys %closed;
    printf "1000 connections: %d opened, %d closed by the server at once, %d held\n", $opened, scalar(keys %closed), $held;
    $bad++ unless $opened >= 900 && $held <= 64;
    close $_ for @socks;
}
sleep 0.5;
good_still("after 1000 connections");

# slowloris: a request sent one byte a second never completes; the
# server cuts it at its request deadline (5 s) however busy it keeps it.
{
    my $s = conn() or die "connect: $!";
    local $SIG{PIPE} = 'IGNORE';
    my $req = "GET $good HTTP/1.1\r\nHost: x\r\nX-Slow: " . ("s" x 100);
    my $t0 = time;
    my $cut;
    for my $i (0 .. length($req) - 1) {
        my $ok = syswrite($s, substr($req, $i, 1));
        my $sel = IO::Select->new($s);
        if (!defined $ok || ($sel->can_read(0) && !sysread($s, my $b, 4096))) { $cut = time - $t0; last; }
        sleep 1;
        last if time - $t0 > 20;
    }
    close $s;
    printf "slowloris: %s\n", defined $cut ? sprintf("cut after %.1f s", $cut) : "NOT cut in 20 s";
    $bad++ unless defined $cut && $cut < 12;
}
good_still("after the slowloris");
exit($bad ? 1 : 0);
