"""A short busy poll before the event loop sleeps, while a reply is awaited.

The Tcl face waits for a synchronous call's reply by polling its sockets
without sleeping for the first ``::tclnats::spin_us`` microseconds (see
tclcross_wait.c, ``await_var``): a reply that comes within them is taken at once,
without the wake-up of a sleeping thread, which costs tens of microseconds on
virtual machines.  This module gives asyncio clients the same: the loop's
selector is wrapped (once per loop) so that a ``select`` that would sleep
first polls with a zero timeout, for at most ``spin_us`` microseconds (and
never past the loop's own timeout), while at least one client of that loop
waits for a reply (a request, a flush).  Other tasks run as before: the poll
returns as soon as any registered file is ready, not only a client's socket.

The back-off is the Tcl face's, the same C code (``_ext/natscodec.c``, as
``tclnats_py._natsproto.SpinPolicy``): one reply late for the spin changes
nothing; after two in a row the next 10 waits sleep at once, then 20, 40 ...
at most 1,000; a reply caught while spinning starts over.  :class:`SpinPolicy`
here is its reference, used when the accelerator is not built.

Only selector event loops (asyncio's default on Unix) have a selector to
wrap; on others (uvloop, the proactor loop) nothing changes.  Each spin poll
yields the CPU (``os.sched_yield``) so that a server or responder that waits
for it on this machine runs at once.
"""

from __future__ import annotations

import os
import time
import weakref

from tclnats_py.engine.options import spin_time_default as default
from tclnats_py.engine.protocol import compiled

__all__ = ["install", "uninstall", "SpinningSelector", "SpinPolicy", "default"]


_yield = getattr(os, "sched_yield", None)
_clock = time.perf_counter


class SpinPolicy:
    """The spin back-off in Python, the reference of natscodec.c's
    (``_natsproto.SpinPolicy``, the same interface)."""

    __slots__ = ("skip", "misses", "caught_n", "missed_n", "skipped_n")

    def __init__(self) -> None:
        self.skip = 0  # waits left that do not spin
        self.misses = 0  # spins in a row that ran out (at most 8)
        self.caught_n = self.missed_n = self.skipped_n = 0

    def should_try(self) -> bool:
        """Whether this wait spins (False: a skipped wait, counted)."""
        if self.skip > 0:
            self.skip -= 1
            self.skipped_n += 1
            return False
        return True

    def caught(self) -> None:
        """A reply came while spinning: the back-off starts over."""
        self.misses = 0
        self.caught_n += 1

    def missed(self) -> None:
        """The spin ran out: the second miss in a row skips 10 waits, then 20, 40 ... 1000."""
        m = self.misses
        self.missed_n += 1
        if m > 0:
            self.skip = min(10 << (m - 1), 1000)
        self.misses = min(m + 1, 8)


# the C policy when the accelerator is built (the Tcl face's, tclcross_wait.c await_var)
_Policy = compiled("SpinPolicy") or SpinPolicy


def _policy_attr(name: str, doc: str) -> property:
    def get(self):
        return getattr(self._policy, name)

    def set_(self, value):
        setattr(self._policy, name, value)
    return property(get, set_, doc=doc)


class SpinningSelector:
    """The loop's selector with a busy-poll phase; every other attribute is
    the wrapped selector's."""

    def __init__(self, inner):
        self._inner = inner
        # the clients of this loop that may spin: (weak reference, seconds)
        self._entries: list = []
        self._policy = _Policy()

    # the back-off's state and counts (for tests and tuning)
    skip = _policy_attr("skip", "waits left that sleep at once")
    misses = _policy_attr("misses", "spins in a row that ran out")
    caught = _policy_attr("caught_n", "replies caught while spinning")
    missed = _policy_attr("missed_n", "spins that ran out")
    skipped = _policy_attr("skipped_n", "waits that did not spin (the back-off)")

    def __getattr__(self, name):
        return getattr(self._inner, name)

    def add(self, client, spin: float) -> None:
        """``client`` (which has ``_awaiting_reply()``) spins ``spin`` seconds."""
        self.remove(client)
        self._entries.append((weakref.ref(client), spin))

    def remove(self, client) -> None:
        self._entries = [e for e in self._entries if e[0]() not in (client, None)]

    def clients(self) -> list:
        """The clients that may spin on this loop."""
        return [c for c in (e[0]() for e in self._entries) if c is not None]

    def _budget(self) -> float:
        spin = 0.0
        for ref, s in self._entries:
            c = ref()
            if c is None:
                self.remove(None)  # one was collected without close()
                return self._budget()
            if s > spin and c._awaiting_reply():
                spin = s
        return spin

    def select(self, timeout=None):
        inner = self._inner
        if timeout is not None and timeout <= 0:
            return inner.select(timeout)
        spin = self._budget() if self._entries else 0.0
        if spin <= 0:
            return inner.select(timeout)
        policy = self._policy
        if not policy.should_try():
            return inner.select(timeout)
        if timeout is not None and timeout < spin:
            spin = timeout
        end = _clock() + spin
        select = inner.select
        while True:
            ready = select(0)
            if ready:
                policy.caught()
                return ready
            if _clock() >= end:
                break
            if _yield is not None:
                _yield()
        policy.missed()
        if timeout is not None:
            timeout = max(0.0, timeout - spin)
        return inner.select(timeout)


def install(loop, client, spin: float) -> SpinningSelector | None:
    """Let ``client`` (which has ``_awaiting_reply()``) spin on ``loop``'s
    selector for ``spin`` seconds while it waits for a reply; None when the
    loop has no selector to wrap or ``spin`` is 0."""
    sel = getattr(loop, "_selector", None)
    if sel is None or not callable(getattr(sel, "select", None)) or spin <= 0:
        return None
    if not isinstance(sel, SpinningSelector):
        sel = SpinningSelector(sel)
        loop._selector = sel
    sel.add(client, spin)
    return sel


def uninstall(sel: SpinningSelector | None, client) -> None:
    """``client`` no longer spins on that selector."""
    if sel is not None:
        sel.remove(client)
