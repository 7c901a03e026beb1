# package nats 3.2.1 (the nats-tcl API level) served by tclnats_py.
#
# Any Tcl 8.6 interpreter can load it: stock tclsh, wish, Thread workers,
# child interpreters, C programs that embed Tcl, tkinter interpreters.  The
# commands are backed by tclnats_py's Python engine; when the interpreter is
# not hosted yet, tclnats_py's Tcl extension is [load]ed, which starts the
# Python that tclnats_py was installed with (or joins the one running in
# this process) and installs the bridge into this interpreter.
#
# This folder is the installed tclnats_py/tcl/ (the extension one level
# up), or tcl/ at the top of a source checkout built in place (the extension
# in ../tclnats_py/).
package ifneeded nats 3.2.1 [list apply {{dir} {
    if {![info exists ::tclnats::hosted]} {
        set parent [file dirname $dir]
        set lib ""
        foreach pkgdir [list $parent [file join $parent tclnats_py]] {
            set found [glob -nocomplain -directory $pkgdir _tclload*[info sharedlibextension]]
            if {[llength $found]} {
                set lib [lindex [lsort $found] 0]
                break
            }
        }
        if {$lib eq ""} {
            return -code error -errorcode {NATS ErrPython} "package nats (tclnats_py): its Tcl\
                extension _tclload[info sharedlibextension] is not beside $dir; install tclnats_py\
                with pip (python3 -m pip install tclnats_py), or build it in place\
                (python3 setup.py build_ext --inplace)"
        }
        load $lib Tclnats
    }
    source [file join $dir nats.tcl]
    source [file join $dir server_pool.tcl]
    source [file join $dir jet_stream.tcl]
    # which implementation answered (benchmarks and conformance runs print it)
    set ::tclnats::provider [list tclnats_py [file join $dir pkgIndex.tcl]]
    package provide nats 3.2.1
}} $dir]
