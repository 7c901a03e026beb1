"""docs/tcl.md's Tk lines (section "Tcl inside a Python program")."""

import tkinter
from tclnats_py.tclface.bridge import install
root = tkinter.Tk()
install(root)                       # now: root.eval("package require nats")
