# Child of tests/interop/test_bounded.py: 10 publishers and one subscriber with small pending
# limits on a server the test pauses (the Tcl face).
#   tclsh paused_pubs.tcl URL WRITE_BUF_BYTES PENDING_MSGS
# stdout: "pid N" once connected; "result key=value ..." after "stop".
# stdin: go / cont (answered with cont) / stop / quit, as paused_pubs.py.
package require nats
lassign $argv url wbuf pending
set ::phase before
set ::sub_errors [dict create]
set ::pub_errors [dict create]

proc watch_errors {conn var} {
    trace add variable [info object namespace $conn]::last_error write \
        [list apply {{ns var args} {
            set e [set ${ns}::last_error]
            if {$e ne ""} {
                if {$var eq "::sub_errors"} {
                    dict incr $var [lindex [dict get $e code] end]@$::phase
                } else {
                    dict incr $var [lindex [dict get $e code] end]
                }
            }
        }} [info object namespace $conn] $var]
}

set ::pubs [list]
for {set i 0} {$i < 10} {incr i} {
    set p [nats::connection new pub$i -log_chan stderr]
    $p configure -servers $url -write_buf_size $wbuf -flush_timeout 60000
    watch_errors $p ::pub_errors
    $p connect
    lappend ::pubs $p
}
set s [nats::connection new sub -log_chan stderr]
$s configure -servers $url -pending_msgs_limit $pending -pending_bytes_limit [expr {$pending * 2048}]
watch_errors $s ::sub_errors
$s connect
set ::received 0
proc slow {subject msg reply} {
    incr ::received
    after 1
}
set ::sid [$s subscribe bound.flood -callback slow]
$s ping
puts "pid [pid]"
flush stdout

set ::payload [string repeat p 1024]
set ::published 0
set ::refused [dict create]
set ::stop 0
proc pump {} {
    if {$::stop} {
        set ::pumped 1
        return
    }
    foreach p $::pubs {
        for {set i 0} {$i < 10} {incr i} {
            if {[catch {$p publish bound.flood $::payload} err opts]} {
                set ec [dict get $opts -errorcode]
                if {[lindex $ec 0] ne "NATS"} {
                    return -options $opts $err
                }
                dict incr ::refused [lindex $ec 1]
                continue
            }
            incr ::published
        }
    }
    after 0 pump
}
proc on_stdin {} {
    set line [string trim [gets stdin]]
    switch -- $line {
        go { after 0 pump }
        cont {
            set ::phase after
            puts cont
            flush stdout
        }
        stop { set ::stop 1 }
        quit { set ::quit 1 }
        default { if {[eof stdin]} { set ::quit 1; set ::stop 1 } }
    }
}
fconfigure stdin -blocking 0
fileevent stdin readable on_stdin
vwait ::pumped
foreach p $::pubs {
    $p ping -timeout 30000
}
proc fmt {d} {
    set out [list]
    dict for {k v} $d { lappend out $k:$v }
    if {![llength $out]} { return - }
    return [join $out ,]
}
set total 0
dict for {k v} $::refused { incr total $v }
puts "result published=$::published refused=$total codes=[fmt $::refused] pub_errors=[fmt $::pub_errors] received=$::received sub_errors=[fmt $::sub_errors]"
flush stdout
vwait ::quit
foreach p $::pubs { $p destroy }
$s destroy
exit 0
