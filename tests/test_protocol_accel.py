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
from tclnats_py.errors import NatsError

pytestmark = pytest.mark.unit

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


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
                        "tests/test_protocol.py", "tests/test_engine.py", "tests/test_engine_bounds.py"],
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
