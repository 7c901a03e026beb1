"""The one fake driver of the server-free engine tests.

It carries out the engine's effects the way the asyncio and Tcl drivers do
(timers by due time on a fake clock, sockets opened and closed, writes
collected as bytes) and records every effect, so a test reads like a
conversation with a server: ``d.feed(b"MSG ...")``, ``d.take_wire()``,
``d.advance(ms)``, ``d.kinds(Deliver)``.
"""

import json

from tclnats_py import Engine, Options
from tclnats_py.credentials import read_credentials
from tclnats_py.engine.effects import (EFFECTS, CancelTimer, Close, ErrorChanged, Open, StartTimer,
                                 StatusChanged, UnknownEffect)

INFO = {"server_id": "S1", "version": "2.15.1-binary", "proto": 1, "max_payload": 1024, "headers": True}


def info_line(**extra) -> bytes:
    d = dict(INFO)
    d.update(extra)
    return b"INFO " + json.dumps(d).encode() + b"\r\n"


class FakeDriver:
    """Carries out effects like a real driver, records them for the tests."""

    def __init__(self, engine):
        self.e = engine
        self.now = 1_000_000
        engine._clock = lambda: self.now
        self.timers = {}      # key -> due time (ms)
        self.fx = []          # every effect seen
        self.opened = []      # servers we were asked to open
        self.closes = 0
        self.wire = b""       # everything written
        self.socket = False

    def pump(self):
        while True:
            fx = self.e.take()
            if not fx:
                return
            for f in fx:
                k = f.__class__
                if k not in EFFECTS:
                    raise UnknownEffect(f)
                self.fx.append(f)
                if k is StartTimer:
                    self.timers[f.key] = self.now + f.ms
                elif k is CancelTimer:
                    self.timers.pop(f.key, None)
                elif k is Open:
                    # the driver reads the credential files, not the engine
                    self.e.set_credentials(read_credentials(self.e.options))
                    self.opened.append(f.server)
                    self.socket = True
                elif k is Close:
                    self.wire += self.e.data_to_send()
                    self.closes += 1
                    self.socket = False

    def take_wire(self) -> bytes:
        """What the engine wants written now (plus what a close flushed)."""
        self.pump()
        data = self.wire + self.e.data_to_send()
        self.wire = b""
        self.pump()
        return data

    def advance(self, ms):
        """Let ms pass, firing due timers in order."""
        end = self.now + ms
        while True:
            self.pump()
            due = [(t, i, k) for i, (k, t) in enumerate(self.timers.items()) if t <= end]
            if not due:
                break
            t, _, key = min(due, key=lambda x: (x[0], x[1]))
            self.now = max(self.now, t)
            del self.timers[key]
            self.e.timer_fired(key)
        self.now = end
        self.pump()

    def fire(self, key):
        """Fire one timer now, whatever its due time."""
        self.timers.pop(key, None)
        self.e.timer_fired(key)
        self.pump()

    def feed(self, data: bytes):
        self.e.receive_data(data)
        self.pump()

    # ------------------------------------------------------------ handshake helpers
    def accept(self, info=None, pong=True):
        """Complete a handshake on the socket just opened; returns the CONNECT params."""
        self.e.socket_connected()
        self.pump()
        self.feed(info if info is not None else info_line())
        out = self.take_wire()
        assert out.startswith(b"CONNECT "), out
        line, _, rest = out.partition(b"\r\n")
        assert rest.startswith(b"PING\r\n")
        if pong:
            self.feed(b"PONG\r\n")
        return json.loads(line[8:])

    def refuse(self, reason="Connection refused"):
        self.e.socket_failed(reason)
        self.pump()

    def kinds(self, kind):
        """The effects of one class seen so far, in order."""
        return [f for f in self.fx if f.__class__ is kind]

    def statuses(self):
        return [f.status for f in self.kinds(StatusChanged)]

    def errors(self):
        return [f.error.code for f in self.kinds(ErrorChanged) if f.error is not None]


def make(servers=("nats://h1:4222",), **opts):
    """An engine (Options given by name) and its fake driver, not connected."""
    opts.setdefault("randomize", False)
    e = Engine(Options(**opts), lang="python", version="9.9")
    e.configure_servers(list(servers))
    return e, FakeDriver(e)


def connected(servers=("nats://h1:4222",), info=None, **opts):
    """An engine past its handshake, its effects and wire so far cleared."""
    e, d = make(servers, **opts)
    e.connect()
    d.pump()
    d.accept(info)
    assert e.status == "connected"
    d.take_wire()
    d.fx.clear()
    return e, d
