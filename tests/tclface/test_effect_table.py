"""The Tcl connection carries out the engine's effects through one table,
built once per connection from its on_<effect> handlers (engine/driver.py):
every effect class has a handler, an unknown class raises UnknownEffect, and
the deliveries of a run stay that run's, also when a handler runs the effects
it caused itself."""

import types

import pytest

from tclnats_py.engine.connection import Msg
from tclnats_py.engine.driver import HANDLER_NAMES, effect_table
from tclnats_py.engine.effects import EFFECTS, Deliver, Log, UnknownEffect
from tclnats_py.tclface import bridge
from tclnats_py.tclface.connection import TclConnection

pytestmark = pytest.mark.tcl


class Stray(tuple):
    """An effect class the engine does not have."""


@pytest.fixture
def conn():
    """A TclConnection of a new interpreter (not connected) and its Tcl object."""
    from tclnats_py.tclface.tclsh import new_interp
    interp = new_interp()
    obj = interp.eval("package require nats; set c [nats::connection new tbl]")
    found = [c for b in bridge._bridges.values() for c in b.conns.values() if c.ns == obj]
    assert len(found) == 1
    yield found[0], interp
    interp.eval("$c destroy")


def test_every_effect_has_a_handler_on_the_tcl_connection():
    assert set(HANDLER_NAMES) == set(EFFECTS)
    for cls, name in HANDLER_NAMES.items():
        fn = getattr(TclConnection, name, None)
        assert callable(fn), (cls.__name__, name)
    # the table builds from the class alone (no handler is set per instance)
    table = effect_table(object.__new__(TclConnection))
    assert set(table) == set(EFFECTS)
    for cls, handler in table.items():
        assert handler.__func__ is getattr(TclConnection, HANDLER_NAMES[cls]), cls


def test_a_connection_builds_its_table_once(conn):
    c, interp = conn
    table = c.effects
    assert table == effect_table(c) and set(table) == set(EFFECTS)
    assert all(h.__self__ is c for h in table.values())
    c.engine._fx.append(Log("debug", "x"))
    c.run()
    interp.eval("$c configure -pending_msgs_limit 10")
    assert c.effects is table


def test_an_unknown_effect_raises_and_the_connection_goes_on(conn):
    c, interp = conn
    before = c.out
    c.engine._fx.append(Stray())
    with pytest.raises(UnknownEffect, match="Stray"):
        c.run()
    assert c.out is before
    assert interp.eval("$c cget -status") == "closed"


def test_a_nested_run_keeps_its_deliveries_apart(conn):
    c, _interp = conn
    sub = types.SimpleNamespace(handler=("cb", False, 1), sid=7)
    m1, m2, m3 = (Msg("s", b"%d" % i) for i in (1, 2, 3))
    inner: list = []

    class Nested(tuple):
        pass

    def nested(e):
        # a handler that causes an effect and runs it at once
        c.engine._fx.append(Deliver(sub, m3))
        c.run(inner)

    c.effects[Nested] = nested
    try:
        c.engine._fx.extend([Deliver(sub, m1), Nested(), Deliver(sub, m2)])
        outer: list = []
        c.run(outer)
    finally:
        del c.effects[Nested]
    assert outer == [1, "cb", "s", b"1", "", 1, "cb", "s", b"2", ""]
    assert inner == [1, "cb", "s", b"3", ""]


def test_deliver_many_hands_over_what_each_deliver_would(conn):
    from tclnats_py.engine.effects import DeliverMany
    c, _interp = conn
    sub = types.SimpleNamespace(handler=("cb", False, 0), sid=3)
    msgs = [Msg("a", b"x", "r"), Msg("b", b"yy")]
    one: list = []
    c.engine._fx.extend(Deliver(sub, m) for m in msgs)
    c.run(one)
    many: list = []
    c.engine._fx.append(DeliverMany(sub, msgs))
    c.run(many)
    assert many == one == [0, "cb", "a", b"x", "r", 0, "cb", "b", b"yy", ""]


@pytest.mark.parametrize("many", [False, True], ids=["Deliver", "DeliverMany"])
def test_a_reads_deliveries_count_against_the_pending_limits(conn, many):
    from tclnats_py.engine.effects import DeliverMany

    class Sub:
        handler = ("cb", False, 1)
        sid = 5
        subject = "s"
    c, interp = conn
    sub = Sub()
    msgs = [Msg("s", b"abc"), Msg("s", b"de"), Msg("s", b"f")]
    c.limits = (2, 100)    # as _feed sets them from -pending_msgs_limit/-pending_bytes_limit
    c.batch = batch = {}   # a read in progress
    try:
        c.engine._fx.extend([DeliverMany(sub, msgs)] if many else [Deliver(sub, m) for m in msgs])
        out: list = []
        c.run(out)
    finally:
        c.batch = None
    assert out == [1, "cb", "s", b"abc", "", 1, "cb", "s", b"de", ""]
    assert batch == {sub: [2, 5]} and c.sub_pending == {sub: [2, 5]} and c.slow_subs == {sub}
    assert interp.eval("dict get [set [info object namespace $c]::last_error] code") == "NATS ErrSlowConsumer"
    c.batches.append(batch)
    c.batch_done()         # the read's callbacks have run: the episode ends
    assert c.sub_pending == {} and c.slow_subs == set()
