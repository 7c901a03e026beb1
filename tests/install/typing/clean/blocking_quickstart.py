"""docs/blocking.md's example, for the type checkers (tests/install/test_typing.py)."""

import threading
import tclnats_py
from tclnats_py import sync

with sync.connect("nats://localhost:4222", name="app", reconnect_time_wait=2) as nc:   # times in seconds
    sub = nc.subscribe("greet.*")                                   # or cb=..., queue=..., max_msgs=...
    nc.publish("greet.py", b"hello", headers={"K": ["v1", "v2"]})
    msg = sub.next_msg(timeout=1)                                   # or: for msg in sub
    print(msg.data, msg.header("K"))                                # b'hello' v1
    nc.subscribe("svc", cb=lambda m: m.respond(b"re:" + m.data))   # runs on the client's own thread
    reply = nc.request("svc", b"ping", timeout=1)                  # ErrTimeout, ErrNoResponders
    replies = nc.request_many("svc", b"all?", max_msgs=5, timeout=0.5)   # what came within the timeout
    try:
        nc.request("nobody.home", b"", timeout=1)
    except tclnats_py.ErrNoResponders:
        pass
    workers = [threading.Thread(target=nc.request, args=("svc", b"from a thread")) for _ in range(4)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    settings = nc.subscribe("settings")
    nc.publish("settings", b"dark")
    print(settings.next_msg(timeout=1).data)
# leaving the block closes the client: flushes, ends its threads
