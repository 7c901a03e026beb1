"""The long form of the fault and load suite, in one command, with its figures.

    python -m tclnats_py.compat.faults [--cycles 20] [--messages 10000] [--fuzz 1000000]
                            [--kills 20] [--interval 3] [--outage 5] [--reconnect-buf 8388608]
                            [--async-msgs 1000000] [--pause 5] [--pub-pause 3]
                            [--max-pending 4000] [--short] [test files or node ids] [pytest args ...]

Runs the tests marked ``fault`` (tests/interop/test_faults.py, tests/interop/test_network_faults.py,
tests/aio/test_js_acks_across_server_kills.py and tests/interop/test_bounded.py; test files or node ids given on the
command line run instead of these) with the long-form sizes in the environment:

    --cycles        TCLNATS_FAULT_CYCLES          kill -9/restart cycles while publishing or acking
    --messages      TCLNATS_FAULT_MESSAGES        messages per crash scenario
    --fuzz          TCLNATS_FUZZ_EXAMPLES         parser fuzz inputs
    --kills         TCLNATS_FAILOVER_KILLS        cluster failovers
    --interval      TCLNATS_FAILOVER_INTERVAL     seconds between failovers
    --outage        TCLNATS_BOUND_OUTAGE          seconds the server is down while a process
                                                  keeps publishing (bounded reconnect buffer)
    --reconnect-buf TCLNATS_BOUND_RECONNECT_BUF   that process's reconnect_buf_size, bytes
    --async-msgs    TCLNATS_BOUND_ASYNC_MSGS      JetStream publish_async calls through a SIGSTOP
    --pause         TCLNATS_BOUND_PAUSE           seconds of that SIGSTOP
    --max-pending   TCLNATS_BOUND_MAX_PENDING     their publish_async_max_pending
    --pub-pause     TCLNATS_BOUND_PUB_PAUSE       seconds a server with ten publishers is paused

then prints the figure lines the tests reported (cycles survived, messages
lost, duplicates, fuzz inputs, max RSS, failovers; accepted/refused/received
and peak RSS growth through an outage, publish_async outcomes by error code,
connect times against a silent TLS server, publishers' memory and the slow
consumer behind a paused server) and pytest's verdict.  ``--short`` runs the
CI sizes.  The exit code is pytest's.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
FILES = ["tests/interop/test_faults.py", "tests/interop/test_network_faults.py", "tests/aio/test_js_acks_across_server_kills.py",
         "tests/interop/test_bounded.py"]
# a figure line: words, then name=value pairs (what the fault tests print)
_FIGURE = re.compile(r"^[a-z][\w ]*=\S")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cycles", type=int, default=20, help="kill -9/restart cycles while publishing or acking")
    ap.add_argument("--messages", type=int, default=10000, help="messages per crash scenario")
    ap.add_argument("--fuzz", type=int, default=1_000_000, help="parser fuzz inputs")
    ap.add_argument("--kills", type=int, default=20, help="cluster failovers")
    ap.add_argument("--interval", type=float, default=3.0, help="seconds between failovers")
    ap.add_argument("--outage", type=float, default=5.0,
                    help="seconds the server is down while a process keeps publishing")
    ap.add_argument("--reconnect-buf", type=int, default=8 * 1024 * 1024,
                    help="that publisher's reconnect_buf_size in bytes")
    ap.add_argument("--async-msgs", type=int, default=1_000_000,
                    help="JetStream publish_async calls while the server is SIGSTOPped")
    ap.add_argument("--pause", type=float, default=5.0, help="seconds of that SIGSTOP")
    ap.add_argument("--max-pending", type=int, default=4000, help="their publish_async_max_pending")
    ap.add_argument("--pub-pause", type=float, default=3.0,
                    help="seconds a server with ten publishers and a slow subscriber is paused")
    ap.add_argument("--short", action="store_true", help="the sizes CI uses")
    args, rest = ap.parse_known_args(argv)
    env = dict(os.environ)
    if not args.short:
        env.update(TCLNATS_FAULT_CYCLES=str(args.cycles), TCLNATS_FAULT_MESSAGES=str(args.messages),
                   TCLNATS_FUZZ_EXAMPLES=str(args.fuzz), TCLNATS_FAILOVER_KILLS=str(args.kills),
                   TCLNATS_FAILOVER_INTERVAL=str(args.interval),
                   TCLNATS_BOUND_OUTAGE=str(args.outage), TCLNATS_BOUND_RECONNECT_BUF=str(args.reconnect_buf),
                   TCLNATS_BOUND_ASYNC_MSGS=str(args.async_msgs), TCLNATS_BOUND_PAUSE=str(args.pause),
                   TCLNATS_BOUND_MAX_PENDING=str(args.max_pending),
                   TCLNATS_BOUND_PUB_PAUSE=str(args.pub_pause))
    # test files or node ids on the command line run instead of FILES
    chosen = [a for a in rest if not a.startswith("-") and os.path.exists(os.path.join(ROOT, a.split("::")[0]))]
    files = [] if chosen else FILES
    cmd = [sys.executable, "-m", "pytest", "-s", "-p", "no:cacheprovider", "-m", "fault", *files, *rest]
    print("tclnats_py.compat.faults:", " ".join(cmd), flush=True)
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, text=True)
    figures = []
    verdict = ""
    assert proc.stdout is not None
    for line in proc.stdout:
        sys.stdout.write(line)
        # a figure line starts at column 0 (pytest's listings of failing code are indented);
        # pytest's progress characters may stand before it (".", "F", ...)
        text = line.rstrip("\r\n")
        if not _FIGURE.match(text):
            text = re.sub(r"^[.FEsxX]+ ?", "", text)
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
