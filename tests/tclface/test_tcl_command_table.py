"""The Tcl commands of the Python objects (``$Py op ...``) are one explicit
table per class (tclface/commands.py), built when the class is created:
every ``c_<op>`` method is in it with its arity, every op that nats.tcl and
server_pool.tcl send to a connection is in the connection's, and an op that
is not there is an error with the message the method lookup gave."""

from __future__ import annotations

import inspect
import re
import tkinter
from pathlib import Path

import pytest

from tclnats_py.tclface import bridge, js, micro, tcl_library_dir
from tclnats_py.tclface.bridge import install

pytestmark = pytest.mark.tcl

CLASSES = [bridge.TclConnection, js.JetStream, js.OrderedConsumer, js.KeyValue, js.Watcher, js.ObjectStore,
           micro.TclService]
# the Tcl files as package require nats finds them (the checkout's tcl/, or
# tclnats_py/tcl/ of an install)
TCL = Path(tcl_library_dir())


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_the_table_is_every_c_method_with_its_arity(cls):
    methods = {n[2:]: getattr(cls, n) for n in dir(cls) if n.startswith("c_")}
    assert methods and cls._tcl_commands == methods
    for op, fn in methods.items():
        params = list(inspect.signature(fn).parameters.values())[1:]
        varargs = any(p.kind is p.VAR_POSITIONAL for p in params)
        positional = [p for p in params if p.kind is p.POSITIONAL_OR_KEYWORD]
        least = sum(p.default is p.empty for p in positional)
        assert cls._tcl_arity[op] == (least, None if varargs else len(positional)), op


def test_every_op_the_tcl_files_send_a_connection_is_in_its_table():
    table = bridge.TclConnection._tcl_commands
    for name in ("nats.tcl", "server_pool.tcl", "v2/nats_v2.tcl"):
        ops = set(re.findall(r"\$Py ([a-z_]+)", (TCL / name).read_text())) - {"ne"}  # $Py ne ""
        assert ops and ops <= set(table), (name, ops - set(table))


def test_an_unknown_op_is_an_error_with_the_lookups_message():
    interp = tkinter.Tcl()
    install(interp)
    tk = interp.tk
    tk.eval("package require nats; set c [nats::connection new]; set Py [set [info object namespace $c]::Py]")
    try:
        with pytest.raises(tkinter.TclError) as e:
            tk.eval("::tclnats::r [$Py no_such_op 1 2]")
        assert tk.eval("lrange $::errorCode 0 1") == "NATS ErrInternal"
        with pytest.raises(AttributeError) as want:
            getattr(object.__new__(bridge.TclConnection), "c_no_such_op")  # the lookup before the table
        assert str(e.value) == f"AttributeError: {want.value}"
        assert tk.eval("$c cget -status") == "closed"   # the connection still answers
    finally:
        tk.eval("$c destroy")
