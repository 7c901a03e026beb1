"""A small blocking program on tclnats_py.sync: no asyncio, no await.

    python examples/sync_script.py [nats://127.0.0.1:4222]

It starts a service (a callback subscription, run on the client's own
thread), asks it questions from three threads sharing the one client,
publishes events and reads them back with a subscription iterator, gathers
several replies with request_many, and closes.  It prints what it did and
exits non-zero when something does not behave; tests/sync/test_examples.py
runs it in CI.
"""

from __future__ import annotations

import sys
import threading

import tclnats_py
from tclnats_py import sync


def main(url: str) -> int:
    with sync.connect(url, name="sync-script", request_timeout=2) as nc:
        # a service: each request answered from the client's keeper thread
        nc.subscribe("demo.upper", queue="upper", cb=lambda m: m.respond(m.data.upper()))
        nc.subscribe("demo.census", cb=lambda m: m.respond(b"one"))
        nc.subscribe("demo.census", cb=lambda m: m.respond(b"two"))
        nc.flush()

        # three threads, one client: every method may be called from any thread
        answers: dict[str, bytes] = {}

        def ask(word: str) -> None:
            answers[word] = nc.request("demo.upper", word.encode()).data

        threads = [threading.Thread(target=ask, args=(w,)) for w in ("alpha", "beta", "gamma")]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        print("answers:", ", ".join(f"{k}={v.decode()}" for k, v in sorted(answers.items())))

        # events: publish, then read them back with an iterator until it ends
        events = nc.subscribe("demo.events.>")
        events.unsubscribe(3)  # ends after three messages
        for i in range(3):
            nc.publish(f"demo.events.{i}", f"event {i}", headers={"Seq": str(i)})
        got = [(m.subject, m.headers["Seq"] if m.headers else None) for m in events]
        print("events:", got)

        # every reply that comes within the timeout
        census = sorted(m.data for m in nc.request_many("demo.census", b"", max_msgs=2, timeout=1))
        print("census:", census)

        try:
            nc.request("demo.nobody", b"", timeout=0.5)
            nobody = "answered?"
        except tclnats_py.ErrNoResponders:
            nobody = "no responders"
        print("nobody:", nobody)

    ok = (answers == {"alpha": b"ALPHA", "beta": b"BETA", "gamma": b"GAMMA"}
          and got == [(f"demo.events.{i}", str(i)) for i in range(3)]
          and census == [b"one", b"two"] and nobody == "no responders" and nc.is_closed)
    print("ok" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "nats://127.0.0.1:4222"))
