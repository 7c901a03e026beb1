"""The protocol parser and encoders (``tclnats_py.engine.protocol``) on byte strings.

Reference: docs.nats.io "Client Protocol" (INFO, MSG, HMSG, PING, PONG, +OK,
-ERR; operation names are case-insensitive, fields are separated by spaces or
tabs) and ADR-4 (HMSG/HPUB byte counts: header size, then total size).
"""

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tclnats_py import NatsError
from tclnats_py.engine.protocol import (
    ERR, INFO, MAX_CONTROL_LINE, MSG, OK, PING, PING_BYTES, PONG, PONG_BYTES, Parser,
    encode_connect, encode_pub, encode_sub, encode_unsub,
)

HDR = b"NATS/1.0\r\nK: v1\r\nK: v2\r\n\r\n"

# (wire bytes, the operation the parser gives for them)
SAMPLES = [
    (b'INFO {"server_id":"S1","version":"2.15.1","max_payload":1048576,"headers":true,"proto":1}\r\n',
     (INFO, {"server_id": "S1", "version": "2.15.1", "max_payload": 1048576, "headers": True, "proto": 1})),
    (b"+OK\r\n", (OK,)),
    (b"PING\r\n", (PING,)),
    (b"PONG\r\n", (PONG,)),
    (b"MSG foo.bar 1 5\r\nhello\r\n", (MSG, "foo.bar", 1, None, None, b"hello")),
    (b"MSG foo.bar 9 _INBOX.x.1 5\r\nhello\r\n", (MSG, "foo.bar", 9, "_INBOX.x.1", None, b"hello")),
    (b"MSG empty 2 0\r\n\r\n", (MSG, "empty", 2, None, None, b"")),
    (b"MSG bin 3 6\r\n\r\n\x00\xff\r\n\r\n", (MSG, "bin", 3, None, None, b"\r\n\x00\xff\r\n")),
    (b"HMSG h 4 %d %d\r\n" % (len(HDR), len(HDR) + 2) + HDR + b"hi\r\n",
     (MSG, "h", 4, None, HDR, b"hi")),
    (b"HMSG h 4 reply.to %d %d\r\n" % (len(HDR), len(HDR)) + HDR + b"\r\n",
     (MSG, "h", 4, "reply.to", HDR, b"")),
    (b"HMSG _INBOX.a.7 5 16 16\r\nNATS/1.0 503\r\n\r\n\r\n",
     (MSG, "_INBOX.a.7", 5, None, b"NATS/1.0 503\r\n\r\n", b"")),
    (b"-ERR 'Permissions Violation for Publish to \"x\"'\r\n", (ERR, 'Permissions Violation for Publish to "x"')),
    (b"-ERR 'Stale Connection'\r\n", (ERR, "Stale Connection")),
    (b"-ERR\r\n", (ERR, "")),
]
STREAM = b"".join(w for w, _ in SAMPLES)
EXPECTED = [op for _, op in SAMPLES]


def feed_all(chunks, parser=None):
    p = parser or Parser()
    ops = []
    for c in chunks:
        ops.extend(p.feed(c))
    return ops, p


@pytest.mark.parametrize("wire,op", SAMPLES, ids=[w[:12].decode("latin-1") for w, _ in SAMPLES])
def test_each_operation(wire, op):
    ops, p = feed_all([wire])
    assert ops == [op]
    assert p.buffered == 0


def test_whole_stream_in_one_feed():
    ops, p = feed_all([STREAM])
    assert ops == EXPECTED and p.buffered == 0


def test_operation_names_are_case_insensitive_and_tabs_separate():
    wire = (b"ping\r\nPong\r\n+ok\r\n-err 'x'\r\ninfo\t{}\r\n"
            b"msg\tfoo\t1\t2\r\nab\r\nhmsg  foo   2   12  12\r\nNATS/1.0\r\n\r\n\r\n")
    ops, _ = feed_all([wire])
    assert ops == [(PING,), (PONG,), (OK,), (ERR, "x"), (INFO, {}),
                   (MSG, "foo", 1, None, None, b"ab"), (MSG, "foo", 2, None, b"NATS/1.0\r\n\r\n", b"")]


def test_operation_tuples_are_shared_for_ping_pong_ok():
    # the hot path hands out the same tuples: cheap to compare by identity
    ops, _ = feed_all([b"PING\r\nPING\r\nPONG\r\n"])
    assert ops[0] is ops[1] and ops[2][0] is PONG


def test_split_at_every_byte_boundary_gives_the_same_ops():
    for i in range(len(STREAM) + 1):
        ops, p = feed_all([STREAM[:i], STREAM[i:]])
        assert ops == EXPECTED, f"split at {i}"
        assert p.buffered == 0


def test_two_splits_at_every_pair_of_boundaries_of_a_message():
    wire = SAMPLES[9][0] + b"PING\r\n"
    want = [SAMPLES[9][1], (PING,)]
    for i in range(len(wire) + 1):
        for j in range(i, len(wire) + 1):
            ops, _ = feed_all([wire[:i], wire[i:j], wire[j:]])
            assert ops == want, (i, j)


def test_one_byte_at_a_time():
    ops, p = feed_all([STREAM[i:i + 1] for i in range(len(STREAM))])
    assert ops == EXPECTED and p.buffered == 0


def test_incomplete_tail_is_kept_until_complete():
    p = Parser()
    assert p.feed(b"MSG foo 1 10\r\n01234") == []
    assert p.buffered == len(b"MSG foo 1 10\r\n01234")
    assert p.feed(b"56789") == []  # payload complete, CRLF missing
    assert p.feed(b"\r") == []
    assert p.feed(b"\n") == [(MSG, "foo", 1, None, None, b"0123456789")]
    assert p.buffered == 0
    assert p.feed(b"") == [] and p.feed(None) == []


def test_reset_forgets_a_partial_operation():
    p = Parser()
    p.feed(b"MSG foo 1 10\r\n012")
    p.reset()
    assert p.buffered == 0
    assert p.feed(b"PONG\r\n") == [(PONG,)]


def test_large_payload_is_not_limited_by_the_control_line_limit():
    payload = bytes(range(256)) * 4096  # 1 MiB, CRLFs and all
    wire = b"MSG big 1 %d\r\n" % len(payload) + payload + b"\r\n"
    ops, _ = feed_all([wire[i:i + 65536] for i in range(0, len(wire), 65536)])
    assert ops == [(MSG, "big", 1, None, None, payload)]


def test_control_line_limit():
    p = Parser()
    assert p.feed(b"MSG " + b"x" * (MAX_CONTROL_LINE - 4)) == []  # at the limit: still waiting
    with pytest.raises(NatsError) as e:
        p.feed(b"x")
    assert e.value.code == "ErrServer"


@pytest.mark.parametrize("bad", [
    b"BOGUS\r\n", b"\r\n", b"PINGX\r\n", b"PING \r\n", b"+OKAY\r\n", b"INFO\r\n", b"INFOX {}\r\n",
    b"INFO nojson\r\n", b"INFO [1,2]\r\n", b"INFO \"s\"\r\n", b"INFO " + b"[" * 3000 + b"\r\n",
    b"MSG\r\n", b"MSG a\r\n", b"MSG a 1\r\n", b"MSG a b 5\r\nhello\r\n", b"MSG a 1 -3\r\nx\r\n",
    b"MSG a 1 +2\r\nab\r\n", b"MSG a 1 1_0\r\n0123456789\r\n", b"MSG a -1 2\r\nab\r\n",
    b"MSG a 1 x 2 3\r\n", b"MSG a 1 2\r\nabcd\r\n", b"MSG a 1 2\r\nab\n\n",
    b"HMSG a 1 5\r\n", b"HMSG a 1 9 5\r\nNATS/1.0\r\n\r\n", b"HMSG a 1 x 5\r\nhello\r\n",
    b"HMSG a 1 r 2 3 4\r\n", b"MSGS a 1 2\r\nab\r\n", b"HEAD\r\n",
])
def test_malformed_input_is_err_protocol(bad):
    with pytest.raises(NatsError) as e:
        Parser().feed(bad)
    assert e.value.code == "ErrProtocol"


def test_operations_before_bad_bytes_come_with_the_error():
    with pytest.raises(NatsError) as e:
        Parser().feed(b"PING\r\nMSG a 1 2\r\nab\r\nGARBAGE\r\nPONG\r\n")
    assert e.value.code == "ErrProtocol"
    assert e.value.details["ops"] == [(PING,), (MSG, "a", 1, None, None, b"ab")]


def test_err_text_is_unquoted_and_trimmed():
    ops, _ = feed_all([b"-ERR  'Authorization Violation'  \r\n-ERR Unknown Protocol Operation\r\n"])
    assert ops == [(ERR, "Authorization Violation"), (ERR, "Unknown Protocol Operation")]


def test_non_utf8_subject_does_not_raise():
    ops, _ = feed_all([b"MSG \xff\xfe 1 0\r\n\r\n"])
    assert ops[0][0] == MSG and ops[0][1] == "\xff\xfe"   # each byte its character, as Tcl decodes


# ---------------------------------------------------------------- encoders

def test_encode_pub_matches_nats_tcl_wire_format():
    # the reply slot is always present (empty when none): nats-tcl's bytes
    assert encode_pub("foo", None, b"hello") == b"PUB foo  5\r\nhello\r\n"
    assert encode_pub("foo", "", b"") == b"PUB foo  0\r\n\r\n"
    assert encode_pub("foo", "bar", b"x") == b"PUB foo bar 1\r\nx\r\n"


def test_encode_hpub_sizes():
    hdr = b"NATS/1.0\r\nk: v\r\n\r\n"
    assert encode_pub("foo", None, b"xy", hdr) == b"HPUB foo  18 20\r\n" + hdr + b"xy\r\n"
    assert encode_pub("foo", "r", b"", hdr) == b"HPUB foo r 18 18\r\n" + hdr + b"\r\n"


def test_encode_sub_unsub_ping_pong():
    assert encode_sub("foo.*", None, 3) == b"SUB foo.*  3\r\n"
    assert encode_sub("foo", "q", 3) == b"SUB foo q 3\r\n"
    assert encode_unsub(3) == b"UNSUB 3\r\n"
    assert encode_unsub(3, 7) == b"UNSUB 3 7\r\n"
    assert (PING_BYTES, PONG_BYTES) == (b"PING\r\n", b"PONG\r\n")


def test_encode_connect_is_compact_json_on_one_line():
    data = encode_connect({"verbose": False, "name": "a b", "lang": "python"})
    assert data.startswith(b"CONNECT {") and data.endswith(b"}\r\n") and data.count(b"\r\n") == 1
    assert json.loads(data[8:]) == {"verbose": False, "name": "a b", "lang": "python"}
    assert b": " not in data and b", " not in data


def test_what_we_publish_parses_back_as_the_server_would_deliver_it():
    hdr = b"NATS/1.0\r\nA: 1\r\n\r\n"
    for payload in (b"", b"x", b"\r\n", bytes(range(256))):
        for header in (None, hdr):
            pub = encode_pub("s.t", "r", payload, header)
            # the server rewrites PUB/HPUB into MSG/HMSG with a sid
            head, _, body = pub.partition(b"\r\n")
            f = head.split()
            if header is None:
                wire = b"MSG s.t 7 r %s\r\n" % f[-1] + body
            else:
                wire = b"HMSG s.t 7 r %s %s\r\n" % (f[-2], f[-1]) + body
            ops, _ = feed_all([wire])
            assert ops == [(MSG, "s.t", 7, "r", header, payload)]


# ---------------------------------------------------------------- properties

subjects = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789._-$>*", min_size=1, max_size=20)
payloads = st.binary(max_size=300)
header_blocks = st.lists(
    st.tuples(st.text(alphabet="ABCDEFGHIJKabc-", min_size=1, max_size=8),
              st.text(alphabet="abcdef 0123456789:;", min_size=1, max_size=12)), max_size=4,
).map(lambda kv: ("NATS/1.0\r\n" + "".join(f"{k}: {v}\r\n" for k, v in kv) + "\r\n").encode())


@st.composite
def server_ops(draw):
    kind = draw(st.sampled_from(["MSG", "HMSG", "PING", "PONG", "OK", "ERR", "INFO"]))
    if kind == "MSG":
        subj, sid, reply, data = draw(subjects), draw(st.integers(1, 10**6)), draw(st.none() | subjects), \
            draw(payloads)
        wire = f"MSG {subj} {sid}{' ' + reply if reply else ''} {len(data)}\r\n".encode() + data + b"\r\n"
        return wire, (MSG, subj, sid, reply, None, data)
    if kind == "HMSG":
        subj, sid, reply, hdr, data = draw(subjects), draw(st.integers(1, 10**6)), draw(st.none() | subjects), \
            draw(header_blocks), draw(payloads)
        wire = (f"HMSG {subj} {sid}{' ' + reply if reply else ''} {len(hdr)} {len(hdr) + len(data)}\r\n".encode()
                + hdr + data + b"\r\n")
        return wire, (MSG, subj, sid, reply, hdr, data)
    if kind == "PING":
        return b"PING\r\n", (PING,)
    if kind == "PONG":
        return b"PONG\r\n", (PONG,)
    if kind == "OK":
        return b"+OK\r\n", (OK,)
    if kind == "ERR":
        text = draw(st.text(alphabet="abcdefghij XYZ\"", min_size=1, max_size=30).map(str.strip)
                    .filter(bool))
        return f"-ERR '{text}'\r\n".encode(), (ERR, text)
    info = draw(st.dictionaries(st.sampled_from(["server_id", "version", "max_payload", "headers", "x"]),
                                st.integers(0, 10**9) | st.booleans() | st.text(max_size=10), max_size=5))
    return b"INFO " + json.dumps(info).encode() + b"\r\n", (INFO, info)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(server_ops(), min_size=1, max_size=12), st.data())
def test_property_random_splits_give_the_same_ops(ops, data):
    wire = b"".join(w for w, _ in ops)
    want = [op for _, op in ops]
    cuts = sorted(data.draw(st.lists(st.integers(0, len(wire)), max_size=20)))
    chunks = [wire[a:b] for a, b in zip([0] + cuts, cuts + [len(wire)])]
    got, p = feed_all(chunks)
    assert got == want
    assert p.buffered == 0


def _feed_garbage(chunks):
    p = Parser()
    for c in chunks:
        try:
            p.feed(c)
        except NatsError as e:
            assert e.code in ("ErrProtocol", "ErrServer"), e.code
            return e
    return None


@settings(max_examples=500, deadline=None)
@given(st.lists(st.binary(max_size=200), min_size=1, max_size=5))
def test_property_garbage_only_raises_protocol_or_server_errors(chunks):
    _feed_garbage(chunks)


# garbage that gets past the first byte: an operation name, then random bytes
op_prefixes = st.sampled_from([b"MSG ", b"HMSG ", b"INFO ", b"-ERR ", b"PING", b"PONG", b"+OK", b"msg a 1 ",
                               b"HMSG a 1 ", b"INFO {", b"INFO [", b"MSG a 1 3\r\n"])


@settings(max_examples=500, deadline=None)
@given(st.lists(st.tuples(op_prefixes, st.binary(max_size=60)).map(lambda t: t[0] + t[1]), min_size=1,
                max_size=6), st.booleans())
def test_property_near_miss_garbage_only_raises_protocol_or_server_errors(parts, crlf):
    wire = (b"\r\n" if crlf else b"").join(parts) + b"\r\n"
    _feed_garbage([wire])


@settings(max_examples=300, deadline=None)
@given(st.lists(server_ops(), min_size=1, max_size=6), st.integers(0, 10**6), st.binary(min_size=1, max_size=8))
def test_property_corrupted_valid_stream_only_raises_protocol_or_server_errors(ops, where, junk):
    wire = b"".join(w for w, _ in ops)
    i = where % (len(wire) + 1)
    _feed_garbage([wire[:i] + junk + wire[i:]])


# ------------------------------------------------------------------ a server's byte feed, any split
FEED_STREAM = (
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
    ops = ops_of([FEED_STREAM])
    kinds = [o[0] for o in ops]
    assert kinds == ["INFO", "+OK", "PING", "PONG", "MSG", "MSG", "MSG", "MSG", "MSG", "-ERR"]
    assert ops[0][1]["max_payload"] == 1048576
    assert ops[4] == ("MSG", "foo.bar", 1, None, None, b"hello")
    assert ops[5] == ("MSG", "foo.bar", 12, "_INBOX.abc", None, b"")
    assert ops[6][4] == b"NATS/1.0\r\nA: 1\r\nA: 2\r\n\r\n" and ops[6][5] == b"world"
    assert ops[8][5] == b"\x00\r\n\xff"  # CRLF inside a payload is data
    assert ops[9] == ("-ERR", 'Permissions Violation for Publish to "x"')


def test_split_at_every_byte_boundary():
    whole = ops_of([FEED_STREAM])
    for i in range(1, len(FEED_STREAM)):
        assert ops_of([FEED_STREAM[:i], FEED_STREAM[i:]]) == whole, i


def test_one_byte_at_a_time_of_a_feed():
    assert ops_of([FEED_STREAM[i:i + 1] for i in range(len(FEED_STREAM))]) == ops_of([FEED_STREAM])


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(min_value=1, max_value=len(FEED_STREAM) - 1), max_size=12))
def test_random_splits(cuts):
    cuts = sorted(set(cuts))
    chunks = [FEED_STREAM[a:b] for a, b in zip([0] + cuts, cuts + [len(FEED_STREAM)])]
    assert ops_of(chunks) == ops_of([FEED_STREAM])


@pytest.mark.parametrize("bad", [
    b"BOGUS\r\n", b"MSG a\r\n", b"MSG a b 5\r\nhello\r\n", b"MSG a 1 -3\r\nx\r\n",
    b"MSG a 1 2\r\nabcd\r\n", b"HMSG a 1 9 5\r\nNATS/1.0\r\n\r\n", b"INFO nojson\r\n", b"INFO [1]\r\n",
])
def test_malformed_input_is_err_protocol_of_a_feed(bad):
    with pytest.raises(NatsError) as e:
        Parser().feed(bad)
    assert e.value.code == "ErrProtocol"


def test_control_line_limit_of_a_feed():
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
