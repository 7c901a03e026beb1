namespace eval ::nats {
    proc implementation {} { return fake-original }
}
package provide nats 3.2.1
