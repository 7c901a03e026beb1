"""The blocking client's subscription queue (sync/subscription.py
_deliver): the bytes it counts (the compiled data_size or the Python sum)
and the bounds they decide."""

import time

import pytest

import tclnats_py
from tclnats_py import sync
from tclnats_py.engine.connection import Msg
from tclnats_py.engine.protocol import compiled
from tclnats_py.sync.subscription import SyncMsg, _py_data_size


@pytest.mark.skipif(compiled("data_size") is None, reason="the accelerator is not built")
def test_data_size_counts_what_len_counts():
    data_size = compiled("data_size")
    cls = type("Msg", (SyncMsg,), {"__slots__": (), "_client": None})

    class Other:
        def __init__(self, data):
            self.data = data
    msgs = [cls("a", b"x" * i, None, None, 1) for i in range(40)] + [Msg("a", b"yy", None, None, 2)]
    mixed = msgs + [Other(bytearray(b"123")), Other("text"), cls("a", b"", None, None, 3)]
    for batch in (msgs, mixed, tuple(mixed), [], (msgs[5],)):
        assert data_size(batch) == _py_data_size(batch)
    with pytest.raises(AttributeError):
        data_size([object()])
    with pytest.raises(TypeError):
        data_size([Other(5)])


def test_the_queue_counts_its_bytes_and_drops_past_them(nats_server):
    """Without a callback the queue holds what came: pending_bytes is the
    sum of their payloads; past pending_bytes_limit messages are dropped,
    counted, and ErrSlowConsumer goes to error_cb."""
    errors = []
    with sync.connect(nats_server.url, error_cb=errors.append) as nc:
        sub = nc.subscribe("dq.x", pending_bytes_limit=10_000, pending_msgs_limit=-1)
        nc.flush()
        sizes = [(n * 37) % 400 for n in range(100)]
        for size in sizes:
            nc.publish("dq.x", b"p" * size)
        nc.flush()
        kept = []  # each message that fits in what is left is queued, the others dropped
        for size in sizes:
            if sum(kept) + size <= 10_000:
                kept.append(size)
        assert len(kept) < len(sizes)
        assert sub.pending_bytes == sum(kept) and sub.pending_msgs == len(kept)
        assert sub.dropped == len(sizes) - len(kept)
        deadline = time.monotonic() + 2
        while not errors and time.monotonic() < deadline:
            time.sleep(0.01)
        assert any(isinstance(e, tclnats_py.ErrSlowConsumer) for e in errors)
        assert [len(sub.next_msg(1).data) for _ in kept] == kept
        assert sub.pending_bytes == 0
