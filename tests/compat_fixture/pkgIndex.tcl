# A stand-in "original" package for the conformance runner's own tests.
package ifneeded nats 3.2.1 [list source [file join $dir fake_nats.tcl]]
