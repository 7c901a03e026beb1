# error_codes_probes.tcl - the calls of error_codes.test: every error path of
# nats-tcl 3.2.1's Core, JetStream and Key-Value API that a program can
# observe, as {name script} rows.  Plain Tcl and the public API only, so
# that the same rows can run under nats-tcl itself (docs/tcl-error-codes.md
# has the table of both sides).
#
# ::ec::setup urlVar builds the objects the rows use:
#   $::ec::c   connection to a JetStream server, $::ec::js its jet_stream
#   $::ec::p   connection to a server without JetStream, $::ec::pjs its jet_stream
#   $::ec::z   a connection object never connected
#   $::ec::kv  bucket ECKV (key k: v, key d: deleted), $::ec::kv0 empty bucket ECEMPTY
#   stream ECS (subjects ec.s.>) with pull consumer ECP, one message on ec.s.1;
#   stream KV_ECNOTKV (a stream by a bucket's name that is not a bucket)
# The URLs: urlVar is an array with js, plain, userpass (a server that asks
# for a user and password) and dead (a port nothing listens on).
#
# ::ec::run script -> {errorCode message}, or {ok result}; ::ec::cleanup
# deletes the streams and closes the connections

namespace eval ::ec {
    variable probes {}
}

proc ::ec::setup {urlArr} {
    upvar 1 $urlArr url
    variable c
    variable js
    variable p
    variable pjs
    variable z
    variable kv
    variable kv0
    variable url_
    array set url_ [array get url]
    set c [nats::connection new ec_js -log_level error -log_chan stdout]
    $c configure -servers $url(js)
    $c connect
    set js [$c jet_stream -timeout 2000]
    set p [nats::connection new ec_plain -log_level error -log_chan stdout]
    $p configure -servers $url(plain)
    $p connect
    set pjs [$p jet_stream -timeout 1000]
    set z [nats::connection new ec_closed -log_level error -log_chan stdout]
    $z configure -servers $url(plain)
    foreach s {ECS KV_ECNOTKV KV_ECKV KV_ECEMPTY KV_ECGONE ECMIRROR} {
        catch {$js delete_stream $s}
    }
    $js add_stream ECS -subjects ec.s.> -storage memory
    $js add_pull_consumer ECS ECP -ack_policy explicit
    $js publish ec.s.1 one
    $js add_stream KV_ECNOTKV -subjects ec.notkv.> -storage memory
    set kv [$js create_kv_bucket ECKV -storage memory]
    $kv put k v
    $kv put d gone
    $kv delete d
    set kv0 [$js create_kv_bucket ECEMPTY -storage memory]
    # a bucket deleted after binding
    set gone [$js create_kv_bucket ECGONE -storage memory]
    $js delete_kv_bucket ECGONE
    variable kvgone $gone
    # a responder that never answers, for request timeouts
    $c subscribe ec.silent -callback {apply {args {}}}
    $c ping
}

# delete what setup made and close its connections
proc ::ec::cleanup {} {
    variable c
    variable js
    variable p
    variable z
    foreach s {ECS KV_ECNOTKV KV_ECKV KV_ECEMPTY KV_ECGONE ECMIRROR ECX ECY} {
        catch {$js delete_stream $s}
    }
    foreach n [list $c $p $z] {
        catch {$n destroy}
    }
}

proc ::ec::probe {name script} {
    variable probes
    lappend probes $name $script
}

proc ::ec::run {script} {
    set rc [catch {uplevel #0 $script} msg opts]
    if {$rc == 1} {
        return [list [dict get $opts -errorcode] $msg]
    }
    return [list ok $msg]
}

# the first error a connection reports in last_error during a script and
# the event loop's next ms milliseconds: {code text} ({} {} when none; a
# reconnection clears last_error, so it is watched, not read at the end)
proc ::ec::last_error_after {conn script {ms 300}} {
    set var [info object namespace $conn]::last_error
    set ::ec::_seen {}
    trace add variable $var write ::ec::_seen_error
    try {
        uplevel #0 $script
        set ::ec::_w 0
        after $ms {set ::ec::_w 1}
        vwait ::ec::_w
    } finally {
        trace remove variable $var write ::ec::_seen_error
    }
    if {![llength $::ec::_seen]} {
        return [list {} {}]
    }
    set e [lindex $::ec::_seen 0]
    list [dict get $e code] [dict get $e errorMessage]
}
proc ::ec::_seen_error {name1 name2 op} {
    set e [uplevel 1 [list set $name1]]
    if {$e ne ""} {
        lappend ::ec::_seen $e
    }
}

# a connection of its own (closed by the caller)
proc ::ec::conn {urlKey args} {
    variable url_
    set n [nats::connection new ec_own -log_level error -log_chan stdout]
    $n configure -servers $url_($urlKey) {*}$args
    return $n
}

# ---------------------------------------------------------------- a fake server
# A NATS "server" in this interpreter for what a real one won't do on demand:
# no PONG (-pong 0; -pong first: only to the handshake's PING), no INFO,
# no headers, a given -ERR, garbage, a lost connection (fake_stop).
namespace eval ::ec::fake {
    variable listen "" client "" lines {} opts {}
}
proc ::ec::fake_start {args} {
    namespace upvar ::ec::fake listen listen opts opts lines lines
    set opts [dict merge {-info 1 -pong 1 -headers 1} $args]
    set lines {}
    set listen [socket -server ::ec::fake_accept -myaddr 127.0.0.1 0]
    lindex [chan configure $listen -sockname] 2
}
proc ::ec::fake_accept {chan addr port} {
    namespace upvar ::ec::fake client client opts opts listen listen
    set client $chan
    chan configure $chan -translation binary -blocking 0 -buffering none
    chan event $chan readable [list ::ec::fake_read $chan]
    if {[dict get $opts -info]} {
        set p [lindex [chan configure $listen -sockname] 2]
        set h [expr {[dict get $opts -headers] ? {"headers":true,} : ""}]
        puts -nonewline $chan "INFO {\"server_id\":\"FAKE\",\"version\":\"2.10.0\",\"proto\":1,\"host\":\"127.0.0.1\",\"port\":$p,$h\"max_payload\":1048576}\r\n"
    }
}
proc ::ec::fake_read {chan} {
    namespace upvar ::ec::fake client client opts opts lines lines
    if {[catch {read $chan} data] || ([eof $chan] && $data eq "")} {
        catch {close $chan}
        if {$client eq $chan} { set client "" }
        return
    }
    foreach line [split [string map [list \r\n \n] $data] \n] {
        if {$line eq ""} continue
        lappend lines $line
        if {$line eq "PING" && [dict get $opts -pong] ne "0"} {
            catch {puts -nonewline $chan "PONG\r\n"}
            if {[dict get $opts -pong] eq "first"} {
                dict set opts -pong 0
            }
        }
    }
}
proc ::ec::fake_send {bytes} {
    puts -nonewline $::ec::fake::client $bytes
}
proc ::ec::fake_wait {prefix {ms 2000}} {
    set until [expr {[clock milliseconds] + $ms}]
    while {[lsearch -glob $::ec::fake::lines $prefix*] < 0 && [clock milliseconds] < $until} {
        after 10 {set ::ec::_fw 1}
        vwait ::ec::_fw
    }
}
proc ::ec::fake_drop {} {
    namespace upvar ::ec::fake client client
    if {$client ne ""} {
        catch {close $client}
        set client ""
    }
}
proc ::ec::fake_stop {} {
    namespace upvar ::ec::fake listen listen
    fake_drop
    if {$listen ne ""} {
        close $listen
        set listen ""
    }
}
# a connection to a new fake server (connected unless -connect 0); it tries
# no other server and does not reconnect
proc ::ec::fake_conn {args} {
    set connect 1
    if {[dict exists $args -connect]} {
        set connect [dict get $args -connect]
        dict unset args -connect
    }
    set port [fake_start {*}$args]
    set n [nats::connection new ec_fake -log_level error -log_chan stdout]
    $n configure -servers nats://127.0.0.1:$port -max_reconnect_attempts 1 -reconnect_time_wait 50
    if {$connect} {
        $n connect
    }
    return $n
}

# a message that is not a JetStream message
proc ::ec::plainmsg {} {
    nats::msg create ec.plain -data x
}

# ---------------------------------------------------------------- connection object
namespace eval ::ec {
probe new-log_level {nats::connection new ec_bad -log_level bogus}
probe cget-unknown {$::ec::c cget -bogus}
probe configure-unknown {$::ec::c configure -bogus 1}
probe configure-missing-value {$::ec::z configure -randomize true -servers}
probe configure-bad-bool {$::ec::z configure -randomize maybe}
probe configure-bad-timeout {$::ec::z configure -connect_timeout -5}
probe configure-bad-pos_int {$::ec::z configure -max_reconnect_attempts x}
probe configure-servers-connected {$::ec::c configure -servers nats://127.0.0.1:1}
probe configure-bad-url {$::ec::z configure -servers nats://127.0.0.1:42x}
probe configure-empty-host {$::ec::z configure -servers nats://:4222}
probe reset-unknown {$::ec::z reset -bogus}
probe connect-unknown-option {$::ec::z connect -bogus}
probe connect-empty-pool {
    set n [nats::connection new ec_empty -log_level error -log_chan stdout]
    try { $n connect } finally { $n destroy }
}
probe connect-refused-one {
    set n [::ec::conn dead]
    try { $n connect } finally { $n destroy }
}
probe connect-refused-two {
    set n [::ec::conn dead -max_reconnect_attempts 0]
    $n configure -servers [list $::ec::url_(dead) nats://127.0.0.1:$::ec::url_(deadport2)]
    try { $n connect } finally { $n destroy }
}
probe connect-no-credentials {
    set n [::ec::conn userpass]
    try { $n connect } finally { $n destroy }
}
probe connect-wrong-password {
    set n [::ec::conn userpass -user alice -password wrong]
    try { $n connect } finally { $n destroy }
}
probe current_server-closed {$::ec::z current_server}

# ---------------------------------------------------------------- publish
probe publish-closed {$::ec::z publish ec.x hi}
probe publish-bad-subject {$::ec::c publish a..b hi}
probe publish-wildcard-subject {$::ec::c publish ec.* hi}
probe publish-empty-subject {$::ec::c publish "" hi}
probe publish-bad-reply {$::ec::c publish ec.x hi -reply "a b"}
probe publish-bad-reply-positional {$::ec::c publish ec.x hi "a..b"}
probe publish-max-payload {$::ec::c publish ec.x [string repeat x 1048577]}
probe publish-bad-header {$::ec::c publish ec.x hi -header {a}}
probe publish-unknown-option {$::ec::c publish ec.x hi -bogus 1}
probe publish-missing-value {$::ec::c publish ec.x hi -header {a b} -reply}
probe publish_msg-bad-subject {$::ec::c publish_msg [nats::msg create a..b -data x]}

# ---------------------------------------------------------------- subscribe
probe subscribe-closed {$::ec::z subscribe ec.x}
probe subscribe-bad-subject {$::ec::c subscribe "a b"}
probe subscribe-empty-token {$::ec::c subscribe a..b}
probe subscribe-gt-not-last {
    set n [::ec::conn plain]
    $n connect
    try {
        $n subscribe ec.>.bar
        ::ec::last_error_after $n {}
    } finally { $n destroy }
}
probe subscribe-gt-not-last-unchecked {
    set n [::ec::conn plain -check_subjects false]
    $n connect
    try {
        $n subscribe ec.>.bar
        ::ec::last_error_after $n {}
    } finally { $n destroy }
}
probe subscribe-bad-queue {$::ec::c subscribe ec.x -queue "a b"}
probe subscribe-empty-queue {$::ec::c subscribe ec.x -queue ""}
probe subscribe-bad-max_msgs {$::ec::c subscribe ec.x -max_msgs -1}
probe subscribe-bad-dictmsg {$::ec::c subscribe ec.x -dictmsg maybe}
probe unsubscribe-unknown {$::ec::c unsubscribe 99999}
probe unsubscribe-closed {$::ec::z unsubscribe 1}

# ---------------------------------------------------------------- request
probe request-timeout {$::ec::c request ec.silent hi -timeout 100}
probe request-no-responders {$::ec::c request ec.nobody hi -timeout 1000}
probe request-max_msgs-timeout {$::ec::c request ec.silent hi -timeout 100 -max_msgs 2}
probe request-max_msgs-no-responders {$::ec::c request ec.nobody hi -timeout 1000 -max_msgs 2}
probe request-bad-timeout {$::ec::c request ec.silent hi -timeout -1}
probe request-bad-subject {$::ec::c request a..b hi}
probe request-closed {$::ec::z request ec.x hi}
probe request-disconnect {
    set n [::ec::conn plain]
    $n connect
    $n subscribe ec.silent2 -callback {apply {args {}}}
    set t [after 100 [list $n disconnect]]
    try { $n request ec.silent2 hi -timeout 3000 } finally { after cancel $t; $n destroy }
}
probe request-max_msgs-disconnect {
    set n [::ec::conn plain]
    $n connect
    $n subscribe ec.silent2 -callback {apply {args {}}}
    set t [after 100 [list $n disconnect]]
    try { $n request ec.silent2 hi -timeout 3000 -max_msgs 2 } finally { after cancel $t; $n destroy }
}
probe ping-disconnect {
    set n [::ec::fake_conn -pong first]
    set t [after 100 [list $n disconnect]]
    try { $n ping -timeout 3000 } finally { after cancel $t; $n destroy; ::ec::fake_stop }
}
probe ping-timeout {
    set n [::ec::fake_conn -pong first]
    try { $n ping -timeout 200 } finally { $n destroy; ::ec::fake_stop }
}
probe request-connection-lost {
    set n [::ec::fake_conn]
    set t [after 100 ::ec::fake_stop]
    try { $n request ec.x hi -timeout 3000 } finally { after cancel $t; $n destroy; ::ec::fake_stop }
}
probe request-max_msgs-connection-lost {
    set n [::ec::fake_conn]
    set t [after 100 ::ec::fake_stop]
    try { $n request ec.x hi -timeout 3000 -max_msgs 2 } finally { after cancel $t; $n destroy; ::ec::fake_stop }
}
probe fetch-disconnect {
    set n [::ec::conn js]
    $n connect
    set j [$n jet_stream]
    set t [after 100 [list $n disconnect]]
    try { $j fetch ECS ECP -timeout 3000 -batch_size 5 } finally { after cancel $t; $n destroy }
}
probe fetch-connection-lost {
    set n [::ec::fake_conn]
    set j [$n jet_stream]
    set t [after 100 ::ec::fake_stop]
    try { $j fetch ECS ECP -timeout 3000 } finally { after cancel $t; $n destroy; ::ec::fake_stop }
}
probe publish-headers-not-supported {
    set n [::ec::fake_conn -headers 0]
    try { $n publish ec.x hi -header {A 1} } finally { $n destroy; ::ec::fake_stop }
}
probe connect-no-info {
    set n [::ec::fake_conn -info 0 -connect 0]
    $n configure -connect_timeout 300
    try { $n connect } finally { $n destroy; ::ec::fake_stop }
}
probe connect-secure-wanted {
    set n [::ec::fake_conn -connect 0]
    $n configure -secure true
    try { $n connect } finally { $n destroy; ::ec::fake_stop }
}
probe async-server-err {
    set n [::ec::fake_conn]
    try {
        ::ec::last_error_after $n {::ec::fake_send "-ERR 'Something Odd'\r\n"}
    } finally { $n destroy; ::ec::fake_stop }
}
probe async-permissions {
    set n [::ec::fake_conn]
    try {
        ::ec::last_error_after $n {::ec::fake_send "-ERR 'Permissions Violation for Publish to \"ec.x\"'\r\n"}
    } finally { $n destroy; ::ec::fake_stop }
}
probe async-permissions-unquoted {
    set n [::ec::fake_conn]
    try {
        ::ec::last_error_after $n {::ec::fake_send "-ERR 'Permissions Violation for Subscription to ec.y'\r\n"}
    } finally { $n destroy; ::ec::fake_stop }
}
probe async-invalid-coroutine {
    set ::ec::bg {}
    set old [interp bgerror {}]
    interp bgerror {} {apply {{msg opts} {lappend ::ec::bg [dict get $opts -errorcode] $msg}}}
    try {
        coroutine ::ec::co apply {{} { catch {$::ec::c request ec.silent hi -timeout 100} }}
        rename ::ec::co ""
        set ::ec::_w 0
        after 400 {set ::ec::_w 1}
        vwait ::ec::_w
        string map {::ec::co CORO} $::ec::bg
    } finally { interp bgerror {} $old }
}
probe async-auth-expired {
    set n [::ec::fake_conn]
    try {
        ::ec::last_error_after $n {::ec::fake_send "-ERR 'User Authentication Expired'\r\n"}
    } finally { $n destroy; ::ec::fake_stop }
}
probe async-auth-revoked {
    set n [::ec::fake_conn]
    try {
        ::ec::last_error_after $n {::ec::fake_send "-ERR 'User Authentication Revoked'\r\n"}
    } finally { $n destroy; ::ec::fake_stop }
}
probe async-account-expired {
    set n [::ec::fake_conn]
    try {
        ::ec::last_error_after $n {::ec::fake_send "-ERR 'Account Authentication Expired'\r\n"}
    } finally { $n destroy; ::ec::fake_stop }
}
probe async-stale {
    set n [::ec::fake_conn]
    try {
        ::ec::last_error_after $n {::ec::fake_send "-ERR 'Stale Connection'\r\n"}
    } finally { $n destroy; ::ec::fake_stop }
}
probe async-authorization {
    set n [::ec::fake_conn]
    try {
        ::ec::last_error_after $n {::ec::fake_send "-ERR 'Authorization Violation'\r\n"}
    } finally { $n destroy; ::ec::fake_stop }
}
probe async-protocol-garbage {
    set n [::ec::fake_conn]
    try {
        ::ec::last_error_after $n {::ec::fake_send "BOGUS line\r\n"}
    } finally { $n destroy; ::ec::fake_stop }
}
probe async-bad-header {
    set n [::ec::fake_conn]
    set ::ec::got {}
    $n subscribe ec.h -callback {apply {{s m r} {lappend ::ec::got $m}}}
    try {
        ::ec::fake_wait SUB
        ::ec::last_error_after $n {::ec::fake_send "HMSG ec.h 1 12 14\r\nNATS/2.0\r\n\r\nhi\r\n"}
    } finally { $n destroy; ::ec::fake_stop }
}
probe async-server-closed {
    set n [::ec::fake_conn]
    try {
        ::ec::last_error_after $n ::ec::fake_drop
    } finally { $n destroy; ::ec::fake_stop }
}
probe async-control-line {
    set n [::ec::fake_conn]
    try {
        ::ec::last_error_after $n {::ec::fake_send [string repeat x 5000]}
    } finally { $n destroy; ::ec::fake_stop }
}
probe async-stale-pings {
    set n [::ec::fake_conn -pong first -connect 0]
    $n configure -ping_interval 100 -max_outstanding_pings 1
    $n connect
    try {
        ::ec::last_error_after $n {} 800
    } finally { $n destroy; ::ec::fake_stop }
}
probe request_msg-bad {$::ec::c request_msg [nats::msg create a..b]}
probe cancel_request-unknown {$::ec::c cancel_request 99999}
probe ping-closed {$::ec::z ping}
probe ping-bad-timeout {$::ec::c ping -timeout x}
probe jet_stream-domain-and-prefix {$::ec::c jet_stream -domain d -api_prefix p}
probe jet_stream-bad-timeout {$::ec::c jet_stream -timeout -1}

# ---------------------------------------------------------------- nats::msg, nats::header, time
probe msg-create-unknown {nats::msg create ec.x -bogus 1}
probe msg-set-field {set m [nats::msg create ec.x]; nats::msg set m -header x}
probe msg-seq {nats::msg seq [nats::msg create ec.x]}
probe msg-timestamp {nats::msg timestamp [nats::msg create ec.x]}
probe header-set-odd {set m [nats::msg create ec.x]; nats::header set m a 1 b}
probe header-get-missing {nats::header get [nats::msg create ec.x] X}
probe header-values-missing {nats::header values [nats::msg create ec.x] X}
probe header-get-other {set m [nats::msg create ec.x]; nats::header set m A 1; nats::header get $m X}
probe isotime-bad {nats::isotime_to_msec bogus}

# ---------------------------------------------------------------- JetStream
probe js-no-jetstream {$::ec::pjs account_info}
probe js-stream_info-missing {$::ec::js stream_info ECNONE}
probe js-delete_stream-missing {$::ec::js delete_stream ECNONE}
probe js-consumer_info-missing {$::ec::js consumer_info ECS NONE}
probe js-consumer_info-no-stream {$::ec::js consumer_info ECNONE NONE}
probe js-add_stream-bad-name {$::ec::js add_stream a.b -subjects ec.ab}
probe js-add_stream-bad-enum {$::ec::js add_stream ECX -subjects ec.x -storage disk}
probe js-add_stream-empty-subjects {$::ec::js add_stream ECX -subjects {}}
probe js-add_stream-bad-int {$::ec::js add_stream ECX -subjects ec.x -max_msgs many}
probe js-add_stream-bad-bool {$::ec::js add_stream ECX -subjects ec.x -sealed maybe}
probe js-add_stream-empty-description {$::ec::js add_stream ECX -subjects ec.x -description ""}
probe js-add_stream-empty-metadata {$::ec::js add_stream ECX -subjects ec.x -metadata {}}
probe js-add_stream-empty-sources {$::ec::js add_stream ECX -subjects ec.x -sources {}}
probe js-add_stream-missing-value {$::ec::js add_stream ECX -subjects}
probe js-add_stream-unknown-option {$::ec::js add_stream ECX -subjects ec.x -bogus 1}
probe js-add_stream-conflict {$::ec::js add_stream ECS -subjects ec.other}
probe js-add_stream-overlap {$::ec::js add_stream ECY -subjects ec.s.1 -storage memory}
probe js-add_consumer-bad-name {$::ec::js add_consumer ECS -name a.b}
probe js-add_consumer-name-and-durable {$::ec::js add_consumer ECS -name a -durable_name b}
probe js-add_consumer-bad-enum {$::ec::js add_consumer ECS -durable_name C1 -ack_policy sometimes}
probe js-add_consumer-bad-ns {$::ec::js add_consumer ECS -durable_name C1 -ack_wait soon}
probe js-add_consumer-no-stream {$::ec::js add_consumer ECNONE -durable_name C1}
probe js-add_pull_consumer-bad-option {$::ec::js add_pull_consumer ECS C1 -max_deliver x}
probe js-delete_consumer-missing {$::ec::js delete_consumer ECS NONE}
probe js-purge_stream-bad {$::ec::js purge_stream ECS -keep -1}
probe js-stream_names-unknown {$::ec::js stream_names -bogus 1}
probe js-stream_msg_get-missing {$::ec::js stream_msg_get ECS -seq 999}
probe js-stream_msg_get-no-stream {$::ec::js stream_msg_get ECNONE -seq 1}
probe js-stream_msg_get-missing-value {$::ec::js stream_msg_get ECS -seq}
probe js-stream_direct_get-missing {$::ec::js stream_direct_get KV_ECKV -last_by_subj {$KV.ECKV.none}}
probe js-stream_direct_get-no-options {$::ec::js stream_direct_get KV_ECKV}
probe js-stream_direct_get-not-direct {$::ec::js stream_direct_get ECS -seq 1}
probe js-stream_msg_delete-no-seq {$::ec::js stream_msg_delete ECS}
probe js-stream_msg_delete-no-seq-other-option {$::ec::js stream_msg_delete ECS -no_erase false}
probe js-stream_msg_delete-missing-value {$::ec::js stream_msg_delete ECS -seq}
probe js-stream_msg_delete-missing {$::ec::js stream_msg_delete ECS -seq 999}
probe js-fetch-bad-stream {$::ec::js fetch a.b ECP}
probe js-fetch-bad-consumer {$::ec::js fetch ECS a.b}
probe js-fetch-expires-no-timeout {$::ec::js fetch ECS ECP -expires 100}
probe js-fetch-bad-batch {$::ec::js fetch ECS ECP -batch_size -1}
probe js-fetch-timeout {
    $::ec::js fetch ECS ECP -batch_size 1
    $::ec::js fetch ECS ECP -timeout 200 -expires 5000
}
probe js-fetch-no-consumer {$::ec::js fetch ECS NONE -timeout 200 -expires 5000}
probe js-fetch-no-stream {$::ec::js fetch ECNONE NONE -timeout 200 -expires 5000}
probe js-cancel_pull_request-unknown {$::ec::js cancel_pull_request bogus}
probe js-ack-plain {$::ec::js ack [::ec::plainmsg]}
probe js-ack_sync-plain {$::ec::js ack_sync [::ec::plainmsg]}
probe js-nak-bad-delay {$::ec::js nak [::ec::plainmsg] -delay x}
probe js-publish-no-stream {$::ec::js publish ec.nostream hi}
probe js-publish-wrong-stream {$::ec::js publish ec.s.2 hi -stream OTHER}
probe js-publish-bad-subject {$::ec::js publish a..b hi}
probe js-publish-bad-timeout {$::ec::js publish ec.s.2 hi -timeout -5}
probe js-publish-wrong-last-seq {
    set m [nats::msg create ec.s.3 -data x]
    nats::header set m Nats-Expected-Last-Subject-Sequence 99
    $::ec::js publish_msg $m
}
probe js-metadata-plain {nats::metadata [::ec::plainmsg]}
probe js-make_stream_source-no-name {nats::make_stream_source -opt_start_seq 1}
probe js-make_subject_transform-no-dest {nats::make_subject_transform -src ec.a}
probe js-make_republish-no-src {nats::make_republish -dest ec.b}
probe js-ordered_consumer-bad-stream {$::ec::js ordered_consumer a.b -callback {apply {m {}}}}
probe js-ordered_consumer-no-stream {$::ec::js ordered_consumer ECNONE -callback {apply {m {}}}}
probe js-add_consumer_from_json-no-stream {$::ec::js add_consumer_from_json ECNONE C1 {{"durable_name":"C1"}}}

# ---------------------------------------------------------------- Key-Value
probe kv-no-jetstream {$::ec::pjs create_kv_bucket ECX}
probe kv-bind-missing {$::ec::js bind_kv_bucket ECNONE}
probe kv-bind-not-kv {$::ec::js bind_kv_bucket ECNOTKV}
probe kv-bind-bad-name {$::ec::js bind_kv_bucket a.b}
probe kv-create-bad-name {$::ec::js create_kv_bucket a.b}
probe kv-create-history {$::ec::js create_kv_bucket ECX -history 65}
probe kv-create-bad-option {$::ec::js create_kv_bucket ECX -ttl soon}
probe kv-create-unknown-option {$::ec::js create_kv_bucket ECX -bogus 1}
probe kv-aggregate-no-origins {$::ec::js create_kv_aggregate ECX false {}}
probe kv-aggregate-writable {$::ec::js create_kv_aggregate ECX maybe [list [nats::make_kv_origin -bucket ECKV]]}
probe kv-aggregate-mirror_name {$::ec::js create_kv_aggregate ECX false [list [nats::make_kv_origin -bucket ECKV]] -mirror_name ECKV}
probe kv-mirror-mirror_name {$::ec::js create_kv_mirror ECMIRROR [nats::make_kv_origin -bucket ECKV] -mirror_name ECKV}
probe kv-mirror-kv-name {$::ec::js create_kv_mirror KV_X [nats::make_kv_origin -bucket ECKV]}
probe kv-delete-missing {$::ec::js delete_kv_bucket ECNONE}
probe kv-delete-bad-name {$::ec::js delete_kv_bucket a.b}
probe kv-origin-domain-and-api {nats::make_kv_origin -bucket ECKV -domain d -api a}
probe kv-origin-no-bucket {nats::make_kv_origin -stream ECS}
probe kv-get-missing {$::ec::kv get nokey}
probe kv-get-deleted {$::ec::kv get d}
probe kv-get-bad-key {$::ec::kv get .bad}
probe kv-get-_kv-key {$::ec::kv get _kv_x}
probe kv-get-bad-revision {$::ec::kv get k -revision x}
probe kv-get-other-revision {$::ec::kv get k -revision 2}
probe kv-get-revision-of-other-key {$::ec::kv get k -revision 3}
probe kv-get_value-missing {$::ec::kv get_value nokey}
probe kv-put-bad-key {$::ec::kv put "a b" v}
probe kv-create-existing {$::ec::kv create k v2}
probe kv-update-wrong-revision {$::ec::kv update k v3 999}
probe kv-delete-wrong-revision {$::ec::kv delete k 999}
probe kv-revert-missing {$::ec::kv revert k 999}
probe kv-watch-conflict {$::ec::kv watch > -include_history 1 -updates_only 1}
probe kv-watch-unknown-option {$::ec::kv watch > -bogus 1}
probe kv-keys-empty {$::ec::kv0 keys}
probe kv-history-missing {$::ec::kv history nokey}
probe kv-gone-get {$::ec::kvgone get k}
probe kv-gone-put {$::ec::kvgone put k v}
probe kv-gone-status {$::ec::kvgone status}
probe kv-gone-watch {$::ec::kvgone watch >}
}
