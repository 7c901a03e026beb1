"""engine/micro.py (NATS services, ADR-32), server-free: subjects, checks, counters, payloads."""

import datetime

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
