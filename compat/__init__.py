"""Conformance runner and benchmarks: tclnats_py side by side with the original nats-tcl."""
