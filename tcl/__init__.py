"""Tcl sources of `package require nats`, served by tclnats_py (no Python code here)."""
