"""The parser on byte feeds: every op, any split, garbage."""

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tclnats_py import NatsError
from tclnats_py.engine.protocol import Parser, encode_pub, encode_sub, encode_unsub

STREAM = (
    b'INFO {"server_id":"x","version":"2.15.1","max_payload":1048576,"headers":true}\r\n'
    b"+OK\r\n"
    b"PING\r\n"
    b"PONG\r\n"
    b"MSG foo.bar 1 5\r\nhello\r\n"
    b"MSG foo.bar 12 _INBOX.abc 0\r\n\r\n"
    b"HMSG foo 2 24 29\r\nNATS/1.0\r\nA: 1\r\nA: 2\r\n\r\nworld\r\n"
    b"HMSG _INBOX.x.1 3 16 16\r\nNATS/1.0 503\r\n\r\n\r\n"
    b"MSG bin 4 4\r\n\x00\r\n\xff\r\n"
    b"-ERR 'Permissions Violation for Publish to \"x\"'\r\n"
)


def ops_of(chunks):
    p = Parser()
    out = []
    for c in chunks:
        out.extend(p.feed(c))
    assert p.buffered == 0
    return out


def test_every_op_once():
    ops = ops_of([STREAM])
    kinds = [o[0] for o in ops]
    assert kinds == ["INFO", "+OK", "PING", "PONG", "MSG", "MSG", "MSG", "MSG", "MSG", "-ERR"]
    assert ops[0][1]["max_payload"] == 1048576
    assert ops[4] == ("MSG", "foo.bar", 1, None, None, b"hello")
    assert ops[5] == ("MSG", "foo.bar", 12, "_INBOX.abc", None, b"")
    assert ops[6][4] == b"NATS/1.0\r\nA: 1\r\nA: 2\r\n\r\n" and ops[6][5] == b"world"
    assert ops[8][5] == b"\x00\r\n\xff"  # CRLF inside a payload is data
    assert ops[9] == ("-ERR", 'Permissions Violation for Publish to "x"')


def test_split_at_every_byte_boundary():
    whole = ops_of([STREAM])
    for i in range(1, len(STREAM)):
        assert ops_of([STREAM[:i], STREAM[i:]]) == whole, i


def test_one_byte_at_a_time():
    assert ops_of([STREAM[i:i + 1] for i in range(len(STREAM))]) == ops_of([STREAM])


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(min_value=1, max_value=len(STREAM) - 1), max_size=12))
def test_random_splits(cuts):
    cuts = sorted(set(cuts))
    chunks = [STREAM[a:b] for a, b in zip([0] + cuts, cuts + [len(STREAM)])]
    assert ops_of(chunks) == ops_of([STREAM])


@pytest.mark.parametrize("bad", [
    b"BOGUS\r\n", b"MSG a\r\n", b"MSG a b 5\r\nhello\r\n", b"MSG a 1 -3\r\nx\r\n",
    b"MSG a 1 2\r\nabcd\r\n", b"HMSG a 1 9 5\r\nNATS/1.0\r\n\r\n", b"INFO nojson\r\n", b"INFO [1]\r\n",
])
def test_malformed_input_is_err_protocol(bad):
    with pytest.raises(NatsError) as e:
        Parser().feed(bad)
    assert e.value.code == "ErrProtocol"


def test_control_line_limit():
    with pytest.raises(NatsError) as e:
        Parser().feed(b"MSG " + b"x" * 5000)
    assert e.value.code == "ErrServer"


@settings(max_examples=500, deadline=None)
@given(st.binary(max_size=300))
def test_garbage_never_raises_anything_else(data):
    p = Parser()
    try:
        p.feed(data)
    except NatsError as e:
        assert e.code in ("ErrProtocol", "ErrServer")


def test_encoders_match_nats_tcl_wire_format():
    assert encode_pub("foo", None, b"hello") == b"PUB foo  5\r\nhello\r\n"
    assert encode_pub("foo", "r", b"") == b"PUB foo r 0\r\n\r\n"
    hdr = b"NATS/1.0\r\nk: v\r\n\r\n"
    assert encode_pub("foo", None, b"xy", hdr) == b"HPUB foo  18 20\r\n" + hdr + b"xy\r\n"
    assert encode_sub("foo", None, 3) == b"SUB foo  3\r\n"
    assert encode_sub("foo", "q", 3) == b"SUB foo q 3\r\n"
    assert encode_unsub(3) == b"UNSUB 3\r\n" and encode_unsub(3, 7) == b"UNSUB 3 7\r\n"
    # what we encode, we parse back
    sub_line = b"HMSG foo 1 18 20\r\n"
    ops = Parser().feed(sub_line + hdr + b"xy\r\n")
    assert ops[0][4] == hdr and ops[0][5] == b"xy"
    json.loads(b'{"a":1}')
