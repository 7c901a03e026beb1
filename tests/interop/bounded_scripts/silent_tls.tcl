# Child of tests/interop/test_bounded.py: connect to a TLS server that never answers the
# handshake, while a repeating 50 ms timer counts.   tclsh silent_tls.tcl URL CONNECT_TIMEOUT_MS
# stdout: "result raised=CODE elapsed_ms=N ticks=N"
package require nats
lassign $argv url timeout
set ::ticks 0
proc tick {} {
    incr ::ticks
    after 50 tick
}
after 50 tick
set c [nats::connection new silent -log_chan stderr]
$c configure -servers [list $url] -connect_timeout $timeout
set t0 [clock milliseconds]
if {[catch {$c connect} err opts]} {
    set raised [lindex [dict get $opts -errorcode] 1]
    if {[lindex [dict get $opts -errorcode] 0] ne "NATS"} {
        set raised "other:[dict get $opts -errorcode]:$err"
    }
} else {
    set raised connected
}
set elapsed [expr {[clock milliseconds] - $t0}]
puts "result raised=$raised elapsed_ms=$elapsed ticks=$::ticks"
flush stdout
$c destroy
exit 0
