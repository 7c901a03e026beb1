"""A PNG of the benchmark ratios.

    python -m tclnats_py.compat.plot [--tcl bench.json] [--py bench_py.json] [--mem bench_memory.json] -o ratios.png

Reads the JSON files written by ``tclnats_py.compat.bench --json``, ``tclnats_py.compat.bench_py
--json`` and ``tclnats_py.compat.bench_memory --json`` (any of them) and draws one bar
per figure: tclnats_py's rate divided by its peer's (the original nats-tcl for
Tcl figures, nats-py for Python ones; for memory, the peer's peak RSS divided
by ours), on a log scale, with a line at 1.0 (as fast as the peer).  No
target is drawn: targets belong to the issues that set them, and a chart
that keeps old ones makes a miss look like a pass.  Needs matplotlib (the
``compat`` extra).
"""

from __future__ import annotations

import argparse
import json
import sys

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


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tcl")
    ap.add_argument("--py")
    ap.add_argument("--mem")
    ap.add_argument("-o", "--output", default="ratios.png")
    args = ap.parse_args(argv)
    docs = {}
    for key in ("tcl", "py", "mem"):
        path = getattr(args, key)
        if path:
            with open(path) as f:
                docs[key] = json.load(f)
    rows = bars(**docs)
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
    fig.savefig(args.output, dpi=120)
    print(f"tclnats_py.compat.plot: wrote {args.output} ({len(rows)} figures)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
