"""The parser's compiled accelerator (tclnats_py/_ext/natsproto.c) against the
pure-Python parser: the same operations and the same errors for the same
byte streams split anywhere, and the engine's unit tests with the
accelerator forced off (TCLNATS_PY_ACCEL=0; the rest of the suite runs with
it on when built)."""

from __future__ import annotations

import os
import random
import subprocess
import sys

import pytest

from tclnats_py.engine import protocol as P
from tclnats_py.engine.connection import Msg
from tclnats_py.errors import NatsError

pytestmark = pytest.mark.unit

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _need_accel():
    if P._scan is None:
        if os.environ.get("TCLNATS_PY_ACCEL") == "0":
            pytest.skip("TCLNATS_PY_ACCEL=0: the accelerator is off in this run")
        pytest.fail("tclnats_py._natsproto is not built (python setup.py build_ext --inplace)")


def _run(stream: bytes, cuts: list[int], accelerated: bool):
    """Feed ``stream`` in pieces cut at ``cuts``; every op and the first error
    (code, text, the ops that came with it)."""
    p = P.Parser(accelerated=accelerated)
    out: list = []
    prev = 0
    for c in cuts + [len(stream)]:
        try:
            out.extend(p.feed(stream[prev:c]))
        except NatsError as e:
            return out, (e.code, str(e), e.details.get("ops"))
        prev = c
    return out, (None, None, p.buffered)


FRAMES = [
    b"MSG a.b 1 5\r\nhello\r\n",
    b"MSG a.b 12 _INBOX.x.1 3\r\nabc\r\n",
    b"MSG a.b 1 0\r\n\r\n",
    b"HMSG a.b 2 12 17\r\nNATS/1.0\r\n\r\nhello\r\n",
    b"HMSG a.b 2 r.x 12 12\r\nNATS/1.0\r\n\r\n\r\n",
    b"MSG\ta.b\t1\t2\r\nhi\r\n",
    b"MSG  a.b   7  2\r\nhi\r\n",
    b"msg a.b 1 2\r\nhi\r\n",
    b"hmsg a.b 1 12 12\r\nNATS/1.0\r\n\r\n\r\n",
    b"MSG a.\xc3\xa9 1 2\r\nhi\r\n",
    b"MSG a.b 00012 2\r\nhi\r\n",
    b"MSG a.b 123456789012345678901 2\r\nhi\r\n",
    b"PING\r\n", b"PONG\r\n", b"+OK\r\n", b"ping\r\n", b"pong\r\n", b"+ok\r\n",
    b'INFO {"server_id":"x","max_payload":1048576}\r\n',
    b"-ERR 'Stale Connection'\r\n",
    b"-ERR 'Permissions Violation for Subscription to \"x\"'\r\n",
]
BAD = [
    b"MSG a.b x 2\r\nhi\r\n", b"MSG a.b 1 +2\r\nhi\r\n", b"MSG a.b 1\r\n", b"MSG a b c d e f\r\n",
    b"MSG a.b 1 2\r\nhiX\r\n", b"HMSG a.b 1 9 3\r\nabc\r\n", b"HMSG a.b 1 x 3\r\nabc\r\n",
    b"MSGX a 1 1\r\nx\r\n", b"BOGUS\r\n", b"PINGX\r\n", b"INFO [1]\r\n", b"INFO {bad\r\n",
    b"MSG a\x0bb 1 2\r\nhi\r\n", b"MSG a\rb 1 2\r\nhi\r\n", b"X" * (P.MAX_CONTROL_LINE + 10),
    b"\r\n",
]


@pytest.mark.parametrize("seed", range(40))
def test_same_ops_and_errors(seed):
    _need_accel()
    rnd = random.Random(seed)
    parts = [rnd.choice(FRAMES) for _ in range(rnd.randint(1, 60))]
    if seed % 2:
        parts.insert(rnd.randint(0, len(parts)), rnd.choice(BAD))
    stream = b"".join(parts)
    if seed % 5 == 0:
        stream = stream[:rnd.randint(0, len(stream))]  # ends in the middle of something
    cuts = sorted(rnd.sample(range(1, max(2, len(stream))), min(len(stream) - 1, rnd.randint(0, 12)))) \
        if len(stream) > 1 else []
    assert _run(stream, cuts, True) == _run(stream, cuts, False)


def test_every_split_of_a_mixed_stream():
    _need_accel()
    stream = b"".join(FRAMES)
    for cut in range(1, len(stream)):
        assert _run(stream, [cut], True) == _run(stream, [cut], False), cut


def test_ops_share_the_tags():
    _need_accel()
    ops = P.Parser(accelerated=True).feed(b"PING\r\nMSG a 1 1\r\nx\r\n")
    assert ops[0] is P.Parser(accelerated=False).feed(b"PING\r\n")[0]
    assert ops[1][0] is P.MSG and ops[1] == (P.MSG, "a", 1, None, None, b"x")
    assert type(ops[1][1]) is str and type(ops[1][5]) is bytes


def test_engine_unit_tests_without_the_accelerator():
    env = dict(os.environ, TCLNATS_PY_ACCEL="0")
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-x",
                        "tests/engine/test_protocol.py", "tests/engine/test_engine.py", "tests/engine/test_engine_bounds.py"],
                       cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-2000:]
    assert " passed" in r.stdout


def test_forcing_the_accelerator_on():
    r = subprocess.run([sys.executable, "-c", "from tclnats_py.engine import protocol as P; print(P.ACCELERATED)"],
                       env=dict(os.environ, TCLNATS_PY_ACCEL="1"), capture_output=True, text=True, timeout=60)
    if P._scan is None and os.environ.get("TCLNATS_PY_ACCEL") != "1":
        assert r.returncode != 0 and "not built" in r.stderr
    else:
        assert r.returncode == 0 and r.stdout.strip() == "True", r.stderr


# ---------------------------------------------------------------- the asyncio face's fast paths
def _need_fast():
    _need_accel()
    if P.take_msgs is None or P.step is None or P.DONE is None or P.pub_frame is P._py_pub_frame:
        pytest.fail("tclnats_py._natsproto is an old build (python setup.py build_ext --inplace)")


@pytest.mark.parametrize("seed", range(10))
def test_pub_frame_same_bytes_as_python_and_encode_pub(seed):
    _need_fast()
    rnd = random.Random(seed)
    subjects = ["a", "a.b", "orders.new.é", "x" * 300, "s%d" % seed]
    heads_c: dict = {}
    heads_py: dict = {}
    for s in subjects[:-1]:  # the last one was never checked: both give None
        size = rnd.randint(0, 40)
        heads_c[s] = P.pub_head(s, size)
        heads_py[s] = P.pub_head(s, size)
    for _ in range(300):
        s = rnd.choice(subjects)
        data = bytes(rnd.getrandbits(8) for _ in range(rnd.choice((0, 1, 9, 10, 99, 100, 1000))))
        limit = rnd.choice((0, 5, 100, 1 << 20, 1 << 80))
        c = P.pub_frame(heads_c, s, data, limit)
        py = P._py_pub_frame(heads_py, s, data, limit)
        if len(data) > limit:
            assert c is None and py is None
        elif s in heads_py:
            assert c == py == P.encode_pub(s, None, data)
        else:  # never published: Python leaves it to the engine; compiled, checked and framed as it would
            assert py is None and c == P.encode_pub(s, None, data)
    class Str(str):
        pass
    for args in ((heads_c, Str("a"), b"x", 9), (heads_c, "a", bytearray(b"x"), 9), (heads_c, "a", "x", 9),
                 (heads_c, 5, b"x", 9)):
        assert P.pub_frame(*args) is None and P._py_pub_frame(*args) is None


def _flat(fx):
    """Deliver / DeliverMany effects as one (sub, message fields) per message, other effects as they are."""
    from tclnats_py.engine.effects import Deliver, DeliverMany
    out = []
    for f in fx:
        if f.__class__ is DeliverMany:
            assert f.msgs, "an empty DeliverMany"
            out.extend(("msg", f.sub.sid, type(m), m.subject, m.data, m.reply, m.headers, m.sid) for m in f.msgs)
        elif f.__class__ is Deliver:
            m = f.msg
            out.append(("msg", f.sub.sid, type(m), m.subject, m.data, m.reply, m.headers, m.sid))
        else:
            out.append(f)
    return out


_TAKE = P.take_msgs  # the compiled one (None when not built)


class _M(Msg):
    """A driver's message class (as the asyncio face's, no __init__ of its own)."""
    __slots__ = ()


def _engine_run(stream: bytes, cuts: list, batches: bool, take: bool, monkeypatch):
    from tests.fake_driver import connected
    e, d = connected()
    e.msg_class = _M
    e.deliver_batches = batches
    monkeypatch.setattr(P, "take_msgs", _TAKE if take else None)
    e.subscribe("a.>")           # sid 1: plain
    e.subscribe("b", max_msgs=7)  # sid 2: ends after 7
    e.subscribe("c")             # sid 3: plain
    d.take_wire()
    d.fx.clear()
    prev = 0
    for c in cuts + [len(stream)]:
        e.receive_data(stream[prev:c])
        prev = c
        d.pump()
    return _flat(d.fx), e.stats["in_msgs"], {s.sid: s.received for s in e.subs.values()}


@pytest.mark.parametrize("seed", range(12))
def test_delivered_in_batches_or_one_by_one_the_same(seed, monkeypatch):
    _need_fast()
    rnd = random.Random(seed)
    frames = [b"MSG a.x 1 3\r\nabc\r\n", b"MSG a.y 1 _INBOX.r 2\r\nhi\r\n", b"MSG b 2 1\r\nz\r\n",
              b"MSG c 3 0\r\n\r\n", b"HMSG a.h 1 12 14\r\nNATS/1.0\r\n\r\nok\r\n", b"MSG gone 9 1\r\nq\r\n",
              b"PING\r\n", b"MSG\ta.t\t1\t1\r\nt\r\n", b"HMSG c 3 18 18\r\nNATS/1.0\r\nK: v\r\n\r\n\r\n"]
    stream = b"".join(rnd.choice(frames) for _ in range(rnd.randint(1, 80)))
    cuts = sorted(rnd.sample(range(1, len(stream)), min(len(stream) - 1, rnd.randint(0, 8))))
    one = _engine_run(stream, cuts, False, False, monkeypatch)
    assert _engine_run(stream, cuts, True, True, monkeypatch) == one
    assert _engine_run(stream, cuts, True, False, monkeypatch) == one


def test_take_msgs_only_for_msg_slots():
    _need_fast()
    from tclnats_py.engine.connection import Msg
    ops = P.Parser().feed(b"MSG a 1 3\r\nabc\r\nMSG b 1 r 2\r\nhi\r\nMSG c 2 1\r\nx\r\nMSG a 1 1\r\ny\r\n")
    out: list = []
    assert P.take_msgs(ops, 0, 1, Msg, out) == 2
    assert [(m.subject, m.data, m.reply, m.headers, m.sid) for m in out] == [("a", b"abc", None, None, 1),
                                                                            ("b", b"hi", "r", None, 1)]
    assert P.take_msgs(ops, 2, 1, Msg, out) == 2 and P.take_msgs(ops, 4, 1, Msg, out) == 4 and len(out) == 2

    class Other:
        __slots__ = ("subject",)
    assert P.take_msgs(ops, 0, 1, Other, out) is None and P.take_msgs(ops, 0, 1, int, out) is None
    assert len(out) == 2


def test_step_runs_a_callback_to_its_first_wait():
    _need_fast()
    import asyncio
    seen = []

    async def done(m):
        seen.append(m)
        return 5

    async def waits(m):
        await asyncio.sleep(0)

    async def fails(m):
        raise ValueError(m)

    def plain(m):
        seen.append(m)

    assert P.step(done, 1) is None and P.step(plain, 2) is None and seen == [1, 2]
    coro, y = P.step(waits, 3)
    assert asyncio.iscoroutine(coro) and y is None
    coro.close()
    assert P.step(lambda m: m * 2, 4) == (8, P.STEP_OTHER)
    with pytest.raises(ValueError):
        P.step(fails, 5)
    with pytest.raises(KeyError):
        P.step({}.__getitem__, 6)


def test_done_is_an_awaitable_already_complete():
    _need_fast()
    import asyncio

    async def go():
        assert await P.DONE is None
        assert await asyncio.ensure_future(P.DONE) is None
        assert await asyncio.gather(P.DONE, P.DONE) == [None, None]
    asyncio.run(go())
    assert repr(P.DONE) == "<publish: queued>"


def test_compiled_headers_parse_as_parse_headers():
    _need_fast()
    from tclnats_py.engine.headers import parse_headers
    assert P.headers is not None
    fixed = [b"NATS/1.0\r\n\r\n", b"NATS/1.0", b"NATS/1.0\r\nK: v\r\nK: w\r\n\tA\t:\t b c \t\r\nK:\r\nB: \r\nx\r\n :y\r\n\r\n",
             b"NATS/1.0\r\nNats-Stream: KV_B\r\nNats-Sequence: 12\r\nNats-Time-Stamp: 2026-11-24T18:00:00.1Z\r\n\r\n",
             b"NATS/1.0\r\nK: a:b::\r\n\r\nL: after a blank line\r\n"]
    for blk in fixed:
        assert P.headers(blk) == parse_headers(blk), blk
    # what it leaves to Python: a status, non-ASCII, a lone CR or LF, other versions
    for blk in (b"NATS/1.0 503\r\n\r\n", b"NATS/1.0\r\nK: \xc3\xa9\r\n", b"NATS/1.0\r\nK: v\rx\r\n",
                b"NATS/1.0\nK: v\r\n", b"NATS/1.0x\r\n", b"NATS/1.1\r\n", b"", b"NATS/1.0\r\nK:\x0bv\r\n"):
        assert P.headers(blk) is None, blk
    rnd = random.Random(7)
    alphabet = b"ab: \t\r\nK:\x0b"
    decided = 0
    for _ in range(20000):
        blk = b"NATS/1.0" + bytes(rnd.choice(alphabet) for _ in range(rnd.randint(0, 24)))
        got = P.headers(blk)
        if got is not None:
            decided += 1
            assert got == parse_headers(blk), blk
    assert decided > 300


def test_pub_frame_checks_subjects_and_replies_as_the_engine():
    _need_fast()
    from tclnats_py.engine.subjects import valid_subject
    rnd = random.Random(3)
    alphabet = "ab.-_$*> é\t9"
    heads = {"k.n": P.pub_head("k.n", 4)}
    seen = {True: 0, False: 0}
    for _ in range(20000):
        subj = "".join(rnd.choice(alphabet) for _ in range(rnd.randint(0, 7)))
        reply = rnd.choice((None, "", "_INBOX.a.1", subj[::-1]))
        if rnd.random() < 0.2:
            subj = "k.n"
        check = rnd.random() < 0.8
        f = P.pub_frame(heads, subj, b"data", 1 << 20, reply, check)
        subj_ok = subj in heads or (bool(subj) and (not check or valid_subject(subj)))
        reply_ok = not reply or not check or valid_subject(reply)
        if f is not None:
            # what the engine would accept, framed as it frames it
            assert subj_ok and reply_ok and f == P.encode_pub(subj, reply, b"data"), (subj, reply, check)
            seen[True] += 1
        else:
            # only what it does not take: non-ASCII, or what the engine refuses
            assert not (subj + (reply or "")).isascii() or not subj_ok or not reply_ok, (subj, reply, check)
            seen[False] += 1
    assert seen[True] > 1000 and seen[False] > 1000
