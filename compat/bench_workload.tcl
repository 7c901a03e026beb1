# The Tcl side of the side-by-side benchmark (compat/bench.py).
#
# Runs the same workload under plain tclsh with the original nats-tcl and
# under tclnats-tclsh, against one nats-server (JetStream on), and prints
# one "name value unit" line per figure.
#
#   tclsh|tclnats-tclsh bench_workload.tcl URL COUNT PUBNAME ?FIGURE ...?
#
# Every figure checks its own count (delivered, answered, stored, acked, the
# values read back); a figure that comes back short prints
# "FAILED name reason" instead of its rate and the script exits 1.  The
# publish figure runs on its own connection named PUBNAME, so that the
# harness can ask the server how many messages that connection sent.

package require nats

lassign $argv url count pubname
set only [lrange $argv 3 end]
set ::failed 0
set payload [string repeat x 128]
set tag [expr {[info exists ::tclnats::provider] ? "tclnats" : "original"}]

proc wanted {name} {
    expr {[llength $::only] == 0 || $name in $::only}
}
proc report {name value unit} {
    puts [format "%s %.1f %s" $name $value $unit]
    flush stdout
}
proc fail {name reason} {
    puts "FAILED $name $reason"
    flush stdout
    set ::failed 1
}
proc rate {n usec} {
    expr {$usec > 0 ? $n / ($usec / 1e6) : 0}
}

set pub [nats::connection new bench-pub]
$pub configure -servers $url
$pub connect
set sub [nats::connection new bench-sub]
$sub configure -servers $url
$sub connect

# 1. publish rate: the time to hand COUNT messages to the client and see
#    them reach the server (a ping after the last one)
#    (on a connection of its own: the harness checks with the server that
#    it sent exactly COUNT messages)
if {[wanted publish]} {
    set only_pub [nats::connection new $pubname]
    $only_pub configure -servers $url
    $only_pub connect
    set t0 [clock microseconds]
    for {set i 0} {$i < $count} {incr i} {
        $only_pub publish bench.$tag.pub $payload
    }
    $only_pub ping -timeout 60000
    report publish [rate $count [expr {[clock microseconds] - $t0}]] msg/s
    $only_pub destroy
}

# 2. delivery: publish on one connection, count in a callback on another
if {[wanted deliver]} {
    set ::received 0
    proc on_msg {subject msg reply} {
        if {[incr ::received] == $::count} {
            set ::all_received 1
        }
    }
    $sub subscribe bench.$tag.deliver -callback on_msg
    $sub ping
    set t0 [clock microseconds]
    for {set i 0} {$i < $count} {incr i} {
        $pub publish bench.$tag.deliver $payload
    }
    set timer [after 60000 {set ::all_received timeout}]
    vwait ::all_received
    after cancel $timer
    if {$::received != $count} {
        fail deliver "$::received of $count messages delivered in 60 s"
    } else {
        report deliver [rate $::received [expr {[clock microseconds] - $t0}]] msg/s
    }
}

# 3. request/reply round trips (responder on the second connection)
set rounds [expr {max(200, $count / 50)}]
if {[wanted request]} {
    proc respond {conn subject msg reply} {
        $conn publish $reply $msg
    }
    $sub subscribe bench.$tag.service -callback [list respond $sub]
    $sub ping
    set t0 [clock microseconds]
    set wrong 0
    for {set i 0} {$i < $rounds} {incr i} {
        if {[$pub request bench.$tag.service $payload -timeout 5000] ne $payload} {
            incr wrong
        }
    }
    set t1 [clock microseconds]
    if {$wrong} {
        fail request "$wrong of $rounds replies differ from the request"
    } else {
        report request [rate $rounds [expr {$t1 - $t0}]] req/s
    }
}

# 4. JetStream: synchronous publish, fetch in batches of 500, KV put and get
set js [$pub jet_stream -timeout 5000]
set stream BENCH_[string toupper $tag]
catch {$js delete_stream $stream}
$js add_stream $stream -subjects [list js.$tag.>] -storage memory
if {[wanted js_publish]} {
    set t0 [clock microseconds]
    set acked 0
    for {set i 0} {$i < $rounds} {incr i} {
        if {[dict exists [$js publish js.$tag.x $payload] seq]} {
            incr acked
        }
    }
    set t1 [clock microseconds]
    set stored [dict get [$js stream_info $stream] state messages]
    if {$acked != $rounds || $stored != $rounds} {
        fail js_publish "$acked of $rounds publishes acked, $stored stored"
    } else {
        report js_publish [rate $rounds [expr {$t1 - $t0}]] msg/s
    }
}
if {[wanted fetch]} {
    set total [expr {max(2000, $count / 5)}]
    for {set i 0} {$i < $total} {incr i} {
        $pub publish js.$tag.f $payload
    }
    $pub ping
    $js add_pull_consumer $stream PULL -ack_policy none -filter_subject js.$tag.f
    set got 0
    set t0 [clock microseconds]
    while {$got < $total} {
        set batch [$js fetch $stream PULL -batch_size 500 -timeout 2000]
        if {[llength $batch] == 0} {
            break
        }
        incr got [llength $batch]
    }
    set t1 [clock microseconds]
    if {$got != $total} {
        fail fetch "$got of $total stored messages fetched"
    } else {
        report fetch [rate $got [expr {$t1 - $t0}]] msg/s
    }
}
if {[wanted kv_put] || [wanted kv_get]} {
    set bucket BENCH_[string toupper $tag]
    catch {$js delete_kv_bucket $bucket}
    set kv [$js create_kv_bucket $bucket -storage memory]
    set t0 [clock microseconds]
    for {set i 0} {$i < $rounds} {incr i} {
        set revision [$kv put key.[expr {$i % 100}] $payload]
    }
    set t1 [clock microseconds]
    # a fresh bucket: the last put's revision is the number of puts stored
    if {$revision != $rounds} {
        fail kv_put "the last of $rounds puts has revision $revision"
    } else {
        report kv_put [rate $rounds [expr {$t1 - $t0}]] op/s
    }
    set wrong 0
    set t0 [clock microseconds]
    for {set i 0} {$i < $rounds} {incr i} {
        if {[dict get [$kv get key.[expr {$i % 100}]] value] ne $payload} {
            incr wrong
        }
    }
    set t1 [clock microseconds]
    if {$wrong} {
        fail kv_get "$wrong of $rounds gets read another value"
    } else {
        report kv_get [rate $rounds [expr {$t1 - $t0}]] op/s
    }
    $js delete_kv_bucket $bucket
}
$js delete_stream $stream
$pub destroy
$sub destroy
exit $::failed
