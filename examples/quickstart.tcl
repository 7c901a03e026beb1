# Quick start: `package require nats` served by tclnats_py.
#
#   tclnats-tclsh --nats-server examples/quickstart.tcl
#
# --nats-server starts a throw-away nats-server (JetStream on) and puts its URL
# in env(NATS_URL); without it, point NATS_URL at your own server.
package require nats

set url [expr {[info exists env(NATS_URL)] ? $env(NATS_URL) : "nats://localhost:4222"}]
set conn [nats::connection new quickstart]
$conn configure -servers $url
$conn connect
puts "connected to [join [$conn current_server] :], server [dict get [$conn server_info] version]"

# core NATS: a subscription and a request/reply service
$conn subscribe greet.* -callback [list apply {{subject msg reply} {
    puts "  got '$msg' on $subject"
}}]
$conn subscribe time.now -callback [list apply {{conn subject msg reply} {
    $conn publish $reply [clock format [clock seconds] -gmt 1]
}} $conn]
$conn publish greet.tcl "hello from Tcl"
puts "request time.now -> [$conn request time.now "" -timeout 1000]"

# JetStream: a stream, acknowledged publishes, a pull consumer
set js [$conn jet_stream]
catch {$js delete_stream ORDERS}
$js add_stream ORDERS -subjects [list orders.*] -storage memory
foreach item {apple pear plum} {
    set ack [$js publish orders.new $item]
    puts "stored $item as seq [dict get $ack seq]"
}
$js add_pull_consumer ORDERS PACKER
foreach msg [$js fetch ORDERS PACKER -batch_size 10 -timeout 500] {
    puts "  packing [nats::msg data $msg] (stream seq [dict get [nats::metadata $msg] stream_seq])"
    $js ack $msg
}

# Key-Value
set kv [$js create_kv_bucket SETTINGS -storage memory -history 3]
$kv put theme dark
$kv put theme light
puts "theme = [$kv get_value theme], history: [lmap e [$kv history theme] {dict get $e value}]"

$js delete_kv_bucket SETTINGS
$js delete_stream ORDERS
$conn destroy
puts "done"
