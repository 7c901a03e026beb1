# package nats, served by tclnats_py at two nats-tcl API levels:
#   3.2.1  the default: `package require nats` (or `package require nats 3`)
#   2.0.4  nats-tcl 2.x's API (with the additions of its 2022/2023 JetStream
#          documents): `package require nats 2`, or `package require nats`
#          with the environment variable TCLNATS_API=2, which offers only
#          this level so that unmodified 2.x applications get it.
# Both run on the same engine; one interpreter loads one of them, different
# interpreters of one process may load different ones.
#
# Any Tcl 8.6 interpreter can load it: stock tclsh, wish, Thread workers,
# child interpreters, C programs that embed Tcl, tkinter interpreters.  The
# commands are backed by tclnats_py's Python engine; when the interpreter is
# not hosted yet, tclnats_py's Tcl extension is [load]ed (it finds the Python
# library, or fails here), and the first command that needs the engine (a
# new connection, mostly) starts the Python that tclnats_py was installed
# with (or joins the one running in this process) and installs the bridge
# into this interpreter.
#
# This folder is the installed tclnats_py/tcl/ (the extension one level
# up), or tcl/ at the top of a source checkout built in place (the extension
# in ../tclnats_py/).
#
# Another nats package on the path (a nats-tcl checkout: 3.2.1, or 2.0.4)
# does not shadow this one, whatever the order: Tcl's package scan
# (tclPkgUnknown) sources every pkgIndex.tcl on auto_path, the last one
# sourced deciding a version's script, and a parent folder on the path
# marks this folder as scanned; so besides registering now, this index
# registers again when the scan that sourced it ends (an unset trace on a
# variable of the scan's frame), after every other index.  The versions it
# serves (3.2.1 and 2.0.4) are then this folder's; under TCLNATS_API=2 a
# foreign 3.2.1 is withdrawn too, so that `package require nats` gets 2.0.4.
# Other versions of nats (a newer nats-tcl) stay available as they are.
set tclnatsLoad {{dir version files} {
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
            # not built: tclnats_py was installed without Tcl's development
            # files (setup.py then skips the Tcl face), or a checkout was
            # not built in place; the one command that builds it
            set why "was not built, because Tcl 8.6's development files (tclConfig.sh), a C compiler\
                or Python's headers were missing when tclnats_py was installed"
            if {[file exists [file join $parent setup.py]]} {
                set why "is not built in this source checkout ($parent); it needs Tcl 8.6's development\
                    files (tclConfig.sh), a C compiler and Python's headers"
                set cmd "cd [list $parent] && TCLNATS_REQUIRE_TCL=1 python3 setup.py build_ext --inplace\
                    (with the Python that tclnats_py is installed in)"
            } else {
                # .../<prefix>/lib/pythonX.Y/site-packages/tclnats_py
                set site [file dirname $parent]
                set libpy [file dirname $site]
                set python python3
                set up $site
                for {set i 0} {$i < 4} {incr i} {
                    set up [file dirname $up]
                    if {[file exists [file join $up pyvenv.cfg]]} {
                        foreach name [list [file tail $libpy] python3 python] {
                            if {[file executable [file join $up bin $name]]} {
                                set python [file join $up bin $name]
                                break
                            }
                        }
                        break
                    }
                }
                if {$python eq "python3" && [string match python3* [file tail $libpy]]
                        && [file executable [file join [file dirname [file dirname $libpy]] bin [file tail $libpy]]]} {
                    set python [file join [file dirname [file dirname $libpy]] bin [file tail $libpy]]
                }
                # where pip installed it from (PEP 610), else the index
                set source tclnats_py
                foreach f [glob -nocomplain -directory $site tclnats_py-*.dist-info/direct_url.json] {
                    set fd [open $f]
                    set json [read $fd]
                    close $fd
                    if {[regexp {"url"\s*:\s*"file://([^"%]*)"} $json -> path]
                            && ![string match *.whl $path] && [file exists $path]} {
                        set source $path
                    }
                }
                set binary [expr {$source eq "tclnats_py" ? " --no-binary tclnats_py" : ""}]
                set cmd "TCLNATS_REQUIRE_TCL=1 [list $python] -m pip install --force-reinstall --no-deps\
                    --no-cache-dir$binary [list $source]"
            }
            return -code error -errorcode {NATS ErrPython} "package nats (tclnats_py): its Tcl\
                extension (_tclload[info sharedlibextension]) $why. Install them (Debian/Ubuntu: apt-get install tcl-dev gcc python3-dev; Fedora:\
                dnf install tcl-devel gcc python3-devel; macOS: brew install tcl-tk), then rebuild it: $cmd"
        }
        load $lib Tclnats
        # Python starts, and the bridge installs its commands, at the first
        # command that needs them: until then these stand in for them
        set ::tclnats::standins {}
        foreach cmd {_new_connection _option_table _parse_url _token _flush_dirty _metadata _make_kv_origin
                _make_subject_transform _make_stream_source _make_republish _run_deliveries _await
                _fastpub_new _noop python} {
            lappend ::tclnats::standins ::tclnats::$cmd
            proc ::tclnats::$cmd args "::tclnats::Start; tailcall ::tclnats::$cmd {*}\$args"
        }
        proc ::tclnats::Start {} {
            ::tclnats::_start
            # a stand-in that the bridge did not replace goes: an error, not a loop
            foreach p $::tclnats::standins {
                if {[info procs $p] ne ""} {
                    rename $p ""
                }
            }
        }
        proc ::tclnats::r {reply} {
            if {[lindex $reply 0] == 0} {
                return [lindex $reply 1]
            }
            return -code error -errorcode [lindex $reply 1] [lindex $reply 2]
        }
    }
    foreach f $files {
        source [file join $dir {*}[file split $f]]
    }
    # which implementation answered (benchmarks and conformance runs print it)
    set ::tclnats::provider [list tclnats_py [file join $dir pkgIndex.tcl] $version]
    package provide nats $version
}}
set tclnatsRegister [list apply {{dir load atEnd} {
    set api2 [expr {[info exists ::env(TCLNATS_API)] && $::env(TCLNATS_API) eq "2"}]
    set ours {}
    foreach {version files} {
        3.2.1 {nats.tcl server_pool.tcl jet_stream.tcl service.tcl}
        2.0.4 {nats.tcl server_pool.tcl jet_stream.tcl v2/nats_v2.tcl v2/kv_v2.tcl}
    } {
        # the script marks the load in progress: a scan that ends during it
        # (nats.tcl's [catch {package require json}]) changes nothing then
        dict set ours $version [list apply {{load dir version files} {
            namespace eval ::tclnats {variable loading 1}
            try {
                apply $load $dir $version $files
            } finally {
                unset -nocomplain ::tclnats::loading
            }
        }} $load $dir $version $files]
    }
    if {$atEnd && ([package provide nats] ne "" || [info exists ::tclnats::loading])} {
        return
    }
    if {$atEnd && $api2 && "3.2.1" in [package versions nats]
            && [package ifneeded nats 3.2.1] ne [dict get $ours 3.2.1]} {
        # [package forget] drops every version: the others come back as they were
        set keep {}
        foreach v [package versions nats] {
            if {$v ne "3.2.1"} {
                lappend keep $v [package ifneeded nats $v]
            }
        }
        package forget nats
        foreach {v script} $keep {
            package ifneeded nats $v $script
        }
    }
    dict for {version script} $ours {
        if {!($version eq "3.2.1" && $api2)} {
            package ifneeded nats $version $script
        }
    }
}} $dir $tclnatsLoad]
{*}$tclnatsRegister 0
if {[info level] > 0} {
    # sourced by a package scan (a proc): register again when it returns;
    # one trace, this index's (Tcl scans auto_path from its end, so the
    # index sourced last, the first on auto_path, keeps its place among
    # copies of tclnats_py)
    foreach tclnatsTrace [trace info variable tclnatsScanEnd] {
        trace remove variable tclnatsScanEnd {*}$tclnatsTrace
    }
    set tclnatsScanEnd 1
    trace add variable tclnatsScanEnd unset [list apply {{register args} {{*}$register 1}} $tclnatsRegister]
}
unset -nocomplain tclnatsLoad tclnatsRegister tclnatsTrace
