"""engine/js/schedule.py (ADR-51): the schedule's headers, the checks made
before sending, the server's refusals explained, the API levels; fed with
scripted replies, no server."""

import datetime
import json

import pytest

from tclnats_py import NatsError
from tclnats_py.engine.connection import Msg
from tclnats_py.engine.js import JsApi, Request, run_sync, schedule
from tclnats_py.engine.js.publish import SCHEDULE_HEADERS

pytestmark = pytest.mark.unit

UTC = datetime.timezone.utc


def jmsg(obj):
    return Msg("_INBOX.x", json.dumps(obj).encode())


class Server:
    """API ``level`` on $JS.API.INFO, then ``reply`` to the publish."""

    def __init__(self, reply, level=5):
        self.reply = reply
        self.level = level
        self.seen = []

    def __call__(self, step):
        self.seen.append(step)
        if step.subject.endswith(".INFO"):
            return jmsg({"api": {"level": self.level}} if self.level else {"memory": 0})
        return self.reply


def publish(subject, reply=None, level=5, **kw):
    srv = Server(reply or jmsg({"stream": "S", "seq": 7}), level)
    headers, features = schedule.schedule_headers(subject, kw.pop("headers", None), **kw)
    return run_sync(schedule.publish_schedule(JsApi(), subject, b"body", headers, features, 1500), srv), srv


def test_header_names_are_the_ones_named_in_publish():
    assert schedule.SCHEDULE == SCHEDULE_HEADERS[""] == "Nats-Schedule"
    assert (schedule.TARGET, schedule.SOURCE, schedule.TTL, schedule.TIME_ZONE, schedule.SCHEDULER) == (
        "Nats-Schedule-Target", "Nats-Schedule-Source", "Nats-Schedule-TTL", "Nats-Schedule-Time-Zone",
        "Nats-Scheduler")


@pytest.mark.parametrize("at, text", [
    (datetime.datetime(2030, 1, 2, 3, 4, 5, tzinfo=UTC), "@at 2030-01-02T03:04:05Z"),
    (datetime.datetime(2030, 1, 2, 3, 4, 5, 250000, tzinfo=datetime.timezone(datetime.timedelta(hours=2))),
     "@at 2030-01-02T01:04:05.25Z"),
    ("2030-01-02T03:04:05Z", "@at 2030-01-02T03:04:05Z"),
    ("2030-01-02T03:04:05.123456789+02:00", "@at 2030-01-02T03:04:05.123456789+02:00"),
])
def test_at_takes_a_datetime_in_utc_or_rfc3339_text(at, text):
    assert schedule.at_pattern(at) == text


def test_a_naive_datetime_is_local_time():
    naive = datetime.datetime(2030, 6, 1, 12, 0, 0)
    utc = naive.astimezone(UTC)
    assert schedule.at_pattern(naive) == f"@at {utc:%Y-%m-%dT%H:%M:%S}Z"


@pytest.mark.parametrize("every, unit, text", [
    (1, "s", "@every 1s"), (90, "s", "@every 90s"), (1.5, "s", "@every 1500ms"),
    (datetime.timedelta(minutes=5), "s", "@every 300s"), ("5m", "s", "@every 5m"), ("1h30m", "s", "@every 1h30m"),
    ("1.5s", "s", "@every 1.5s"), (1000, "ms", "@every 1s"), (1500, "ms", "@every 1500ms"),
    ("2000", "ms", "@every 2s"), ("1m", "ms", "@every 1m"),
])
def test_every_in_seconds_or_ms_becomes_a_go_duration(every, unit, text):
    assert schedule.every_pattern(every, unit) == text


@pytest.mark.parametrize("every, unit", [(0.5, "s"), (0, "s"), (-5, "s"), ("500ms", "s"), ("soon", "s"),
                                         ("", "s"), ("1x", "s"), (True, "s"), (float("nan"), "s"),
                                         (float("inf"), "s"), (999, "ms"), ("999", "ms"), (None, "s")])
def test_an_interval_under_a_second_or_not_a_duration_is_refused(every, unit):
    with pytest.raises(NatsError) as e:
        schedule.every_pattern(every, unit)
    assert e.value.code == "ErrInvalidArg"


@pytest.mark.parametrize("text, seconds", [("1s", 1), ("1h30m", 5400), ("1.5s", 1.5), ("250ms", 0.25),
                                           ("0", 0), ("-2s", -2), ("1\u00b5s", 1e-6), ("x", None), ("1", None)])
def test_go_durations(text, seconds):
    assert schedule.go_duration_seconds(text) == seconds


@pytest.mark.parametrize("cron", ["@hourly", "@daily", "@midnight", "@annually", "0 30 4 1,15 * fri",
                                  "5/10 * * * * MON-fri", "? * * * * *", "*/2 0-23/2 * * jan-mar *",
                                  "0 0 12 * * sun,sat", "  0 0 0 1 1 *  "])
def test_cron_specs_the_server_takes(cron):
    assert schedule.cron_pattern(cron) == cron.strip()


@pytest.mark.parametrize("cron, why", [
    ("* * * * *", "six fields"), ("* * * * * * *", "not 7"), ("60 * * * * *", "seconds '60': out of range 0-59"),
    ("0 0 24 * * *", "hours '24'"), ("0 0 0 0 * *", "day of month '0'"), ("0 0 0 1 13 *", "month '13'"),
    ("0 0 0 1 foo *", "month 'foo'"), ("0 0 0 * * 7", "day of week '7'"), ("0 0 0 * * mon-sun", "start is past"),
    ("*/0 * * * * *", "step"), ("1-2-3 * * * * *", "too many"), ("1,,2 * * * * *", "empty"),
    ("0 0 0 * jan 1/x", "step"), ("@fortnightly", "predefined"), ("", "six fields"), (None, "six fields"),
    ("@every 1s", "predefined"),
])
def test_cron_specs_refused_with_why(cron, why):
    with pytest.raises(NatsError) as e:
        schedule.cron_pattern(cron)
    assert e.value.code == "ErrInvalidArg" and why in str(e.value)


def test_the_headers_of_a_cron_schedule_with_all_options():
    headers, features = schedule.schedule_headers("sch.a", {"X-App": "1"}, target="tgt.a", cron="@daily",
                                                  time_zone="Europe/Amsterdam", ttl=300, source="src.a")
    assert headers == {"X-App": ["1"], "Nats-Schedule": ["@daily"], "Nats-Schedule-Target": ["tgt.a"],
                       "Nats-Schedule-Time-Zone": ["Europe/Amsterdam"], "Nats-Schedule-TTL": ["300"],
                       "Nats-Schedule-Source": ["src.a"]}
    assert features == ["schedules_every_cron", "schedule_time_zone", "schedule_source"]


def test_ttl_and_every_in_ms_for_the_tcl_face():
    headers, features = schedule.schedule_headers("sch.a", target="tgt.a", every="1500", ttl="2500", unit="ms")
    assert headers == {"Nats-Schedule": ["@every 1500ms"], "Nats-Schedule-Target": ["tgt.a"],
                       "Nats-Schedule-TTL": ["2500ms"]}
    assert features == ["schedules_every_cron"]
    assert schedule.schedule_headers("s", target="t", at="2030-01-01T00:00:00Z", ttl="never")[0][
        "Nats-Schedule-TTL"] == ["never"]


@pytest.mark.parametrize("kw, code, why", [
    (dict(target=None, every=1), "ErrInvalidArg", "needs a target"),
    (dict(target="t"), "ErrInvalidArg", "one of at, every or cron"),
    (dict(target="t", every=1, cron="@daily"), "ErrInvalidArg", "not every and cron"),
    (dict(target="s", every=1), "ErrInvalidArg", "must differ"),
    (dict(target="t.*", every=1), "ErrBadSubject", "without wildcards"),
    (dict(target="t", every=1, time_zone="UTC"), "ErrInvalidArg", "cron schedule only"),
    (dict(target="t", at="2030-01-01T00:00:00Z", time_zone="UTC"), "ErrInvalidArg", "cron schedule only"),
    (dict(target="t", cron="@daily", time_zone="+02:00"), "ErrInvalidArg", "not an offset"),
    (dict(target="t", cron="@daily", time_zone=""), "ErrInvalidArg", "IANA"),
    (dict(target="t", cron="@daily", time_zone="Europe/ Amsterdam"), "ErrInvalidArg", "IANA"),
    (dict(target="t", every=1, ttl=0.5), "ErrInvalidArg", "TTL"),
    (dict(target="t", every=1, source="t"), "ErrInvalidArg", "source"),
    (dict(target="t", every=1, source="src.>"), "ErrBadSubject", "source"),
    (dict(target="t", every=1, headers={"nats-schedule-ttl": "5"}), "ErrInvalidArg", "schedule's own"),
    (dict(target="t", at="2030-01-01T00:00:00"), "ErrInvalidArg", "RFC 3339"),
    (dict(target="t", at="2030-13-01T00:00:00Z"), "ErrInvalidArg", "month"),
    (dict(target="t", at=1893456000), "ErrInvalidArg", "datetime"),
])
def test_what_the_client_can_check_is_refused_before_sending(kw, code, why):
    with pytest.raises(NatsError) as e:
        publish("s", **kw)
    assert e.value.code == code and why in str(e.value)
    with pytest.raises(NatsError):
        schedule.schedule_headers("s.*", target="t", every=1)


def test_publish_checks_the_level_then_sends_one_request():
    ack, srv = publish("sch.a", target="tgt.a", at="2030-01-01T00:00:00Z")
    assert ack == {"stream": "S", "seq": 7}
    info, req = srv.seen
    assert info.subject == "$JS.API.INFO"
    assert isinstance(req, Request) and (req.subject, req.payload, req.timeout) == ("sch.a", b"body", 1500)
    assert req.headers == {"Nats-Schedule": ["@at 2030-01-01T00:00:00Z"], "Nats-Schedule-Target": ["tgt.a"]}


@pytest.mark.parametrize("level, kw, version", [
    (0, dict(at="2030-01-01T00:00:00Z"), "2.12"),
    (2, dict(every=5), "2.14"),
    (2, dict(cron="@hourly"), "2.14"),
    (2, dict(at="2030-01-01T00:00:00Z", source="src.a"), "2.14"),
])
def test_a_server_too_old_is_refused_before_the_publish(level, kw, version):
    with pytest.raises(NatsError) as e:
        publish("sch.a", level=level, target="tgt.a", **kw)
    assert e.value.code == "ErrServerTooOld" and f"nats-server {version}" in str(e.value)


def test_at_works_on_a_2_12_server():
    ack, srv = publish("sch.a", level=2, target="tgt.a", at="2030-01-01T00:00:00Z")
    assert ack["seq"] == 7 and len(srv.seen) == 2


def _refusal(err_code, desc):
    return jmsg({"error": {"code": 400, "err_code": err_code, "description": desc}})


@pytest.mark.parametrize("err_code, desc, kw, says", [
    (10188, "message schedules is disabled", dict(every=1), "(the stream needs allow_msg_schedules)"),
    (10189, "message schedules pattern is invalid", dict(cron="0 0 0 31 2 *", time_zone="UTC"),
     "(Nats-Schedule: 0 0 0 31 2 *, Nats-Schedule-Time-Zone: UTC)"),
    (10190, "message schedules target is invalid", dict(every=1), "(Nats-Schedule-Target: tgt.a)"),
    (10223, "message schedules time zone is invalid", dict(cron="@daily", time_zone="Nowhere/Land"),
     "(Nats-Schedule-Time-Zone: Nowhere/Land)"),
    (10166, "per-message TTL is disabled", dict(every=1, ttl=60),
     "(Nats-Schedule-TTL: 60 (the stream needs allow_msg_ttl))"),
])
def test_the_servers_refusal_keeps_its_class_and_err_code_and_names_the_value(err_code, desc, kw, says):
    with pytest.raises(NatsError) as e:
        publish("sch.a", reply=_refusal(err_code, desc), target="tgt.a", **kw)
    assert e.value.code == "ErrJSResponse" and e.value.details["err_code"] == err_code
    assert str(e.value) == f"{desc} {says}"


def test_other_refusals_pass_unchanged():
    with pytest.raises(NatsError) as e:
        publish("sch.a", reply=_refusal(10060, "expected stream does not match"), target="tgt.a", every=1)
    assert str(e.value) == "expected stream does not match" and e.value.details["err_code"] == 10060
    with pytest.raises(NatsError) as e:
        publish("sch.a", reply=Msg("_INBOX.x", b"", headers={"Status": ["503"]}), target="tgt.a", every=1)
    assert e.value.code == "ErrNoResponders"
