# all.tcl - run the tcltest files of this folder with tclnats-tclsh:
#
#   tclnats-tclsh --nats-server tests/tcl/all.tcl ?-file pattern? ?-verbose pse? ...
#
# tests/tclface/test_tcl_suite.py runs it once per file with the full set of servers.
# By default every file runs in a child process started with
# [info nameofexecutable], i.e. tclnats-tclsh again.  The exit code is 1 when
# a test failed or a file could not be run to its end.
package require tcltest 2.5
::tcltest::configure -testdir [file dirname [file normalize [info script]]]
::tcltest::configure {*}$::argv
exit [::tcltest::runAllTests]
