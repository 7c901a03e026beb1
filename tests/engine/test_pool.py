"""The server pool and URL parsing (``tclnats_py.engine.pool``), CoreAPI.md
"Connection Status and the Reconnection Process"."""

import random

import pytest

from tclnats_py import NatsError
from tclnats_py.engine.pool import NoServers, ServerPool, parse_url


@pytest.mark.parametrize("url,scheme,host,port", [
    ("nats://localhost:4222", "nats", "localhost", 4222),
    ("nats://localhost", "nats", "localhost", 4222),
    ("localhost", "nats", "localhost", 4222),
    ("127.0.0.1:5000", "nats", "127.0.0.1", 5000),
    ("tls://secure.example.com:4443", "tls", "secure.example.com", 4443),
    ("NATS://Host:42", "nats", "Host", 42),
    ("nats://[::1]:4333", "nats", "::1", 4333),
    ("[::1]", "nats", "::1", 4222),
    ("tls://[2001:db8::7]:1", "tls", "2001:db8::7", 1),
    ("  nats://h:65535  ", "nats", "h", 65535),
    ("h:", "nats", "h", 4222),
])
def test_parse_url_host_port_scheme(url, scheme, host, port):
    s = parse_url(url)
    assert (s.scheme, s.host, s.port) == (scheme, host, port)
    assert (s.user, s.password, s.auth_token) == (None, None, None)
    assert not s.discovered and s.reconnects == 0


@pytest.mark.parametrize("url,user,password,token", [
    ("nats://alice:s3cret@h:4222", "alice", "s3cret", None),
    ("tls://alice:s3cret@h", "alice", "s3cret", None),
    ("nats://tok123@h:4222", None, None, "tok123"),
    ("tok123@h", None, None, "tok123"),
    ("nats://u%40x:p%3Aw%40@h", "u@x", "p:w@", None),  # percent-encoded
    ("nats://onlyuser:@h", None, None, "onlyuser"),      # no password: a token, as in nats-tcl
])
def test_parse_url_credentials(url, user, password, token):
    s = parse_url(url)
    assert (s.user, s.password, s.auth_token) == (user, password, token)
    assert s.host == "h"


@pytest.mark.parametrize("url", [
    "", "nats://", "http://h:4222", "ws://h?q", "wss://h:0/p", "nats://h:0", "nats://h:65536", "nats://h:99999", "nats://h:-1",
    "nats://h:x", "nats://h:42a", "nats://h:+42", "nats://h: 42", "nats://h/path", "nats://h:4222/",
    "nats://h?x=1", "nats://h#f", "::1", "nats://a b", "nats://[::1", "nats://h:4222:1",
])
def test_parse_url_rejects_bad_urls_with_err_invalid_arg(url):
    with pytest.raises(NatsError) as e:
        parse_url(url)
    assert e.value.code == "ErrInvalidArg"


def test_as_dict_has_nats_tcl_keys():
    d = parse_url("tls://u:p@h:5").as_dict()
    assert d == {"scheme": "tls", "host": "h", "port": 5, "discovered": "false", "reconnects": 0,
                 "last_attempt": 0, "user": "u", "password": "p"}
    assert parse_url("t@h").as_dict()["auth_token"] == "t"
    assert "user" not in parse_url("h").as_dict()


def pool_of(*urls, randomize=False, seed=1):
    p = ServerPool(random.Random(seed))
    p.set_servers(urls, randomize)
    return p


def names(pool):
    return [f"{s.host}:{s.port}" for s in pool.servers]


def test_set_servers_keeps_order_without_randomize():
    p = pool_of("a:1", "b:2", "c:3")
    assert names(p) == ["a:1", "b:2", "c:3"]
    assert p.current.host == "c"  # the server in use is the last one


def test_randomize_shuffles_and_drops_exact_duplicates():
    urls = [f"h{i}:1" for i in range(20)] + ["h0:1"]
    p = pool_of(*urls, randomize=True, seed=7)
    assert sorted(names(p)) == sorted(f"h{i}:1" for i in range(20))
    assert names(p) != [f"h{i}:1" for i in range(20)]


def test_set_servers_is_all_or_nothing():
    p = pool_of("a:1")
    with pytest.raises(NatsError):
        p.set_servers(["b:2", "bad:port:x"], False)
    assert names(p) == ["a:1"]


def never(server):
    return 0


def test_next_server_rotates_fifo():
    p = pool_of("a:1", "b:2", "c:3")
    got = []
    for _ in range(4):
        s, wait = p.next_server(False, 60, never, 0)
        got.append(s.host)
        assert wait == 0 and p.current is s
    assert got == ["a", "b", "c", "a"]


def test_first_round_tries_every_server_once():
    p = pool_of("a:1", "b:2")
    for host in ("a", "b"):
        s, _ = p.next_server(True, 60, never, 0)
        assert s.host == host
        p.current_done(False, 100)
    with pytest.raises(NoServers):
        p.next_server(True, 60, never, 200)


def test_failed_attempts_count_and_drop_the_server_at_max_reconnect_attempts():
    p = pool_of("a:1", "b:2")
    now = 0
    for _ in range(3):
        for _ in range(2):
            p.next_server(False, 3, lambda s: 0, now)
            p.current_done(False, now)
    assert [s.reconnects for s in p.servers] == [3, 3]
    with pytest.raises(NoServers):
        p.next_server(False, 3, lambda s: 0, now)
    assert p.servers == []


def test_max_reconnect_attempts_minus_one_is_forever():
    p = pool_of("a:1")
    for i in range(1000):
        s, _ = p.next_server(False, -1, lambda s: 0, i)
        p.current_done(False, i)
    assert s.reconnects == 1000 and p.servers == [s]


def test_max_reconnect_attempts_zero_leaves_nobody_to_try():
    # nats-tcl's rule (server_pool.tcl next_server): reconnects >= max drops
    # the server, so with 0 not even the first attempt is made
    p = pool_of("a:1")
    with pytest.raises(NoServers):
        p.next_server(True, 0, never, 0)


def test_max_reconnect_attempts_one_is_one_attempt():
    p = pool_of("a:1")
    p.next_server(True, 1, never, 0)
    p.current_done(False, 0)
    with pytest.raises(NoServers):
        p.next_server(False, 1, never, 0)


def test_wait_is_what_is_left_of_the_delay_since_the_last_attempt():
    p = pool_of("a:1")
    s, wait = p.next_server(False, 60, lambda s: 2000, 10_000)
    assert wait == 0  # never failed: no wait
    p.current_done(False, 10_000)
    s, wait = p.next_server(False, 60, lambda s: 2000, 10_500)
    assert wait == 1500
    s, wait = p.next_server(False, 60, lambda s: 2000, 13_000)
    assert wait == 0


def test_delay_callback_gets_the_server():
    p = pool_of("a:1")
    seen = []
    p.next_server(False, 60, never, 0)
    p.current_done(False, 0)
    p.next_server(False, 60, lambda s: seen.append(s.as_dict()) or 50, 10)
    assert seen[0]["host"] == "a" and seen[0]["reconnects"] == 1


def test_success_resets_the_counters():
    p = pool_of("a:1")
    p.next_server(False, 60, never, 0)
    p.current_done(False, 5)
    p.next_server(False, 60, never, 6)
    p.current_done(True, 7)
    assert (p.current.reconnects, p.current.last_attempt) == (0, 0)


def test_reset_counters():
    p = pool_of("a:1", "b:2")
    for s in p.servers:
        s.reconnects, s.last_attempt = 5, 9
    p.reset_counters()
    assert all((s.reconnects, s.last_attempt) == (0, 0) for s in p.servers)


def test_discovered_servers_go_first_once():
    p = pool_of("a:1")
    assert p.add_discovered("b:2").discovered
    assert p.add_discovered("nats://b:2") is None        # same host and port
    assert p.add_discovered("a:1") is None               # already configured
    assert p.add_discovered("not a url:x") is None       # ignored, not raised
    assert names(p) == ["b:2", "a:1"]
    assert p.servers[0].as_dict()["discovered"] == "true"


def test_credentials_url_first_then_defaults():
    p = pool_of("nats://u:p@h:1")
    assert p.credentials("du", "dp", "dt") == {"user": "u", "pass": "p"}
    p = pool_of("nats://t@h:1")
    assert p.credentials("du", "dp", "dt") == {"auth_token": "t"}
    p = pool_of("h:1")
    assert p.credentials("du", "dp", "dt") == {"user": "du", "pass": "dp"}
    assert p.credentials("du", "", "dt") == {"auth_token": "dt"}
    assert p.credentials("", "", "") is None
    assert ServerPool().credentials("u", "p", "") == {"user": "u", "pass": "p"}


def test_empty_pool():
    p = ServerPool()
    assert p.current is None
    with pytest.raises(NoServers):
        p.next_server(False, 60, never, 0)
    p.current_done(False, 0)  # no-op


def test_tls_name_rule_for_both_faces():
    from tclnats_py.engine.pool import ServerPool
    pool = ServerPool()
    pool.set_servers(["tls://nats.example.com:4222"], randomize=False)
    learnt = pool.add_discovered("10.0.0.7:4222")
    named = pool.add_discovered("node2.example.com:4222")
    configured = pool.servers[-1]
    assert pool.tls_name(configured) == "nats.example.com"
    assert pool.tls_name(learnt) == "nats.example.com"       # an address learnt from INFO
    assert pool.tls_name(named) == "node2.example.com"       # a name learnt from INFO is its own
    assert pool.tls_name(learnt, "override.example") == "override.example"
    ip_only = ServerPool()
    ip_only.set_servers(["tls://127.0.0.1:4222"], randomize=False)
    ip_learnt = ip_only.add_discovered("10.0.0.8:4222")
    assert ip_only.tls_name(ip_learnt) == "10.0.0.8"          # no configured name to fall back on
