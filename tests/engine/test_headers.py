"""Message headers (ADR-4): ``tclnats_py.engine.headers``."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tclnats_py import NatsError
from tclnats_py.engine.connection import Msg
from tclnats_py.engine.headers import encode_headers, parse_headers, status_of


def test_parse_multi_valued_and_case_sensitive_keys():
    h = parse_headers(b"NATS/1.0\r\nK: v1\r\nk: lower\r\nK: v2\r\nX-Id: 7\r\n\r\n")
    assert h == {"K": ["v1", "v2"], "k": ["lower"], "X-Id": ["7"]}
    assert list(h) == ["K", "k", "X-Id"]  # first appearance order


def test_parse_value_keeps_colons_and_is_trimmed():
    assert parse_headers(b"NATS/1.0\r\nUrl:  http://h:1/x \r\n\r\n") == {"Url": ["http://h:1/x"]}


def test_parse_without_trailing_blank_line():
    assert parse_headers(b"NATS/1.0\r\nA: 1") == {"A": ["1"]}


def test_parse_skips_lines_without_colon_key_or_value():
    assert parse_headers(b"NATS/1.0\r\nnocolon\r\n: novalue-key\r\nEmpty:\r\nOk: 1\r\n\r\n") == {"Ok": ["1"]}


@pytest.mark.parametrize("block,status,desc", [
    (b"NATS/1.0 503\r\n\r\n", "503", None),
    (b"NATS/1.0 404 No Messages\r\n\r\n", "404", "No Messages"),
    (b"NATS/1.0 100 Idle Heartbeat\r\nNats-Last-Consumer: 5\r\n\r\n", "100", "Idle Heartbeat"),
    (b"NATS/1.0 408 Request Timeout\r\n\r\n", "408", "Request Timeout"),
])
def test_inline_status_and_description(block, status, desc):
    h = parse_headers(block)
    assert h["Status"] == [status]
    assert h.get("Description") == ([desc] if desc else None)
    assert status_of(h) == int(status)


@pytest.mark.parametrize("block", [b"", b"HTTP/1.1 200\r\n\r\n", b"NATS/2.0\r\n\r\n", b"nats/1.0\r\n\r\n",
                                   b"\r\nA: 1\r\n\r\n"])
def test_unknown_version_line_is_err_bad_header_msg(block):
    with pytest.raises(NatsError) as e:
        parse_headers(block)
    assert e.value.code == "ErrBadHeaderMsg"


def test_non_utf8_bytes_do_not_raise():
    assert parse_headers(b"NATS/1.0\r\nK: \xff\r\n\r\n") == {"K": ["\xff"]}   # Tcl: \xff is ÿ


def test_encode_values_of_every_accepted_shape():
    assert encode_headers({"A": ["1", "2"], "B": "x", "C": b"y", "D": 3, "E": ("p", "q")}) == (
        b"NATS/1.0\r\nA: 1\r\nA: 2\r\nB: x\r\nC: y\r\nD: 3\r\nE: p\r\nE: q\r\n\r\n")


def test_encode_empty_mapping_is_the_bare_version_line():
    assert encode_headers({}) == b"NATS/1.0\r\n\r\n"


@pytest.mark.parametrize("key", ["", " ", " K", "K\t", "a b", "\x7f"])
def test_encode_refuses_blank_or_spaced_keys_as_both_faces_do(key):
    """One header rule (_validate): the encoder refuses a blank or spaced
    key, as the Python and Tcl faces do, instead of dropping it."""
    with pytest.raises(NatsError) as e:
        encode_headers({key: "x", "K": "v"})
    assert e.value.code == "ErrInvalidArg" and "invalid name" in str(e.value)


@pytest.mark.parametrize("headers", [{"K": "a\r\nInjected: 1"}, {"K": ["ok", "b\nc"]}, {"K:x": "v"},
                                     {"K\r\nX": "v"}])
def test_encode_refuses_header_injection(headers):
    with pytest.raises(NatsError) as e:
        encode_headers(headers)
    assert e.value.code == "ErrInvalidArg"


def test_encode_trims_surrounding_whitespace_of_values():
    assert encode_headers({"K": " v \t"}) == b"NATS/1.0\r\nK: v\r\n\r\n"


def test_encode_unicode_is_utf8():
    assert encode_headers({"Név": "érték"}) == "NATS/1.0\r\nNév: érték\r\n\r\n".encode()


def test_status_of():
    assert status_of(None) == 0 and status_of({}) == 0
    assert status_of({"Status": ["503"]}) == 503 and status_of({"Status": "404"}) == 404
    assert status_of({"Status": ["abc"]}) == 0


def test_msg_helpers_read_headers():
    m = Msg("s", b"", None, {"Status": ["503"], "K": ["a", "b"]})
    assert m.status == 503 and m.no_responders and m.header("K") == "a" and m.header("Z", "d") == "d"
    m2 = Msg("s", b"", None, {"Status": ["404"], "Description": ["No Messages"]})
    assert not m2.no_responders and m2.description == "No Messages"
    assert Msg("s").status == 0 and Msg("s").description == "" and Msg("s").header("K") is None


keys = st.text(alphabet=st.characters(blacklist_characters=":", blacklist_categories=("C", "Z")),
               min_size=1, max_size=12)
values = st.text(alphabet=st.characters(blacklist_characters="\r\n", blacklist_categories=("Cs", "Cc")),
                 min_size=1, max_size=20).map(str.strip).filter(bool)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(keys, st.lists(values, min_size=1, max_size=4), max_size=6))
def test_property_encode_then_parse_round_trips(headers):
    assert parse_headers(encode_headers(headers)) == headers


def test_bytes_that_are_not_utf8_decode_as_tcl_decodes_them():
    """A peer (nats-tcl writes header values through a binary channel, one
    byte per character) may send bytes that are not UTF-8: each such byte is
    the character of its value, as Tcl's own decoding gives, never U+FFFD."""
    import tkinter
    from tclnats_py._tclcross import Interp
    host = tkinter.Tcl()   # kept alive: the Interp only wraps its Tcl_Interp
    tk = Interp.from_address(host.tk.interpaddr())
    for raw in (b"caf\xe9", b"caf\xc3\xa9 \xff", b"\xc3", b"a\xe2\x82", b"\xed\xa0\x80x", b"ok"):
        block = b"NATS/1.0\r\nK: " + raw + b"\r\n\r\n"
        got = parse_headers(block)["K"][0]
        assert "\ufffd" not in got
        assert got == tk.call("encoding", "convertfrom", "utf-8", raw), raw


def test_blank_value_is_an_empty_value_nothing_after_the_colon_is_skipped():
    # nats-tcl's rule; nats-py sends "K: " for an empty value
    assert parse_headers(b"NATS/1.0\r\nK: \r\nJ:\r\nL:\t\r\n\r\n") == {"K": [""], "L": [""]}
