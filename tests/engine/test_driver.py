"""The driver contract (engine/driver.py): every effect has a handler name,
a driver missing one cannot build its table, and an effect the table does
not know fails loudly."""

import os
import subprocess
import sys

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


# what a driver's author writes: the Engine where the contract asks for an
# EngineIO, and (the control) an object that lacks most of it
ENGINE_IO_PROGRAM = '''\
from tclnats_py.engine.connection import Engine
from tclnats_py.engine.driver import EngineIO


class HalfDriven:
    def take(self, writing: bool = False) -> list[object]:
        return []


engine: EngineIO = Engine()
engine.receive_data(b"PING\\r\\n")
effects = engine.take()
half: EngineIO = HalfDriven()
'''


def test_the_engine_is_an_engine_io_for_mypy(tmp_path):
    prog = tmp_path / "driver_program.py"
    prog.write_text(ENGINE_IO_PROGRAM)
    top = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    r = subprocess.run([sys.executable, "-m", "mypy", "--config-file",
                        os.path.join(top, "tests", "install", "typing", "mypy.ini"), "--no-error-summary",
                        "--show-error-codes", "--cache-dir", str(tmp_path / "cache"), str(prog)],
                       cwd=top, capture_output=True, text=True, timeout=900)
    errors = [line for line in r.stdout.splitlines() if ": error:" in line]
    # only the control fails, and for being no EngineIO
    assert len(errors) == 1, r.stdout + r.stderr
    line = ENGINE_IO_PROGRAM.splitlines().index("half: EngineIO = HalfDriven()") + 1
    assert f":{line}: error:" in errors[0] and "EngineIO" in errors[0] and "[assignment]" in errors[0], errors
