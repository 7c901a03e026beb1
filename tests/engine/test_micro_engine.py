"""engine/micro.py (NATS services, ADR-32), server-free: subjects, checks, counters, payloads."""

import datetime
import json

import pytest

from tclnats_py.engine import micro

pytestmark = pytest.mark.unit


def test_control_subjects_and_groups():
    assert micro.control_subject("PING") == "$SRV.PING"
    assert micro.control_subject("INFO", "svc") == "$SRV.INFO.svc"
    assert micro.control_subject("STATS", "svc", "ID1") == "$SRV.STATS.svc.ID1"
    subs = micro.control_subjects("svc", "ID1")
    assert len(subs) == 9 and ("PING", "PING-kind", "$SRV.PING.svc") in subs
    assert micro.group_subject("", "foo") == "foo"
    assert micro.group_subject("g1..", "foo") == "g1.foo"
    assert micro.group_subject(".g1.g2", "foo") == "g1.g2.foo"


def test_checks_name_their_problem():
    assert micro.check_service_name("ok_name-1") is None
    assert micro.check_service_name("") == "Name cannot be empty."
    assert "alphanumeric" in micro.check_service_name("a.b")
    assert micro.check_version("1.2.3-alpha.1+build.5") is None
    assert "semantic versioning" in micro.check_version("1.2")
    assert micro.check_endpoint_subject("a.b.>") is None
    assert "spaces" in micro.check_endpoint_subject("a b")
    assert micro.check_endpoint_subject("a.>.b") is not None
    assert micro.check_queue_group("q g") is not None


def test_counters_and_payloads():
    st = micro.EndpointStats()
    st.started()
    st.finished(1000)
    st.started()
    st.failed("boom")
    st.finished(3000)
    d = micro.endpoint_stats("e", "s", "q", st, data={"k": 1})
    assert (d["num_requests"], d["num_errors"], d["processing_time"], d["average_processing_time"],
            d["last_error"]) == (2, 1, 4000, 2000, "boom")
    started = datetime.datetime(2024, 5, 6, 7, 8, 9, 123456)
    p = micro.stats_payload("ID", "svc", "1.0.0", started, [d], None)
    assert p["started"] == "2024-05-06T07:08:09.123Z" and p["type"] == micro.STATS_TYPE and p["metadata"] == {}
    assert micro.parse_started(p["started"]) == datetime.datetime(2024, 5, 6, 7, 8, 9, 123000)
    assert micro.error_headers("404", "nope", {"a": "b"}) == {"a": "b", micro.ERROR_HEADER: "nope",
                                                             micro.ERROR_CODE_HEADER: "404"}
    st.reset()
    assert st.num_requests == 0 and st.last_error is None


def test_service_core_resolves_endpoints_and_answers():
    core = micro.ServiceCore("svc", "1.0.0", "d", {"a": "b"}, "sq", id="ID1")
    assert core.control()[0] == ("PING", "$SRV.PING") and len(core.control()) == 9
    g = core.group("g", None)
    inner = core.group("h", "hq", g)
    assert (g, inner) == (micro.Group("g", "sq"), micro.Group("g.h", "hq"))
    e1 = core.add(core.endpoint("e1"))
    e2 = core.add(core.endpoint("e2", "s", None, {"k": "v"}, inner))
    e3 = core.add(core.endpoint("e3", group=g, queue_group="own"))
    assert [(e.subject, e.queue_group) for e in (e1, e2, e3)] == [("e1", "sq"), ("g.h.s", "hq"), ("g.e3", "own")]
    assert micro.ServiceCore("n", "1.0.0").endpoint("e").queue_group == "q"
    core.begin(e1)
    core.end(e1, 10, "500:x")
    core.start(datetime.datetime(2024, 1, 2, 3, 4, 5))
    info = json.loads(core.answer("INFO"))
    assert info["endpoints"][1] == {"name": "e2", "subject": "g.h.s", "queue_group": "hq", "metadata": {"k": "v"}}
    stats = json.loads(core.answer("STATS", data_of=lambda ep: ep.name))
    assert stats["started"] == "2024-01-02T03:04:05.000Z"
    assert [(e["num_requests"], e["num_errors"], e["last_error"], e["data"]) for e in stats["endpoints"]][0] == (
        1, 1, "500:x", "e1")
    assert list(json.loads(core.answer("PING"))) == ["type", "id", "name", "version", "metadata"]
    core.reset(datetime.datetime(2025, 1, 1))
    assert e1.stats.num_requests == 0 and core.started.year == 2025
    assert core.stop() == [e1, e2, e3] and core.endpoints == [] and core.stopped
    with pytest.raises(ValueError, match="stopped"):
        core.check_running()


def test_service_core_checks_raise_the_face_s_error():
    class Bad(Exception):
        pass
    with pytest.raises(Bad, match="semantic"):
        micro.ServiceCore("svc", "1", error=Bad)
    with pytest.raises(Bad, match="strings"):
        micro.ServiceCore("svc", "1.0.0", metadata={"a": 1}, error=Bad)
    core = micro.ServiceCore("svc", "1.0.0", error=Bad)
    for kw in ({"name": "a b"}, {"name": "e", "subject": "a b"}, {"name": "e", "queue_group": "a b"},
               {"name": "e", "metadata": {"k": 2}}):
        with pytest.raises(Bad):
            core.endpoint(**kw)
    for name in ("", "a b", "a.>"):
        with pytest.raises(Bad):
            core.group(name)
    assert core.group("", check=False) == micro.Group("", None)
    with pytest.raises(Bad, match="verb"):
        core.answer("HELLO")
    assert micro.error_code_of("") is not None and micro.error_code_of("4\n00") is not None
    assert micro.error_code_of(400) is None
