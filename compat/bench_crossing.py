"""The cost of one crossing between Tcl and Python: tclnats_py's Tcl C API
layer (tclnats_py._tclcross) against tkinter's, on the same interpreter.

    python -m tclnats_py.compat.bench_crossing [--count N] [--rounds R]

Tcl -> Python: a Tcl loop calls a Python command that does nothing (no
arguments, and with a 128-byte argument).  Python -> Tcl: a Python loop calls
a Tcl command that does nothing (``set`` of a variable, and a proc with one
argument).  Both layers drive one ``tkinter.Tcl()`` interpreter, in turns;
each figure is the median of the rounds, in calls per second.  A last line
gives Tcl -> Python from stock tclsh, where the extension started Python
(``::tclnats::_noop``).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time


def measure(count: int, rounds: int) -> dict:
    import tkinter

    from tclnats_py._tclcross import Interp
    host = tkinter.Tcl()
    tk = host.tk
    ours = Interp.from_address(tk.interpaddr())
    noop = lambda *args: None  # noqa: E731
    tk.createcommand("tk_noop", noop)
    ours.createcommand("our_noop", noop)
    tk.eval("proc tcl_noop {a} {}")
    payload = "x" * 128
    tk.call("set", "::payload", payload)
    results: dict = {}

    def tcl_loop(cmd: str) -> float:
        # Tcl's own loop: [time] with N iterations; microseconds per iteration
        per = float(tk.eval(f"lindex [time {{{cmd}}} {count}] 0"))
        return 1e6 / per

    def py_loop(fn, *args) -> float:
        t = time.perf_counter()
        for _ in range(count):
            fn(*args)
        return count / (time.perf_counter() - t)

    cases = {
        "tcl->python, no argument": (lambda: tcl_loop("tk_noop"), lambda: tcl_loop("our_noop")),
        "tcl->python, 128-byte argument": (lambda: tcl_loop("tk_noop $::payload"),
                                           lambda: tcl_loop("our_noop $::payload")),
        "python->tcl, set var": (lambda: py_loop(tk.call, "set", "::v", 1),
                                 lambda: py_loop(ours.call, "set", "::v", 1)),
        "python->tcl, proc with an argument": (lambda: py_loop(tk.call, "tcl_noop", payload),
                                               lambda: py_loop(ours.call, "tcl_noop", payload)),
    }
    for name, (theirs_fn, ours_fn) in cases.items():
        t_runs, o_runs = [], []
        for _ in range(rounds):
            t_runs.append(theirs_fn())
            o_runs.append(ours_fn())
        results[name] = (statistics.median(t_runs), statistics.median(o_runs))
    return results


def stock_tclsh(count: int, rounds: int) -> float | None:
    from tclnats_py.tclface.bridge import tcl_library_dir
    from tclnats_py.tclface.tclsh import find_tclsh
    script = (f"package require nats\n"
              f"set r {{}}\n"
              f"for {{set i 0}} {{$i < {rounds}}} {{incr i}} {{ lappend r [lindex [time ::tclnats::_noop {count}] 0] }}\n"
              f"puts [lindex [lsort -real $r] [expr {{[llength $r] / 2}}]]\n")
    env = dict(os.environ, TCLLIBPATH=tcl_library_dir())
    p = subprocess.run([find_tclsh()], input=script, capture_output=True, text=True, env=env, timeout=300)
    if p.returncode != 0 or not p.stdout.strip():
        sys.stderr.write(f"stock tclsh: {p.stderr}\n")
        return None
    return 1e6 / float(p.stdout.strip().splitlines()[-1])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--count", type=int, default=200000)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args(argv)
    res = measure(args.count, args.rounds)
    print(f"{'crossing (calls/s, median of ' + str(args.rounds) + ')':<38}{'tkinter':>12}{'tclnats_py':>12}{'ratio':>8}")
    for name, (theirs, ours) in res.items():
        print(f"{name:<38}{theirs:>12,.0f}{ours:>12,.0f}{ours / theirs:>7.2f}x")
    stock = stock_tclsh(args.count, args.rounds)
    if stock:
        print(f"{'tcl->python in stock tclsh (embedded)':<38}{'-':>12}{stock:>12,.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
