# nats::server_pool: the public shape of nats-tcl's server pool.
#
# The pool itself lives in the Python engine (tclnats_py/engine/pool.py). This
# object shows it as the list variable Servers (one dict per server: scheme
# host port discovered reconnects last_attempt ?user password? ?auth_token?),
# kept up to date by the engine. Writing Servers from Tcl (e.g. to pretend a
# server already failed) is taken back into the engine.

oo::class create ::nats::server_pool {
    variable Servers Conn Py

    constructor {conn py} {
        set Conn $conn
        set Py $py
        set Servers [list]
        ::tclnats::r [$Py pool_var [self namespace]::Servers]
        trace add variable Servers write [list $Py servers_written]
    }
    destructor {
        catch {trace remove variable Servers write [list $Py servers_written]}
    }
    # a URL as a server dict; ErrInvalidArg when it is not a valid NATS URL
    method parse {url} {
        return [::tclnats::r [::tclnats::_parse_url $url]]
    }
    # add a server (as if discovered from INFO connect_urls)
    method add {url} {
        ::tclnats::r [$Py add_server $url]
        return
    }
    method set_servers {urls} {
        ::tclnats::r [$Py configure -servers $urls]
    }
    method all_servers {} {
        return $Servers
    }
    method current_server {} {
        return [::tclnats::r [$Py current_server]]
    }
    # the credentials CONNECT would carry for the current server, JSON-quoted
    method format_credentials {} {
        set creds [::tclnats::r [$Py credentials]]
        set out [list]
        foreach {k v} $creds {
            lappend out $k [json::write string $v]
        }
        return $out
    }
    method clear {} {
        ::tclnats::r [$Py reset servers]
    }
}
