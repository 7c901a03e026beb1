/*
 * tclfast.c: the Tcl face's per-message paths in C, part of the Python
 * extension module tclnats_py._tclcross (tclcross.c calls TclnatsFast_Init
 * for each interpreter it serves).
 *
 * One C state per nats::connection object (struct FastConn), made by
 *
 *   ::tclnats::_fastpub_new name pending ?object?
 *
 * which creates the command `name` (the object's Fast) and, given the
 * object, makes the class ::nats::connection's method `publish` this file's
 * C method.  The state serves two paths:
 *
 * Publishing.  A plain publish (a subject, and reply, that passes the
 * engine's rule for ASCII subjects or that the engine accepted before, no
 * headers, a payload within max_payload) is framed by natscodec.c into
 * a C buffer ("PUB subject reply len\r\n...\r\n"), which the bridge takes
 * whole at the next flush: no Python call per message.  Anything else goes
 * to the method PublishGeneral (the general path, through Python); a batch
 * past FastRoom bytes to PublishRoom (MakeRoom, then publish again).  Both
 * are Tcl methods run by Tcl's non-recursive evaluation, so a publish inside
 * a coroutine may still wait (yield) for room.
 *
 *   name pub subject message ?reply? | ?-reply reply?
 *       the same fast path as a command: 1 framed; 2 make room first and
 *       call again; 0 not for the fast path.  The first publish of a batch
 *       runs the command prefix `pending`.
 *   name take       -> {count bytes}: the batch, which starts anew
 *   name write chan ?key? -> {count bytes pending}: the batch written to
 *                      the channel, which starts anew; pending: the channel's
 *                      output bytes not taken by the socket yet; with key
 *                      (4 bytes), in one masked WebSocket binary frame
 *   name subject S  the engine accepted the subject (or reply) S
 *   name clear      forget the accepted subjects
 *
 * The variables FastMax (max_payload while the path is open, -1 closed),
 * FastRoom, PendingCount and PendingBytes of the command's namespace are
 * linked to the state (Tcl_LinkVar).
 *
 * Reading.  The socket's readable handler is `name read`: it reads a chunk
 * (at most 256 KiB) from the channel and walks the complete frames in it
 * (natscodec_scan, the scanner the Python parser's accelerator uses).  A
 * MSG frame (no headers) of a subscription registered here (a callback, no
 * -max_msgs, no utf8 conversion: `name sub`) becomes a call of its callback
 * without Python (with -dictmsg, the message is the dict the engine's
 * delivery would give: header {} data subject reply sub_id); every other
 * frame (PING, INFO, -ERR, HMSG,
 * messages of other subscriptions) is handed, as contiguous bytes, to the
 * Python engine (`rx ops`), whose deliveries come back as the item list of
 * ::tclnats::_run_deliveries.  Once the frames of the read are all handled
 * (the library's work), the callbacks run in the order of their messages,
 * each as `uplevel #0 [list {*}$callback $subject $message $reply]`; an
 * error in one is reported as a background error, as
 * ::tclnats::_run_deliveries does.  Anything this parser is not sure of (a
 * line that is not plain, a control line too long) makes it hand the rest of
 * the stream, as read, to the engine until the next socket.
 *
 *   name rd channel rxcmd reader   read this channel from now on ("" : none)
 *   name ws max rest left inmsg    the channel carries WebSocket frames: from
 *                                  the next read, their payloads are the
 *                                  stream read (natscodec_ws_unframe; the
 *                                  unframer's state from the engine's adapter,
 *                                  websocket.py hand_over); control frames go
 *                                  to the engine (`rx wsctl frame`) after the
 *                                  read's NATS bytes, a bad frame ends the
 *                                  reading (`rx wsbad why`, why "": past max)
 *   name read                      the readable handler
 *   name sub sid callback msgs bytes ?dictmsg?  a subscription for the C
 *                                  path, with the pending limits (slow
 *                                  consumers)
 *   name unsub sid   -> messages the C path received for it (it leaves)
 *   name subclear    all leave
 *   name limits msgs bytes         pending_msgs_limit / pending_bytes_limit
 *   name counts      -> {messages bytes} the C path received since the
 *                      last report to Python (and starts again)
 *
 * Slow consumers: as in the bridge, a message is dropped when its
 * subscription already has `msgs` deliveries (or would pass `bytes` payload
 * bytes) handed to Tcl and not run yet; the first drop of an episode is
 * reported (`rx slow sid`); the episode ends when they have all run.
 */
#include <tcl.h>
#include <tclOO.h>
#include <string.h>
#include <stdint.h>
#include "subject_rule.h"
#define NATSCODEC_API static
#include "natscodec.c"   /* the frames, shared with natsproto.c */

#define FAST_READ_CHUNK (256 * 1024)
#define FAST_MAX_CONTROL_LINE 4096

static const Tcl_ObjType *fast_bytearray_type = NULL;

typedef struct FastSub {
    int refs;
    Tcl_WideInt sid;
    Tcl_Obj *cb;             /* the callback prefix (a list), held */
    Tcl_Obj **words;         /* its words (owned by cb's list rep, which we hold) */
    int nwords;
    Tcl_WideInt received;    /* messages since the last report to Python */
    Tcl_WideInt pmsgs, pbytes;   /* handed to Tcl, not run yet */
    Tcl_WideInt lim_msgs, lim_bytes;
    int slow;                /* in a slow-consumer episode */
    Tcl_Obj *subject;        /* the last subject delivered (reused while equal) */
    Tcl_Obj *sidobj;         /* -dictmsg: the sub_id value, else NULL */
} FastSub;

typedef struct {
    /* publishing */
    Tcl_WideInt max;        /* FastMax */
    Tcl_WideInt room;       /* FastRoom */
    Tcl_WideInt count;      /* PendingCount */
    Tcl_WideInt bytes;      /* PendingBytes: payload + 32 per message */
    unsigned char *buf;
    size_t len, cap;
    Tcl_HashTable subjects;
    char *last;             /* the subject accepted last (a one-entry cache) */
    int lastlen, lastcap;
    Tcl_Obj *pending;       /* command prefix run by the first publish of a batch */
    Tcl_Obj *vars[4];       /* the linked variables' names */
    Tcl_Interp *interp;
    Tcl_Obj *my;            /* the object's `my` command (fully qualified), or NULL */
    int dead;               /* the command is gone */
    /* reading */
    Tcl_Obj *chan;          /* the channel's name, NULL when none */
    Tcl_Obj *rx;            /* the bridge's command for the rest */
    Tcl_Obj *reader;        /* the reader's name for ::tclnats::_flush_dirty */
    unsigned gen;           /* changes with each rd */
    unsigned char *rbuf;
    size_t rlen, rcap;
    int passthrough;        /* everything goes to the engine until the next rd */
    int parsing;            /* a read's frames are being handled (no nested read then) */
    Tcl_HashTable subs;     /* sid -> FastSub* */
    Tcl_WideInt lim_msgs, lim_bytes;
    Tcl_WideInt in_msgs, in_bytes;   /* not reported to Python yet */
    Tcl_Obj *empty;
    Tcl_Obj *lit_ops, *lit_lost, *lit_eof, *lit_slow, *lit_run, *lit_flush, *lit_wsctl, *lit_wsbad;
    /* a WebSocket's frames, unframed here (`name ws`) until the next rd */
    int ws;                 /* 1: the reads are frames; 2: a bad frame came, reads are dropped */
    natscodec_ws wst;
    unsigned long long ws_max;
    unsigned char whold[NATSCODEC_WS_HOLD];   /* a frame's first bytes, not unframed yet */
    size_t wholdn;
    Tcl_Obj *lit_keys[5];   /* -dictmsg: header data subject reply sub_id */
} FastConn;

static const char *const fast_var_names[4] = {"FastMax", "FastRoom", "PendingCount", "PendingBytes"};

/* ------------------------------------------------------------ helpers */

static int
grow(unsigned char **buf, size_t *cap, size_t need)
{
    size_t c = *cap ? *cap : 4096;
    unsigned char *nb;
    if (need <= *cap)
        return 1;
    while (c < need)
        c *= 2;
    nb = (unsigned char *)attemptckrealloc((char *)*buf, (unsigned int)c);
    if (nb == NULL)
        return 0;
    *buf = nb;
    *cap = c;
    return 1;
}

/* no byte of s[0:n) has its high bit set (8 at a time) */
static int
ascii(const unsigned char *s, int n)
{
    uint64_t acc = 0, w;
    int i = 0;
    for (; i + 8 <= n; i += 8) {
        memcpy(&w, s + i, 8);
        acc |= w;
    }
    for (; i < n; i++)
        acc |= s[i];
    return (acc & UINT64_C(0x8080808080808080)) == 0;
}

static void
sub_release(FastSub *s)
{
    if (--s->refs > 0)
        return;
    Tcl_DecrRefCount(s->cb);
    if (s->subject != NULL)
        Tcl_DecrRefCount(s->subject);
    if (s->sidobj != NULL)
        Tcl_DecrRefCount(s->sidobj);
    ckfree((char *)s);
}

static void
subs_clear(FastConn *f)
{
    Tcl_HashSearch it;
    Tcl_HashEntry *e;
    for (e = Tcl_FirstHashEntry(&f->subs, &it); e != NULL; e = Tcl_NextHashEntry(&it))
        sub_release((FastSub *)Tcl_GetHashValue(e));
    Tcl_DeleteHashTable(&f->subs);
    Tcl_InitHashTable(&f->subs, TCL_ONE_WORD_KEYS);
}

/* ------------------------------------------------------------ publishing */

/* The fast path of one publish: 1 framed, 2 make room first, 0 general
 * path, -1 error (in the interpreter). */
static int
fast_pub(FastConn *f, Tcl_Interp *interp, int objc, Tcl_Obj *const objv[])
{
    int slen, rlen = 0, mlen;
    size_t flen;
    const char *subj, *reply = NULL;
    const unsigned char *data;
    Tcl_Obj *msg;

    if (f->max < 0 || objc < 2)
        return 0;
    if (objc == 3) {
        reply = Tcl_GetStringFromObj(objv[2], &rlen);
        if (reply[0] == '-')
            return 0;   /* an option without its value, or a reply to check there */
    } else if (objc == 4) {
        const char *o = Tcl_GetString(objv[2]);
        if (o[0] != '-' || strcmp(o, "-reply") != 0)
            return 0;
        reply = Tcl_GetStringFromObj(objv[3], &rlen);
    } else if (objc != 2) {
        return 0;
    }
    /* the payload: the general path's length is in characters, each
     * written as its low byte; an ASCII string is its own bytes, a byte
     * array is read as such (neither changes the value's type) */
    msg = objv[1];
    if (msg->typePtr == fast_bytearray_type && fast_bytearray_type != NULL) {
        data = Tcl_GetByteArrayFromObj(msg, &mlen);
    } else {
        const unsigned char *s = (const unsigned char *)Tcl_GetStringFromObj(msg, &mlen);
        if (ascii(s, mlen)) {
            data = s;
        } else {
            mlen = Tcl_GetCharLength(msg);
            if (mlen > f->max)
                return 0;
            data = Tcl_GetByteArrayFromObj(msg, &mlen);
        }
    }
    if (mlen > f->max)
        return 0;
    subj = Tcl_GetStringFromObj(objv[0], &slen);
    if (!(slen == f->lastlen && f->last != NULL && memcmp(subj, f->last, (size_t)slen) == 0)) {
        if (!tclnats_plain_subject((const unsigned char *)subj, (size_t)slen) && Tcl_FindHashEntry(&f->subjects, subj) == NULL)
            return 0;
        if (slen + 1 > f->lastcap) {
            f->last = ckrealloc(f->last, (unsigned int)(slen + 1));
            f->lastcap = slen + 1;
        }
        memcpy(f->last, subj, (size_t)slen + 1);
        f->lastlen = slen;
    }
    if (reply != NULL && (rlen == 0 || (!tclnats_plain_subject((const unsigned char *)reply, (size_t)rlen) && Tcl_FindHashEntry(&f->subjects, reply) == NULL)))
        return 0;
    if (f->bytes > f->room)
        return 2;
    flen = natscodec_pub_frame_len((size_t)slen, (size_t)rlen, NULL, 0, (size_t)mlen);
    if (!grow(&f->buf, &f->cap, f->len + flen)) {
        Tcl_SetObjResult(interp, Tcl_NewStringObj("out of memory framing a publish", -1));
        Tcl_SetErrorCode(interp, "NATS", "ErrInvalidArg", NULL);
        return -1;
    }
    natscodec_pub_frame(f->buf + f->len, subj, (size_t)slen, reply, (size_t)rlen, NULL, 0, data, (size_t)mlen);
    f->len += flen;
    f->bytes += mlen + 32;
    if (++f->count == 1) {
        if (Tcl_EvalObjEx(interp, f->pending, TCL_EVAL_GLOBAL) != TCL_OK)
            return -1;
    }
    return 1;
}

/* ::nats::connection's method publish {subject message args} in C */
static Tcl_ObjectMetadataType fast_meta;

static int
PublishMethod(ClientData cd, Tcl_Interp *interp, Tcl_ObjectContext ctx, int objc, Tcl_Obj *const objv[])
{
    int skip = Tcl_ObjectContextSkippedArgs(ctx);
    Tcl_Object obj = Tcl_ObjectContextObject(ctx);
    FastConn *f = (FastConn *)Tcl_ObjectGetMetadata(obj, &fast_meta);
    int r = 0, n = objc - skip;
    Tcl_Obj *cmd, *my;

    if (n < 2) {
        Tcl_WrongNumArgs(interp, skip, objv, "subject message ?arg ...?");
        return TCL_ERROR;
    }
    if (f != NULL && !f->dead) {
        r = fast_pub(f, interp, n, objv + skip);
        if (r == 1) {
            Tcl_ResetResult(interp);
            return TCL_OK;
        }
        if (r < 0)
            return TCL_ERROR;
    }
    /* the general path, or room first: a Tcl method of the object, as a
     * tailcall would run it */
    if (f != NULL && f->my != NULL) {
        my = f->my;
    } else {
        Tcl_Namespace *ns = Tcl_GetObjectNamespace(obj);
        my = Tcl_ObjPrintf("%s::my", ns->fullName);
    }
    cmd = Tcl_NewListObj(0, NULL);
    Tcl_ListObjAppendElement(NULL, cmd, my);
    Tcl_ListObjAppendElement(NULL, cmd, Tcl_NewStringObj(r == 2 ? "PublishRoom" : "PublishGeneral", -1));
    {
        int i;
        for (i = skip; i < objc; i++)
            Tcl_ListObjAppendElement(NULL, cmd, objv[i]);
    }
    return Tcl_NREvalObj(interp, cmd, 0);
}

static const Tcl_MethodType publish_method_type = {
    TCL_OO_METHOD_VERSION_CURRENT, "tclnats publish", PublishMethod, NULL, NULL
};

static void
fast_release_meta(ClientData cd)
{
    Tcl_Release(cd);
}

static int
fast_clone_meta(Tcl_Interp *interp, ClientData src, ClientData *dst)
{
    *dst = NULL;   /* a copy of the object publishes through the general path */
    return TCL_OK;
}

static Tcl_ObjectMetadataType fast_meta = {
    TCL_OO_METADATA_VERSION_CURRENT, "tclnats fast path", fast_release_meta, fast_clone_meta
};

/* the class that was given the C method (its metadata says so) */
static void
noop_meta_delete(ClientData cd)
{
}

static Tcl_ObjectMetadataType class_done_meta = {
    TCL_OO_METADATA_VERSION_CURRENT, "tclnats publish method", noop_meta_delete, NULL
};

static int
install_publish_method(Tcl_Interp *interp)
{
    Tcl_Obj *name = Tcl_NewStringObj("::nats::connection", -1);
    Tcl_Object clsobj;
    Tcl_Class cls;
    int code = TCL_OK;
    Tcl_IncrRefCount(name);
    clsobj = Tcl_GetObjectFromObj(interp, name);
    Tcl_DecrRefCount(name);
    if (clsobj == NULL || (cls = Tcl_GetObjectAsClass(clsobj)) == NULL) {
        Tcl_ResetResult(interp);
        return TCL_OK;   /* no such class: the Tcl methods stay */
    }
    if (Tcl_ClassGetMetadata(cls, &class_done_meta) != NULL)
        return TCL_OK;
    {
        Tcl_Obj *m = Tcl_NewStringObj("publish", -1);
        Tcl_IncrRefCount(m);
        if (Tcl_NewMethod(interp, cls, m, 1, &publish_method_type, NULL) == NULL)
            code = TCL_ERROR;
        Tcl_DecrRefCount(m);
    }
    if (code == TCL_OK)
        Tcl_ClassSetMetadata(cls, &class_done_meta, (ClientData)1);
    return code;
}

/* ------------------------------------------------------------ reading */

typedef struct {
    FastSub *sub;            /* NULL: items */
    Tcl_Obj *subject, *data, *reply;
    Tcl_Obj *items;          /* deliveries made by the engine */
    Tcl_WideInt n;           /* payload bytes (pending accounting) */
} Delivery;

typedef struct {
    Delivery *d;
    int n, cap;
    int batches;             /* python reads that handed deliveries */
} Plan;

static Delivery *
plan_add(Plan *p)
{
    if (p->n == p->cap) {
        int c = p->cap ? p->cap * 2 : 256;
        p->d = (Delivery *)ckrealloc((char *)p->d, (unsigned int)(sizeof(Delivery) * (size_t)c));
        p->cap = c;
    }
    memset(&p->d[p->n], 0, sizeof(Delivery));
    return &p->d[p->n++];
}

/* `rx op ?args?`: the bridge's part; returns its result (held) or NULL */
static Tcl_Obj *
call_rx(FastConn *f, Tcl_Interp *interp, Tcl_Obj *op, Tcl_Obj *a, Tcl_Obj *b, Tcl_Obj *c)
{
    Tcl_Obj *v[5];
    int n = 0, i, code;
    Tcl_Obj *r;
    v[n++] = f->rx;
    v[n++] = op;
    if (a)
        v[n++] = a;
    if (b)
        v[n++] = b;
    if (c)
        v[n++] = c;
    for (i = 0; i < n; i++)
        Tcl_IncrRefCount(v[i]);
    code = Tcl_EvalObjv(interp, n, v, TCL_EVAL_GLOBAL);
    for (i = 0; i < n; i++)
        Tcl_DecrRefCount(v[i]);
    if (code != TCL_OK) {
        Tcl_BackgroundException(interp, code);
        Tcl_ResetResult(interp);
        return NULL;
    }
    r = Tcl_GetObjResult(interp);
    Tcl_IncrRefCount(r);
    Tcl_ResetResult(interp);
    return r;
}

/* the item list that `rx` returned (held, or NULL) joins the plan as one
 * batch of the engine's deliveries; an empty one is dropped */
static void
plan_batch(Plan *p, Tcl_Obj *items)
{
    int n = 0;
    if (items == NULL)
        return;
    if (Tcl_ListObjLength(NULL, items, &n) == TCL_OK && n > 0) {
        Delivery *d = plan_add(p);
        d->items = items;
        p->batches++;
        return;
    }
    Tcl_DecrRefCount(items);
}

/* bytes [s, e) of the read buffer to the engine; its deliveries join the plan */
static void
to_engine(FastConn *f, Tcl_Interp *interp, Plan *p, const unsigned char *s, size_t len)
{
    Tcl_Obj *fm = Tcl_NewWideIntObj(f->in_msgs), *fb = Tcl_NewWideIntObj(f->in_bytes);
    f->in_msgs = 0;
    f->in_bytes = 0;
    plan_batch(p, call_rx(f, interp, f->lit_ops, Tcl_NewByteArrayObj(s, (int)len), fm, fb));
}

/* a callback's error, reported as a background error would be:
 * after 0 [list return -options $opts $result] (also tclcross_interp.c's
 * ::tclnats::_run_deliveries) */
void
TclnatsFast_ReportError(Tcl_Interp *interp, int code)
{
    Tcl_Obj *opts = Tcl_GetReturnOptions(interp, code);
    Tcl_Obj *script = Tcl_NewListObj(0, NULL);
    Tcl_Obj *cmd[3];
    int j;
    Tcl_IncrRefCount(opts);
    Tcl_ListObjAppendElement(NULL, script, Tcl_NewStringObj("return", -1));
    Tcl_ListObjAppendElement(NULL, script, Tcl_NewStringObj("-options", -1));
    Tcl_ListObjAppendElement(NULL, script, opts);
    Tcl_ListObjAppendElement(NULL, script, Tcl_GetObjResult(interp));
    cmd[0] = Tcl_NewStringObj("after", -1);
    cmd[1] = Tcl_NewIntObj(0);
    cmd[2] = script;
    for (j = 0; j < 3; j++)
        Tcl_IncrRefCount(cmd[j]);
    if (Tcl_EvalObjv(interp, 3, cmd, TCL_EVAL_GLOBAL) != TCL_OK)
        Tcl_BackgroundException(interp, TCL_ERROR);
    for (j = 0; j < 3; j++)
        Tcl_DecrRefCount(cmd[j]);
    Tcl_DecrRefCount(opts);
}

/* the slow-consumer check of one message; 0: dropped */
static int
admit(FastConn *f, Tcl_Interp *interp, FastSub *s, Tcl_WideInt n)
{
    if ((s->lim_msgs > 0 && s->pmsgs >= s->lim_msgs) || (s->lim_bytes > 0 && s->pbytes + n > s->lim_bytes)) {
        if (!s->slow) {
            Tcl_Obj *r;
            s->slow = 1;
            r = call_rx(f, interp, f->lit_slow, Tcl_NewWideIntObj(s->sid), NULL, NULL);
            if (r != NULL)
                Tcl_DecrRefCount(r);
        }
        return 0;
    }
    s->pmsgs++;
    s->pbytes += n;
    return 1;
}

/*
 * Walks the complete frames of the read buffer, adding deliveries to the
 * plan; stops early when the bridge changed the socket.  Leaves an
 * incomplete frame in the buffer.
 */
static void
parse(FastConn *f, Tcl_Interp *interp, Plan *p)
{
    unsigned gen = f->gen;
    size_t pos = 0, py = (size_t)-1;   /* py: start of the bytes for the engine */
    unsigned char *b;
    size_t end;

    Tcl_Preserve(f);
    while (f->gen == gen && !f->dead) {
        natscodec_frame fr;
        int kind;
        b = f->rbuf;
        end = f->rlen;
        if (pos >= end)
            break;
        kind = natscodec_scan(b, pos, end, 0x7fffffff - 16, &fr);
        if (kind == NATSCODEC_NEED_LINE) {
            if (end - pos > FAST_MAX_CONTROL_LINE)
                goto passthrough;
            break;    /* the rest of the line is still to come */
        }
        if (kind == NATSCODEC_NEED_PAYLOAD)
            break;    /* the payload is still to come (fast_read makes room) */
        if (kind == NATSCODEC_UNSURE)
            goto passthrough;   /* not plain (a CR inside a line, ...): the engine decides */
        if (kind == NATSCODEC_MSG) {
            if (fr.hsize < 0) {
                Tcl_HashEntry *e = Tcl_FindHashEntry(&f->subs, (const char *)(intptr_t)fr.sid);
                if (e != NULL) {
                    FastSub *s = (FastSub *)Tcl_GetHashValue(e);
                    Tcl_WideInt n = fr.size;
                    size_t sl = fr.subject_len;
                    const unsigned char *sp = b + fr.subject;
                    if (py != (size_t)-1) {
                        size_t from = py;
                        py = (size_t)-1;
                        to_engine(f, interp, p, f->rbuf + from, pos - from);
                        if (f->gen != gen || f->dead)
                            break;
                        b = f->rbuf;   /* (unchanged: nothing reads here meanwhile) */
                        sp = b + fr.subject;
                    }
                    f->in_msgs++;
                    f->in_bytes += (Tcl_WideInt)(fr.next - pos);
                    s->received++;
                    if (admit(f, interp, s, n)) {
                        Delivery *d = plan_add(p);
                        int cur;
                        const char *cs;
                        d->sub = s;
                        s->refs++;
                        d->n = n;
                        if (s->subject != NULL && (cs = Tcl_GetStringFromObj(s->subject, &cur), (size_t)cur == sl)
                                && memcmp(cs, sp, sl) == 0) {
                            d->subject = s->subject;
                        } else {
                            if (s->subject != NULL)
                                Tcl_DecrRefCount(s->subject);
                            s->subject = Tcl_NewStringObj((const char *)sp, (int)sl);
                            Tcl_IncrRefCount(s->subject);
                            d->subject = s->subject;
                        }
                        Tcl_IncrRefCount(d->subject);
                        d->data = Tcl_NewByteArrayObj(b + fr.payload, (int)fr.size);
                        if (fr.reply_len)
                            d->reply = Tcl_NewStringObj((const char *)b + fr.reply, (int)fr.reply_len);
                        else
                            d->reply = f->empty;
                        Tcl_IncrRefCount(d->reply);
                        if (s->sidobj != NULL) {
                            /* {header {} data $data subject $subject reply $reply sub_id $sid} */
                            Tcl_Obj *kv[10];
                            kv[0] = f->lit_keys[0]; kv[1] = f->empty;
                            kv[2] = f->lit_keys[1]; kv[3] = d->data;
                            kv[4] = f->lit_keys[2]; kv[5] = d->subject;
                            kv[6] = f->lit_keys[3]; kv[7] = d->reply;
                            kv[8] = f->lit_keys[4]; kv[9] = s->sidobj;
                            d->data = Tcl_NewListObj(10, kv);
                        }
                        Tcl_IncrRefCount(d->data);
                    }
                    pos = fr.next;
                    continue;
                }
            }
            if (py == (size_t)-1)
                py = pos;
            pos = fr.next;
            continue;
        }
        /* any other line is one operation of the engine's (or its error) */
        if (py == (size_t)-1)
            py = pos;
        pos = fr.next;
    }
    if (f->gen == gen && !f->dead) {
        if (py != (size_t)-1) {
            size_t from = py;
            to_engine(f, interp, p, f->rbuf + from, pos - from);
        }
        if (f->gen == gen && !f->dead) {
            if (pos > 0 && pos < f->rlen)
                memmove(f->rbuf, f->rbuf + pos, f->rlen - pos);
            f->rlen = pos < f->rlen ? f->rlen - pos : 0;
        }
    }
    Tcl_Release(f);
    return;
passthrough:
    {
        size_t from = py != (size_t)-1 ? py : pos;
        size_t n = f->rlen - from;
        f->passthrough = 1;
        f->rlen = 0;
        if (n > 0)
            to_engine(f, interp, p, f->rbuf + from, n);
    }
    Tcl_Release(f);
}

static void
run_plan(FastConn *f, Tcl_Interp *interp, Plan *p)
{
    int i, ran = 0;
    Tcl_Obj *small[16];
    for (i = 0; i < p->n; i++) {
        Delivery *d = &p->d[i];
        int code;
        if (d->sub != NULL) {
            FastSub *s = d->sub;
            int m = s->nwords + 3, j;
            Tcl_Obj **argv = m <= 16 ? small : (Tcl_Obj **)ckalloc(sizeof(Tcl_Obj *) * (size_t)m);
            for (j = 0; j < s->nwords; j++)
                argv[j] = s->words[j];
            argv[j++] = d->subject;
            argv[j++] = d->data;
            argv[j++] = d->reply;
            code = Tcl_EvalObjv(interp, m, argv, TCL_EVAL_GLOBAL);
            if (argv != small)
                ckfree((char *)argv);
        } else {
            Tcl_Obj *v[2];
            v[0] = f->lit_run;
            v[1] = d->items;
            code = Tcl_EvalObjv(interp, 2, v, TCL_EVAL_GLOBAL);
        }
        if (code != TCL_OK)
            TclnatsFast_ReportError(interp, code);
        Tcl_ResetResult(interp);
        ran++;
    }
    /* these have run: the pending counts go down */
    for (i = 0; i < p->n; i++) {
        Delivery *d = &p->d[i];
        if (d->sub != NULL) {
            FastSub *s = d->sub;
            s->pmsgs--;
            s->pbytes -= d->n;
            if (s->pmsgs <= 0) {
                s->pmsgs = 0;
                s->pbytes = 0;
                s->slow = 0;
            }
            Tcl_DecrRefCount(d->subject);
            Tcl_DecrRefCount(d->data);
            Tcl_DecrRefCount(d->reply);
            sub_release(s);
        } else {
            Tcl_DecrRefCount(d->items);
        }
    }
    if (ran) {
        /* what the callbacks published is written now; the engine's
         * deliveries have run (::tclnats::_flush_dirty reader, once per
         * batch the engine handed) */
        Tcl_Obj *v[2];
        int k = 0, times = p->batches > 0 ? p->batches : 1;
        int nv = p->batches > 0 && f->reader != NULL ? 2 : 1;
        v[0] = f->lit_flush;
        v[1] = f->reader;
        for (k = 0; k < nv; k++)
            Tcl_IncrRefCount(v[k]);
        for (k = 0; k < times; k++) {
            if (Tcl_EvalObjv(interp, nv, v, TCL_EVAL_GLOBAL) != TCL_OK)
                Tcl_BackgroundException(interp, TCL_ERROR);
            Tcl_ResetResult(interp);
        }
        for (k = 0; k < nv; k++)
            Tcl_DecrRefCount(v[k]);
    }
}

/* the n bytes read after the held ones at rbuf + rlen are WebSocket frames:
 * their payloads, unframed in place, are the stream's next bytes */
static void
ws_read(FastConn *f, Tcl_Interp *interp, Plan *p, size_t n)
{
    unsigned char *raw = f->rbuf + f->rlen;
    size_t total = f->wholdn + n, pos = 0, olen = 0, got, used;
    unsigned gen = f->gen;
    Tcl_Obj *ctl = NULL;
    int r, i, nctl = 0;
    for (;;) {
        r = natscodec_ws_unframe(&f->wst, raw + pos, total - pos, f->ws_max, raw + olen, &got, &used);
        olen += got;
        pos += used;
        if (r != NATSCODEC_WS_CONTROL)
            break;
        /* copied now: the next payloads are written over it */
        if (ctl == NULL) {
            ctl = Tcl_NewListObj(0, NULL);
            Tcl_IncrRefCount(ctl);
        }
        Tcl_ListObjAppendElement(NULL, ctl, Tcl_NewByteArrayObj(raw + pos - f->wst.ctl_len, (int)f->wst.ctl_len));
        if ((raw[pos - f->wst.ctl_len] & 0x0f) == 8) {
            pos = total;   /* a close frame: nothing after it counts */
            break;
        }
    }
    f->wholdn = 0;
    if (r == NATSCODEC_WS_MORE && pos < total) {
        f->wholdn = total - pos;   /* at most NATSCODEC_WS_HOLD (natscodec.h) */
        memcpy(f->whold, raw + pos, f->wholdn);
    }
    if (r == NATSCODEC_WS_TOOBIG || r == NATSCODEC_WS_BAD)
        f->ws = 2;
    if (f->passthrough) {
        if (olen > 0)
            to_engine(f, interp, p, raw, olen);
    } else {
        f->rlen += olen;
        parse(f, interp, p);
    }
    if (ctl != NULL) {
        Tcl_Obj **frames;
        Tcl_ListObjGetElements(NULL, ctl, &nctl, &frames);
        for (i = 0; i < nctl && f->gen == gen && !f->dead; i++)
            plan_batch(p, call_rx(f, interp, f->lit_wsctl, frames[i], NULL, NULL));
        Tcl_DecrRefCount(ctl);
    }
    if ((r == NATSCODEC_WS_TOOBIG || r == NATSCODEC_WS_BAD) && f->gen == gen && !f->dead)
        plan_batch(p, call_rx(f, interp, f->lit_wsbad,
                              Tcl_NewStringObj(r == NATSCODEC_WS_BAD ? natscodec_ws_reason(f->wst.bad) : "", -1),
                              NULL, NULL));
}

static int
fast_read(FastConn *f, Tcl_Interp *interp)
{
    Tcl_Channel chan;
    Plan plan;
    int n;

    if (f->chan == NULL || f->rx == NULL || f->parsing)
        return TCL_OK;
    chan = Tcl_GetChannel(interp, Tcl_GetString(f->chan), NULL);
    if (chan == NULL) {
        Tcl_ResetResult(interp);
        return TCL_OK;
    }
    memset(&plan, 0, sizeof plan);
    if (!grow(&f->rbuf, &f->rcap, f->rlen + f->wholdn + FAST_READ_CHUNK)) {
        Tcl_SetObjResult(interp, Tcl_NewStringObj("out of memory reading from the server", -1));
        return TCL_ERROR;
    }
    Tcl_Preserve(f);
    if (f->ws == 1 && f->wholdn > 0)
        memcpy(f->rbuf + f->rlen, f->whold, f->wholdn);
    n = Tcl_Read(chan, (char *)f->rbuf + f->rlen + (f->ws == 1 ? f->wholdn : 0), FAST_READ_CHUNK);
    if (n < 0) {
        plan_batch(&plan, call_rx(f, interp, f->lit_lost, Tcl_NewStringObj(Tcl_ErrnoId(), -1), NULL, NULL));
    } else if (n == 0) {
        if (Tcl_Eof(chan)) {
            plan_batch(&plan, call_rx(f, interp, f->lit_eof, NULL, NULL, NULL));
        }
    } else if (f->ws == 2) {
        /* after a bad frame: the engine is closing the socket */
    } else if (f->ws) {
        f->parsing = 1;
        ws_read(f, interp, &plan, (size_t)n);
        f->parsing = 0;
    } else if (f->passthrough) {
        f->parsing = 1;
        to_engine(f, interp, &plan, f->rbuf + f->rlen, (size_t)n);
        f->parsing = 0;
    } else {
        f->rlen += (size_t)n;
        f->parsing = 1;
        parse(f, interp, &plan);
        f->parsing = 0;
    }
    if (plan.n > 0)
        run_plan(f, interp, &plan);
    if (plan.d != NULL)
        ckfree((char *)plan.d);
    if (f->rlen == 0 && f->rcap > (4u << 20) && !f->dead) {
        /* a big message's buffer is not kept */
        ckfree((char *)f->rbuf);
        f->rbuf = NULL;
        f->rcap = 0;
    }
    Tcl_Release(f);
    Tcl_ResetResult(interp);
    return TCL_OK;
}

/* ------------------------------------------------------------ the command */

/* `name ws max rest left inmsg` (see the top) */
static int
fast_ws(FastConn *f, Tcl_Interp *interp, Tcl_Obj *const a[])
{
    Tcl_WideInt max, left;
    int inmsg, n;
    unsigned char *rest;
    if (Tcl_GetWideIntFromObj(interp, a[0], &max) != TCL_OK || Tcl_GetWideIntFromObj(interp, a[2], &left) != TCL_OK
            || Tcl_GetBooleanFromObj(interp, a[3], &inmsg) != TCL_OK)
        return TCL_ERROR;
    rest = Tcl_GetByteArrayFromObj(a[1], &n);
    if (max < 0 || left < 0 || n > NATSCODEC_WS_HOLD) {
        Tcl_SetObjResult(interp, Tcl_NewStringObj("ws: bad unframer state", -1));
        return TCL_ERROR;
    }
    memset(&f->wst, 0, sizeof f->wst);
    f->wst.left = (unsigned long long)left;
    f->wst.in_msg = inmsg;
    f->ws_max = (unsigned long long)max;
    memcpy(f->whold, rest, (size_t)n);
    f->wholdn = (size_t)n;
    f->ws = 1;
    return TCL_OK;
}

static void
FastFree(char *cd)
{
    FastConn *f = (FastConn *)cd;
    int i;
    for (i = 0; i < 4; i++) {
        if (f->vars[i] != NULL)
            Tcl_DecrRefCount(f->vars[i]);
    }
    Tcl_DeleteHashTable(&f->subjects);
    {
        Tcl_HashSearch it;
        Tcl_HashEntry *e;
        for (e = Tcl_FirstHashEntry(&f->subs, &it); e != NULL; e = Tcl_NextHashEntry(&it))
            sub_release((FastSub *)Tcl_GetHashValue(e));
        Tcl_DeleteHashTable(&f->subs);
    }
    Tcl_DecrRefCount(f->pending);
    if (f->my != NULL)
        Tcl_DecrRefCount(f->my);
    if (f->chan != NULL)
        Tcl_DecrRefCount(f->chan);
    if (f->rx != NULL)
        Tcl_DecrRefCount(f->rx);
    if (f->reader != NULL)
        Tcl_DecrRefCount(f->reader);
    Tcl_DecrRefCount(f->empty);
    Tcl_DecrRefCount(f->lit_ops);
    Tcl_DecrRefCount(f->lit_lost);
    Tcl_DecrRefCount(f->lit_eof);
    Tcl_DecrRefCount(f->lit_slow);
    Tcl_DecrRefCount(f->lit_run);
    Tcl_DecrRefCount(f->lit_flush);
    Tcl_DecrRefCount(f->lit_wsctl);
    Tcl_DecrRefCount(f->lit_wsbad);
    for (i = 0; i < 5; i++)
        Tcl_DecrRefCount(f->lit_keys[i]);
    if (f->buf != NULL)
        ckfree((char *)f->buf);
    if (f->rbuf != NULL)
        ckfree((char *)f->rbuf);
    if (f->last != NULL)
        ckfree(f->last);
    ckfree((char *)f);
}

static void
FastDelete(ClientData cd)
{
    FastConn *f = (FastConn *)cd;
    int i;
    f->dead = 1;
    for (i = 0; i < 4; i++) {
        if (f->vars[i] != NULL)
            /* gone already when the namespace is torn down: then a no-op */
            Tcl_UnlinkVar(f->interp, Tcl_GetString(f->vars[i]));
    }
    Tcl_EventuallyFree(f, FastFree);
}

static int
FastCmd(ClientData cd, Tcl_Interp *interp, int objc, Tcl_Obj *const objv[])
{
    FastConn *f = (FastConn *)cd;
    const char *op;
    if (objc < 2) {
        Tcl_WrongNumArgs(interp, 1, objv, "operation ?arg ...?");
        return TCL_ERROR;
    }
    op = Tcl_GetString(objv[1]);
    switch (op[0]) {
    case 'p':
        if (strcmp(op, "pub") == 0) {
            int r;
            if (objc < 4) {
                Tcl_WrongNumArgs(interp, 2, objv, "subject message ?args?");
                return TCL_ERROR;
            }
            r = fast_pub(f, interp, objc - 2, objv + 2);
            if (r < 0)
                return TCL_ERROR;
            Tcl_SetObjResult(interp, Tcl_NewIntObj(r));
            return TCL_OK;
        }
        break;
    case 'r':
        if (strcmp(op, "read") == 0 && objc == 2)
            return fast_read(f, interp);
        if (strcmp(op, "rd") == 0 && objc == 5) {
            int len;
            f->gen++;
            f->rlen = 0;
            f->passthrough = 0;
            f->ws = 0;
            f->wholdn = 0;
            if (f->chan != NULL)
                Tcl_DecrRefCount(f->chan);
            f->chan = NULL;
            Tcl_GetStringFromObj(objv[2], &len);
            if (len > 0) {
                f->chan = objv[2];
                Tcl_IncrRefCount(f->chan);
            }
            if (f->rx != NULL)
                Tcl_DecrRefCount(f->rx);
            f->rx = objv[3];
            Tcl_IncrRefCount(f->rx);
            if (f->reader != NULL)
                Tcl_DecrRefCount(f->reader);
            f->reader = objv[4];
            Tcl_IncrRefCount(f->reader);
            if (f->chan == NULL && f->rcap > (1u << 20)) {
                ckfree((char *)f->rbuf);
                f->rbuf = NULL;
                f->rcap = 0;
            }
            return TCL_OK;
        }
        break;
    case 's':
        if (strcmp(op, "subject") == 0 && objc == 3) {
            int isnew;
            Tcl_CreateHashEntry(&f->subjects, Tcl_GetString(objv[2]), &isnew);
            return TCL_OK;
        }
        if (strcmp(op, "sub") == 0 && (objc == 6 || objc == 7)) {
            Tcl_WideInt sid, lm, lb;
            int isnew, nw;
            Tcl_Obj **words;
            FastSub *s;
            Tcl_HashEntry *e;
            if (Tcl_GetWideIntFromObj(interp, objv[2], &sid) != TCL_OK
                    || Tcl_GetWideIntFromObj(interp, objv[4], &lm) != TCL_OK
                    || Tcl_GetWideIntFromObj(interp, objv[5], &lb) != TCL_OK)
                return TCL_ERROR;
            s = (FastSub *)ckalloc(sizeof *s);
            memset(s, 0, sizeof *s);
            s->refs = 1;
            s->sid = sid;
            /* a copy of the callback, so that its list form stays ours */
            s->cb = Tcl_DuplicateObj(objv[3]);
            Tcl_IncrRefCount(s->cb);
            if (Tcl_ListObjGetElements(NULL, s->cb, &nw, &words) != TCL_OK || nw == 0) {
                sub_release(s);
                Tcl_SetObjResult(interp, Tcl_NewIntObj(0));
                return TCL_OK;    /* not for the C path: the engine's deliveries report it */
            }
            s->words = words;
            s->nwords = nw;
            s->lim_msgs = lm;
            s->lim_bytes = lb;
            if (objc == 7) {
                int dm = 0;
                if (Tcl_GetBooleanFromObj(interp, objv[6], &dm) != TCL_OK) {
                    sub_release(s);
                    return TCL_ERROR;
                }
                if (dm) {
                    s->sidobj = Tcl_NewWideIntObj(sid);
                    Tcl_IncrRefCount(s->sidobj);
                }
            }
            e = Tcl_CreateHashEntry(&f->subs, (const char *)(intptr_t)sid, &isnew);
            if (!isnew)
                sub_release((FastSub *)Tcl_GetHashValue(e));
            Tcl_SetHashValue(e, s);
            Tcl_SetObjResult(interp, Tcl_NewIntObj(1));
            return TCL_OK;
        }
        if (strcmp(op, "subclear") == 0 && objc == 2) {
            subs_clear(f);
            return TCL_OK;
        }
        break;
    case 'u':
        if (strcmp(op, "unsub") == 0 && objc == 3) {
            Tcl_WideInt sid, got = 0;
            Tcl_HashEntry *e;
            if (Tcl_GetWideIntFromObj(interp, objv[2], &sid) != TCL_OK)
                return TCL_ERROR;
            e = Tcl_FindHashEntry(&f->subs, (const char *)(intptr_t)sid);
            if (e != NULL) {
                FastSub *s = (FastSub *)Tcl_GetHashValue(e);
                got = s->received;
                s->received = 0;
                Tcl_DeleteHashEntry(e);
                sub_release(s);
            }
            Tcl_SetObjResult(interp, Tcl_NewWideIntObj(got));
            return TCL_OK;
        }
        break;
    case 'l':
        if (strcmp(op, "limits") == 0 && objc == 4) {
            Tcl_WideInt lm, lb;
            Tcl_HashSearch it;
            Tcl_HashEntry *e;
            if (Tcl_GetWideIntFromObj(interp, objv[2], &lm) != TCL_OK
                    || Tcl_GetWideIntFromObj(interp, objv[3], &lb) != TCL_OK)
                return TCL_ERROR;
            for (e = Tcl_FirstHashEntry(&f->subs, &it); e != NULL; e = Tcl_NextHashEntry(&it)) {
                FastSub *s = (FastSub *)Tcl_GetHashValue(e);
                s->lim_msgs = lm;
                s->lim_bytes = lb;
            }
            return TCL_OK;
        }
        break;
    case 'c':
        if (strcmp(op, "clear") == 0 && objc == 2) {
            Tcl_DeleteHashTable(&f->subjects);
            Tcl_InitHashTable(&f->subjects, TCL_STRING_KEYS);
            f->lastlen = -1;
            return TCL_OK;
        }
        if (strcmp(op, "counts") == 0 && objc == 2) {
            Tcl_Obj *out[2];
            out[0] = Tcl_NewWideIntObj(f->in_msgs);
            out[1] = Tcl_NewWideIntObj(f->in_bytes);
            f->in_msgs = 0;
            f->in_bytes = 0;
            Tcl_SetObjResult(interp, Tcl_NewListObj(2, out));
            return TCL_OK;
        }
        break;
    case 'w':
        if (strcmp(op, "ws") == 0 && objc == 6)
            return fast_ws(f, interp, objv + 2);
        if (strcmp(op, "write") == 0 && (objc == 3 || objc == 4)) {
            /* the batch straight from this buffer to the channel (the
             * bridge checked that nothing else waits to go before it);
             * with a mask key, in one WebSocket binary frame */
            Tcl_Channel chan = Tcl_GetChannel(interp, Tcl_GetString(objv[2]), NULL);
            Tcl_Obj *out[3];
            Tcl_WideInt count = f->count, n = (Tcl_WideInt)f->len;
            unsigned char *buf = f->buf;
            size_t cap = f->cap;
            int w = 0, klen = 0;
            const unsigned char *key = objc == 4 ? Tcl_GetByteArrayFromObj(objv[3], &klen) : NULL;
            if (chan == NULL)
                return TCL_ERROR;
            if (key != NULL && klen != 4) {
                Tcl_SetObjResult(interp, Tcl_NewStringObj("write: a mask key is 4 bytes", -1));
                return TCL_ERROR;
            }
            /* the buffer is this write's (a channel transform's script may publish meanwhile) */
            f->buf = NULL;
            f->cap = 0;
            f->len = 0;
            f->count = 0;
            f->bytes = 0;
            if (n > 0 && key != NULL) {
                unsigned char *frame = (unsigned char *)ckalloc((unsigned int)(n + NATSCODEC_WS_HEAD_MAX));
                size_t h = natscodec_ws_head(frame, (size_t)n, key);
                natscodec_ws_mask(frame + h, buf, (size_t)n, key);
                w = Tcl_Write(chan, (const char *)frame, (int)(h + (size_t)n));
                ckfree((char *)frame);
            } else if (n > 0) {
                w = Tcl_Write(chan, (const char *)buf, (int)n);
            }
            if (w < 0)
                Tcl_SetObjResult(interp, Tcl_ObjPrintf("error writing \"%s\": %s",
                                                       Tcl_GetString(objv[2]), Tcl_PosixError(interp)));
            if (f->buf == NULL && cap <= (1u << 20)) {   /* (a burst's buffer is not kept) */
                f->buf = buf;
                f->cap = cap;
            } else if (buf != NULL) {
                ckfree((char *)buf);
            }
            if (w < 0)
                return TCL_ERROR;
            out[0] = Tcl_NewWideIntObj(count);
            out[1] = Tcl_NewWideIntObj(n);
            out[2] = Tcl_NewIntObj(Tcl_OutputBuffered(chan));
            Tcl_SetObjResult(interp, Tcl_NewListObj(3, out));
            return TCL_OK;
        }
        break;
    case 't':
        if (strcmp(op, "take") == 0 && objc == 2) {
            Tcl_Obj *out[2];
            out[0] = Tcl_NewWideIntObj(f->count);
            out[1] = Tcl_NewByteArrayObj(f->buf, (int)f->len);
            f->len = 0;
            f->count = 0;
            f->bytes = 0;
            if (f->cap > (1u << 20)) {   /* a burst's buffer is not kept */
                ckfree((char *)f->buf);
                f->buf = NULL;
                f->cap = 0;
            }
            Tcl_SetObjResult(interp, Tcl_NewListObj(2, out));
            return TCL_OK;
        }
        break;
    }
    Tcl_SetObjResult(interp, Tcl_ObjPrintf("bad operation \"%s\": must be pub, take, subject S, clear, "
                                           "write, rd, ws, read, sub, unsub, subclear, limits or counts", op));
    return TCL_ERROR;
}

static Tcl_Obj *
lit(const char *s)
{
    Tcl_Obj *o = Tcl_NewStringObj(s, -1);
    Tcl_IncrRefCount(o);
    return o;
}

static int
FastNewCmd(ClientData cd, Tcl_Interp *interp, int objc, Tcl_Obj *const objv[])
{
    FastConn *f;
    Tcl_Command token;
    Tcl_Obj *full;
    const char *ns;
    Tcl_WideInt *addr[4];
    Tcl_Object obj = NULL;
    int i;
    if (objc != 3 && objc != 4) {
        Tcl_WrongNumArgs(interp, 1, objv, "name pending ?object?");
        return TCL_ERROR;
    }
    if (objc == 4) {
        obj = Tcl_GetObjectFromObj(interp, objv[3]);
        if (obj == NULL)
            return TCL_ERROR;
    }
    f = (FastConn *)ckalloc(sizeof *f);
    memset(f, 0, sizeof *f);
    f->max = -1;
    f->lastlen = -1;
    f->interp = interp;
    Tcl_InitHashTable(&f->subjects, TCL_STRING_KEYS);
    Tcl_InitHashTable(&f->subs, TCL_ONE_WORD_KEYS);
    f->pending = objv[2];
    Tcl_IncrRefCount(f->pending);
    f->empty = lit("");
    f->lit_ops = lit("ops");
    f->lit_lost = lit("lost");
    f->lit_eof = lit("eof");
    f->lit_slow = lit("slow");
    f->lit_run = lit("::tclnats::_run_deliveries");
    f->lit_flush = lit("::tclnats::_flush_dirty");
    f->lit_wsctl = lit("wsctl");
    f->lit_wsbad = lit("wsbad");
    f->lit_keys[0] = lit("header");
    f->lit_keys[1] = lit("data");
    f->lit_keys[2] = lit("subject");
    f->lit_keys[3] = lit("reply");
    f->lit_keys[4] = lit("sub_id");
    token = Tcl_CreateObjCommand(interp, Tcl_GetString(objv[1]), FastCmd, f, FastDelete);
    /* the variables live in the command's namespace */
    full = Tcl_NewObj();
    Tcl_IncrRefCount(full);
    Tcl_GetCommandFullName(interp, token, full);
    ns = Tcl_GetString(full);
    addr[0] = &f->max; addr[1] = &f->room; addr[2] = &f->count; addr[3] = &f->bytes;
    for (i = 0; i < 4; i++) {
        const char *tail = strrchr(ns, ':');
        int nslen = tail ? (int)(tail - ns) - 1 : 0;
        Tcl_Obj *old;
        f->vars[i] = Tcl_ObjPrintf("%.*s::%s", nslen, ns, fast_var_names[i]);
        Tcl_IncrRefCount(f->vars[i]);
        /* a value set before the link (by the bridge) is kept */
        old = Tcl_ObjGetVar2(interp, f->vars[i], NULL, 0);
        if (old != NULL && Tcl_GetWideIntFromObj(NULL, old, addr[i]) != TCL_OK)
            *addr[i] = (i == 0) ? -1 : 0;
        Tcl_UnsetVar(interp, Tcl_GetString(f->vars[i]), 0);
        if (Tcl_LinkVar(interp, Tcl_GetString(f->vars[i]), (char *)addr[i], TCL_LINK_WIDE_INT) != TCL_OK) {
            Tcl_DecrRefCount(full);
            Tcl_DeleteCommandFromToken(interp, token);
            return TCL_ERROR;
        }
    }
    Tcl_DecrRefCount(full);
    if (obj != NULL) {
        Tcl_Namespace *ons = Tcl_GetObjectNamespace(obj);
        f->my = Tcl_ObjPrintf("%s::my", ons->fullName);
        Tcl_IncrRefCount(f->my);
        Tcl_Preserve(f);   /* released with the object's metadata */
        Tcl_ObjectSetMetadata(obj, &fast_meta, f);
        if (install_publish_method(interp) != TCL_OK)
            return TCL_ERROR;
    }
    Tcl_SetObjResult(interp, objv[1]);
    return TCL_OK;
}

/* ------------------------------------------------------------ entry */

int
TclnatsFast_Init(Tcl_Interp *interp)
{
    if (Tcl_OOInitStubs(interp) == NULL)
        return TCL_ERROR;
    if (fast_bytearray_type == NULL)
        fast_bytearray_type = Tcl_GetObjType("bytearray");
    Tcl_CreateObjCommand(interp, "::tclnats::_fastpub_new", FastNewCmd, NULL, NULL);
    return TCL_OK;
}
