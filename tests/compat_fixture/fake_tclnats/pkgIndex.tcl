# A second fake nats package, for the fixture's stand-in of the tclnats side
# (tests/test_compat_runner.py runs it through a tclsh wrapper that puts this
# folder on TCLLIBPATH).
package ifneeded nats 3.2.1 [list apply {{} {
    namespace eval ::nats {
        proc implementation {} { return fake-tclnats }
    }
    package provide nats 3.2.1
}}]
