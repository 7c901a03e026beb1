"""aio/effects.py: the asyncio client carries out the engine's effects
through one table of ``on_<effect>`` handlers, built once per client; the
Deliver effects that follow each other for one subscription reach it in one
call, in order, and the effect after them is still carried out."""

import pytest

from tclnats_py.aio.client import Client
from tclnats_py.engine import effects as E
from tclnats_py.engine.driver import HANDLER_NAMES

pytestmark = pytest.mark.unit


class Sink:
    """A subscription handler that records the calls it gets."""

    def __init__(self):
        self.calls = []

    def _deliver(self, msg):
        self.calls.append(("one", msg))


class EngineSub:
    def __init__(self, handler):
        self.handler = handler


def test_the_table_is_built_once_and_holds_every_handler():
    c = Client()
    assert set(c._effects) == set(HANDLER_NAMES)
    for cls, name in HANDLER_NAMES.items():
        assert c._effects[cls] == getattr(c, name), name
    table = c._effects
    c.run_effects()
    assert c._effects is table


def test_an_effect_class_the_client_does_not_know_raises_unknown_effect():
    c = Client()

    class Stray(tuple):
        pass
    c.engine._fx.append(Stray())
    with pytest.raises(E.UnknownEffect):
        c.run_effects()


def test_consecutive_deliveries_for_one_subscription_go_in_order_then_the_next_effect_runs():
    c = Client()
    a, b = Sink(), Sink()
    sa, sb = EngineSub(a), EngineSub(b)
    seen = []
    c._effects[E.Log] = lambda e: seen.append((e.text, list(a.calls), list(b.calls)))
    c.engine._fx.extend([E.Deliver(sa, 1), E.Deliver(sa, 2), E.Deliver(sb, 3), E.Deliver(sb, 4),
                         E.Deliver(sa, 5), E.Log("info", "after"), E.Deliver(sa, 6)])
    c.run_effects()
    assert a.calls == [("one", 1), ("one", 2), ("one", 5), ("one", 6)]
    assert b.calls == [("one", 3), ("one", 4)]
    # the Log ran after the deliveries before it and before the one after it
    assert seen == [("after", [("one", 1), ("one", 2), ("one", 5)], [("one", 3), ("one", 4)])]


def test_a_handler_that_runs_effects_itself_leaves_the_outer_run_intact():
    c = Client()
    a = Sink()
    sa = EngineSub(a)
    order = []

    def log(e):
        order.append(e.text)
        if e.text == "outer":
            c.engine._fx.extend([E.Log("info", "inner"), E.Deliver(sa, "inner-msg")])
            c.run_effects()
    c._effects[E.Log] = log
    c.engine._fx.extend([E.Log("info", "outer"), E.Deliver(sa, 1), E.Deliver(sa, 2)])
    c.run_effects()
    assert order == ["outer", "inner"]
    assert a.calls == [("one", "inner-msg"), ("one", 1), ("one", 2)]

