"""The NATS side of the long form (``python -m tclnats_py.compat.scale``):
each face publishing JetStream messages with message ids while the stream's
leader is killed, and a Key-Value workload across a leader kill, on a
3-node :class:`~tclnats_py.testing.server.NatsCluster` with R3 streams.

Every fault returns a dict of counts; ``ok`` says whether each count is
exact: every message stored once (the stream holds ``n`` messages whose
payloads are ``0 .. n-1``, each once), every publish acked in the end (a
publish that failed was retried with the same message id, which the
stream's duplicate window drops if the first try was stored after all), and
the errors the client saw on the way, by class.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter

#: how long a publish waits for its ack (s); a leader election takes a few seconds
ACK_TIMEOUT = 2.0
#: how long one message may be retried before the fault gives up on it (s)
GIVE_UP = 60.0


class LeaderKiller:
    """Kill ``stream``'s leader (SIGKILL) at marks of a workload: the workload
    calls :meth:`kill` when it reaches each of :meth:`marks` and goes on at
    once, through the election; the node is restarted in the background and
    the next kill first waits until the stream's replicas are current again.
    ``events`` lists (kill number, node, seconds to a new leader)."""

    def __init__(self, cluster, stream: str, kills: int, restart: bool = True):
        self.cluster, self.stream, self.kills, self.restart = cluster, stream, kills, restart
        self.events: list[tuple[int, str, float]] = []
        self.error: BaseException | None = None
        self._back: threading.Thread | None = None

    def marks(self, total: int) -> list[int]:
        """Where in ``total`` steps the kills fall (evenly, none at the ends)."""
        return [total * k // (self.kills + 1) for k in range(1, self.kills + 1)]

    def kill(self) -> None:
        """Kill the stream's leader now (after the previous restart)."""
        self._settle()
        victim = self.cluster.kill_stream_leader(self.stream, timeout=60)
        self._back = threading.Thread(target=self._recover, args=(victim, time.monotonic()), daemon=True)
        self._back.start()

    def _recover(self, victim: int, t: float) -> None:
        try:
            while self.cluster.stream_leader(self.stream) in (None, victim):
                if time.monotonic() - t > 120:
                    raise TimeoutError(f"no new leader of {self.stream} in 120 s")
                time.sleep(0.05)
            self.events.append((len(self.events) + 1, self.cluster[victim].name, time.monotonic() - t))
            if self.restart:
                self.cluster.restart(victim, timeout=30)
                self.cluster.wait_stream_current(self.stream, timeout=60)
        except BaseException as e:  # noqa: BLE001  (raised again by _settle)
            self.error = e

    def _settle(self) -> None:
        if self._back is not None:
            self._back.join(180)
            self._back = None
        if self.error is not None:
            raise RuntimeError(f"recovering from a kill of {self.stream}'s leader failed: {self.error!r}") \
                from self.error

    def finish(self) -> None:
        """Wait for the last restart; raise what went wrong in one."""
        self._settle()


def stream_stored(cluster, stream: str) -> int:
    """The stream's message count, 0 while no server answers."""
    try:
        return ((cluster.stream_info(stream, timeout=1.0).get("state") or {}).get("messages")) or 0
    except (OSError, ValueError):
        return 0


def make_stream(cluster, stream: str, subjects: list, replicas: int = 3, **cfg) -> None:
    """A new file stream (an old one of that name deleted), led and current;
    ``cluster`` is a NatsCluster, or anything with its ``js_api`` for R1."""
    cluster.js_api(f"STREAM.DELETE.{stream}", timeout=5)
    body = {"name": stream, "subjects": subjects, "num_replicas": replicas, "storage": "file", **cfg}
    deadline = time.monotonic() + 30
    while True:
        r = cluster.js_api(f"STREAM.CREATE.{stream}", body, timeout=10)
        if "error" not in r:
            break
        # right after a start or restart the meta layer may not know every peer yet
        if time.monotonic() > deadline or r["error"].get("err_code") != 10005:
            raise RuntimeError(f"STREAM.CREATE {stream}: {r['error']}")
        time.sleep(0.2)
    if replicas > 1:
        cluster.wait_stream_current(stream, timeout=30)


async def read_payloads(urls, stream: str, n: int) -> Counter:
    """Every message of ``stream`` (its payload, an integer in text) counted."""
    import tclnats_py
    c = await tclnats_py.connect(urls, max_reconnect_attempts=-1, reconnect_time_wait=0.2)
    try:
        js = c.jetstream(timeout=10)
        cons = await js.create_consumer(stream, ack_policy="none", inactive_threshold=60.0)
        seen: Counter = Counter()
        got = 0
        stored = (await js.stream_info(stream)).state.messages
        while got < stored:
            msgs = await cons.fetch(1000, expires=2.0)
            if not msgs:
                break
            got += len(msgs)
            seen.update(int(m.data) for m in msgs)
        return seen
    finally:
        await c.close()


def exact(seen: Counter, n: int) -> dict:
    """Counts of a stream read back: stored, distinct, duplicates, missing."""
    stored = sum(seen.values())
    distinct = len([k for k in seen if 0 <= k < n])
    return {"stored": stored, "distinct": distinct, "duplicates": stored - len(seen),
            "missing": n - distinct, "ok": stored == n == distinct}


# ------------------------------------------------------------------ the asyncio face

async def _aio_publish(urls, subject: str, n: int, killer: LeaderKiller) -> dict:
    import tclnats_py
    c = await tclnats_py.connect(urls, max_reconnect_attempts=-1, reconnect_time_wait=0.1)
    js = c.jetstream()
    errors: Counter = Counter()
    acked = given_up = 0
    marks = set(killer.marks(n))
    try:
        for i in range(n):
            if i in marks:
                await asyncio.to_thread(killer.kill)
            start = time.monotonic()
            while True:
                try:
                    await js.publish(subject, b"%d" % i, msg_id=f"m{i}", timeout=ACK_TIMEOUT)
                    acked += 1
                    break
                except tclnats_py.NatsError as e:
                    errors[type(e).__name__] += 1
                    if time.monotonic() - start > GIVE_UP:
                        given_up += 1
                        break
                    await asyncio.sleep(0.05)
    finally:
        await c.close()
    return {"acked": acked, "given_up": given_up, "errors": dict(errors)}


def fault_aio_publish(cluster, n: int, kills: int) -> dict:
    """The asyncio face publishing ``n`` messages with ids through ``kills`` leader kills."""
    make_stream(cluster, "SCALE_AIO", ["scale.aio"])
    killer = LeaderKiller(cluster, "SCALE_AIO", kills)
    t = time.monotonic()
    out = asyncio.run(_aio_publish(cluster.urls, "scale.aio", n, killer))
    out["seconds"] = round(time.monotonic() - t, 1)
    killer.finish()
    return _publish_result(cluster, "SCALE_AIO", n, out, killer)


async def _aio_publish_async(urls, subject: str, n: int, killer: LeaderKiller, window: int = 500) -> dict:
    """Windows of ``window`` publish_async calls with message ids, a leader
    killed with a window's acks in flight; every future must end (an ack or
    an error) within three ack timeouts; the failed ones go again in a later
    window."""
    import tclnats_py
    c = await tclnats_py.connect(urls, max_reconnect_attempts=-1, reconnect_time_wait=0.1)
    js = c.jetstream(timeout=ACK_TIMEOUT)
    errors: Counter = Counter()
    hung = acked = 0
    todo = list(range(n))
    marks = killer.marks(n)
    sent = 0
    try:
        while todo:
            batch, todo = todo[:window], todo[window:]
            futs = []
            for i in batch:
                try:
                    futs.append((i, await js.publish_async(subject, b"%d" % i, msg_id=f"m{i}")))
                except tclnats_py.NatsError as e:
                    errors["at publish: " + type(e).__name__] += 1
                    todo.append(i)
            sent += len(batch)
            if marks and sent >= marks[0]:
                marks.pop(0)  # the leader dies with this window's acks in flight
                await asyncio.to_thread(killer.kill)
            done, pending = await asyncio.wait([f for _, f in futs], timeout=ACK_TIMEOUT * 3)
            hung += len(pending)
            for i, f in futs:
                if f in pending:
                    f.cancel()
                    todo.append(i)
                elif f.exception() is not None:
                    errors[type(f.exception()).__name__] += 1
                    todo.append(i)
                else:
                    acked += 1
            if errors and todo:
                await asyncio.sleep(0.05)
    finally:
        await c.close()
    return {"acked": acked, "given_up": 0, "hung_futures": hung, "errors": dict(errors)}


def fault_aio_publish_async(cluster, n: int, kills: int) -> dict:
    """The asyncio face's publish_async (windows of 500 in flight) with ids through ``kills`` leader kills."""
    make_stream(cluster, "SCALE_AIOA", ["scale.aioa"])
    killer = LeaderKiller(cluster, "SCALE_AIOA", kills)
    t = time.monotonic()
    out = asyncio.run(_aio_publish_async(cluster.urls, "scale.aioa", n, killer))
    out["seconds"] = round(time.monotonic() - t, 1)
    killer.finish()
    out = _publish_result(cluster, "SCALE_AIOA", n, out, killer)
    out["ok"] = out["ok"] and out["hung_futures"] == 0
    return out


def _publish_result(cluster, stream, n, out, killer) -> dict:
    cluster.wait_stream_current(stream, timeout=60)
    out.update(exact(asyncio.run(read_payloads(cluster.urls, stream, n)), n))
    out["kills"] = len(killer.events)
    out["elections_s"] = [round(e[2], 1) for e in killer.events]
    out["ok"] = out["ok"] and out["acked"] == n and out["kills"] == killer.kills
    return out


# ------------------------------------------------------------------ the Tcl face (stock tclsh)

TCL_PUBLISHER = r"""
package require nats
lassign $argv servers subject n ack_ms give_up_ms marks
set conn [nats::connection new scale]
$conn configure -servers [split $servers ,] -max_reconnect_attempts -1 -reconnect_time_wait 100
$conn connect
set js [$conn jet_stream]
set acked 0
set given_up 0
array set errors {}
for {set i 0} {$i < $n} {incr i} {
    if {$i in $marks} {
        # the parent kills the stream's leader, then answers
        puts "MARK $i"
        flush stdout
        gets stdin
    }
    set start [clock milliseconds]
    while 1 {
        try {
            set msg [nats::msg create $subject -data $i]
            nats::header set msg Nats-Msg-Id m$i
            $js publish_msg $msg -timeout $ack_ms
            incr acked
            break
        } trap {NATS} {msg opts} {
            set code [lindex [dict get $opts -errorcode] 1]
            if {[info exists errors($code)]} { incr errors($code) } else { set errors($code) 1 }
            if {[clock milliseconds] - $start > $give_up_ms} { incr given_up; break }
            after 50
        }
    }
}
puts "RESULT acked $acked given_up $given_up errors {[array get errors]}"
$conn destroy
"""


TCL_ASYNC_PUBLISHER = r"""
package require nats
lassign $argv servers subject n ack_ms give_up_ms marks
set conn [nats::connection new scale]
$conn configure -servers [split $servers ,] -max_reconnect_attempts -1 -reconnect_time_wait 100
$conn connect
set js [$conn jet_stream]
set acked 0
set hung 0
array set errors {}
proc ended {i timedOut ack err} {
    global left todo acked errors
    if {$timedOut} {
        set code ErrTimeout
    } elseif {$err ne ""} {
        set code [expr {[dict exists $err code] ? "code[dict get $err code]" : "error"}]
    } else {
        incr acked
        set code ""
    }
    if {$code ne ""} {
        if {[info exists errors($code)]} { incr errors($code) } else { set errors($code) 1 }
        lappend todo $i
    }
    dict unset left $i
    if {[dict size $left] == 0} { set ::window_done 1 }
}
set todo {}
for {set i 0} {$i < $n} {incr i} { lappend todo $i }
set sent 0
while {[llength $todo]} {
    set batch [lrange $todo 0 499]
    set todo [lrange $todo 500 end]
    set left [dict create]
    foreach i $batch { dict set left $i 1 }
    foreach i $batch {
        set msg [nats::msg create $subject -data $i]
        nats::header set msg Nats-Msg-Id m$i
        try {
            $js publish_msg $msg -timeout $ack_ms -callback [list ended $i]
        } trap {NATS} {m opts} {
            set code "at_publish:[lindex [dict get $opts -errorcode] 1]"
            if {[info exists errors($code)]} { incr errors($code) } else { set errors($code) 1 }
            lappend todo $i
            dict unset left $i
        }
    }
    incr sent [llength $batch]
    if {[llength $marks] && $sent >= [lindex $marks 0]} {
        set marks [lrange $marks 1 end]
        # the leader dies with this window's acks in flight
        puts "MARK $sent"
        flush stdout
        gets stdin
    }
    if {[dict size $left]} {
        set guard [after [expr {$ack_ms * 3}] {set ::window_done 0}]
        set ::window_done ""
        vwait ::window_done
        after cancel $guard
        if {!$::window_done} {
            incr hung [dict size $left]
            lappend todo {*}[dict keys $left]
        }
    }
    if {[array size errors]} { after 50 }
}
puts "RESULT acked $acked given_up 0 hung $hung errors {[array get errors]}"
$conn destroy
"""


def fault_tcl_publish_async(cluster, n: int, kills: int) -> dict:
    """The Tcl face's asynchronous publish (``-callback``, windows of 500)
    with ids through ``kills`` leader kills: every callback must come."""
    return fault_tcl_publish(cluster, n, kills, script=TCL_ASYNC_PUBLISHER, stream="SCALE_TCLA")


def fault_tcl_publish(cluster, n: int, kills: int, script: str = TCL_PUBLISHER, stream: str = "SCALE_TCL") -> dict:
    """nats-tcl 3.2.1's API under stock tclsh (tclnats-tclsh) publishing ``n``
    messages with ids through ``kills`` leader kills."""
    subject = stream.lower().replace("_", ".")
    make_stream(cluster, stream, [subject])
    folder = tempfile.mkdtemp(prefix="tclnats-scale-")
    path = os.path.join(folder, "publish.tcl")
    with open(path, "w") as f:
        f.write(script)
    launcher = shutil.which("tclnats-tclsh")
    cmd = ([launcher] if launcher else [sys.executable, "-m", "tclnats_py.tclface.tclsh"]) + [
        path, ",".join(cluster.urls), subject, str(n), str(int(ACK_TIMEOUT * 1000)), str(int(GIVE_UP * 1000))]
    killer = LeaderKiller(cluster, stream, kills)
    cmd.append(" ".join(map(str, killer.marks(n))))
    t = time.monotonic()
    proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    result = ""
    assert proc.stdout is not None and proc.stdin is not None
    for line in proc.stdout:
        if line.startswith("MARK "):
            killer.kill()
            proc.stdin.write("go\n")
            proc.stdin.flush()
        elif line.startswith("RESULT "):
            result = line[7:].strip()
    err = proc.stderr.read() if proc.stderr else ""
    proc.wait()
    killer.finish()
    shutil.rmtree(folder, ignore_errors=True)
    if proc.returncode != 0 or not result:
        raise RuntimeError(f"the Tcl publisher failed (rc={proc.returncode}): {err[-2000:]}")
    head, _, errs = result.partition(" errors ")  # acked N given_up M [hung H] errors {CODE COUNT ...}
    fields = head.split()
    out: dict = {fields[i]: int(fields[i + 1]) for i in range(0, len(fields), 2)}
    words = errs.strip()[1:-1].split()  # a Tcl list: code count code count ...
    out["errors"] = {words[i]: int(words[i + 1]) for i in range(0, len(words), 2)}
    out["seconds"] = round(time.monotonic() - t, 1)
    out = _publish_result(cluster, stream, n, out, killer)
    out["ok"] = out["ok"] and not out.get("hung")
    return out


# ------------------------------------------------------------------ the blocking face

def sync_face_available() -> bool:
    """``tclnats_py.sync.connect`` exists (the blocking face)."""
    try:
        import tclnats_py.sync as sync
    except ImportError:
        return False
    return callable(getattr(sync, "connect", None))


def fault_sync_publish(cluster, n: int, kills: int) -> dict:
    """The blocking face publishing ``n`` messages with ids through ``kills`` leader kills."""
    import tclnats_py
    from tclnats_py import sync
    make_stream(cluster, "SCALE_SYNC", ["scale.sync"])
    killer = LeaderKiller(cluster, "SCALE_SYNC", kills)
    marks = set(killer.marks(n))
    errors: Counter = Counter()
    acked = given_up = 0
    t = time.monotonic()
    nc = sync.connect(cluster.urls, max_reconnect_attempts=-1, reconnect_time_wait=0.1)
    try:
        js = nc.jetstream()
        for i in range(n):
            if i in marks:
                killer.kill()
            start = time.monotonic()
            while True:
                try:
                    js.publish("scale.sync", b"%d" % i, msg_id=f"m{i}", timeout=ACK_TIMEOUT)
                    acked += 1
                    break
                except tclnats_py.NatsError as e:
                    errors[type(e).__name__] += 1
                    if time.monotonic() - start > GIVE_UP:
                        given_up += 1
                        break
                    time.sleep(0.05)
    finally:
        nc.close()
    out = {"acked": acked, "given_up": given_up, "errors": dict(errors), "seconds": round(time.monotonic() - t, 1)}
    killer.finish()
    return _publish_result(cluster, "SCALE_SYNC", n, out, killer)


# ------------------------------------------------------------------ Key-Value

async def _kv_workload(cluster, n: int) -> dict:
    """Put ``n`` keys once each (a put that failed is checked with a get before
    it is retried, so no key gets a second revision), a watcher on another
    connection, one leader kill half way."""
    import tclnats_py
    urls = cluster.urls
    wc = await tclnats_py.connect(urls, max_reconnect_attempts=-1, reconnect_time_wait=0.1)
    pc = await tclnats_py.connect(urls, max_reconnect_attempts=-1, reconnect_time_wait=0.1)
    kv = await pc.jetstream(timeout=ACK_TIMEOUT).create_key_value(bucket="SCALEKV", replicas=3, history=1)
    cluster.wait_stream_current("KV_SCALEKV", timeout=30)
    wkv = await wc.jetstream().key_value("SCALEKV")
    seen: list = []
    watcher = wkv.watch(">", idle_heartbeat=1.0)
    await watcher
    first = await watcher.updates(5)
    assert first is None, first  # an empty bucket: the end of initial data at once

    async def watch():
        async for e in watcher:
            if e is not None:
                seen.append((e.key, e.revision, e.value))
    wtask = asyncio.create_task(watch())
    errors: Counter = Counter()
    killer = LeaderKiller(cluster, "KV_SCALEKV", 1)
    marks = set(killer.marks(n))
    for i in range(n):
        if i in marks:
            await asyncio.to_thread(killer.kill)
        while True:
            try:
                await kv.put(f"k{i}", b"%d" % i)
                break
            except tclnats_py.NatsError as e:
                errors[type(e).__name__] += 1
                await asyncio.sleep(0.1)
                try:
                    if (await kv.get(f"k{i}")).value == b"%d" % i:
                        break  # the put was stored, its ack lost
                except tclnats_py.NatsError as g:
                    errors["get:" + type(g).__name__] += 1
    killer.finish()
    last = (await kv.status()).values
    deadline = time.monotonic() + 30
    while len(seen) < last and time.monotonic() < deadline:
        await asyncio.sleep(0.1)
    await watcher.stop()
    wtask.cancel()
    wrong_gets = 0
    for i in range(0, n, max(1, n // 200)):
        if (await kv.get(f"k{i}")).value != b"%d" % i:
            wrong_gets += 1
    await wc.close()
    await pc.close()
    revs = Counter(r for _, r, _ in seen)
    keys = Counter(k for k, _, _ in seen)
    return {"puts": n, "revisions": last, "watched": len(seen), "watched_twice": sum(v - 1 for v in revs.values()),
            "keys_watched": len(keys), "wrong_gets": wrong_gets, "errors": dict(errors),
            "kills": len(killer.events), "elections_s": [round(e[2], 1) for e in killer.events],
            "ok": last == n == len(seen) == len(revs) == len(keys) and wrong_gets == 0}


def fault_kv(cluster, n: int) -> dict:
    cluster.js_api("STREAM.DELETE.KV_SCALEKV", timeout=5)
    t = time.monotonic()
    out = asyncio.run(_kv_workload(cluster, n))
    out["seconds"] = round(time.monotonic() - t, 1)
    return out
