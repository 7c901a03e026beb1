# package nats 3.2.1 (the nats-tcl API level) served by tclnats_py.
#
# In an interpreter hosted by tclnats_py (tclnats-tclsh, or tclnats_py.tclbridge.install
# on a tkinter interpreter) the commands are backed by the Python engine.
# In any other interpreter (e.g. one created by the Thread package inside
# tclnats-tclsh) there is no Python engine to talk to: if TCLNATS_THREAD_FALLBACK
# names a folder with another implementation of the package, that one is
# loaded; otherwise the error says how to get one.
package ifneeded nats 3.2.1 [list apply {{dir} {
    if {[info exists ::tclnats::hosted]} {
        source [file join $dir nats.tcl]
        source [file join $dir server_pool.tcl]
        source [file join $dir jet_stream.tcl]
        package provide nats 3.2.1
        return
    }
    if {[info exists ::env(TCLNATS_THREAD_FALLBACK)] && $::env(TCLNATS_THREAD_FALLBACK) ne ""} {
        set fallback $::env(TCLNATS_THREAD_FALLBACK)
        # its pkgIndex.tcl re-declares "package ifneeded nats ..."; then run that script
        set dir $fallback
        source [file join $fallback pkgIndex.tcl]
        uplevel #0 [package ifneeded nats 3.2.1]
        return
    }
    error "package nats from tclnats_py needs an interpreter hosted by tclnats_py\
           (run the script with tclnats-tclsh); for other interpreters set\
           TCLNATS_THREAD_FALLBACK to the folder of another nats package"
}} $dir]
