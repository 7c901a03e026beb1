"""The phase table (engine/state.py) and the Engine's use of it: every
phase x event cell, the handshakes' paths through it, the reports it
ignores, and the events it refuses (PhaseError)."""

import re
from pathlib import Path

import pytest

from tclnats_py.engine import state as S
from tclnats_py.engine.connection import Engine
from tclnats_py.engine.effects import Open, StartTls

from tests.fake_driver import info_line, make

pytestmark = pytest.mark.unit

SOCKETS = {S.OPENING, S.WAIT_INFO, S.TLS, S.UPGRADE, S.WAIT_PONG, S.READY}


# ====================================================================== the table itself

def test_the_table_has_one_row_per_event_and_one_cell_per_phase():
    assert [row[0] for row in S.TABLE] == list(S.EVENTS)
    assert len(set(S.EVENTS)) == len(S.EVENTS)
    for row in S.TABLE:
        assert len(row) == 1 + len(S.PHASES), row[0]
        for cell in row[1:]:
            assert cell is None or cell is S.IGNORE or cell in S.PHASES, (row[0], cell)


def test_only_reports_and_frames_are_ignored_and_they_never_move_the_phase():
    for row in S.TABLE:
        event = row[0]
        for phase, cell in zip(S.PHASES, row[1:]):
            if event in S.STEPS:
                assert cell is not S.IGNORE, (phase, event)
            elif cell is not None and cell is not S.IGNORE:
                assert cell == phase, (phase, event, cell)  # handled where it is


def test_every_cell_of_move():
    for row in S.TABLE:
        event = row[0]
        for phase, cell in zip(S.PHASES, row[1:]):
            if cell is None:
                with pytest.raises(S.PhaseError) as ei:
                    S.move(phase, event)
                assert (ei.value.phase, ei.value.event) == (phase, event)
                assert phase in str(ei.value) and repr(event) in str(ei.value)
            else:
                assert S.move(phase, event) is cell


def test_the_socket_phases_are_where_data_is_read():
    assert S.SOCKET_PHASES == SOCKETS
    for phase in S.PHASES:
        lost = S.move(phase, S.LOST)
        assert (lost is S.IGNORE) == (phase not in SOCKETS)


@pytest.mark.parametrize(("event", "allowed"), [
    (S.OPEN, {S.IDLE: S.OPENING, S.WAIT_RETRY: S.OPENING}),
    (S.BACKOFF, {S.IDLE: S.WAIT_RETRY}),
    (S.START_TLS, {S.OPENING: S.TLS, S.WAIT_INFO: S.TLS, S.UPGRADE: S.TLS}),
    (S.HTTP_UPGRADE, {S.OPENING: S.UPGRADE, S.TLS: S.UPGRADE, S.UPGRADE: S.UPGRADE}),
    (S.EXPECT_INFO, {S.OPENING: S.WAIT_INFO, S.TLS: S.WAIT_INFO, S.UPGRADE: S.WAIT_INFO}),
    (S.SEND_CONNECT, {S.WAIT_INFO: S.WAIT_PONG, S.TLS: S.WAIT_PONG}),
    (S.CONNECTED_STEP, {S.WAIT_PONG: S.READY}),
    (S.DROP, {p: S.IDLE for p in SOCKETS}),
    (S.CLOSE, {p: S.IDLE for p in S.PHASES}),
])
def test_each_step_moves_from_its_phases_and_is_refused_elsewhere(event, allowed):
    for phase in S.PHASES:
        if phase in allowed:
            assert S.move(phase, event) == allowed[phase]
        else:
            with pytest.raises(S.PhaseError):
                S.move(phase, event)


@pytest.mark.parametrize(("event", "handled"), [
    (S.SOCKET_CONNECTED, {S.OPENING}),
    (S.SOCKET_FAILED, {S.OPENING}),
    (S.TLS_DONE, {S.TLS}),
    (S.TLS_FAILED, {S.TLS}),
    (S.DATA, SOCKETS),
    (S.LOST, SOCKETS),
    (S.CONNECT_TIMER, {S.OPENING, S.WAIT_INFO, S.TLS, S.UPGRADE, S.WAIT_PONG}),
    (S.RETRY_TIMER, {S.WAIT_RETRY}),
    (S.PING_TIMER, {S.READY}),
])
def test_each_report_is_handled_in_its_phases_and_ignored_in_the_others(event, handled):
    for phase in S.PHASES:
        assert S.move(phase, event) == (phase if phase in handled else S.IGNORE), phase


def test_frames_outside_a_socket_are_refused():
    # DATA is ignored there, so an INFO or a PONG read there is a bug; a
    # WebSocket hands the parser nothing before its 101 (then WAIT_INFO)
    for event in S.FRAMES:
        for phase in (S.IDLE, S.WAIT_RETRY, S.UPGRADE):
            with pytest.raises(S.PhaseError):
                S.move(phase, event)
    assert S.move(S.OPENING, S.INFO) is S.IGNORE and S.move(S.TLS, S.INFO) is S.IGNORE
    assert [S.move(p, S.PONG) for p in SOCKETS - {S.UPGRADE}] == [p for p in SOCKETS - {S.UPGRADE}]


# ====================================================================== the Engine consults it

def test_the_engine_sets_its_phase_only_through_the_table():
    src = Path(S.__file__).with_name("connection.py").read_text()
    sets = [m.start() for m in re.finditer(r"self\._phase\s*=(?!=)", src)]
    assert len(sets) == 2, sets  # __init__ (IDLE) and _step
    assert "self._phase = S.IDLE" in src and "self._phase = nxt" in src
    for name in ("outbound.py", "registry.py"):
        assert "_phase" not in Path(S.__file__).with_name(name).read_text()


def _recording(e):
    seen = []
    step = e._step

    def recorded(event):
        before = e._phase
        out = step(event)
        seen.append((before, event, e._phase if out else S.IGNORE))
        return out
    e._step = recorded
    return seen


def _phases(seen):
    return [after for _, ev, after in seen if ev in S.STEPS]


def test_the_plain_handshake_path():
    e, d = make()
    seen = _recording(e)
    e.connect()
    d.pump()
    d.accept()
    assert _phases(seen) == [S.OPENING, S.WAIT_INFO, S.WAIT_PONG, S.READY]
    # (DATA is read from the flag _socket_open, which _step keeps: the hot path makes no call)
    assert [ev for _, ev, _ in seen] == [S.OPEN, S.SOCKET_CONNECTED, S.EXPECT_INFO, S.INFO, S.SEND_CONNECT,
                                         S.PONG, S.CONNECTED_STEP]
    assert e.status == S.CONNECTED and e._phase == S.READY and e._socket_open


def test_the_tls_handshake_path_after_info():
    e, d = make()
    seen = _recording(e)
    e.connect()
    d.pump()
    e.socket_connected()
    d.feed(info_line(tls_required=True))
    assert e._phase == S.TLS and d.kinds(StartTls)
    e.tls_done()
    d.pump()
    assert e._phase == S.WAIT_PONG
    d.feed(b"PONG\r\n")
    assert _phases(seen) == [S.OPENING, S.WAIT_INFO, S.TLS, S.WAIT_PONG, S.READY]


def test_the_tls_first_handshake_path():
    e, d = make()
    e.tls_first = True
    seen = _recording(e)
    e.connect()
    d.pump()
    e.socket_connected()
    d.pump()
    assert e._phase == S.TLS and d.kinds(StartTls)
    e.tls_done()
    assert e._phase == S.WAIT_INFO
    d.feed(info_line())
    assert e._phase == S.WAIT_PONG
    d.feed(b"PONG\r\n")
    assert _phases(seen) == [S.OPENING, S.TLS, S.WAIT_INFO, S.WAIT_PONG, S.READY]


def test_a_lost_connection_drops_opens_then_backs_off_then_opens():
    e, d = make(reconnect_time_wait=100)
    e.connect()
    d.pump()
    d.accept()
    seen = _recording(e)
    e.connection_lost("reset")
    d.pump()
    assert e._phase == S.OPENING and e._socket_open and len(d.opened) == 2
    d.refuse()
    assert e._phase == S.WAIT_RETRY and not e._socket_open
    d.advance(200)
    assert _phases(seen) == [S.IDLE, S.OPENING, S.IDLE, S.WAIT_RETRY, S.OPENING]
    assert len(d.opened) == 3


# every phase, reached through the driver's calls
def _in_phase(phase):
    servers = ("ws://h1:8080",) if phase == S.UPGRADE else ("nats://h1:4222",)
    e, d = make(servers, reconnect_time_wait=100, max_reconnect_attempts=5)
    if phase == S.IDLE:
        return e, d
    e.connect()
    d.pump()
    if phase == S.OPENING:
        return e, d
    if phase == S.TLS:
        e.tls_first = True
    e.socket_connected()
    d.pump()
    if phase in (S.WAIT_INFO, S.TLS, S.UPGRADE):
        return e, d
    d.feed(info_line())
    d.take_wire()
    if phase == S.WAIT_PONG:
        return e, d
    d.feed(b"PONG\r\n")
    d.take_wire()
    if phase == S.READY:
        return e, d
    e.connection_lost("reset")
    d.pump()
    d.refuse()
    return e, d


REPORTS = {
    S.SOCKET_CONNECTED: lambda e: e.socket_connected(),
    S.SOCKET_FAILED: lambda e: e.socket_failed("refused"),
    S.TLS_DONE: lambda e: e.tls_done(),
    S.TLS_FAILED: lambda e: e.tls_failed("bad certificate"),
    S.DATA: lambda e: e.receive_data(b"PING\r\n"),
    S.LOST: lambda e: e.connection_lost("reset"),
    S.CONNECT_TIMER: lambda e: e.timer_fired("connect"),
    S.RETRY_TIMER: lambda e: e.timer_fired("reconnect"),
    S.PING_TIMER: lambda e: e.timer_fired("ping"),
}


@pytest.mark.parametrize("phase", S.PHASES)
def test_every_report_in_every_phase(phase):
    assert set(REPORTS) == set(S.REPORTS)
    for event, report in REPORTS.items():
        e, d = _in_phase(phase)
        d.pump()
        assert e._phase == phase
        wire = e.want_write
        report(e)
        fx = e.take()
        if S.move(phase, event) is S.IGNORE:
            assert fx == [] and e._phase == phase and e.want_write == wire, event
        else:
            assert fx or e._phase != phase or e.want_write != wire, event


def test_a_retry_timer_opens_the_next_socket():
    e, d = _in_phase(S.WAIT_RETRY)
    e.timer_fired("reconnect")
    assert e._phase == S.OPENING and [f for f in e.take() if f.__class__ is Open]


def test_frames_and_steps_where_the_table_has_no_entry_raise():
    e, d = _in_phase(S.IDLE)
    with pytest.raises(S.PhaseError):
        e._on_info({"server_id": "S"})   # no socket: no INFO can be read
    with pytest.raises(S.PhaseError):
        e._on_pong()
    with pytest.raises(S.PhaseError):
        e._drop_socket()
    e, d = _in_phase(S.READY)
    with pytest.raises(S.PhaseError) as ei:
        e._attempt(e.pool.current)       # a second socket while connected
    assert (ei.value.phase, ei.value.event) == (S.READY, S.OPEN)
    assert e._phase == S.READY and e.status == S.CONNECTED
    with pytest.raises(S.PhaseError):
        e._step(S.SEND_CONNECT)
