"""What the Tcl face's C reader (tclfast.c) did, read back from the records
the property tests' Tcl scripts print: ``C:subject:data:reply`` for a
message it delivered in C (sid 1), ``E:bytes`` for bytes it handed the
engine (all hex)."""

from __future__ import annotations

from tclnats_py.engine import protocol as P


#: the head of such a script: a C reader ``::fc`` (tclfast's) whose plan is
#: recorded in ::rec (C deliveries for sid 1 through ``cb``, the bytes it
#: hands the engine through ``::tclnats::_run_deliveries``), reading the
#: pipe ``rd`` that the script writes to through ``wr``; the script adds
#: its ``rx`` (what the reader calls the engine with) and its loop
TCL_READER_HEAD = r"""
package require nats
::tclnats::_fastpub_new ::fc [list list]
rename ::tclnats::_run_deliveries {}
proc ::tclnats::_run_deliveries {items} { lappend ::rec "E:[lindex $items 0]" }
proc ::tclnats::_flush_dirty {args} {}
proc bgerror {msg} { puts stderr "bgerror: $msg"; exit 3 }
proc cb {s d r} { lappend ::rec "C:[binary encode hex $s]:[binary encode hex $d]:[binary encode hex $r]" }
set ::FastMax 1048576
set ::FastRoom 1000000000
lassign [chan pipe] rd wr
chan configure $rd -blocking 0 -translation binary
chan configure $wr -translation binary -buffering none
::fc sub 1 cb 0 0
"""


def tcl_reader_ops(records: list) -> tuple[list, int]:
    """(the reader's plan as the engine's operations: C deliveries as MSG
    operations, the bytes handed on parsed by the pure-Python reference;
    the bytes the reference still holds, a frame left incomplete)."""
    p = P.Parser(accelerated=False)
    ops: list = []
    for rec in records:
        kind, _, rest = rec.partition(":")
        if kind == "E":
            ops += p.feed(bytes.fromhex(rest))
        else:
            s, d, reply = (bytes.fromhex(x) for x in rest.split(":"))
            ops.append((P.MSG, s.decode(), 1, reply.decode() or None, None, d))
    return ops, p.buffered
