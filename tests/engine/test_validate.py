"""One validator per kind of input, the same verdict on both faces."""

import pytest

import tclnats_py
from tclnats_py import NatsError
from tclnats_py.engine.headers import encode_headers
from tclnats_py.engine.validate import check_headers, check_int, check_seconds, check_timeout

GOOD = [{"K": "v"}, {"K": ["a", "b"]}, {"Név": "érték"}, {"X-Y_z.1": b"bytes"}]
BAD = [{"": "x"}, {" ": "x"}, {"a b": "x"}, {"a:b": "x"}, {"K\t": "x"}, {"K": "a\r\nI: 1"},
       {"K": ["ok", "b\nc"]}, {"\x01": "x"}]


@pytest.mark.parametrize("headers", GOOD)
def test_good_headers_pass_everywhere(headers, tcl_conn):
    assert check_headers(headers) is headers
    assert encode_headers(headers).startswith(b"NATS/1.0\r\n")
    tk, conn = tcl_conn
    pairs = []
    for k, v in headers.items():
        vals = v if isinstance(v, list) else [v.decode() if isinstance(v, bytes) else v]
        pairs += [k, tuple(vals)]
    got = conn.headers_from_tcl(tk.call("list", *pairs))
    assert list(got) == list(headers)


@pytest.mark.parametrize("headers", BAD)
def test_bad_headers_fail_the_same_everywhere(headers, tcl_conn):
    whys = []
    tk, conn = tcl_conn
    k, v = next(iter(headers.items()))
    tcl_pairs = tk.call("list", k, tuple(v) if isinstance(v, list) else (v,))
    for check in (check_headers, encode_headers, lambda h: conn.headers_from_tcl(tcl_pairs)):
        with pytest.raises(NatsError) as e:
            check(headers)
        assert e.value.code == "ErrInvalidArg"
        whys.append(str(e.value))
    assert whys[0] == whys[1] == whys[2], whys


def test_python_face_refuses_a_non_mapping():
    with pytest.raises(tclnats_py.ErrInvalidArg):
        check_headers("K: v")


@pytest.mark.parametrize("value,ok", [(0, True), (1.5, True), (-1, False), (float("nan"), False),
                                      (float("inf"), False), (True, False), ("1", False)])
def test_timeouts_and_durations(value, ok):
    for check, code in ((check_timeout, "ErrBadTimeout"),
                        (lambda v: check_seconds("ttl", v), "ErrInvalidArg")):
        if ok:
            assert check(value) == value
        else:
            with pytest.raises(NatsError) as e:
                check(value)
            assert e.value.code == code


def test_counts():
    assert check_int("n", 3, 1, 5) == 3
    for bad in (0, 6, True, 2.0, "3"):
        with pytest.raises(tclnats_py.ErrInvalidArg):
            check_int("n", bad, 1, 5)


@pytest.fixture
def tcl_conn():
    pytest.importorskip("tkinter")
    from tclnats_py.tclface import bridge as tclbridge
    from tclnats_py.tclface.tclsh import new_interp
    interp = new_interp()
    obj = interp.eval("package require nats; nats::connection new validate")
    conn = [c for b in tclbridge._bridges.values() for c in b.conns.values() if c.ns == obj][0]
    yield conn.tk, conn
    interp.eval(f"{obj} destroy")
