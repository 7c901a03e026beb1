"""engine/js/api_level.py: the API level from $JS.API.INFO replies, asked once, and ErrServerTooOld."""

import json

import pytest

from tclnats_py.engine.connection import Msg
from tclnats_py.engine.js.api import JsApi, Request, run_sync
from tclnats_py.engine.js.api_level import (FEATURES, REQUIRED_LEVEL_HEADER, level_from_info, level_header,
                                            require_level, server_level)
from tclnats_py.errors import ErrJetStreamNotEnabled, ErrServerTooOld, JetStreamError

pytestmark = pytest.mark.unit

INFO_215 = {"type": "io.nats.jetstream.api.v1.account_info_response", "memory": 0, "storage": 0,
            "streams": 0, "consumers": 0, "api": {"level": 5, "total": 1, "errors": 0}}
INFO_210 = {"type": "io.nats.jetstream.api.v1.account_info_response", "memory": 0, "storage": 0,
            "streams": 0, "consumers": 0, "api": {"total": 1, "errors": 0}}


def _server(reply: dict):
    asked = []

    def handler(step):
        assert isinstance(step, Request)
        asked.append(step.subject)
        return Msg(step.subject, json.dumps(reply).encode())
    return handler, asked


def test_level_of_info_replies():
    assert level_from_info(INFO_215) == 5
    assert level_from_info(INFO_210) == 0
    assert level_from_info({}) == 0
    assert level_from_info({"api": {"level": "3"}}) == 0
    assert level_from_info({"api": {"level": True}}) == 0


def test_level_is_asked_once_per_api():
    api = JsApi("hub")
    handler, asked = _server(INFO_215)
    assert run_sync(server_level(api), handler) == 5
    assert run_sync(require_level(api, "msg_ttl"), handler) == 5
    assert run_sync(require_level(api, "consumer_reset"), handler) == 5
    assert asked == ["$JS.hub.API.INFO"]
    other = JsApi("hub")
    run_sync(server_level(other), handler)
    assert len(asked) == 2


def test_old_server_is_refused_with_the_version_needed():
    api = JsApi()
    handler, asked = _server(INFO_210)
    with pytest.raises(ErrServerTooOld) as e:
        run_sync(require_level(api, "msg_ttl"), handler)
    err = e.value
    assert isinstance(err, JetStreamError) and err.code == "ErrServerTooOld"
    assert "2.11" in str(err) and "API level 1" in str(err) and "API level 0" in str(err)
    assert err.details == {"feature": "msg_ttl", "level": 1, "version": "2.11", "server_level": 0}
    assert asked == ["$JS.API.INFO"]


def test_levels_between():
    api = JsApi()
    handler, _ = _server({"api": {"level": 2}})
    assert run_sync(require_level(api, "counters"), handler) == 2
    assert run_sync(require_level(api, "consumer_pause"), handler) == 2
    with pytest.raises(ErrServerTooOld, match="2.14"):
        run_sync(require_level(api, "consumer_reset"), handler)


def test_info_failure_propagates_and_is_not_cached():
    api = JsApi()

    def down(step):
        return Msg(step.subject, b"", headers={"Status": ["503"]})
    with pytest.raises(ErrJetStreamNotEnabled):
        run_sync(server_level(api), down)
    handler, asked = _server(INFO_215)
    assert run_sync(server_level(api), handler) == 5 and asked == ["$JS.API.INFO"]


def test_features_table():
    assert REQUIRED_LEVEL_HEADER == "Nats-Required-Api-Level"
    for name, (level, version) in FEATURES.items():
        assert isinstance(level, int) and 1 <= level <= 5, name
        major, minor = map(int, version.split("."))
        assert (major, minor) >= (2, 11), name
        # ADR-44 / nats-server JSApiLevel: 2.11 -> 1, 2.12 -> 2, 2.14 -> 4
        assert {(2, 11): 1, (2, 12): 2, (2, 14): 4, (2, 15): 5}[(major, minor)] == level, name
    assert level_header("msg_ttl") == "1" and level_header("counters") == "2"
    with pytest.raises(KeyError):
        require_level(JsApi(), "no_such_feature").send(None)
