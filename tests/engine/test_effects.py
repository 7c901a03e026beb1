"""The engine's effects are small types, and each driver refuses one it does
not know instead of dropping it."""

import typing

import pytest

import tclnats_py
from tclnats_py.engine import effects as _effects
from tclnats_py.engine.effects import EFFECTS, Deliver, RequestDone, UnknownEffect


class Unknown(typing.NamedTuple):
    what: str


def test_every_effect_is_a_named_tuple_with_documented_fields():
    for cls in EFFECTS:
        assert issubclass(cls, tuple) and hasattr(cls, "_fields"), cls
        assert cls.__doc__ and cls.__name__ in _effects.__all__
    assert Deliver("s", "m").msg == "m" and RequestDone("r", "timeout") == RequestDone("r", "timeout")
    assert RequestDone("r", "timeout") != ("req", "r", "timeout")


def test_the_engine_makes_only_known_effects():
    from tests.fake_driver import connected
    e, d = connected()
    sub = e.subscribe("a")
    req = e.request("svc", b"q", 500)
    d.take_wire()
    d.feed(b"MSG a %d 1\r\nx\r\nPING\r\n" % sub.sid)
    d.advance(600)
    e.disconnect()
    d.pump()
    kinds = {f.__class__ for f in d.fx}
    assert kinds <= set(EFFECTS) and {Deliver, RequestDone} <= kinds
    assert RequestDone(req, "timeout") in d.fx


def test_asyncio_driver_refuses_an_unknown_effect():
    client = tclnats_py.Client()
    client._engine._fx.append(Unknown("x"))
    with pytest.raises(UnknownEffect, match="Unknown"):
        client._run()


def test_tcl_driver_refuses_an_unknown_effect():
    tkinter = pytest.importorskip("tkinter")
    from tclnats_py.tclface.tclsh import new_interp
    interp = new_interp()
    obj = interp.eval("package require nats; set c [nats::connection new eff]")
    from tclnats_py.tclface import bridge as tclbridge
    conns = [c for b in tclbridge._bridges.values() for c in b.conns.values() if c.ns == obj]
    assert len(conns) == 1
    conns[0].engine._fx.append(Unknown("x"))
    with pytest.raises(UnknownEffect):
        conns[0].run()
    interp.eval("$c destroy")
    del tkinter
