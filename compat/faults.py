"""The long form of the fault and load suite, in one command, with its figures.

    python -m tclnats_py.compat.faults [--cycles 20] [--messages 10000] [--fuzz 1000000]
                            [--kills 20] [--interval 3] [--short] [pytest args ...]

Runs the tests marked ``fault`` (tests/test_faults.py, tests/test_network_faults.py)
(and tests/test_ack_crash.py) with the long-form sizes in the environment (TCLNATS_FAULT_CYCLES,
TCLNATS_FAULT_MESSAGES, TCLNATS_FUZZ_EXAMPLES, TCLNATS_FAILOVER_KILLS,
TCLNATS_FAILOVER_INTERVAL), then prints the figure lines the tests reported
(cycles survived, messages lost, duplicates, fuzz inputs, max RSS, failovers)
and pytest's verdict.  ``--short`` runs the CI sizes.  The exit code is pytest's.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
FILES = ["tests/test_faults.py", "tests/test_network_faults.py", "tests/test_ack_crash.py"]
# a figure line: words, then name=value pairs (what the fault tests print)
_FIGURE = re.compile(r"^[a-z][\w ]*=\S")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cycles", type=int, default=20, help="kill -9/restart cycles while publishing or acking")
    ap.add_argument("--messages", type=int, default=10000, help="messages per crash scenario")
    ap.add_argument("--fuzz", type=int, default=1_000_000, help="parser fuzz inputs")
    ap.add_argument("--kills", type=int, default=20, help="cluster failovers")
    ap.add_argument("--interval", type=float, default=3.0, help="seconds between failovers")
    ap.add_argument("--short", action="store_true", help="the sizes CI uses")
    args, rest = ap.parse_known_args(argv)
    env = dict(os.environ)
    if not args.short:
        env.update(TCLNATS_FAULT_CYCLES=str(args.cycles), TCLNATS_FAULT_MESSAGES=str(args.messages),
                   TCLNATS_FUZZ_EXAMPLES=str(args.fuzz), TCLNATS_FAILOVER_KILLS=str(args.kills),
                   TCLNATS_FAILOVER_INTERVAL=str(args.interval))
    cmd = [sys.executable, "-m", "pytest", "-s", "-p", "no:cacheprovider", "-m", "fault", *FILES, *rest]
    print("tclnats_py.compat.faults:", " ".join(cmd), flush=True)
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, text=True)
    figures = []
    verdict = ""
    assert proc.stdout is not None
    for line in proc.stdout:
        sys.stdout.write(line)
        text = line.strip().lstrip(".FEsx").strip()
        if _FIGURE.match(text):
            figures.append(text)
        elif re.match(r"^=+ .*(passed|failed|error).* =+$", line.strip()):
            verdict = line.strip().strip("= ")
    code = proc.wait()
    print("\nfault suite figures:")
    for f in figures:
        print("  " + f)
    print(f"pytest: {verdict or 'no summary'} (exit {code})")
    return code


if __name__ == "__main__":
    sys.exit(main())
