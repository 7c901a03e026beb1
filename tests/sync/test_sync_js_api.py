"""The blocking face's JetStream, KV and Object Store API: the asyncio face's
names, documented and annotated, over the shared values (tclnats_py.jsface)."""

import inspect

import pytest

from tclnats_py.aio import jetstream as aio_js
from tclnats_py.aio import kv as aio_kv
from tclnats_py.aio import objectstore as aio_obs
from tclnats_py.sync import jetstream as js
from tclnats_py.sync import kv, objectstore

PAIRS = [(js.JetStream, aio_js.JetStream), (js.Stream, aio_js.Stream), (js.Consumer, aio_js.Consumer),
         (js.JsMsg, aio_js.JsMsg), (js.OrderedConsumer, aio_js.OrderedConsumer),
         (kv.KeyValue, aio_kv.KeyValue), (kv.KvWatcher, aio_kv.KvWatcher),
         (objectstore.ObjectStore, aio_obs.ObjectStore), (objectstore.ObjectWatcher, aio_obs.ObjectWatcher)]
CLASSES = [p[0] for p in PAIRS] + [js.ConsumeContext, js.MessagesContext]


@pytest.mark.unit
def test_public_methods_have_docstrings_and_annotations():
    missing = []
    for cls in CLASSES:
        for name, fn in vars(cls).items():
            if name.startswith("_") or not inspect.isfunction(fn):
                continue
            sig = inspect.signature(fn)
            if not (fn.__doc__ or "").strip() and name not in ("bind",):
                missing.append(f"{cls.__name__}.{name}: no docstring")
            if sig.return_annotation is inspect.Signature.empty:
                missing.append(f"{cls.__name__}.{name} -> ?")
            for p in list(sig.parameters.values())[1:]:
                if p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL) and p.annotation is inspect.Parameter.empty:
                    missing.append(f"{cls.__name__}.{name}({p.name})")
    assert not missing, missing


@pytest.mark.unit
def test_the_asyncio_faces_names_are_here():
    """Each public method of the asyncio classes the issue names exists on the
    blocking class (push consumers, counters, batch direct gets, aggregates
    and mirrors are the asyncio face's only)."""
    only_aio = {"push_subscribe", "counter", "fetch_on_inbox", "create_kv_aggregate", "create_kv_mirror",
                "empty_key_value", "get_batch", "get_last_msgs_for", "secure_delete_msg", "get_many", "aclose",
                "adopt", "sort", "heartbeat_missed", "reset", "subscription", "heartbeat_timeout"}
    missing = []
    for sync_cls, aio_cls in PAIRS:
        for name in vars(aio_cls):
            if not name.startswith("_") and name not in only_aio and not hasattr(sync_cls, name):
                missing.append(f"{sync_cls.__name__}.{name}")
    assert not missing, missing


@pytest.mark.unit
def test_the_values_are_the_asyncio_faces():
    assert (js.PubAck, js.StreamInfo, js.ConsumerInfo, js.StreamConfig, js.ConsumerConfig, js.MsgMetadata) == (
        aio_js.PubAck, aio_js.StreamInfo, aio_js.ConsumerInfo, aio_js.StreamConfig, aio_js.ConsumerConfig,
        aio_js.MsgMetadata)
    assert (kv.KvEntry, kv.KvStatus, objectstore.ObjectInfo, objectstore.ObjectStoreStatus) == (
        aio_kv.KvEntry, aio_kv.KvStatus, aio_obs.ObjectInfo, aio_obs.ObjectStoreStatus)
