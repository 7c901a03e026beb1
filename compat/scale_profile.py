"""What bounds a throughput read of the long form (``python -m
tclnats_py.compat.scale``): the CPU seconds each process of the run spent
during it, read from ``/proc`` before and after, by role (nats-server, the
Spark JVMs, the executors' Python workers, the driver), beside the whole
machine's busy time from ``/proc/stat`` (other programs included).

When the run's processes together used about every core for the whole read,
the CPU bounds it: a second executor on the same cores cannot add much.
Linux only; elsewhere :func:`available` is false and nothing is measured.
"""

from __future__ import annotations

import os
import time

#: ``/proc`` counts CPU time in clock ticks
TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100

ROLES = ("nats-server", "executor JVMs", "Python workers", "worker JVMs", "master JVM", "driver JVM",
         "driver Python")


def available() -> bool:
    return os.path.exists("/proc/stat") and os.path.exists(f"/proc/{os.getpid()}/stat")


def _stat(pid: int) -> tuple[int, float] | None:
    """(parent pid, CPU seconds of the process and of its reaped children)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            text = f.read()
    except OSError:
        return None
    fields = text[text.rindex(b")") + 2:].split()  # after "pid (comm) "
    # fields[1] is ppid; utime, stime, cutime, cstime are fields 14-17 of stat (here 11-14)
    return int(fields[1]), sum(int(x) for x in fields[11:15]) / TICK


def _cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode("utf-8", "replace")
    except OSError:
        return ""


def role(pid: int, cmd: str, parent_role: str | None) -> str:
    """Which part of the run a process is, from its command line and its parent's role."""
    if pid == os.getpid():
        return "driver Python"
    if "nats-server" in cmd:
        return "nats-server"
    if "CoarseGrainedExecutorBackend" in cmd:
        return "executor JVMs"
    if "deploy.worker.Worker" in cmd:
        return "worker JVMs"
    if "deploy.master.Master" in cmd:
        return "master JVM"
    if "pyspark.daemon" in cmd or "pyspark.worker" in cmd or parent_role in ("executor JVMs", "Python workers"):
        return "Python workers"
    if parent_role == "driver Python" and "java" in cmd:
        return "driver JVM"
    return parent_role or "other"


def snapshot(roots) -> dict:
    """{pid: (role, CPU seconds)} of ``roots`` and every process below them."""
    parents: dict[int, list[int]] = {}
    cpu: dict[int, float] = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            st = _stat(int(name))
            if st is not None:
                parents.setdefault(st[0], []).append(int(name))
                cpu[int(name)] = st[1]
    out: dict = {}
    todo: list[tuple[int, str | None]] = [(p, None) for p in roots if p in cpu]
    while todo:
        pid, parent_role = todo.pop()
        if pid in out:
            continue
        r = role(pid, _cmdline(pid), parent_role)
        out[pid] = (r, cpu[pid])
        todo.extend((c, r) for c in parents.get(pid, ()))
    return out


def machine_busy() -> float:
    """CPU seconds every core of the machine has been busy since boot."""
    with open("/proc/stat") as f:
        ticks = [int(x) for x in f.readline().split()[1:]]
    idle = ticks[3] + (ticks[4] if len(ticks) > 4 else 0)
    return (sum(ticks[:8]) - idle) / TICK


class CpuProfile:
    """``with CpuProfile(roots) as p: ...``; then ``p.result``: the wall time,
    the CPU seconds of each role under ``roots`` (a callable giving the pids:
    this process, the Spark master and workers, the nats-servers) and of the
    whole machine, and the share of ``cores x wall`` they used."""

    def __init__(self, roots):
        self.roots = roots
        self.result: dict = {}

    def __enter__(self) -> CpuProfile:
        self._before = snapshot(self.roots())
        self._busy = machine_busy()
        self._t = time.monotonic()
        return self

    def __exit__(self, *exc) -> None:
        wall = time.monotonic() - self._t
        busy = machine_busy() - self._busy
        after = snapshot(self.roots())
        by_role = dict.fromkeys(ROLES, 0.0)
        for pid, (r, cpu) in after.items():
            was = self._before.get(pid)
            by_role[r] = by_role.get(r, 0.0) + cpu - (was[1] if was else 0.0)
        ours = sum(by_role.values())
        cores = os.cpu_count() or 1
        self.result = {"wall_s": round(wall, 2), "cores": cores,
                       "cpu_s": {r: round(v, 2) for r, v in by_role.items() if v > 0.005},
                       "ours_s": round(ours, 2), "machine_busy_s": round(busy, 2),
                       "ours_of_cores": round(ours / (cores * wall), 2) if wall > 0 else 0.0,
                       "machine_of_cores": round(busy / (cores * wall), 2) if wall > 0 else 0.0}


def describe(profile: dict, messages: int) -> str:
    """One line: CPU seconds per million messages by role, and the share of the cores."""
    per = 1_000_000 / max(1, messages)
    parts = ", ".join(f"{r} {v * per:.1f}" for r, v in sorted(profile["cpu_s"].items(), key=lambda kv: -kv[1])
                      if v * per >= 0.05)
    return (f"CPU s per million messages: {parts}; the run's processes used {profile['ours_of_cores']:.0%} "
            f"of {profile['cores']} cores x {profile['wall_s']} s, the whole machine "
            f"{profile['machine_of_cores']:.0%}")


def bound(profile: dict) -> str:
    """What the profile says bounds the read: the CPU when the machine's
    cores were busy for at least 85% of the read."""
    whole, ours = profile["machine_of_cores"], profile["ours_of_cores"]
    split = f"this run's processes {ours:.0%}, other programs {max(0.0, whole - ours):.0%}"
    if whole >= 0.85:
        return f"CPU-bound: the {profile['cores']} cores were {whole:.0%} busy during the read ({split})"
    return (f"not CPU-bound: the {profile['cores']} cores were {whole:.0%} busy during the read ({split}); "
            "the rest is waiting (pulls, the network, Spark's scheduling)")
