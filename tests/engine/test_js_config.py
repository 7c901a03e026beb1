"""The rules both faces share through ``tclnats_py.engine.js`` (server-free).

Each divergence the two faces once had is settled by one rule, named by a
test here: Tcl booleans, num_replicas, the KV mirror prefix, KV delete at
revision 0.  Also the Tcl face's edge (``tcljs.TclArgs``): Tcl option lists
become the values ``_js.config`` checks, not a second set of checks.
"""

from __future__ import annotations

import json
import tkinter

import pytest

from tclnats_py.tclface import js as tcljs
from tclnats_py.tclface.js import context as tcljs_context, convert as tcljs_convert
from tclnats_py.engine.connection import Msg
from tclnats_py.errors import NatsError
from tclnats_py.engine.js import config, kv, objstore
from tclnats_py.engine.js.api import JsApi, Request, run_sync
from tclnats_py.engine.js.pull import Fetch
from tclnats_py.engine.options import to_bool


@pytest.fixture(scope="module")
def tk():
    return tkinter.Tcl()


def _code(fn):
    with pytest.raises(NatsError) as e:
        fn()
    return e.value.code


# ------------------------------------------------------------------ booleans
BOOL_INPUTS = ["1", "0", "true", "false", "yes", "no", "on", "off", "t", "f", "y", "n", "tr", "fa", "of",
               "TRUE", "No", "oN", "o", "", " 1", "1 ", "2", "-1", "2.5", "0.0", "1.0", "0x1", "01", "1e0",
               "off_", "truee", "nope", "+1", "yes no"]


def test_tcl_boolean_rule_is_string_is_boolean_strict(tk):
    """One boolean parser for both faces: exactly what Tcl's ``string is
    boolean -strict`` accepts (nats-tcl's check of every bool option), so
    "t" is true and "2.5" is not a boolean.  Asked of the real Tcl."""
    for text in BOOL_INPUTS:
        tcl_ok = tk.call("string", "is", "boolean", "-strict", text) in (1, "1")
        ours = to_bool(text)
        assert (ours is not None) == tcl_ok, text
        if tcl_ok:
            assert ours == tk.getboolean(text), text
    assert to_bool(True) is True and to_bool(0) is False and to_bool(2) is None and to_bool(2.5) is None


def test_tcl_boolean_rule_shared_by_config_and_tcl_face(tk):
    """``_js.config`` and the Tcl face use that parser: no second copy."""
    assert config.to_bool is to_bool
    assert tcljs_convert.to_bool is to_bool and tcljs_context.to_bool is to_bool
    assert config.build(config.STREAM_SPEC, {"sealed": "t", "name": "S"})["sealed"] is True
    for bad in ("2.5", "o", ""):
        assert _code(lambda: config.build(config.STREAM_SPEC, {"sealed": bad})) == "ErrInvalidArg"
    args = tcljs.TclArgs(tk)
    assert args.build(tcljs_convert._KV_WATCH_OPTIONS, ("-include_history", "y"))["include_history"] is True
    assert _code(lambda: args.build(tcljs_convert._KV_WATCH_OPTIONS, ("-include_history", "2.5"))) == "ErrInvalidArg"


# ------------------------------------------------------------------ num_replicas
def test_num_replicas_rule():
    """num_replicas, wherever it is given (stream, consumer, KV bucket,
    Object Store bucket): an integer 0..5, 0 being the server's default;
    anything else ErrInvalidArg before a request goes out."""
    for n in range(0, config.MAX_REPLICAS + 1):
        assert config.build(config.STREAM_SPEC, {"num_replicas": str(n)})["num_replicas"] == n
        assert config.consumer_config({"num_replicas": n})["num_replicas"] == n
        assert kv.bucket_config("B", num_replicas=n)["num_replicas"] == n
        assert objstore.bucket_config("B", num_replicas=n)["num_replicas"] == n
    for bad in (-1, 6, "x", "1.5", True):
        assert _code(lambda: config.build(config.STREAM_SPEC, {"num_replicas": bad})) == "ErrInvalidArg"
        assert _code(lambda: config.consumer_config({"num_replicas": bad})) == "ErrInvalidArg"
        assert _code(lambda: kv.bucket_config("B", num_replicas=bad)) == "ErrInvalidArg"
        assert _code(lambda: objstore.bucket_config("B", num_replicas=bad)) == "ErrInvalidArg"


# ------------------------------------------------------------------ KV mirror prefix
def test_kv_mirror_prefix_rule():
    """The bucket a KV mirror reads from: its mirror's stream name without
    ``KV_`` when it has it, else the name whole (the bound bucket's write
    subjects and the status's mirror_name follow the same rule)."""
    assert kv.mirror_bucket("KV_ORIGIN") == "ORIGIN"
    assert kv.mirror_bucket("ORDERS") == "ORDERS"
    b = kv.Bucket(JsApi(), "M", {"mirror": {"name": "KV_ORIGIN"}})
    assert b.write_subject("k") == "$KV.ORIGIN.k"
    b = kv.Bucket(JsApi(), "M", {"mirror": {"name": "PLAIN"}})
    assert b.write_subject("k") == "$KV.PLAIN.k"
    b = kv.Bucket(JsApi(), "M", {"mirror": {"name": "KV_O", "external": {"api": "$JS.hub.API"}}})
    assert (b.read_subject("k"), b.write_subject("k")) == ("$KV.O.k", "$JS.hub.API.$KV.O.k")
    st = kv.status("M", {"config": {"mirror": {"name": "KV_ORIGIN", "external": {"api": "$JS.hub.API"}}}})
    assert (st["mirror_name"], st["mirror_domain"]) == ("ORIGIN", "hub")
    assert kv.status("M", {"config": {"mirror": {"name": "PLAIN"}}})["mirror_name"] == "PLAIN"


# ------------------------------------------------------------------ KV delete at revision 0
def _sent(op):
    """The requests an operation makes, each answered with a PubAck."""
    sent = []

    def handler(step):
        assert isinstance(step, Request)
        sent.append(step)
        return Msg("_INBOX.x", json.dumps({"stream": "KV_B", "seq": len(sent)}).encode())
    run_sync(op, handler)
    return sent


def test_kv_delete_revision_0_rule():
    """KV delete with revision 0 sets no expectation, the same as no
    revision (nats-tcl sends the header only for a revision > 0); a
    revision > 0 must be the latest; a negative one is ErrInvalidArg."""
    b = kv.Bucket(JsApi(), "B", {})
    for rev in (None, 0):
        (req,) = _sent(b.delete("k", rev))
        assert req.subject == "$KV.B.k"
        assert req.headers == {"KV-Operation": ["DEL"]}
    (req,) = _sent(b.delete("k", 7))
    assert req.headers["Nats-Expected-Last-Subject-Sequence"] == ["7"]
    assert _code(lambda: _sent(b.delete("k", -1))) == "ErrInvalidArg"
    # update is not delete: there 0 means "the key must not exist"
    (req,) = _sent(b.update("k", b"v", 0))
    assert req.headers == {"Nats-Expected-Last-Subject-Sequence": ["0"]}


# ------------------------------------------------------------------ pull requests
def test_fetch_expires_rule_once():
    """The fetch rules live in _js.pull.Fetch, which the Tcl face drives:
    the server expires the request 10 ms before the client's timeout (the
    whole timeout below 20 ms); without a timeout it is a no_wait pull."""
    assert json.loads(Fetch(5, timeout_ms=500).body) == {"expires": 490_000_000, "batch": 5}
    assert json.loads(Fetch(1, timeout_ms=15).body) == {"expires": 15_000_000, "batch": 1}
    assert json.loads(Fetch(1, timeout_ms=500, expires_ms=100).body)["expires"] == 100_000_000
    f = Fetch(3, js_timeout_ms=700)
    assert (json.loads(f.body), f.timeout_ms) == ({"batch": 3, "no_wait": True}, 700)
    assert _code(lambda: Fetch(1, expires_ms=100)) == "ErrInvalidArg"
    assert _code(lambda: Fetch(1 << 31)) == "ErrInvalidArg"


# ------------------------------------------------------------------ the Tcl edge
def test_tcl_args_become_config_values(tk):
    """Tcl lists, dicts and JSON texts turn into the values _js.config
    checks; the config table itself is _js's."""
    args = tcljs.TclArgs(tk)
    opts = args.options(config.STREAM_SPEC, ("-subjects", "a.* b.>", "-metadata", "k v", "-mirror",
                                             "name ORIG opt_start_seq 5", "-max_age", "1500",
                                             "-allow_msg_ttl", "true"), beyond=True)
    cfg = config.stream_config("S", opts, strict=False)
    assert cfg["subjects"] == ["a.*", "b.>"]
    assert cfg["metadata"] == {"k": "v"}
    assert cfg["mirror"] == {"name": "ORIG", "opt_start_seq": 5}
    assert cfg["max_age"] == 1_500_000_000
    assert cfg["allow_msg_ttl"] is True
    assert "num_replicas" not in cfg and cfg["retention"] == "limits"
    assert _code(lambda: args.options(config.STREAM_SPEC, ("-bogus", "1"), beyond=True)) == "ErrInvalidArg"
    assert _code(lambda: config.stream_config("S", args.options(config.STREAM_SPEC, ("-metadata", "k")))) \
        == "ErrInvalidArg"
    assert _code(lambda: args.pairs(("-subjects",))) == "ErrInvalidArg"


def test_tcl_values_out():
    """Results as tcllib's json2dict shows them: true/false/null, numbers as
    the server wrote them."""
    from tclnats_py.engine.js.api import loads
    v = loads(b'{"a":true,"b":null,"c":1e-3,"d":[1,2.50],"e":{"f":"g"}}')
    assert tcljs.tcl_value(v) == ("a", "true", "b", "null", "c", "1e-3", "d", (1, "2.50"), "e", ("f", "g"))


def test_tcl_make_stream_source_uses_config(tk):
    """nats::make_stream_source is _js.config.make_stream_source with Tcl
    arguments: -api and -deliver make the external object."""
    text = tcljs.make_stream_source(tk, ("-name", "S", "-api", "$JS.hub.API", "-opt_start_seq", "3"))
    assert json.loads(text) == {"name": "S", "opt_start_seq": 3, "external": {"api": "$JS.hub.API"}}
    tr = tcljs.make_subject_transform(tk, ("-src", "a.>", "-dest", "b.>"))
    text = tcljs.make_stream_source(tk, ("-name", "S", "-subject_transforms", tk.call("list", tr)))
    assert json.loads(text)["subject_transforms"] == [{"src": "a.>", "dest": "b.>"}]
    assert _code(lambda: tcljs.make_stream_source(tk, ("-opt_start_seq", "3"))) == "ErrInvalidArg"
    assert json.loads(tcljs.make_republish(tk, ("-src", "a", "-dest", "b"))) == \
        {"src": "a", "dest": "b", "headers_only": False}


def test_tcl_make_kv_origin_uses_kv(tk):
    """nats::make_kv_origin is _js.kv.make_origin with Tcl arguments: -domain
    becomes the origin's API prefix there, not in Tcl."""
    o = tcljs.make_kv_origin(tk, ("-bucket", "B", "-keys", "a.> b", "-domain", "hub"))
    assert o == ("bucket", "B", "keys", ("a.>", "b"), "api", "$JS.hub.API")
    assert _code(lambda: tcljs.make_kv_origin(tk, ("-keys", "x"))) == "ErrInvalidArg"
    assert _code(lambda: tcljs.make_kv_origin(tk, ("-bucket", "B", "-domain", "h", "-api", "$JS.x.API"))) \
        == "ErrInvalidArg"
    assert _code(lambda: tcljs.make_kv_origin(tk, ("-bucket", "a.b"))) == "ErrInvalidArg"


# ------------------------------------------------------------------ bucket names
def test_bucket_name_rule_is_one_for_kv_and_object_store():
    """Letters, digits, ``_`` and ``-``, matched whole: a trailing newline
    (which ``$`` would have let through for Object Store buckets) is refused
    for both kinds of bucket."""
    for name in ("FILES", "a_b-1"):
        assert kv.check_bucket(name) == objstore.check_bucket(name) == name
    for bad in ("FILES\n", "", "a.b", "a b", None):
        assert _code(lambda: kv.check_bucket(bad)) == _code(lambda: objstore.check_bucket(bad)) == "ErrInvalidArg"
