# The prelude of tclnats-compat --websocket (compat/ws_server.py): nats-tcl's
# suite, unchanged, with every nats::connection of our sides going to the
# servers' websocket listeners.  The runner copies this file as the
# pkgIndex.tcl of a folder that it puts on TCLLIBPATH of our sides only
# (never the original's), so Tcl's package scan sources it in every
# interpreter the suite makes (tcltest's child processes, the responder's
# Thread worker) before `package require nats` loads the package.
#
# It provides no package.  Once package nats is provided (the classes exist
# then), the class ::nats::connection gets the mixin below, whose configure
# maps each server of -servers, nats://[user@]host[:port] or [user@]host[:port],
# to ws://[user@]host:port (port 4222 when none is given): the same address,
# where compat/ws_server.py's nats-server has its websocket listener (its
# NATS port moved aside); other URLs (ws://, tls://) stay as they are.  Only
# the public API is touched: what the connection shows afterwards (cget
# -servers, all_servers) is what it was configured with, the ws:// URLs.
if {![namespace exists ::tclnats_compat_ws]} {
    namespace eval ::tclnats_compat_ws {
        variable pkgIndex [info script]

        proc map {url} {
            set rx {^(?:nats://)?([^@/]*@)?(\[[^\]/]*\]|[^:/\[\]@]+)(?::([0-9]+))?/?$}
            if {![regexp $rx $url -> userinfo host port]} {
                return $url
            }
            if {$port eq ""} {
                set port 4222
            }
            return "ws://$userinfo$host:$port"
        }

        oo::class create servers {
            method configure {args} {
                if {[llength $args] > 1} {
                    foreach i [lsearch -all -regexp [lmap {k v} $args {set k}] {^-?servers$}] {
                        set v [lindex $args [expr {2 * $i + 1}]]
                        if {![catch {llength $v}]} {
                            lset args [expr {2 * $i + 1}] [lmap url $v {::tclnats_compat_ws::map $url}]
                        }
                    }
                }
                next {*}$args
            }
        }

        # `package provide nats VERSION` done: the mixin goes on the class
        proc provided {cmd code result op} {
            variable pkgIndex
            if {$code != 0 || [llength $cmd] != 4 || [lrange $cmd 1 2] ne {provide nats}
                    || [info exists ::tclnats_compat_ws::prelude]} {
                return
            }
            oo::define ::nats::connection mixin -append ::tclnats_compat_ws::servers
            variable prelude $pkgIndex
        }
        trace add execution ::package leave ::tclnats_compat_ws::provided
    }
}
