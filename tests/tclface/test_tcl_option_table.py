"""The Tcl face's connection options are the engine's table
(engine/options.py OPTION_SPEC, validate.py MAX_TIMEOUT): every option's
default as ``$conn cget`` shows it before connect, its type as configure
checks it, and the longest timeout.  No server: nothing here connects."""

from __future__ import annotations

import tkinter

import pytest

from tclnats_py.engine import options as engine_options
from tclnats_py.engine.options import OPTION_SPEC
from tclnats_py.engine.validate import MAX_TIMEOUT
from tclnats_py.tclface.bridge import install

pytestmark = pytest.mark.tcl


def _tcl_form(value) -> str:
    if value is True or value is False:
        return "true" if value else "false"
    if isinstance(value, tuple):
        return " ".join(value)
    return str(value)


def _interp(api2: bool = False):
    interp = tkinter.Tcl()
    install(interp)
    tk = interp.tk
    if api2:
        tk.eval("set ::env(TCLNATS_API) 2")
    try:
        tk.eval("package require nats; set c [nats::connection new]")
    finally:
        tk.eval("unset -nocomplain ::env(TCLNATS_API)")
    return tk


def test_every_option_default_and_type_is_the_engines():
    tk = _interp()
    try:
        shown = dict(zip(*[iter(tk.splitlist(tk.eval("$c configure")))] * 2))
        assert set(shown) == set(OPTION_SPEC)
        types = dict(zip(*[iter(tk.splitlist(tk.eval("set ::nats::_option_types")))] * 2))
        for name, (typ, default) in OPTION_SPEC.items():
            assert tk.eval(f"$c cget -{name}") == _tcl_form(default), name
            assert shown[name] == _tcl_form(default), name
            assert types[name] == typ, name
        assert tk.eval("set ::nats::_max_timeout") == str(int(MAX_TIMEOUT * 1000))
        # configure's Tcl-side checks follow the types: a timeout past the
        # longest, an int (-1: unlimited) below -1
        for name, (typ, _d) in OPTION_SPEC.items():
            if typ == "timeout":
                with pytest.raises(tkinter.TclError, match=f"timeout option {name} :"):
                    tk.eval(f"$c configure -{name} {int(MAX_TIMEOUT * 1000) + 1}")
                assert tk.eval("lrange $::errorCode 0 1") == "NATS ErrBadTimeout"
            elif typ == "int":
                with pytest.raises(tkinter.TclError, match=f"option {name} : -2 \\(-1 means unlimited\\)"):
                    tk.eval(f"$c configure -{name} -2")
                assert tk.eval("lrange $::errorCode 0 1") == "NATS ErrInvalidArg"
        # and over all the pairs before the types: nothing changes
        for args, code, message in [
                ('-tls_opts {a b c}', "ErrInvalidArg",
                 "Invalid value for the option tls_opts : a b c (a dict of tls::import options expected)"),
                ('-servers "a \\{"', "ErrInvalidArg", "Invalid value for the option servers : a { (a list expected)"),
                ('-ping_interval x -servers "a \\{"', "ErrInvalidArg",
                 "Invalid value for the option servers : a { (a list expected)"),
                ('-ping_interval 5 -servers {nats://x:1 nats://b:a:d}', "ErrInvalidArg", "Invalid URL nats://b:a:d"),
                ('-ping_interval x', "ErrBadTimeout", "Invalid value for the timeout option ping_interval : x")]:
            with pytest.raises(tkinter.TclError) as e:
                tk.eval(f"$c configure {args}")
            assert (tk.eval("lindex $::errorCode 1"), str(e.value)) == (code, message), args
        assert tk.eval("$c cget -ping_interval") == _tcl_form(OPTION_SPEC["ping_interval"][1])
        tk.eval("$c configure -ping_interval 5 -servers {nats://a:1 nats://b:2}")
        tk.eval("$c reset ping_interval servers")
        assert tk.eval("$c cget -ping_interval") == _tcl_form(OPTION_SPEC["ping_interval"][1])
        assert tk.eval("$c cget -servers") == ""
    finally:
        tk.eval("$c destroy")


def test_a_default_changed_in_the_engine_is_what_cget_reports(monkeypatch):
    monkeypatch.setitem(OPTION_SPEC, "ping_interval", ("timeout", 45678))
    monkeypatch.setitem(OPTION_SPEC, "echo", ("bool", False))
    monkeypatch.setitem(OPTION_SPEC, "max_outstanding_pings", ("pos_int", 7))
    monkeypatch.setattr(engine_options, "OPTION_SPEC", OPTION_SPEC)
    tk = _interp()
    try:
        assert tk.eval("$c cget -ping_interval") == "45678"
        assert tk.eval("$c cget -echo") == "false"
        assert tk.eval("$c cget -max_outstanding_pings") == "7"
        tk.eval("$c configure -ping_interval 1; $c reset -ping_interval")
        assert tk.eval("$c cget -ping_interval") == "45678"
    finally:
        tk.eval("$c destroy")


def test_the_2x_api_keeps_its_own_request_timeout_default():
    tk = _interp(api2=True)
    try:
        assert tk.eval("$c cget -request_timeout") == "0"
        assert tk.eval("$c cget -ping_interval") == _tcl_form(OPTION_SPEC["ping_interval"][1])
    finally:
        tk.eval("$c destroy")
