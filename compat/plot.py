"""Pictures of the benchmark figures.

    python -m tclnats_py.compat.plot [--tcl bench.json] [--py bench_py.json] [--mem bench_memory.json] -o ratios.png
    python -m tclnats_py.compat.plot --faces --tcl run1.json run2.json --py run1.json ... --machine TEXT -o speed.svg
    python -m tclnats_py.compat.plot --scale scale.json -o scale.svg

Reads the JSON files written by ``tclnats_py.compat.bench --json``, ``tclnats_py.compat.bench_py
--json`` and ``tclnats_py.compat.bench_memory --json`` (any of them; several runs of one
benchmark may be given).

The default chart draws one bar per figure: tclnats_py's rate divided by its
peer's (the original nats-tcl for Tcl figures, nats-py for Python ones; for
memory, the peer's peak RSS divided by ours), on a log scale, with a line at
1.0 (as fast as the peer).

``--scale`` draws the JSON of ``tclnats_py.compat.scale``: the Spark source's
read and the sink's write throughput against partitions, a line per NATS
target (one server, the 3-node cluster) and executor count, with the raw
JetStream fetch ceiling of each target measured in the same run dashed.

``--faces`` draws one panel per face instead: each workload's throughput for
tclnats_py, its peer (nats-tcl 3.2.1 or nats-py), the nats-py API on
tclnats_py and nats-core when the run measured them, and the raw-socket
ceiling, on a log scale; with several runs the bar is their median and the
whisker their range.  ``--machine`` (else a ``machine`` field of the JSON)
goes in the caption.  An output ending in ``.svg`` keeps its text as text
and carries no date, so the same JSON gives the same file.

No target is drawn: targets belong to the issues that set them, and a chart
that keeps old ones makes a miss look like a pass.  Needs matplotlib (the
``compat`` extra).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys

# the workloads in the order the benchmarks print them, with their labels
WORKLOADS = [("publish", "publish"), ("deliver", "delivery"), ("request", "request"),
             ("request_async", "256 requests in flight"), ("js_publish", "JetStream publish"),
             ("js_publish_async", "JetStream async publish"), ("fetch", "fetch (batches of 500)"),
             ("kv_put", "KV put"), ("kv_get", "KV get")]

# per face: (the JSON key of a series, its legend label, its colour)
SERIES = {
    "Tcl": [("tclnats", "tclnats_py (stock tclsh + extension)", "#1f77b4"),
            ("original", "nats-tcl 3.2.1", "#ff7f0e"),
            ("raw_socket", "raw-socket ceiling", "#7f7f7f")],
    "Python": [("tclnats_py", "tclnats_py (asyncio face)", "#1f77b4"),
               ("natspy_api", "nats-py's API on tclnats_py", "#17becf"),
               ("nats-py", "nats-py", "#2ca02c"),
               ("nats_core", "nats-core (on Python 3.13)", "#d62728"),
               ("raw_socket", "raw-socket ceiling", "#7f7f7f")],
}

def bars(tcl=None, py=None, mem=None):
    """[(label, ratio, group)] from the loaded JSON documents."""
    out = []
    for row in (tcl or {}).get("figures", []):
        if row.get("ratio"):
            out.append((f"Tcl {row['figure']}", row["ratio"], "Tcl vs nats-tcl"))
    for row in (py or {}).get("figures", []):
        if row.get("ratio"):
            out.append((f"Py {row['figure']}", row["ratio"], "Python vs nats-py"))
    for row in (mem or {}).get("ratios", []):
        out.append((f"RSS {row['ours']}", row["ratio"], "memory (peer / ours)"))
    return out


def faces(tcl_runs=(), py_runs=()):
    """{face: [(workload label, unit, {series key: [value per run]})]} from
    the loaded JSON documents of one or more runs; series a run did not
    measure are left out."""
    out = {}
    for face, runs in (("Tcl", tcl_runs), ("Python", py_runs)):
        rows = []
        for key, label in WORKLOADS:
            values, unit = {}, ""
            for doc in runs:
                for row in doc.get("figures", []):
                    if row.get("figure") != key:
                        continue
                    unit = row.get("unit", unit)
                    for series, _, _ in SERIES[face]:
                        if isinstance(row.get(series), (int, float)):
                            values.setdefault(series, []).append(float(row[series]))
            if values:
                rows.append((label, unit or ("req/s" if "request" in key else "op/s" if "kv" in key else "msg/s"),
                             values))
        if rows:
            out[face] = rows
    return out


def machine_of(docs, given=None):
    """The caption's machine: the option, else the first JSON's ``machine``."""
    if given:
        return given
    return next((d["machine"] for d in docs if isinstance(d.get("machine"), str)), "")


def draw_faces(plt, panels, machine, output):
    """One horizontal grouped-bar panel per face, log scale, whiskers for
    the range of the runs."""
    fig, axes = plt.subplots(len(panels), 1, figsize=(9, 3.2 * len(panels) + 1.2), squeeze=False)
    for ax, (face, rows) in zip(axes[:, 0], panels.items()):
        present = [s for s in SERIES[face] if any(s[0] in vals for _, _, vals in rows)]
        height = 0.8 / len(present)
        for i, (key, label, color) in enumerate(present):
            ys, xs, lo, hi = [], [], [], []
            for j, (_, _, vals) in enumerate(rows):
                if key in vals:
                    med = statistics.median(vals[key])
                    ys.append(j + (i - (len(present) - 1) / 2) * height)
                    xs.append(med)
                    lo.append(med - min(vals[key]))
                    hi.append(max(vals[key]) - med)
            ax.barh(ys, xs, height=height, color=color, label=label, xerr=[lo, hi],
                    error_kw={"elinewidth": 0.7, "capsize": 1.5, "ecolor": "#333333"})
        ax.set_yticks(range(len(rows)))
        ax.set_yticklabels([f"{name} ({unit})" for name, unit, _ in rows], fontsize=8)
        ax.invert_yaxis()
        ax.set_xscale("log")
        ax.grid(axis="x", which="major", linewidth=0.4, alpha=0.5)
        ax.set_xlabel("operations per second (log scale; more is better)", fontsize=8)
        ax.set_title(f"{face} face", fontsize=10, loc="left")
        ax.legend(fontsize=7, loc="lower right")
    runs = max(len(next(iter(vals.values()))) for rows in panels.values() for _, _, vals in rows)
    caption = f"median of {runs} run{'s' if runs > 1 else ''} (whiskers: their range)"
    fig.text(0.01, 0.005, caption + (f"; {machine}" if machine else ""), fontsize=7, ha="left", va="bottom",
             wrap=True)
    fig.tight_layout(rect=(0, 0.03, 1, 1))
    save(plt, fig, output)


def draw_scale(plt, doc, machine, output):
    """Two panels (read, write): messages per second against partitions, a
    line per (target, executors); the raw fetch ceiling of each target dashed
    on the read panel.  With the reads' CPU profiles (compat/scale_profile.py)
    a third panel: where the CPU of each target's best read of each executor
    count went, by process role, against the cores x the read's wall time."""
    rows = doc.get("throughput") or []
    profiled = [r for r in _best_reads(rows) if r.get("cpu")]
    fig, axes = plt.subplots(1, 3 if profiled else 2, figsize=(16 if profiled else 11, 4.8 if profiled else 4.2),
                             squeeze=False)
    styles = {1: "-o", 2: "-s"}
    colors = {"single": "#1f77b4", "cluster": "#d62728"}
    for ax, kind in zip(axes[0], ("read", "write")):
        for target in ("single", "cluster"):
            for ex in sorted({r["executors"] for r in rows}):
                pts = sorted((r["partitions"], r[kind]) for r in rows
                             if r["target"] == target and r["executors"] == ex and r.get(kind))
                if pts:
                    ax.plot([p for p, _ in pts], [v for _, v in pts], styles.get(ex, "-^"),
                            color=colors.get(target), label=f"{target}, {ex} executor{'s' * (ex > 1)}")
            ceiling = (doc.get("ceiling") or {}).get(target)
            if kind == "read" and ceiling:
                ax.axhline(ceiling, color=colors.get(target), linestyle="--", linewidth=0.8,
                           label=f"{target}: raw-socket fetch ceiling")
        ax.set_xscale("log", base=2)
        ax.set_xticks(sorted({r["partitions"] for r in rows}) or [1])
        ax.get_xaxis().set_major_formatter(plt.matplotlib.ticker.ScalarFormatter())
        ax.set_xlabel("partitions", fontsize=8)
        ax.set_ylabel("messages per second", fontsize=8)
        ax.set_title(f"Spark {'source: batch read' if kind == 'read' else 'sink: batch write'}", fontsize=10,
                     loc="left")
        ax.grid(linewidth=0.4, alpha=0.5)
        ax.legend(fontsize=7)
    if profiled:
        draw_profile(axes[0][2], profiled)
    fig.text(0.01, 0.005, f"{doc.get('messages', '?')} messages per figure" + (f"; {machine}" if machine else ""),
             fontsize=7, ha="left", va="bottom", wrap=True)
    fig.tight_layout(rect=(0, 0.03, 1, 1))
    save(plt, fig, output)


def _best_reads(rows):
    """The fastest read of each (target, executors)."""
    best: dict = {}
    for r in rows:
        key = (r["target"], r["executors"])
        if r.get("read") and r["read"] > best.get(key, {}).get("read", 0):
            best[key] = r
    return [best[k] for k in sorted(best)]


ROLE_COLORS = {"nats-server": "#2ca02c", "executor JVMs": "#ff7f0e", "Python workers": "#1f77b4",
               "worker JVMs": "#9467bd", "master JVM": "#8c564b", "driver JVM": "#e377c2",
               "driver Python": "#7f7f7f", "other": "#bcbd22"}


def draw_profile(ax, reads):
    """Stacked bars of CPU seconds by role, one per profiled read, then what
    other programs used of the machine in that time; a tick at cores x wall
    time, what the machine could give."""
    roles = [r for r in ROLE_COLORS if any(r in x["cpu"]["cpu_s"] for x in reads)]
    ys = range(len(reads))
    left = [0.0] * len(reads)
    for role in roles:
        widths = [x["cpu"]["cpu_s"].get(role, 0.0) for x in reads]
        ax.barh(ys, widths, left=left, color=ROLE_COLORS[role], label=role, height=0.6)
        left = [a + b for a, b in zip(left, widths)]
    others = [max(0.0, x["cpu"]["machine_busy_s"] - x["cpu"]["ours_s"]) for x in reads]
    ax.barh(ys, others, left=left, color="white", edgecolor="#999999", hatch="///", height=0.6,
            label="other programs on the machine")
    ax.scatter([x["cpu"]["cores"] * x["cpu"]["wall_s"] for x in reads], ys, marker="|", s=400, color="black",
               label="cores x wall time")
    ax.set_yticks(list(ys))
    ax.set_yticklabels([f"{x['target']}, {x['executors']} ex., {x['partitions']} p." for x in reads], fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel("CPU seconds during the best read", fontsize=8)
    ax.set_title("what bounds the read: CPU by process", fontsize=10, loc="left")
    ax.grid(axis="x", linewidth=0.4, alpha=0.5)
    ax.legend(fontsize=6, loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=3)


def save(plt, fig, output):
    """PNG at 120 dpi; SVG with text kept as text and no date (reproducible)."""
    if output.endswith(".svg"):
        plt.rcParams["svg.fonttype"] = "none"
        plt.rcParams["svg.hashsalt"] = "tclnats_py"
        fig.savefig(output, metadata={"Date": None})
    else:
        fig.savefig(output, dpi=120)


def _load(paths):
    docs = []
    for path in paths or ():
        with open(path) as f:
            docs.append(json.load(f))
    return docs


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tcl", nargs="+", help="bench --json files (the ratio chart takes the first)")
    ap.add_argument("--py", nargs="+", help="bench_py --json files (the ratio chart takes the first)")
    ap.add_argument("--mem", nargs="+", help="bench_memory --json file")
    ap.add_argument("--faces", action="store_true", help="one panel per face: throughput of every client")
    ap.add_argument("--scale", help="a tclnats_py.compat.scale --json file: Spark throughput on a cluster")
    ap.add_argument("--machine", help="the machine, for the caption of --faces")
    ap.add_argument("-o", "--output", default="ratios.png")
    args = ap.parse_args(argv)
    loaded = {key: _load(getattr(args, key)) for key in ("tcl", "py", "mem")}
    if args.scale:
        return plot_scale(_load([args.scale])[0], args.machine, args.output)
    if args.faces:
        panels = faces(loaded["tcl"], loaded["py"])
        rows = [r for face in panels.values() for r in face]
    else:
        rows = bars(**{key: docs[0] for key, docs in loaded.items() if docs})
    if not rows:
        sys.stderr.write("tclnats_py.compat.plot: no figures (give --tcl, --py or --mem JSON files)\n")
        return 2
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        sys.stderr.write("tclnats_py.compat.plot needs matplotlib: pip install matplotlib (or the compat extra)\n")
        return 2
    if args.faces:
        draw_faces(plt, panels, machine_of(loaded["tcl"] + loaded["py"], args.machine), args.output)
        print(f"tclnats_py.compat.plot: wrote {args.output} ({len(rows)} workloads)")
        return 0
    colors = {"Tcl vs nats-tcl": "#1f77b4", "Python vs nats-py": "#2ca02c", "memory (peer / ours)": "#9467bd"}
    fig, ax = plt.subplots(figsize=(max(6, 0.6 * len(rows) + 2), 4.5))
    xs = range(len(rows))
    ax.bar(xs, [r[1] for r in rows], color=[colors[r[2]] for r in rows])
    for x, (_, ratio, _) in zip(xs, rows):
        ax.text(x, ratio * 1.05, f"{ratio:.2f}x", ha="center", va="bottom", fontsize=7)
    ax.axhline(1.0, color="grey", linewidth=0.8, linestyle="--")
    ax.set_yscale("log")
    ax.set_xticks(list(xs))
    ax.set_xticklabels([r[0] for r in rows], rotation=60, ha="right", fontsize=8)
    ax.set_ylabel("ratio (tclnats_py / peer; dashed: 1.0)")
    handles = [plt.Rectangle((0, 0), 1, 1, color=c) for c in colors.values()]
    ax.legend(handles, list(colors), fontsize=7, loc="upper right")
    ax.set_title("tclnats_py against its peers (each benchmark runs both sides in one run)")
    fig.tight_layout()
    save(plt, fig, args.output)
    print(f"tclnats_py.compat.plot: wrote {args.output} ({len(rows)} figures)")
    return 0


def plot_scale(doc, machine, output) -> int:
    """Draw a tclnats_py.compat.scale JSON document to ``output``."""
    if not doc.get("throughput"):
        sys.stderr.write("tclnats_py.compat.plot: the scale JSON has no throughput figures\n")
        return 2
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        sys.stderr.write("tclnats_py.compat.plot needs matplotlib: pip install matplotlib (or the compat extra)\n")
        return 2
    draw_scale(plt, doc, machine_of([doc], machine), output)
    print(f"tclnats_py.compat.plot: wrote {output} ({len(doc['throughput'])} figures)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
