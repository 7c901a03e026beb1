# A second fake nats package, for the fixture's stand-in of the tclnats side
# (tests/compat/test_compat_runner.py runs it through a tclsh wrapper that puts this
# folder on TCLLIBPATH).  It names itself tclnats_py the way ours does, so the
# runner's check of which package loaded accepts it on that side.
package ifneeded nats 3.2.1 [list apply {{dir} {
    namespace eval ::nats {
        proc implementation {} { return fake-tclnats }
    }
    namespace eval ::tclnats {}
    set ::tclnats::provider [list tclnats_py [file join $dir pkgIndex.tcl]]
    package provide nats 3.2.1
}} $dir]
