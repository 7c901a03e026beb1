# The "original" nats package of the runner's fixture checkout (our own few
# lines, standing in for nats-tcl): the runner copies this folder's *.tcl
# files and puts them on TCLLIBPATH for the original side only.
package ifneeded nats 3.2.1 [list source [file join $dir fake_nats.tcl]]
