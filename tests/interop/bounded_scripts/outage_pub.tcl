# Child of tests/interop/test_bounded.py: keeps publishing 1 KiB messages through an outage
# (the Tcl face).   tclsh outage_pub.tcl URL RECONNECT_BUF_BYTES WRITE_BUF_BYTES
# stdout: "pid N" once connected; "result key=value ..." after "stop".
# stdin: go / stop / quit.  Same numbering as outage_pub.py.
package require nats
lassign $argv url buf wbuf
set c [nats::connection new bound -log_chan stderr]
$c configure -servers $url -reconnect_buf_size $buf -write_buf_size $wbuf -flush_timeout 10000 \
    -max_reconnect_attempts -1 -reconnect_time_wait 100 -connect_timeout 1000
set ::statuses [list]
trace add variable [info object namespace $c]::status write \
    [list apply {{ns args} {lappend ::statuses [set ${ns}::status]}} [info object namespace $c]]
set ::errs [dict create]
trace add variable [info object namespace $c]::last_error write \
    [list apply {{ns args} {
        set e [set ${ns}::last_error]
        if {$e ne ""} { dict incr ::errs [lindex [dict get $e code] end] }
    }} [info object namespace $c]]
$c connect
puts "pid [pid]"
flush stdout
set ::fill [string repeat x 1014]
set ::seq 0
set ::outage_from -1
set ::while_down 0
set ::refused [dict create]
set ::stop 0

proc pump {} {
    if {$::stop} {
        set ::pumped 1
        return
    }
    for {set i 0} {$i < 100} {incr i} {
        if {[catch {$::c publish bound.out [format %010d $::seq]$::fill} err opts]} {
            set ec [dict get $opts -errorcode]
            if {[lindex $ec 0] ne "NATS"} {
                return -options $opts $err
            }
            dict incr ::refused [lindex $ec 1]
            continue
        }
        if {[$::c cget -status] ne "connected"} {
            incr ::while_down
            if {$::outage_from < 0} {
                set ::outage_from $::seq
            }
        }
        incr ::seq
    }
    after 1 pump
}

proc on_stdin {} {
    set line [string trim [gets stdin]]
    switch -- $line {
        go { after 0 pump }
        stop { set ::stop 1 }
        quit { set ::quit 1 }
        default { if {[eof stdin]} { set ::quit 1 } }
    }
}
fconfigure stdin -blocking 0
fileevent stdin readable on_stdin
vwait ::pumped
$c ping -timeout 10000
set codes [list]
set total 0
dict for {k v} $::refused {
    lappend codes $k:$v
    incr total $v
}
if {![llength $codes]} { set codes - }
set errs [list]
dict for {k v} $::errs { lappend errs $k:$v }
if {![llength $errs]} { set errs - }
puts "result accepted=$::seq outage_from=$::outage_from while_down=$::while_down refused=$total codes=[join $codes ,] errors=[join $errs ,] statuses=[join $::statuses ,]"
flush stdout
vwait ::quit
$c destroy
exit 0
