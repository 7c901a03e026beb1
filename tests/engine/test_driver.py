"""The driver contract (engine/driver.py): every effect has a handler name,
a driver missing one cannot build its table, and an effect the table does
not know fails loudly."""

import pytest

from tclnats_py.engine import effects as E
from tclnats_py.engine.driver import HANDLER_NAMES, EffectHandlers, effect_table, unknown_effect

pytestmark = pytest.mark.unit


class Recorder:
    def __init__(self):
        self.seen = []

    def __getattr__(self, name):
        if not name.startswith("on_"):
            raise AttributeError(name)
        return lambda e: self.seen.append((name, e))


def test_every_effect_class_has_one_handler_named_in_the_protocol():
    assert set(HANDLER_NAMES) == set(E.EFFECTS)
    assert len(set(HANDLER_NAMES.values())) == len(E.EFFECTS)
    for name in HANDLER_NAMES.values():
        assert callable(getattr(EffectHandlers, name)), name


def test_the_table_dispatches_each_effect_to_its_handler():
    r = Recorder()
    table = effect_table(r)
    fx = [E.Open("srv"), E.StartTimer("k", 5), E.Deliver("sub", "m"), E.FLUSH, E.Log("warn", "x")]
    for f in fx:
        table[f.__class__](f)
    assert r.seen == [("on_open", fx[0]), ("on_start_timer", fx[1]), ("on_deliver", fx[2]),
                      ("on_flush", fx[3]), ("on_log", fx[4])]


def test_a_driver_without_a_handler_cannot_build_its_table():
    class Partial:
        def on_open(self, e):
            pass
    with pytest.raises(TypeError) as ei:
        effect_table(Partial())
    assert "on_start_tls" in str(ei.value) and "on_deliver" in str(ei.value)
    assert "on_open," not in str(ei.value)


def test_overrides_replace_a_handler_by_name_and_unknown_names_are_refused():
    r = Recorder()
    got = []
    table = effect_table(r, on_log=got.append)
    table[E.Log](E.Log("info", "t"))
    assert got == [E.Log("info", "t")] and r.seen == []
    with pytest.raises(TypeError, match="on_bogus"):
        effect_table(r, on_bogus=print)


def test_an_effect_class_the_table_does_not_know_raises_unknown_effect():
    class NewEffect(E.Log):
        level: str
        text: str
    table = effect_table(Recorder())
    assert type(table) is dict and NewEffect not in table
    with pytest.raises(E.UnknownEffect, match="NewEffect"):
        unknown_effect(NewEffect("info", "x"))
