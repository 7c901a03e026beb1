# Shaped like nats-tcl's tests/all.tcl: one child interpreter per .test file.
package require tcltest 2.5
package require nats
set thisDir [file dirname [file normalize [info script]]]
tcltest::workingDirectory $thisDir
tcltest::configure -testdir $thisDir -tmpdir [file join $thisDir temp] -verbose pe {*}$argv
puts [tcltest::outputChannel] "Testing fixture nats [package present nats] in Tcl [package present Tcl]"
exit [tcltest::runAllTests]
