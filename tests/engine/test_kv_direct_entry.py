"""Bucket.direct_entry: the entry (or error) of a KV direct get's reply kept
as its parts, read by natsproto.c kv_entry and by its Python reference,
against get_result of the Msg the engine makes of the same reply: the same
entry or the same error, on the server's header blocks and on random bytes
around them.  tests/sync/test_sync_kv.py compares them on live replies."""

import random

import pytest

from tclnats_py import NatsError
from tclnats_py.engine.headers import Headers, parse_headers
from tclnats_py.engine.js import JsApi, kv
from tclnats_py.engine.records import Msg
from tclnats_py.jsface.kv import KvEntry

from tests.engine.mutate import mutated

pytestmark = pytest.mark.unit

TS = b"2026-11-28T11:32:42.52492026Z"


def block(*lines: bytes, first: bytes = b"NATS/1.0") -> bytes:
    return b"\r\n".join((first, *lines, b"", b""))


COORDS = (b"Nats-Stream: KV_B", b"Nats-Subject: $KV.B.k", b"Nats-Sequence: 17", b"Nats-Time-Stamp: " + TS)

BLOCKS = [
    block(*COORDS),
    block(*COORDS, b"Nats-Num-Pending: 0", b"Nats-Last-Sequence: 16"),
    block(b"KV-Operation: DEL", *COORDS),
    block(b"KV-Operation: PURGE", b"Nats-Rollup: sub", *COORDS),
    block(b"KV-Operation: PUT", *COORDS),
    block(b"Nats-Expected-Last-Subject-Sequence: 0", b"Nats-TTL: 1", *COORDS),
    block(b"Nats-Marker-Reason: MaxAge", b"Nats-TTL: 1s", *COORDS),
    block(b"Nats-Marker-Reason: Remove", *COORDS),
    block(b"Nats-Marker-Reason: Purge", *COORDS),
    block(b"Nats-Marker-Reason: ", *COORDS),
    block(b"KV-Operation: DEL", b"Nats-Marker-Reason: Remove", *COORDS),
    block(b"KV-Operation: PUT", b"Nats-Marker-Reason: MaxAge", *COORDS),
    block(b"KV-Operation: DEL", b"KV-Operation: PUT", *COORDS),
    block(b"KV-Operation: del", *COORDS),
    block(b"KV-Operation: ", *COORDS),
    block(b"KV-Operation:", *COORDS),
    block(b"\t KV-Operation \t:\t DEL \t", *COORDS),
    block(b"kv-operation: DEL", *COORDS),
    block(*COORDS, b"Nats-Sequence: 18"),
    block(b"Nats-Sequence: 007", b"Nats-Time-Stamp: " + TS),
    block(b"Nats-Sequence: 123456789012345678", b"Nats-Time-Stamp: " + TS),
    block(b"Nats-Sequence: 1234567890123456789", b"Nats-Time-Stamp: " + TS),
    block(b"Nats-Sequence: +7", b"Nats-Time-Stamp: " + TS),
    block(b"Nats-Sequence: 1_7", b"Nats-Time-Stamp: " + TS),
    block(b"Nats-Sequence: ", b"Nats-Time-Stamp: " + TS),
    block(b"Nats-Time-Stamp: " + TS),
    block(b"Nats-Sequence: 3"),
    block(b"Nats-Sequence: 3", b"Nats-Time-Stamp: 2026-11-28T11:32:42Z"),
    block(b"Nats-Sequence: 3", b"Nats-Time-Stamp: 2026-11-28T11:32:42.5+01:00"),
    block(b"Nats-Sequence: 3", b"Nats-Time-Stamp: yesterday"),
    block(),
    block(b"Status: 404", *COORDS),
    block(b"Description: gone", *COORDS),
    block(b"no colon here", b": no name", *COORDS),
    block(b"X-Caf\xc3\xa9: \xc3\xa9t\xc3\xa9", *COORDS),
    block(b"X: a\rb", *COORDS),
    block(b"X: a\nb", *COORDS),
    block(b"X: a\x0bb", *COORDS),
    block(b"\x0cKV-Operation: DEL", *COORDS),
    block(b"X: \x7f", *COORDS),
    b"NATS/1.0\r\n" + b"\r\n".join(COORDS),
    b"NATS/1.0\r\n",
]


def outcome(fn):
    """What fn() gives: ("entry", its class, its slots) or ("error", class, text, details)."""
    try:
        e = fn()
    except NatsError as err:
        return "error", type(err), str(err), err.details
    except ValueError as err:
        return "error", type(err), str(err), None
    return "entry", type(e), [getattr(e, s) for s in kv.Entry.__slots__]


def direct_entry(blk: bytes, payload: bytes, compiled: bool, monkeypatch):
    b = kv.Bucket(JsApi(), "B", {"name": "KV_B", "allow_direct": True})
    with monkeypatch.context() as m:
        if not compiled:
            m.setattr(kv, "_kv_entry", None)
        return outcome(lambda: b.direct_entry("k", ("_INBOX.r", blk, payload, 99), KvEntry))


def as_msg(blk: bytes, payload: bytes):
    """get_result of the Msg the engine makes of the reply when it is not kept as its parts."""
    b = kv.Bucket(JsApi(), "B", {"name": "KV_B", "allow_direct": True})
    msg = Msg("_INBOX.x.1", payload, "_INBOX.r", Headers(parse_headers(blk)), 1)
    return outcome(lambda: b.get_result("k", None, msg, KvEntry))


@pytest.mark.parametrize("blk", BLOCKS)
def test_the_same_entry_or_error_as_the_msg_gives(blk, monkeypatch):
    want = as_msg(blk, b"v")
    assert direct_entry(blk, b"v", False, monkeypatch) == want
    if kv._kv_entry is not None:
        assert direct_entry(blk, b"v", True, monkeypatch) == want


def test_what_the_compiled_reader_reads_itself():
    """The common blocks are read in C (None would be the reference's turn), the rest left to it."""
    if kv._kv_entry is None:
        pytest.skip("the accelerator is not built")
    make = kv._entry_maker(KvEntry)
    for blk in BLOCKS[:13]:
        assert kv._kv_entry(make, "B", "k", blk, b"v") is not None, blk
    for blk in (BLOCKS[13], BLOCKS[14], BLOCKS[21], BLOCKS[22], BLOCKS[24], BLOCKS[27], BLOCKS[31],
                BLOCKS[34], BLOCKS[35], BLOCKS[38]):
        assert kv._kv_entry(make, "B", "k", blk, b"v") is None, blk
    e = kv._kv_entry(make, "B", "k", BLOCKS[0], b"v")
    assert type(e) is KvEntry and (e.revision, e.created, e.operation, e.delta, e.reason) == (
        17, 1795865562525, "PUT", 0, None)


def test_random_bytes_around_the_servers_blocks(monkeypatch):
    rnd = random.Random(20261128)
    alphabet = b"NATS/1.0 \t\r\n:-KVOperationDELPURGSqucmMrkx0123456789.TZ\xc3\xa9\x7f\x00"
    for _ in range(3000):
        blk = mutated(rnd, BLOCKS, alphabet, 4, 0.3, 0.7)
        if not blk.startswith(b"NATS/1.0\r\n"):  # (Engine.direct_reply keeps no other block as parts)
            continue
        want = as_msg(blk, b"v")
        assert direct_entry(blk, b"v", False, monkeypatch) == want, blk
        if kv._kv_entry is not None:
            assert direct_entry(blk, b"v", True, monkeypatch) == want, blk
