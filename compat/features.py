"""The feature x face table of the documentation, made from the tests that pass.

    TCLNATS_FEATURE_RESULTS=run.json python -m pytest tests ...
    python -m tclnats_py.compat.features --results run.json --out docs/features.md
    python -m tclnats_py.compat.features --results run.json --check docs/features.md

A test claims a feature with ``@pytest.mark.feature("msg_ttl", ...)`` (a Tcl
test of tests/tcl/ with a ``# feature: msg_ttl ...`` comment line right above
its ``test`` command).  Its face is the folder it lives in (:data:`FACE_OF_FOLDER`).
While pytest runs with ``TCLNATS_FEATURE_RESULTS`` set, :class:`Recorder`
writes every such test's outcome there.  From that file this module writes
the page: a cell of ours says how many tests of that feature and face
passed, and is empty where no test claims it; a feature with a failed test in
a face shows the failure instead.  The columns of the other clients are what
their released sources have (:data:`PEERS`, each with the name that shows it).

``--check`` compares a run with the page in the repository and fails (exit 1)
when the page claims a face that no test of the run passed, or one whose
tests failed: CI runs it after the tests, so the page can only say what passes.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from dataclasses import dataclass
from typing import Any

__all__ = ["FEATURES", "FACES", "PEERS", "FACE_OF_FOLDER", "Recorder", "face_of", "cells", "render",
           "check", "main"]


@dataclass(frozen=True)
class Feature:
    """One row: what the server added, the ADR that defines it, the first
    server release that has it."""
    id: str
    title: str
    adr: str
    server: str


FEATURES: tuple[Feature, ...] = (
    Feature("msg_ttl", "Per-message TTL, subject delete markers", "ADR-43", "2.11"),
    Feature("kv_key_ttl", "KV key TTLs (create/purge with a TTL, limit markers)", "ADR-48", "2.11"),
    Feature("schedules", "Message schedules (@at, @every, cron)", "ADR-51", "2.12"),
    Feature("priority_groups", "Priority groups: overflow, pinned client, prioritized", "ADR-42", "2.11"),
    Feature("atomic_batch", "Atomic batch publish", "ADR-50", "2.12"),
    Feature("counters", "Counters (Nats-Incr)", "ADR-49", "2.12"),
    Feature("direct_batch", "Batch direct get, multi-last, KV get_many", "ADR-31", "2.11"),
    Feature("consumer_pause", "Consumer pause and resume", "-", "2.11"),
    Feature("consumer_reset", "Consumer reset", "-", "2.14"),
    Feature("expected_last_subject_seq_subject", "Expected last sequence of another subject", "-", "2.11"),
    Feature("config_fields", "The 2.11-2.14 stream and consumer fields", "-", "2.11"),
    Feature("api_level", "Server too old: refused before sending", "ADR-44", "2.11"),
    Feature("websocket", "NATS over WebSocket", "-", "2.2"),
)

#: our faces, in the table's order, with their column titles
FACES: tuple[tuple[str, str], ...] = (
    ("asyncio", "asyncio"), ("sync", "blocking"), ("tcl", "Tcl"), ("natspy", "natspy"), ("spark", "Spark"),
)

#: tests/<folder>/ -> face; the Tcl suite (tests/tcl/*.test) runs from tests/tclface/test_tcl_suite.py
FACE_OF_FOLDER = {
    "aio": "asyncio", "sync": "sync", "tclface": "tcl", "tcl": "tcl", "natspy": "natspy", "spark": "spark",
}

#: the other clients, each cell with the name in its released source that shows it
PEERS: tuple[tuple[str, str], ...] = (("go", "nats.go 1.53"), ("py", "nats-py 2.16"), ("tcl", "nats-tcl 3.2.1"))
_PEER_CELLS: dict[str, dict[str, str]] = {
    "msg_ttl": {"go": "yes: `WithMsgTTL`", "py": "yes: `publish(msg_ttl=)`"},
    "kv_key_ttl": {"go": "yes: `KeyTTL`, `LimitMarkerTTL`", "py": "yes: `create(msg_ttl=)`, `limit_marker_ttl`"},
    "schedules": {"go": "yes: `WithScheduleAt/Every/Cron`", "py": "header names only"},
    "priority_groups": {"go": "yes: `PriorityPolicy`, `UnpinConsumer`"},
    "atomic_batch": {"go": "config field only", "py": "config field, PubAck fields"},
    "counters": {"go": "config field only", "py": "config field only"},
    "consumer_pause": {"go": "yes: `PauseConsumer`", "py": "yes: `pause_consumer`"},
    "consumer_reset": {"go": "yes: `ResetConsumer`", "py": "yes: `reset_consumer`"},
    "expected_last_subject_seq_subject": {"go": "yes: `WithExpectLastSequenceForSubject`"},
    "config_fields": {"go": "yes", "py": "yes"},
    "api_level": {"py": "KV `limit_marker_ttl` only"},
    "websocket": {"go": "yes: ws:// URLs", "py": "yes: ws:// URLs, aiohttp"},
}


def face_of(nodeid: str) -> str | None:
    """The face a test's node id belongs to (its folder under tests/), or None."""
    parts = nodeid.replace("\\", "/").split("/")
    if "tests" in parts:
        i = parts.index("tests")
        if i + 1 < len(parts):
            return FACE_OF_FOLDER.get(parts[i + 1])
    return None


class Recorder:
    """A pytest plugin: the outcome of every test that claims a feature,
    written as JSON to ``path`` when the session ends."""

    def __init__(self, path: str):
        self.path = path
        self.claims: dict[str, list[str]] = {}
        self.rows: dict[str, dict[str, Any]] = {}

    def pytest_collection_modifyitems(self, items: list[Any]) -> None:
        for item in items:
            features = features_of(item)
            if features:
                self.claims[item.nodeid] = features

    def pytest_runtest_logreport(self, report: Any) -> None:
        features = self.claims.get(report.nodeid)
        if not features:
            return
        row = self.rows.setdefault(report.nodeid, {"features": features, "outcome": "passed"})
        if report.failed:
            row["outcome"] = "failed"
        elif report.skipped and row["outcome"] == "passed":
            row["outcome"] = "skipped"
        elif report.when == "call" and report.passed and row["outcome"] == "passed":
            row["ran"] = True

    def pytest_sessionfinish(self, session: Any) -> None:
        tests = [{"nodeid": k, "features": v["features"],
                  "outcome": v["outcome"] if v["outcome"] != "passed" or v.get("ran") else "skipped"}
                 for k, v in sorted(self.rows.items())]
        with open(self.path, "w", encoding="utf-8") as f:
            json.dump({"tests": tests}, f, indent=1)


def features_of(item: Any) -> list[str]:
    """The feature ids an item's ``feature`` markers claim (unknown ids refused)."""
    known = {f.id for f in FEATURES}
    out: list[str] = []
    for mark in item.iter_markers("feature"):
        for name in mark.args:
            if name not in known:
                raise ValueError(f"{item.nodeid}: unknown feature {name!r} (compat/features.py FEATURES)")
            out.append(name)
    return sorted(set(out))


def cells(results: dict[str, Any]) -> dict[tuple[str, str], dict[str, int]]:
    """(feature, face) -> counts of passed, failed and skipped tests."""
    out: dict[tuple[str, str], dict[str, int]] = {}
    for t in results["tests"]:
        face = face_of(t["nodeid"])
        if face is None:
            continue
        for feature in t["features"]:
            c = out.setdefault((feature, face), {"passed": 0, "failed": 0, "skipped": 0})
            c[t["outcome"]] += 1
    return out


def _our_cell(c: dict[str, int] | None) -> str:
    if not c or not (c["passed"] or c["failed"]):
        return ""
    if c["failed"]:
        return f"FAILED ({c['failed']} of {c['passed'] + c['failed']})"
    return f"yes ({c['passed']} tests)" if c["passed"] > 1 else "yes (1 test)"


def render(results: dict[str, Any]) -> str:
    """The Markdown page."""
    got = cells(results)
    head = ["Feature", "ADR", "server"] + [t for _, t in FACES] + [t for _, t in PEERS]
    lines = [
        "# Features of nats-server 2.11-2.14, face by face",
        "",
        "Made by `python -m tclnats_py.compat.features` from the tests that passed in a run of the",
        "whole suite against nats-server 2.15.1; CI fails when a cell of ours claims more than its run",
        "passed. A cell of ours counts the tests of that feature in that face (the asyncio face,",
        "the blocking face `tclnats_py.sync`, the Tcl face under stock tclsh, the nats-py drop-in,",
        "Spark); an empty cell: no API there. A server older than the one named answers",
        "`ErrServerTooOld` (Tcl: `{NATS ErrServerTooOld}`) before anything is sent. The other",
        "clients' columns name what their released sources have (no: nothing of it).",
        "",
        "| " + " | ".join(head) + " |",
        "|" + "---|" * len(head),
    ]
    for f in FEATURES:
        row = [f.title, f.adr, f.server]
        row += [_our_cell(got.get((f.id, face))) for face, _ in FACES]
        row += [_PEER_CELLS.get(f.id, {}).get(p, "no") for p, _ in PEERS]
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines) + "\n"


_CELL = re.compile(r"^yes \((\d+) tests?\)$")


def check(results: dict[str, Any], page: str) -> list[str]:
    """What the committed ``page`` claims that the run does not back: a list
    of complaints, empty when every claimed cell passed in the run."""
    got = cells(results)
    rows = {f.title: f for f in FEATURES}
    complaints = []
    for line in page.splitlines():
        parts = [p.strip() for p in line.strip().strip("|").split("|")]
        if len(parts) < 3 + len(FACES) or parts[0] not in rows:
            continue
        f = rows[parts[0]]
        for (face, title), cell in zip(FACES, parts[3:3 + len(FACES)]):
            if not cell:
                continue
            c = got.get((f.id, face), {"passed": 0, "failed": 0, "skipped": 0})
            m = _CELL.match(cell)
            if m is None or c["failed"] or c["passed"] == 0:
                complaints.append(f"{f.id} / {title}: the page says {cell!r}, the run has {c}")
            elif c["passed"] < int(m.group(1)):
                complaints.append(f"{f.id} / {title}: the page counts {m.group(1)} tests, {c['passed']} passed")
    return complaints


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tclnats_py.compat.features", description=__doc__.split("\n")[0])
    ap.add_argument("--results", required=True, help="the JSON a run wrote to TCLNATS_FEATURE_RESULTS")
    ap.add_argument("--out", help="write the page here")
    ap.add_argument("--check", help="fail when this page claims more than the run passed")
    args = ap.parse_args(argv)
    with open(args.results, encoding="utf-8") as f:
        results = json.load(f)
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            f.write(render(results))
        print(f"features: wrote {os.path.abspath(args.out)}")
    if args.check:
        with open(args.check, encoding="utf-8") as f:
            complaints = check(results, f.read())
        for c in complaints:
            print(f"features: {c}", file=sys.stderr)
        if complaints:
            return 1
        print(f"features: every cell of {args.check} passed in this run")
    return 0


if __name__ == "__main__":
    sys.exit(main())
