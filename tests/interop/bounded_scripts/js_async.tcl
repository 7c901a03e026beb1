# Child of tests/interop/test_bounded.py: JetStream publishes with -callback (the Tcl
# face's asynchronous publish) while the server is SIGSTOPped in the middle.
#   tclsh js_async.tcl URL TOTAL PAUSE_MS SERVER_PID MAX_PENDING STALL_MS TIMEOUT_MS
# The script stops the server itself (kill -STOP) when half are attempted and
# resumes it PAUSE_MS later (the test resumes it too, whatever happens).
# stdout: "result key=value ...".  in flight = accepted publishes whose callback has not run.
package require nats
lassign $argv url ::total pause_ms ::spid max_pending stall timeout
set ::pause_ms $pause_ms
set c [nats::connection new jsasync -log_chan stderr]
$c configure -servers $url
$c connect
set ::js [$c jet_stream -timeout $timeout -publish_async_max_pending $max_pending -publish_async_stall_wait $stall]
$::js add_stream BOUNDTCL -subjects bound.tcl -storage memory
set ::payload [string repeat j 64]
set ::attempted 0
set ::sent 0
set ::done 0
set ::max_in_flight 0
set ::outcomes [dict create]
set ::resumed 0

proc cb {timedOut ack err} {
    incr ::done
    if {$timedOut} {
        dict incr ::outcomes ErrTimeout
    } elseif {$err ne ""} {
        dict incr ::outcomes js[dict get $err err_code]
    } else {
        dict incr ::outcomes acked
    }
}
proc resume {} {
    exec kill -CONT $::spid
    set ::resumed 1
}
proc pump {} {
    for {set i 0} {$i < 100 && $::attempted < $::total} {incr i} {
        if {$::attempted == $::total / 2} {
            exec kill -STOP $::spid
            after $::pause_ms resume
        }
        incr ::attempted
        if {[catch {$::js publish bound.tcl $::payload -callback cb} err opts]} {
            set ec [dict get $opts -errorcode]
            if {[lindex $ec 0] ne "NATS"} {
                return -options $opts $err
            }
            dict incr ::outcomes [lindex $ec 1]
            continue
        }
        incr ::sent
        set f [expr {$::sent - $::done}]
        if {$f > $::max_in_flight} {
            set ::max_in_flight $f
        }
    }
    if {$::attempted < $::total} {
        after 0 pump
    } else {
        set ::pumped 1
    }
}
set t0 [clock milliseconds]
after 0 pump
vwait ::pumped
set seconds [expr {([clock milliseconds] - $t0) / 1000.0}]
if {!$::resumed} {
    vwait ::resumed
}
set limit [after 60000 {set ::gaveup 1}]
while {$::done < $::sent && ![info exists ::gaveup]} {
    vwait ::done
}
after cancel $limit
set stored [dict get [$::js stream_info BOUNDTCL] state messages]
set codes [list]
dict for {k v} $::outcomes { lappend codes $k:$v }
puts "result attempted=$::attempted sent=$::sent callbacks=$::done max_in_flight=$::max_in_flight outcomes=[join $codes ,] stream_messages=$stored seconds=$seconds"
flush stdout
$c destroy
exit 0
