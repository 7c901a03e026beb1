# Publishes orders to the ORDERS stream from Tcl (through tclnats_py).
#   tclnats-tclsh examples/orders_publisher.tcl NATS_URL COUNT
package require nats
lassign $argv url count
set conn [nats::connection new orders-publisher]
$conn configure -servers $url
$conn connect
set js [$conn jet_stream]
catch {$js add_stream ORDERS -subjects [list orders.*] -storage memory}
set products {apple pear plum cherry}
for {set i 0} {$i < $count} {incr i} {
    set product [lindex $products [expr {$i % [llength $products]}]]
    set qty [expr {1 + $i % 5}]
    $js publish orders.new [format {{"id":%d,"product":"%s","qty":%d}} $i $product $qty]
}
puts "published $count orders"
$conn destroy
