# The Tcl side of the side-by-side benchmark (compat/bench.py).
#
# Runs the same workload under plain tclsh with the original nats-tcl and
# under tclnats-tclsh, against one nats-server (JetStream on), and prints
# one "name value unit" line per figure.
#
#   tclsh|tclnats-tclsh bench_workload.tcl URL COUNT ?FIGURE ...?

package require nats

lassign $argv url count
set only [lrange $argv 2 end]
set payload [string repeat x 128]
set tag [expr {[info exists ::tclnats::provider] ? "tclnats" : "original"}]

proc wanted {name} {
    expr {[llength $::only] == 0 || $name in $::only}
}
proc report {name value unit} {
    puts [format "%s %.1f %s" $name $value $unit]
    flush stdout
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
if {[wanted publish]} {
    set t0 [clock microseconds]
    for {set i 0} {$i < $count} {incr i} {
        $pub publish bench.$tag.pub $payload
    }
    $pub ping -timeout 60000
    report publish [rate $count [expr {[clock microseconds] - $t0}]] msg/s
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
    report deliver [rate $::received [expr {[clock microseconds] - $t0}]] msg/s
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
    for {set i 0} {$i < $rounds} {incr i} {
        $pub request bench.$tag.service $payload -timeout 5000
    }
    report request [rate $rounds [expr {[clock microseconds] - $t0}]] req/s
}

# 4. JetStream: synchronous publish, fetch in batches of 500, KV put and get
set js [$pub jet_stream -timeout 5000]
set stream BENCH_[string toupper $tag]
catch {$js delete_stream $stream}
$js add_stream $stream -subjects [list js.$tag.>] -storage memory
if {[wanted js_publish]} {
    set t0 [clock microseconds]
    for {set i 0} {$i < $rounds} {incr i} {
        $js publish js.$tag.x $payload
    }
    report js_publish [rate $rounds [expr {[clock microseconds] - $t0}]] msg/s
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
        incr got [llength $batch]
    }
    report fetch [rate $got [expr {[clock microseconds] - $t0}]] msg/s
}
if {[wanted kv_put] || [wanted kv_get]} {
    set bucket BENCH_[string toupper $tag]
    catch {$js delete_kv_bucket $bucket}
    set kv [$js create_kv_bucket $bucket -storage memory]
    set t0 [clock microseconds]
    for {set i 0} {$i < $rounds} {incr i} {
        $kv put key.[expr {$i % 100}] $payload
    }
    report kv_put [rate $rounds [expr {[clock microseconds] - $t0}]] op/s
    set t0 [clock microseconds]
    for {set i 0} {$i < $rounds} {incr i} {
        $kv get key.[expr {$i % 100}]
    }
    report kv_get [rate $rounds [expr {[clock microseconds] - $t0}]] op/s
    $js delete_kv_bucket $bucket
}
$js delete_stream $stream
$pub destroy
$sub destroy
exit 0
