package require tcltest 2.5
set here [file dirname [file normalize [info script]]]
tcltest::workingDirectory $here
tcltest::configure -testdir $here -tmpdir [file join $here temp] -verbose pe {*}$argv
exit [tcltest::runAllTests]
