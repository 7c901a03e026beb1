/*
 * natsproto.c -- the optional accelerator of tclnats_py.engine.protocol.Parser.
 *
 * scan(buf, pos, ops) walks the byte string buf from pos and appends to the
 * list ops every operation natscodec_scan (natscodec.c, the one C scanner)
 * decodes with certainty: MSG and HMSG frames whose control line is plain
 * (ASCII, upper-case verb, fields separated by spaces or tabs, decimal sid
 * and sizes), PING, PONG and +OK.  It returns the
 * position of the first byte it did not consume.  At anything else (INFO,
 * -ERR, an incomplete line or payload, a malformed or unusual line) it stops
 * and the pure-Python parser handles that one operation -- with its own
 * rules and its own error messages -- and calls scan again.  So the
 * operations and the errors are the pure-Python parser's by construction;
 * this file only makes the common frames cheap.
 *
 * WsReader and ws_frame: WebSocket data frames in and out (natscodec.h), for
 * engine/websocket.py.  SyncPub: the blocking face's publish (sync/client.py),
 * framed by natscodec_pub_frame and queued in the engine in one call.
 *
 * read_reply: the blocking face's read of a request's reply (its round
 * trip's fast path), natscodec_scan telling the reply from anything else;
 * RecordMaker: the engine's records (Msg, Request) made without running
 * their __init__ in Python; plain_ack, plain_ack_seq: a JetStream publish's plain ack;
 * request_pub: a direct request's reply subject and PUB frame;
 * iso_ms: a message's time stamp in ms (engine/js/api.py iso_to_ms);
 * kv_entry: the entry of a KV direct get's reply (engine/js/kv.py).
 *
 * setup(msg_tag, ping_op, pong_op, ok_op) hands over the objects the Python
 * parser uses for the tags, so that ops are identical (``op[0] is MSG``).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>
#include <limits.h>
#include <math.h>          /* iso_ms: round, fabs */
#include <structmember.h>  /* PyMemberDef (take_msgs, SpinPolicy) */
#ifndef _WIN32
#include <pthread.h>       /* pthread_atfork: the mask keys of a forked child */
#include <errno.h>         /* read_reply: a blocking socket's reads */
#include <time.h>
#include <sys/socket.h>
#include <sched.h>         /* read_reply's spin: sched_yield */
#endif
#include "subject_rule.h"  /* tclnats_plain_subject, shared with tclfast.c */
#define NATSCODEC_API static
#if defined(__GNUC__)
/* the scanner inlined into scan()'s loop: with two callers here (scan and
 * scan_columns) gcc keeps it two calls per frame otherwise */
#define NATSCODEC_HOT inline __attribute__((always_inline))
#endif
#include "natscodec.c"     /* the frames and the spin back-off, shared with tclfast.c */

static PyObject *MSG_TAG = NULL, *PING_OP = NULL, *PONG_OP = NULL, *OK_OP = NULL;

/* the scanner's limit on a MSG size: larger ones are left to the Python parser */
#define SCAN_MAX_SIZE ((long long)(PY_SSIZE_T_MAX / 2))

static PyObject *
ascii_str(const unsigned char *p, Py_ssize_t len)
{
    /* natscodec_scan guaranteed printable ASCII */
    PyObject *s = PyUnicode_New(len, 127);
    if (s == NULL)
        return NULL;
    memcpy(PyUnicode_DATA(s), p, (size_t)len);
    return s;
}

/* ("MSG", subject, sid, reply or None, header bytes or None, payload) */
static PyObject *
msg_op(const unsigned char *buf, const natscodec_frame *fr)
{
    PyObject *o_subj = ascii_str(buf + fr->subject, (Py_ssize_t)fr->subject_len);
    PyObject *o_sid = PyLong_FromLongLong(fr->sid);
    PyObject *o_reply = fr->reply_len ? ascii_str(buf + fr->reply, (Py_ssize_t)fr->reply_len) : Py_NewRef(Py_None);
    PyObject *o_hdr, *o_payload, *op;
    const char *p = (const char *)buf + fr->payload;
    if (fr->hsize > 0) {
        o_hdr = PyBytes_FromStringAndSize(p, (Py_ssize_t)fr->hsize);
        o_payload = PyBytes_FromStringAndSize(p + fr->hsize, (Py_ssize_t)(fr->size - fr->hsize));
    } else {
        o_hdr = Py_NewRef(Py_None);
        o_payload = PyBytes_FromStringAndSize(p, (Py_ssize_t)fr->size);
    }
    op = (o_subj && o_sid && o_reply && o_hdr && o_payload) ? PyTuple_New(6) : NULL;
    if (op == NULL) {
        Py_XDECREF(o_subj); Py_XDECREF(o_sid); Py_XDECREF(o_reply);
        Py_XDECREF(o_hdr); Py_XDECREF(o_payload);
        return NULL;
    }
    PyTuple_SET_ITEM(op, 0, Py_NewRef(MSG_TAG));
    PyTuple_SET_ITEM(op, 1, o_subj);
    PyTuple_SET_ITEM(op, 2, o_sid);
    PyTuple_SET_ITEM(op, 3, o_reply);
    PyTuple_SET_ITEM(op, 4, o_hdr);
    PyTuple_SET_ITEM(op, 5, o_payload);
    return op;
}

static PyObject *
scan(PyObject *self, PyObject *args)
{
    Py_buffer view;
    Py_ssize_t pos;
    PyObject *ops;
    if (!PyArg_ParseTuple(args, "y*nO!", &view, &pos, &PyList_Type, &ops))
        return NULL;
    if (MSG_TAG == NULL) {
        PyBuffer_Release(&view);
        PyErr_SetString(PyExc_RuntimeError, "natsproto.setup() was not called");
        return NULL;
    }
    const unsigned char *buf = (const unsigned char *)view.buf;
    Py_ssize_t n = view.len;
    while (pos < n) {
        natscodec_frame fr;
        PyObject *op;
        int rc;
        switch (natscodec_scan(buf, (size_t)pos, (size_t)n, SCAN_MAX_SIZE, &fr)) {
        case NATSCODEC_MSG:
            op = msg_op(buf, &fr);
            break;
        case NATSCODEC_PING:
            op = Py_NewRef(PING_OP);
            break;
        case NATSCODEC_PONG:
            op = Py_NewRef(PONG_OP);
            break;
        case NATSCODEC_OK:
            op = Py_NewRef(OK_OP);
            break;
        default:
            goto stop;    /* INFO, -ERR, incomplete or unusual: the Python parser decides */
        }
        if (op == NULL) {
            PyBuffer_Release(&view);
            return NULL;
        }
        rc = PyList_Append(ops, op);
        Py_DECREF(op);
        if (rc < 0) {
            PyBuffer_Release(&view);
            return NULL;
        }
        pos = (Py_ssize_t)fr.next;
    }
stop:
    PyBuffer_Release(&view);
    return PyLong_FromSsize_t(pos);
}

/*
 * pub_frame(heads, subject, data, limit[, reply, check]) -> bytes or None:
 * the PUB frame of the asyncio face's fast path, what protocol.encode_pub
 * (subject, reply, data) gives, in one allocation (natscodec_pub_frame).
 * The subject is one with an entry in heads (heads[subject][0] is
 * "PUB <subject>  ", protocol.pub_head's: the engine accepted it before),
 * or an ASCII one that passes the engine's check here (a plain subject;
 * with check false: any non-empty one), as a reply must.
 * None when subject or reply is not an exact str so, data not exact bytes,
 * or len(data) > limit: the caller takes its general path, which checks and
 * frames it (and its errors are the engine's).  protocol.py's pure-Python
 * pub_frame gives the same bytes for a subject in heads without a reply,
 * and None for the rest.
 */

/* pub_frame's frame (new reference), Py_None (new reference: the general
 * path) or NULL (an exception); limit: the largest payload (an int) */
#if defined(__GNUC__)
__attribute__((always_inline))
#endif
static inline PyObject *
frame_of(PyObject *heads, PyObject *subject, PyObject *data, PyObject *limit_obj, PyObject *reply_obj, int check)
{
    if (!PyDict_CheckExact(heads) || !PyUnicode_CheckExact(subject) || !PyBytes_CheckExact(data))
        Py_RETURN_NONE;
    /* a reply: ASCII, a plain subject when checked */
    const char *reply = NULL;
    Py_ssize_t rl = 0;
    if (reply_obj != NULL && reply_obj != Py_None) {
        if (!PyUnicode_CheckExact(reply_obj) || !PyUnicode_IS_ASCII(reply_obj))
            Py_RETURN_NONE;
        reply = (const char *)PyUnicode_DATA(reply_obj);
        rl = PyUnicode_GET_LENGTH(reply_obj);
        if (rl && check && !tclnats_plain_subject((const unsigned char *)reply, (size_t)rl))
            Py_RETURN_NONE;
    }
    Py_ssize_t n = PyBytes_GET_SIZE(data);
    int overflow = 0;
    long long limit = PyLong_AsLongLongAndOverflow(limit_obj, &overflow);
    if (limit == -1 && PyErr_Occurred())
        return NULL;
    if (overflow < 0 || (!overflow && (long long)n > limit))
        Py_RETURN_NONE;
    /* the subject: from heads[subject][0] ("PUB <subject>  "), or an ASCII
       one checked here by the same rule as a reply */
    const char *subj;
    Py_ssize_t sl;
    PyObject *entry = PyDict_GetItemWithError(heads, subject);     /* borrowed */
    if (entry != NULL) {
        PyObject *prefix;
        if (!PyTuple_CheckExact(entry) || PyTuple_GET_SIZE(entry) < 1
            || !PyBytes_CheckExact(prefix = PyTuple_GET_ITEM(entry, 0)) || PyBytes_GET_SIZE(prefix) < 6
            || memcmp(PyBytes_AS_STRING(prefix), "PUB ", 4) != 0
            || memcmp(PyBytes_AS_STRING(prefix) + PyBytes_GET_SIZE(prefix) - 2, "  ", 2) != 0)
            Py_RETURN_NONE;     /* not pub_head's: the general path */
        subj = PyBytes_AS_STRING(prefix) + 4;
        sl = PyBytes_GET_SIZE(prefix) - 6;
    } else {
        if (PyErr_Occurred())
            return NULL;
        sl = PyUnicode_GET_LENGTH(subject);
        subj = (const char *)PyUnicode_DATA(subject);
        if (!PyUnicode_IS_ASCII(subject) || sl == 0
            || (check && !tclnats_plain_subject((const unsigned char *)subj, (size_t)sl)))
            Py_RETURN_NONE;
    }
    PyObject *out = PyBytes_FromStringAndSize(
        NULL, (Py_ssize_t)natscodec_pub_frame_len((size_t)sl, (size_t)rl, NULL, 0, (size_t)n));
    if (out == NULL)
        return NULL;
    natscodec_pub_frame((unsigned char *)PyBytes_AS_STRING(out), subj, (size_t)sl, reply, (size_t)rl,
                        NULL, 0, (const unsigned char *)PyBytes_AS_STRING(data), (size_t)n);
    return out;
}

static PyObject *
pub_frame(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs < 4 || nargs > 6) {
        PyErr_SetString(PyExc_TypeError, "pub_frame(heads, subject, data, limit[, reply, check])");
        return NULL;
    }
    int check = 1;
    if (nargs >= 6 && (check = PyObject_IsTrue(args[5])) < 0)
        return NULL;
    return frame_of(args[0], args[1], args[2], args[3], nargs >= 5 ? args[4] : NULL, check);
}

/*
 * take_msgs(ops, i, sid, cls, out) -> j or None: the plain messages for one
 * subscription, made as the engine makes them (cls(subject, payload, reply,
 * None, sid)) without running Python code.  From ops[i] on, every MSG
 * operation for ``sid`` without headers becomes an instance of cls appended
 * to the list out; it stops at the first other one and returns its index.
 * cls must be a class whose __init__ is engine.connection.Msg's (the caller
 * checks it): its five fields subject, data, reply, headers, sid are the
 * slots of Msg, found here by their member descriptors.  None when cls does
 * not have them so (nothing taken).
 */
#ifndef Py_T_OBJECT_EX
#define Py_T_OBJECT_EX 16
#endif
#ifndef Py_READONLY
#define Py_READONLY 1
#endif

static PyObject *slot_names[5];   /* subject data reply headers sid */

static int
slot_offsets(PyTypeObject *cls, Py_ssize_t *off)
{
    for (int k = 0; k < 5; k++) {
        PyObject *d = PyObject_GetAttr((PyObject *)cls, slot_names[k]);
        if (d == NULL) { PyErr_Clear(); return 0; }
        int ok = Py_IS_TYPE(d, &PyMemberDescr_Type);
        if (ok) {
            PyMemberDef *m = ((PyMemberDescrObject *)d)->d_member;
            ok = m->type == Py_T_OBJECT_EX && !(m->flags & Py_READONLY) && m->offset > 0
                 && m->offset + (Py_ssize_t)sizeof(PyObject *) <= cls->tp_basicsize
                 && PyType_IsSubtype(cls, ((PyMemberDescrObject *)d)->d_common.d_type);
            off[k] = m->offset;
        }
        Py_DECREF(d);
        if (!ok)
            return 0;
    }
    return 1;
}

static PyObject *
take_msgs(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 5 || !PyList_CheckExact(args[0]) || !PyType_Check(args[3]) || !PyList_CheckExact(args[4])) {
        PyErr_SetString(PyExc_TypeError, "take_msgs(ops: list, i: int, sid: int, cls: type, out: list)");
        return NULL;
    }
    if (MSG_TAG == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "natsproto.setup() was not called");
        return NULL;
    }
    PyObject *ops = args[0], *sid = args[2], *out = args[4];
    PyTypeObject *cls = (PyTypeObject *)args[3];
    Py_ssize_t i = PyLong_AsSsize_t(args[1]);
    if (i == -1 && PyErr_Occurred())
        return NULL;
    if (!PyLong_CheckExact(sid))
        Py_RETURN_NONE;
    long long want = PyLong_AsLongLong(sid);
    if (want == -1 && PyErr_Occurred()) { PyErr_Clear(); Py_RETURN_NONE; }
    Py_ssize_t off[5];
    if (!slot_offsets(cls, off) || cls->tp_alloc == NULL)
        Py_RETURN_NONE;
    Py_ssize_t n = PyList_GET_SIZE(ops);
    if (i < 0)
        i = n;
    while (i < n) {
        PyObject *op = PyList_GET_ITEM(ops, i);
        if (!PyTuple_CheckExact(op) || PyTuple_GET_SIZE(op) != 6 || PyTuple_GET_ITEM(op, 0) != MSG_TAG
            || PyTuple_GET_ITEM(op, 4) != Py_None)
            break;
        PyObject *s = PyTuple_GET_ITEM(op, 2);
        if (s != sid) {
            if (!PyLong_CheckExact(s))
                break;
            long long v = PyLong_AsLongLong(s);
            if (v == -1 && PyErr_Occurred()) { PyErr_Clear(); break; }
            if (v != want)
                break;
        }
        PyObject *m = cls->tp_alloc(cls, 0);
        if (m == NULL)
            return NULL;
        char *base = (char *)m;
        /* Msg(subject, data, reply, headers, sid) = op[1], op[5], op[3], None, op[2] */
        *(PyObject **)(base + off[0]) = Py_NewRef(PyTuple_GET_ITEM(op, 1));
        *(PyObject **)(base + off[1]) = Py_NewRef(PyTuple_GET_ITEM(op, 5));
        *(PyObject **)(base + off[2]) = Py_NewRef(PyTuple_GET_ITEM(op, 3));
        *(PyObject **)(base + off[3]) = Py_NewRef(Py_None);
        *(PyObject **)(base + off[4]) = Py_NewRef(s);
        int rc = PyList_Append(out, m);
        Py_DECREF(m);
        if (rc < 0)
            return NULL;
        i++;
    }
    return PyLong_FromSsize_t(i);
}

/*
 * headers(block) -> dict or None: engine.headers.parse_headers(block) for
 * the common block -- the version line exactly "NATS/1.0" (no status), then
 * "Key: value" lines of printable ASCII and tabs, CRLF line ends -- with the
 * same result (a dict of lists, keys and values stripped of spaces and tabs,
 * a line without a colon, with an empty key or nothing after the colon
 * skipped).  None for anything else (a status, other bytes, a lone CR or
 * LF): the caller parses it in Python.
 */
/* header names the server and the clients send often, made once (interned:
 * their hash kept) instead of decoded and hashed in every block */
static const char *const known_names[] = {
    "Nats-Stream", "Nats-Subject", "Nats-Sequence", "Nats-Time-Stamp", "Nats-Last-Sequence",
    "Nats-Num-Pending", "Nats-Msg-Id", "KV-Operation", "Nats-Rollup", "Nats-TTL", "Nats-Marker-Reason",
    "Nats-Expected-Last-Subject-Sequence", "Nats-Pending-Messages", "Nats-Pending-Bytes",
};
#define N_KNOWN ((int)(sizeof known_names / sizeof known_names[0]))
static PyObject *known_keys[N_KNOWN];
static unsigned char known_len[N_KNOWN];  /* their lengths (all under 64) */

/* the key p[0:n) as a str: a known name's object, else decoded */
static PyObject *
header_key(const unsigned char *p, Py_ssize_t n)
{
    if ((p[0] == 'N' || p[0] == 'K') && n >= 8 && n < 64) {   /* (the known names' first letters, lengths) */
        for (int k = 0; k < N_KNOWN; k++) {
            if (known_len[k] == n && known_keys[k] != NULL && p[n - 1] == (unsigned char)known_names[k][n - 1]
                && memcmp(known_names[k], p, (size_t)n) == 0)
                return Py_NewRef(known_keys[k]);
        }
    }
    return PyUnicode_DecodeASCII((const char *)p, n, NULL);
}

static int
hspace(unsigned char c)
{
    return c == ' ' || c == '\t';
}

/* the header line that starts at p[i] and ends at its CR (or at n): where
 * it ends; f[0:2) its name's bounds and f[2:4) its value's, trimmed of
 * spaces and tabs (f[0] == f[1]: no name, or no colon with something after) */
static Py_ssize_t
header_line(const unsigned char *p, Py_ssize_t i, Py_ssize_t n, Py_ssize_t f[4])
{
    const unsigned char *cr = memchr(p + i, '\r', (size_t)(n - i));
    Py_ssize_t end = cr ? cr - p : n;
    const unsigned char *colon = memchr(p + i, ':', (size_t)(end - i));
    f[0] = f[1] = i;
    if (colon == NULL || (colon - p) + 1 >= end)
        return end;
    Py_ssize_t ks = i, ke = colon - p, vs = ke + 1, ve = end;
    while (ks < ke && hspace(p[ks]))
        ks++;
    while (ke > ks && hspace(p[ke - 1]))
        ke--;
    while (vs < ve && hspace(p[vs]))
        vs++;
    while (ve > vs && hspace(p[ve - 1]))
        ve--;
    f[0] = ks, f[1] = ke, f[2] = vs, f[3] = ve;
    return end;
}

static PyObject *
headers(PyObject *self, PyObject *arg)
{
    Py_buffer view;
    if (PyObject_GetBuffer(arg, &view, PyBUF_SIMPLE) < 0)
        return NULL;
    const unsigned char *p = (const unsigned char *)view.buf;
    Py_ssize_t n = view.len, i;
    PyObject *d = NULL;
    for (i = 0; i < n; i++) {       /* printable ASCII, tab, and CR only before LF */
        unsigned char c = p[i];
        if (c >= 0x20 && c < 0x7f)
            continue;
        if (c == '\t')
            continue;
        if (c == '\r' && i + 1 < n && p[i + 1] == '\n') { i++; continue; }
        goto fallback;
    }
    if (n < 8 || memcmp(p, "NATS/1.0", 8) != 0 || (n > 8 && !(n >= 10 && p[8] == '\r')))
        goto fallback;
    d = PyDict_New();
    if (d == NULL)
        goto error;
    i = n > 8 ? 10 : 8;
    while (i < n) {
        Py_ssize_t f[4], end = header_line(p, i, n, f);
        if (f[1] > f[0]) {
            PyObject *k = header_key(p + f[0], f[1] - f[0]);
            PyObject *v = k ? PyUnicode_DecodeASCII((const char *)p + f[2], f[3] - f[2], NULL) : NULL;
            if (v == NULL) { Py_XDECREF(k); goto error; }
            PyObject *lst = PyDict_GetItemWithError(d, k);   /* borrowed */
            int rc;
            if (lst != NULL) {
                rc = PyList_Append(lst, v);
            } else if (PyErr_Occurred()) {
                rc = -1;
            } else {
                PyObject *nl = PyList_New(1);
                if (nl == NULL) { rc = -1; }
                else {
                    PyList_SET_ITEM(nl, 0, Py_NewRef(v));
                    rc = PyDict_SetItem(d, k, nl);
                    Py_DECREF(nl);
                }
            }
            Py_DECREF(k);
            Py_DECREF(v);
            if (rc < 0)
                goto error;
        }
        i = end + 2;
    }
    PyBuffer_Release(&view);
    return d;
fallback:
    PyBuffer_Release(&view);
    Py_RETURN_NONE;
error:
    Py_XDECREF(d);
    PyBuffer_Release(&view);
    return NULL;
}

/*
 * step(cb, msg) -> None or (coro, yielded) or (result, module): call cb(msg);
 * None when that gave None, or a coroutine that finished at its first step
 * (its StopIteration never made); (coro, what it yielded) when it waits;
 * (result, this module) -- the marker -- for any other result, which the
 * caller looks at.  An exception of cb or of the
 * coroutine's first step propagates.  The asyncio face's message callbacks.
 */
static PyObject *
step(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "step(cb, msg)");
        return NULL;
    }
    PyObject *r = PyObject_CallOneArg(args[0], args[1]);
    if (r == NULL)
        return NULL;
    if (r == Py_None)
        return r;
    if (!PyCoro_CheckExact(r)) {
        PyObject *t = PyTuple_Pack(2, r, self);
        Py_DECREF(r);
        return t;
    }
    PyObject *y = NULL;
    PySendResult st = PyIter_Send(r, Py_None, &y);
    if (st == PYGEN_ERROR) {
        Py_DECREF(r);
        return NULL;
    }
    if (st == PYGEN_RETURN) {
        Py_DECREF(r);
        Py_DECREF(y);
        Py_RETURN_NONE;
    }
    PyObject *t = PyTuple_Pack(2, r, y);
    Py_DECREF(r);
    Py_DECREF(y);
    return t;
}

/*
 * Done: an awaitable that is already complete (its result None), cheaper to
 * await than a done asyncio.Future (on CPython 3.13 about a fifth of it): what
 * the asyncio face's publish() returns when nothing has to wait.
 */
typedef struct { PyObject_HEAD } DoneObject;

static PyObject *
done_await(PyObject *self)
{
    return Py_NewRef(self);
}

/* StopIteration: the result None */
static PyObject *
done_next(PyObject *self)
{
    return NULL;
}

static PySendResult
done_send(PyObject *self, PyObject *arg, PyObject **result)
{
    *result = Py_NewRef(Py_None);
    return PYGEN_RETURN;
}
static PyObject *
done_repr(PyObject *self)
{
    return PyUnicode_FromString("<publish: queued>");
}

static PyAsyncMethods done_async = { done_await, NULL, NULL, done_send };

static PyTypeObject DoneType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "tclnats_py._natsproto.Done",
    .tp_basicsize = sizeof(DoneObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "An awaitable already complete (result None).",
    .tp_as_async = &done_async,
    .tp_repr = done_repr,
    .tp_iter = PyObject_SelfIter,
    .tp_iternext = done_next,
    .tp_new = PyType_GenericNew,
};

/*
 * scan_columns(buf, pos, subjects, datas, ts, events, last, sid, ack_prefix,
 * ping_event, last_event) -> (pos, seqs, done): engine/js/columns.py
 * scan_deliveries' plain frames, from pos on.  A delivery (MSG, or HMSG
 * without headers, for the pull's sid (bytes), its reply an ack subject of
 * the 9-token form: ack_prefix, stream, consumer, delivered, stream seq,
 * consumer seq, time, pending) appends its subject, data and time digits to
 * the lists and its stream seq to seqs (native int64s, for array.frombytes);
 * a message of another sid is passed over, as PONG and +OK are; PING
 * appends ping_event to events.  A delivery past last appends last_event
 * (not taken, but consumed), as does the one at last or with 0 pending
 * (taken): then done is True.  Anything else (a status, headers, another
 * ack form, INFO, -ERR, an incomplete or unusual frame) stops the scan at
 * its start: columns.py's reference loop takes that one frame.
 */
typedef struct {
    const unsigned char *seq, *ts, *pending;
    size_t seq_len, ts_len, pending_len;
} ack_tokens;

/* the tokens of a v1 ack subject (exactly 8 dots, the prefix first); 0: not one */
static int
split_ack(const unsigned char *r, size_t len, const char *prefix, size_t plen, ack_tokens *t)
{
    size_t dots[8], i;
    int nd = 0;
    if (len < plen || memcmp(r, prefix, plen) != 0)
        return 0;
    for (i = 0; i < len; i++) {
        if (r[i] == '.') {
            if (nd == 8)
                return 0;
            dots[nd++] = i;
        }
    }
    if (nd != 8)
        return 0;
    t->seq = r + dots[4] + 1;
    t->seq_len = dots[5] - dots[4] - 1;
    t->ts = r + dots[6] + 1;
    t->ts_len = dots[7] - dots[6] - 1;
    t->pending = r + dots[7] + 1;
    t->pending_len = len - dots[7] - 1;
    return 1;
}

/* seq appended to the growing array *out; -1: no memory */
static int
push_seq(long long **out, Py_ssize_t *nseq, Py_ssize_t *cap, long long seq)
{
    if (*nseq == *cap) {
        long long *grown;
        Py_ssize_t c = *cap ? *cap * 2 : 256;
        if ((grown = PyMem_Realloc(*out, (size_t)c * sizeof **out)) == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        *out = grown;
        *cap = c;
    }
    (*out)[(*nseq)++] = seq;
    return 0;
}

/* The next MSG/HMSG of subscription sid from *pos on (fr holds it, *pos at
 * its start): 1.  PINGs append ping_event to events; PONG, +OK and other
 * sids (late replies of API requests) are passed over.  0 when no whole
 * frame of the subscription follows (*pos at the first byte not taken);
 * -1 on an error.  What scan_columns and scan_direct_columns share. */
static NATSCODEC_HOT int
next_sub_msg(const unsigned char *buf, Py_ssize_t n, Py_ssize_t *pos, const Py_buffer *sid,
             PyObject *events, PyObject *ping_event, natscodec_frame *fr)
{
    while (*pos >= 0 && *pos < n) {
        int kind = natscodec_scan(buf, (size_t)*pos, (size_t)n, SCAN_MAX_SIZE, fr);
        if (kind == NATSCODEC_PING) {
            if (PyList_Append(events, ping_event) < 0)
                return -1;
        } else if (kind == NATSCODEC_MSG) {
            if (fr->sid_len == (size_t)sid->len && memcmp(buf + fr->sid_at, sid->buf, fr->sid_len) == 0)
                return 1;
        } else if (kind != NATSCODEC_PONG && kind != NATSCODEC_OK) {
            return 0;
        }
        *pos = (Py_ssize_t)fr->next;
    }
    return 0;
}

/* one delivery into the columns; -1 error */
static int
add_delivery(PyObject *const *lists, const unsigned char *buf, const natscodec_frame *fr,
             const ack_tokens *t)
{
    PyObject *o[3];
    int k, rc = 0;
    o[0] = PyBytes_FromStringAndSize((const char *)buf + fr->subject, (Py_ssize_t)fr->subject_len);
    o[1] = PyBytes_FromStringAndSize((const char *)buf + fr->payload, (Py_ssize_t)fr->size);
    o[2] = PyBytes_FromStringAndSize((const char *)t->ts, (Py_ssize_t)t->ts_len);
    for (k = 0; k < 3; k++) {
        if (o[k] == NULL || (rc == 0 && PyList_Append(lists[k], o[k]) < 0))
            rc = -1;
    }
    for (k = 0; k < 3; k++)
        Py_XDECREF(o[k]);
    return rc;
}

static PyObject *
scan_columns(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    Py_buffer view, sidv, prefv;
    PyObject *seqs = NULL, *result = NULL;
    long long *out = NULL, last;
    Py_ssize_t pos, nseq = 0, cap = 0;
    int done = 0, overflow = 0, k;
    if (nargs != 11) {
        PyErr_SetString(PyExc_TypeError, "scan_columns(buf, pos, subjects, datas, ts, events, last, sid, "
                        "ack_prefix, ping_event, last_event)");
        return NULL;
    }
    for (k = 2; k < 6; k++) {
        if (!PyList_CheckExact(args[k])) {
            PyErr_SetString(PyExc_TypeError, "scan_columns: subjects, datas, ts and events are lists");
            return NULL;
        }
    }
    if ((pos = PyLong_AsSsize_t(args[1])) == -1 && PyErr_Occurred())
        return NULL;
    last = PyLong_AsLongLongAndOverflow(args[6], &overflow);
    if (last == -1 && PyErr_Occurred())
        return NULL;
    if (overflow)
        last = overflow > 0 ? LLONG_MAX : -1;
    if (PyObject_GetBuffer(args[0], &view, PyBUF_SIMPLE) < 0)
        return NULL;
    if (PyObject_GetBuffer(args[7], &sidv, PyBUF_SIMPLE) < 0) {
        PyBuffer_Release(&view);
        return NULL;
    }
    if (PyObject_GetBuffer(args[8], &prefv, PyBUF_SIMPLE) < 0) {
        PyBuffer_Release(&sidv);
        PyBuffer_Release(&view);
        return NULL;
    }
    const unsigned char *buf = (const unsigned char *)view.buf;
    Py_ssize_t n = view.len;
    while (!done) {
        natscodec_frame fr;
        ack_tokens t;
        long long seq;
        int got = next_sub_msg(buf, n, &pos, &sidv, args[5], args[9], &fr);
        if (got < 0)
            goto error;
        if (got == 0)
            break;
        if (fr.reply_len == 0 || fr.hsize > 0
            || !split_ack(buf + fr.reply, fr.reply_len, (const char *)prefv.buf, (size_t)prefv.len, &t)
            || (seq = parse_dec(t.seq, t.seq_len)) < 0)
            break;
        pos = (Py_ssize_t)fr.next;
        if (seq > last) {
            if (PyList_Append(args[5], args[10]) < 0)
                goto error;
            done = 1;
            break;
        }
        if (add_delivery(args + 2, buf, &fr, &t) < 0)
            goto error;
        if (push_seq(&out, &nseq, &cap, seq) < 0)
            goto error;
        if (seq == last || (t.pending_len == 1 && t.pending[0] == '0')) {
            if (PyList_Append(args[5], args[10]) < 0)
                goto error;
            done = 1;
        }
    }
    seqs = PyBytes_FromStringAndSize((const char *)out, nseq * (Py_ssize_t)sizeof *out);
    if (seqs != NULL)
        result = Py_BuildValue("nNO", pos, seqs, done ? Py_True : Py_False);
error:
    PyMem_Free(out);
    PyBuffer_Release(&prefv);
    PyBuffer_Release(&sidv);
    PyBuffer_Release(&view);
    return result;
}

/*
 * scan_direct_columns(buf, pos, subjects, datas, ts, events, last, sid,
 * ping_event, last_event) -> (pos, seqs, done): engine/js/columns.py
 * scan_direct's plain frames, from pos on: a batch direct get reply (HMSG
 * without reply for sid) whose header block is only the coordinates the
 * server appends ("NATS/1.0", Nats-Stream, Nats-Subject, Nats-Sequence,
 * Nats-Time-Stamp, then Nats-Num-Pending if any) appends the subject, the
 * data and the time text to the lists and the seq to seqs; past last it
 * appends last_event (not taken), at last or with 0 pending last_event after
 * taking it; done is then True.  PING, PONG, +OK and other sids as in
 * scan_columns.  Anything else (a status, a message with headers of its
 * own, another order, an unusual frame) stops the scan at its start for
 * columns.py's reference loop.
 */

/* the value of the header line "name: value\r\n" at *p (advanced past it); 0: not that line */
static int
direct_line(const unsigned char **p, const unsigned char *end, const char *name, size_t nlen,
            const unsigned char **v, size_t *vlen)
{
    const unsigned char *q = *p, *cr;
    if ((size_t)(end - q) < nlen || memcmp(q, name, nlen) != 0)
        return 0;
    q += nlen;
    cr = memchr(q, '\r', (size_t)(end - q));
    if (cr == NULL || cr + 1 >= end || cr[1] != '\n')
        return 0;
    *v = q;
    *vlen = (size_t)(cr - q);
    *p = cr + 2;
    return 1;
}

#define DIRECT_HEAD "NATS/1.0\r\nNats-Stream: "

/* the seq of a plain direct get reply (v, vl: the values of its Nats-* lines
 * in the server's order, the fifth Num-Pending when *has_pending); -1: not one */
static long long
direct_reply(const unsigned char *buf, const natscodec_frame *fr, const unsigned char **v, size_t *vl,
             int *has_pending)
{
    const unsigned char *h = buf + fr->payload, *hend;
    if (fr->reply_len != 0 || fr->hsize < (long long)(sizeof DIRECT_HEAD - 1))
        return -1;
    hend = h + fr->hsize;
    if (memcmp(h, DIRECT_HEAD, sizeof DIRECT_HEAD - 1) != 0)
        return -1;
    h += 10;   /* past "NATS/1.0\r\n" */
    if (!direct_line(&h, hend, "Nats-Stream: ", 13, &v[0], &vl[0])
        || !direct_line(&h, hend, "Nats-Subject: ", 14, &v[1], &vl[1])
        || !direct_line(&h, hend, "Nats-Sequence: ", 15, &v[2], &vl[2])
        || !direct_line(&h, hend, "Nats-Time-Stamp: ", 17, &v[3], &vl[3]))
        return -1;
    *has_pending = direct_line(&h, hend, "Nats-Num-Pending: ", 18, &v[4], &vl[4]);
    return parse_dec(v[2], vl[2]);
}

/* a direct get reply's subject, data and time into the lists; -1 error */
static int
add_direct(PyObject *const *lists, const unsigned char *buf, const natscodec_frame *fr,
           const unsigned char **v, const size_t *vl)
{
    PyObject *o[3];
    int k, rc = 0;
    o[0] = PyBytes_FromStringAndSize((const char *)v[1], (Py_ssize_t)vl[1]);
    o[1] = PyBytes_FromStringAndSize((const char *)buf + fr->payload + fr->hsize, (Py_ssize_t)(fr->size - fr->hsize));
    o[2] = PyBytes_FromStringAndSize((const char *)v[3], (Py_ssize_t)vl[3]);
    for (k = 0; k < 3; k++) {
        if (o[k] == NULL || (rc == 0 && PyList_Append(lists[k], o[k]) < 0))
            rc = -1;
    }
    for (k = 0; k < 3; k++)
        Py_XDECREF(o[k]);
    return rc;
}

static PyObject *
scan_direct_columns(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    Py_buffer view, sidv;
    PyObject *seqs = NULL, *result = NULL;
    long long *out = NULL, last;
    Py_ssize_t pos, nseq = 0, cap = 0;
    int done = 0, overflow = 0;
    if (nargs != 10 || !PyList_CheckExact(args[2]) || !PyList_CheckExact(args[3]) || !PyList_CheckExact(args[4])
        || !PyList_CheckExact(args[5])) {
        PyErr_SetString(PyExc_TypeError, "scan_direct_columns(buf, pos, subjects, datas, ts, events, last, sid, "
                        "ping_event, last_event): subjects, datas, ts and events are lists");
        return NULL;
    }
    if ((pos = PyLong_AsSsize_t(args[1])) == -1 && PyErr_Occurred())
        return NULL;
    last = PyLong_AsLongLongAndOverflow(args[6], &overflow);
    if (last == -1 && PyErr_Occurred())
        return NULL;
    if (overflow)
        last = overflow > 0 ? LLONG_MAX : -1;
    if (PyObject_GetBuffer(args[0], &view, PyBUF_SIMPLE) < 0)
        return NULL;
    if (PyObject_GetBuffer(args[7], &sidv, PyBUF_SIMPLE) < 0) {
        PyBuffer_Release(&view);
        return NULL;
    }
    const unsigned char *buf = (const unsigned char *)view.buf;
    Py_ssize_t n = view.len;
    while (!done) {
        natscodec_frame fr;
        const unsigned char *v[5] = {NULL, NULL, NULL, NULL, NULL};
        size_t vl[5] = {0, 0, 0, 0, 0};
        long long seq;
        int has_pending;
        int got = next_sub_msg(buf, n, &pos, &sidv, args[5], args[8], &fr);
        if (got < 0)
            goto error;
        if (got == 0)
            break;
        if ((seq = direct_reply(buf, &fr, v, vl, &has_pending)) < 0)
            break;
        pos = (Py_ssize_t)fr.next;
        if (seq > last) {
            if (PyList_Append(args[5], args[9]) < 0)
                goto error;
            done = 1;
            break;
        }
        if (add_direct(args + 2, buf, &fr, v, vl) < 0)
            goto error;
        if (push_seq(&out, &nseq, &cap, seq) < 0)
            goto error;
        if (seq == last || (has_pending && vl[4] == 1 && v[4][0] == '0')) {
            if (PyList_Append(args[5], args[9]) < 0)
                goto error;
            done = 1;
        }
    }
    seqs = PyBytes_FromStringAndSize((const char *)out, nseq * (Py_ssize_t)sizeof *out);
    if (seqs != NULL)
        result = Py_BuildValue("nNO", pos, seqs, done ? Py_True : Py_False);
error:
    PyMem_Free(out);
    PyBuffer_Release(&sidv);
    PyBuffer_Release(&view);
    return result;
}

/*
 * data_size(msgs) -> int: the sum of len(m.data) over the sequence msgs
 * (the blocking face's subscription queue counts its bytes so, for each
 * batch the engine delivers).  The data slot is read directly where a
 * message's class has Msg's slots (take_msgs's rule) and it holds exact
 * bytes; any other message through its attribute and len().
 */
static PyObject *
data_size(PyObject *self, PyObject *msgs)
{
    PyObject *seq = PySequence_Fast(msgs, "data_size(msgs): a sequence of messages");
    PyTypeObject *cls = NULL;
    Py_ssize_t off[5], n, i;
    long long total = 0;
    int slots = 0;
    if (seq == NULL)
        return NULL;
    n = PySequence_Fast_GET_SIZE(seq);
    for (i = 0; i < n; i++) {
        PyObject *m = PySequence_Fast_GET_ITEM(seq, i), *d = NULL;
        if (Py_TYPE(m) != cls) {
            cls = Py_TYPE(m);
            slots = slot_offsets(cls, off);
        }
        if (slots)
            d = *(PyObject **)((char *)m + off[1]);
        if (d != NULL && PyBytes_CheckExact(d)) {
            total += PyBytes_GET_SIZE(d);
            continue;
        }
        Py_ssize_t len = -1;
        if ((d = PyObject_GetAttr(m, slot_names[1])) != NULL) {
            len = PyObject_Size(d);
            Py_DECREF(d);
        }
        if (len < 0) {
            Py_DECREF(seq);
            return NULL;
        }
        total += len;
    }
    Py_DECREF(seq);
    return PyLong_FromLongLong(total);
}

/*
 * encode_pub(subject, reply, payload[, header]) -> bytes: the frame of
 * protocol.encode_pub (PUB, or HPUB with a header block) made by the shared
 * C framer, the one tclfast.c and pub_frame use; subject and reply (str or
 * None) as UTF-8.  For the property test that holds the framers together.
 */
static PyObject *
encode_pub(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    Py_buffer data, hdr;
    Py_ssize_t sl, rl = 0;
    const char *subj, *reply = NULL;
    PyObject *out = NULL;
    int has_hdr = nargs == 4 && args[3] != Py_None;
    if (nargs < 3 || nargs > 4) {
        PyErr_SetString(PyExc_TypeError, "encode_pub(subject, reply, payload[, header])");
        return NULL;
    }
    if ((subj = PyUnicode_AsUTF8AndSize(args[0], &sl)) == NULL)
        return NULL;
    if (args[1] != Py_None && (reply = PyUnicode_AsUTF8AndSize(args[1], &rl)) == NULL)
        return NULL;
    if (PyObject_GetBuffer(args[2], &data, PyBUF_SIMPLE) < 0)
        return NULL;
    if (has_hdr && PyObject_GetBuffer(args[3], &hdr, PyBUF_SIMPLE) < 0) {
        PyBuffer_Release(&data);
        return NULL;
    }
    const unsigned char *h = has_hdr ? (const unsigned char *)hdr.buf : NULL;
    size_t hl = has_hdr ? (size_t)hdr.len : 0;
    out = PyBytes_FromStringAndSize(
        NULL, (Py_ssize_t)natscodec_pub_frame_len((size_t)sl, (size_t)rl, h, hl, (size_t)data.len));
    if (out != NULL)
        natscodec_pub_frame((unsigned char *)PyBytes_AS_STRING(out), subj, (size_t)sl, reply, (size_t)rl,
                            h, hl, (const unsigned char *)data.buf, (size_t)data.len);
    if (has_hdr)
        PyBuffer_Release(&hdr);
    PyBuffer_Release(&data);
    return out;
}

/*
 * SpinPolicy: natscodec's spin back-off (natscodec.h), the asyncio face's
 * (aio/spin.py) as it is the Tcl face's (tclcross_wait.c await_var).
 * should_try() -> bool: whether this wait spins (False: a skipped wait,
 * counted); caught(): a reply came while spinning; missed(): the spin ran
 * out.  skip, misses and the counts caught_n, missed_n, skipped_n are
 * attributes.
 */
typedef struct {
    PyObject_HEAD
    natscodec_spin s;
} SpinObject;

static PyObject *
spin_should_try(PyObject *self, PyObject *unused)
{
    return PyBool_FromLong(natscodec_spin_should_try(&((SpinObject *)self)->s));
}

static PyObject *
spin_caught(PyObject *self, PyObject *unused)
{
    natscodec_spin_caught(&((SpinObject *)self)->s);
    Py_RETURN_NONE;
}

static PyObject *
spin_missed(PyObject *self, PyObject *unused)
{
    natscodec_spin_missed(&((SpinObject *)self)->s);
    Py_RETURN_NONE;
}

static PyMethodDef spin_methods[] = {
    {"should_try", spin_should_try, METH_NOARGS, "should_try() -> whether this wait spins (else counted skipped)"},
    {"caught", spin_caught, METH_NOARGS, "caught(): a reply came while spinning (the back-off starts over)"},
    {"missed", spin_missed, METH_NOARGS, "missed(): the spin ran out without a reply"},
    {NULL, NULL, 0, NULL}
};

static PyMemberDef spin_members[] = {
    {"skip", T_INT, offsetof(SpinObject, s.skip), 0, "waits left that do not spin"},
    {"misses", T_INT, offsetof(SpinObject, s.misses), 0, "spins in a row that ran out"},
    {"caught_n", T_LONGLONG, offsetof(SpinObject, s.caught), 0, "replies caught while spinning"},
    {"missed_n", T_LONGLONG, offsetof(SpinObject, s.missed), 0, "spins that ran out"},
    {"skipped_n", T_LONGLONG, offsetof(SpinObject, s.skipped), 0, "waits that did not spin"},
    {NULL, 0, 0, 0, NULL}
};

static PyObject *
spin_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    SpinObject *o;
    if (PyTuple_GET_SIZE(args) != 0 || (kwds != NULL && PyDict_GET_SIZE(kwds) != 0)) {
        PyErr_SetString(PyExc_TypeError, "SpinPolicy() takes no arguments");
        return NULL;
    }
    o = (SpinObject *)type->tp_alloc(type, 0);
    if (o != NULL)
        natscodec_spin_init(&o->s);
    return (PyObject *)o;
}

static PyTypeObject SpinType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "tclnats_py._natsproto.SpinPolicy",
    .tp_basicsize = sizeof(SpinObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "The spin back-off of a wait for a reply (natscodec.h).",
    .tp_methods = spin_methods,
    .tp_members = spin_members,
    .tp_new = spin_new,
};

#ifndef _WIN32
/*
 * read_reply(fd, sid, reply, budget) -> what the socket fd brought a caller
 * that waits for the reply to one request (sync/threads.py SyncIO.round_trip),
 * read with the GIL released:
 *
 *   (reply_to or None, header block or None, payload, n)  the n bytes read
 *       are exactly one MSG/HMSG frame for subscription sid on subject reply;
 *   bytes      anything else read (other frames, several, a frame cut short
 *              when the wait ran out), for Engine.receive_data;
 *   b""        the end of the stream;
 *   None       nothing came within the socket's SO_RCVTIMEO;
 *   str        the reason the socket failed (OSError's text).
 *
 * It reads again while what it has is the start of one frame, up to
 * REPLY_MAX bytes, within budget seconds of its start (the caller's wait
 * less SO_RCVTIMEO: a read after that could end past the caller's deadline).  The socket
 * is a blocking one whose reads the caller bounds with SO_RCVTIMEO; a
 * signal during a read with nothing read yet runs Python's handlers (their
 * exception raises), with bytes read it ends the call (they are returned).
 *
 * read_reply(fd, sid, reply, budget, spin_us, policy): before its first
 * blocking read it polls the socket without blocking for up to spin_us
 * microseconds, yielding the CPU between polls, when policy (a SpinPolicy:
 * natscodec's back-off, shared with the other faces' waits) lets this wait
 * spin; a reply that comes within them is taken without the wake-up of a
 * sleeping thread.
 */
#define REPLY_STACK 16384
#define REPLY_MAX ((size_t)64 * 1024 * 1024 + 8192)   /* nats-server's largest max_payload, and a line */

static double
mono_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* the reply of read_reply for the n bytes at buf, whose first frame is fr (kind) */
static PyObject *
reply_result(const unsigned char *buf, size_t n, int kind, const natscodec_frame *fr,
             long long sid, const char *reply, Py_ssize_t rl)
{
    if (kind != NATSCODEC_MSG || fr->next != n || fr->sid != sid || fr->subject_len != (size_t)rl
        || memcmp(buf + fr->subject, reply, (size_t)rl) != 0)
        return PyBytes_FromStringAndSize((const char *)buf, (Py_ssize_t)n);
    PyObject *o_reply = fr->reply_len ? ascii_str(buf + fr->reply, (Py_ssize_t)fr->reply_len) : Py_NewRef(Py_None);
    const char *p = (const char *)buf + fr->payload;
    PyObject *o_hdr, *o_payload;
    if (fr->hsize > 0) {
        o_hdr = PyBytes_FromStringAndSize(p, (Py_ssize_t)fr->hsize);
        o_payload = PyBytes_FromStringAndSize(p + fr->hsize, (Py_ssize_t)(fr->size - fr->hsize));
    } else {
        o_hdr = Py_NewRef(Py_None);
        o_payload = PyBytes_FromStringAndSize(p, (Py_ssize_t)fr->size);
    }
    PyObject *o_n = PyLong_FromSize_t(n);
    PyObject *out = (o_reply && o_hdr && o_payload && o_n) ? PyTuple_New(4) : NULL;
    if (out == NULL) {
        Py_XDECREF(o_reply); Py_XDECREF(o_hdr); Py_XDECREF(o_payload); Py_XDECREF(o_n);
        return NULL;
    }
    PyTuple_SET_ITEM(out, 0, o_reply);
    PyTuple_SET_ITEM(out, 1, o_hdr);
    PyTuple_SET_ITEM(out, 2, o_payload);
    PyTuple_SET_ITEM(out, 3, o_n);
    return out;
}

/* how many bytes the frame begun at buf[0:n) needs in all (kind: its scan);
 * 0 when reading on is not read_reply's to do */
static size_t
reply_need(size_t n, int kind, const natscodec_frame *fr)
{
    if (kind == NATSCODEC_NEED_LINE)
        return n <= 4096 ? n + 1 : 0;     /* (protocol.MAX_CONTROL_LINE) */
    if (kind == NATSCODEC_NEED_PAYLOAD && (size_t)fr->size <= REPLY_MAX - fr->payload - 2)
        return fr->payload + (size_t)fr->size + 2;
    return 0;
}

/* read_reply's spin: recv without blocking until something came, the stream
 * ended or failed, or the clock passed until (EAGAIN then); the CPU is
 * yielded between polls, so that a server or responder on this machine runs */
static ssize_t
spin_recv(int fd, unsigned char *buf, size_t cap, double until, int *err)
{
    for (;;) {
        ssize_t r = recv(fd, buf, cap, MSG_DONTWAIT);
        if (r >= 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
            *err = errno;
            return r;
        }
        if (mono_seconds() >= until) {
            *err = EAGAIN;
            return -1;
        }
        sched_yield();
    }
}

static PyObject *
read_reply(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if ((nargs != 4 && nargs != 6) || !PyLong_Check(args[1]) || !PyUnicode_Check(args[2])
        || (nargs == 6 && (!PyLong_Check(args[4]) || !PyObject_TypeCheck(args[5], &SpinType)))) {
        PyErr_SetString(PyExc_TypeError, "read_reply(fd: int, sid: int, reply: str, budget: float"
                                         "[, spin_us: int, policy: SpinPolicy])");
        return NULL;
    }
    long spin_us = nargs == 6 ? PyLong_AsLong(args[4]) : 0;
    natscodec_spin *policy = nargs == 6 ? &((SpinObject *)args[5])->s : NULL;
    if (spin_us == -1 && PyErr_Occurred())
        return NULL;
    int fd = PyObject_AsFileDescriptor(args[0]);
    long long sid = PyLong_AsLongLong(args[1]);
    double budget = PyFloat_AsDouble(args[3]);
    Py_ssize_t rl;
    const char *reply = PyUnicode_AsUTF8AndSize(args[2], &rl);
    if (fd < 0 || (sid == -1 && PyErr_Occurred()) || (budget == -1.0 && PyErr_Occurred()) || reply == NULL)
        return NULL;
    unsigned char stack[REPLY_STACK], *buf = stack;
    size_t cap = sizeof stack, n = 0;
    double start = mono_seconds();
    PyObject *out = NULL;
    int spin = spin_us > 0 && policy != NULL && natscodec_spin_should_try(policy);
    for (;;) {
        ssize_t r;
        int err;
        Py_BEGIN_ALLOW_THREADS
        if (spin) {     /* the first read only */
            r = spin_recv(fd, buf, cap, start + spin_us * 1e-6, &err);
            if (r < 0 && err == EAGAIN)
                natscodec_spin_missed(policy);
            else
                natscodec_spin_caught(policy);
            spin = 0;
        } else
            r = -1, err = EAGAIN;
        if (r < 0 && err == EAGAIN) {
            r = recv(fd, buf + n, cap - n, 0);
            err = errno;
        }
        Py_END_ALLOW_THREADS
        if (r < 0 && err == EINTR && n == 0) {
            if (PyErr_CheckSignals() < 0)
                break;
            continue;
        }
        if (r <= 0) {
            if (n > 0)
                out = PyBytes_FromStringAndSize((const char *)buf, (Py_ssize_t)n);
            else if (r == 0)
                out = PyBytes_FromStringAndSize(NULL, 0);
            else if (err == EAGAIN || err == EWOULDBLOCK)
                out = Py_NewRef(Py_None);
            else
                out = PyUnicode_FromFormat("[Errno %d] %s", err, strerror(err));
            break;
        }
        n += (size_t)r;
        natscodec_frame fr;
        int kind = natscodec_scan(buf, 0, n, SCAN_MAX_SIZE, &fr);
        size_t need = reply_need(n, kind, &fr);
        if (need == 0) {
            out = reply_result(buf, n, kind, &fr, sid, reply, rl);
            break;
        }
        if (mono_seconds() - start > budget) {
            out = PyBytes_FromStringAndSize((const char *)buf, (Py_ssize_t)n);
            break;
        }
        if (need > cap) {   /* room for the whole frame */
            unsigned char *bigger = buf == stack ? malloc(need) : realloc(buf, need);
            if (bigger == NULL) {   /* the engine takes what came */
                out = PyBytes_FromStringAndSize((const char *)buf, (Py_ssize_t)n);
                break;
            }
            if (buf == stack)
                memcpy(bigger, stack, n);
            buf = bigger;
            cap = need;
        }
    }
    if (buf != stack)
        free(buf);
    return out;
}
#endif

/*
 * plain_ack(data[, cls]) -> dict or None: the PubAck of a JetStream publish's plain
 * success reply, what engine/js/publish.py's _PLAIN_ACK pattern takes and
 * parse_ack_fast makes of it -- {"stream":"S",["domain":"D",]"seq":N[,
 * "duplicate":true]} exactly so (the stream at least one byte, neither
 * holds a quote or a backslash, the seq decimal digits): {"stream": S,
 * "seq": N[, "domain": D][, "duplicate": True]}, the names decoded as UTF-8
 * (UnicodeDecodeError as bytes.decode()), made cls() (a dict subclass; default
 * dict).  None for anything else: the caller's general path (json) decides.
 */
static int
ack_lit(const unsigned char **p, const unsigned char *end, const char *lit)
{
    size_t n = strlen(lit);
    if ((size_t)(end - *p) < n || memcmp(*p, lit, n) != 0)
        return 0;
    *p += n;
    return 1;
}

/* a JSON string's content without quote or backslash, up to its closing quote (consumed) */
static int
ack_str(const unsigned char **p, const unsigned char *end, const unsigned char **s, size_t *len)
{
    const unsigned char *q = *p;
    while (q < end && *q != '"' && *q != '\\')
        q++;
    if (q >= end || *q != '"')
        return 0;
    *s = *p;
    *len = (size_t)(q - *p);
    *p = q + 1;
    return 1;
}

static PyObject *ack_keys[4];   /* stream seq domain duplicate, interned at import */

/* what the scan of a plain ack found: the stream's and domain's bytes (domain
 * NULL without one), the seq's digits, whether it is a duplicate */
typedef struct {
    const unsigned char *stream, *domain, *seq, *seq_end;
    size_t sl, dl;
    int dup;
} ack_scan;

/* whether data (bytes) is a plain ack, its parts in *a */
static int
ack_match(PyObject *data, ack_scan *a)
{
    if (!PyBytes_Check(data))
        return 0;
    const unsigned char *p = (const unsigned char *)PyBytes_AS_STRING(data), *end = p + PyBytes_GET_SIZE(data);
    a->domain = NULL;
    a->dl = 0;
    a->dup = 0;
    if (!ack_lit(&p, end, "{\"stream\":\"") || !ack_str(&p, end, &a->stream, &a->sl) || a->sl == 0
        || !ack_lit(&p, end, ","))
        return 0;
    if (ack_lit(&p, end, "\"domain\":\"") && (!ack_str(&p, end, &a->domain, &a->dl) || !ack_lit(&p, end, ",")))
        return 0;
    if (!ack_lit(&p, end, "\"seq\":"))
        return 0;
    a->seq = p;
    while (p < end && *p >= '0' && *p <= '9')
        p++;
    if (p == a->seq)
        return 0;
    a->seq_end = p;
    if (ack_lit(&p, end, ",\"duplicate\":")) {
        ack_lit(&p, end, " ");
        if (!ack_lit(&p, end, "true"))
            return 0;
        a->dup = 1;
    }
    return ack_lit(&p, end, "}") && p == end;
}

/* the seq of a scanned ack, an int */
static PyObject *
ack_seq(const ack_scan *a)
{
    if (a->seq_end - a->seq <= 18) {
        long long n = 0;
        for (const unsigned char *d = a->seq; d < a->seq_end; d++)
            n = n * 10 + (*d - '0');
        return PyLong_FromLongLong(n);
    }
    PyObject *text = PyUnicode_FromStringAndSize((const char *)a->seq, a->seq_end - a->seq);
    PyObject *v = text == NULL ? NULL : PyLong_FromUnicodeObject(text, 10);
    Py_XDECREF(text);
    return v;
}

/* the last stream name made (ASCII): a publisher mostly writes to one stream */
static PyObject *ack_last_stream;

static PyObject *
ack_stream(const unsigned char *s, size_t n)
{
    PyObject *last = ack_last_stream;
    if (last != NULL && (size_t)PyUnicode_GET_LENGTH(last) == n && memcmp(PyUnicode_1BYTE_DATA(last), s, n) == 0) {
        Py_INCREF(last);
        return last;
    }
    PyObject *v = PyUnicode_DecodeUTF8((const char *)s, (Py_ssize_t)n, NULL);
    if (v != NULL && PyUnicode_IS_ASCII(v)) {
        Py_INCREF(v);
        Py_XSETREF(ack_last_stream, v);
    }
    return v;
}

static PyObject *empty_args;    /* () for dict's tp_new */

/* an empty cls(): for a dict subclass that keeps dict's new and init (PubAck), dict's tp_new alone */
static PyObject *
ack_new(PyObject *cls)
{
    if (cls == NULL)
        return PyDict_New();
    if (PyType_Check(cls)) {
        PyTypeObject *t = (PyTypeObject *)cls;
        if (t->tp_new == PyDict_Type.tp_new && t->tp_init == PyDict_Type.tp_init
            && PyType_IsSubtype(t, &PyDict_Type))
            return t->tp_new(t, empty_args, NULL);
    }
    return PyObject_CallNoArgs(cls);
}

static PyObject *
plain_ack(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs < 1 || nargs > 2) {
        PyErr_SetString(PyExc_TypeError, "plain_ack(data[, cls])");
        return NULL;
    }
    PyObject *cls = nargs == 2 && args[1] != (PyObject *)&PyDict_Type ? args[1] : NULL;
    ack_scan a;
    if (!ack_match(args[0], &a))
        Py_RETURN_NONE;
    PyObject *ack = ack_new(cls), *v = NULL;
    if (ack == NULL)
        return NULL;
    if (!PyDict_Check(ack)) {
        Py_DECREF(ack);
        PyErr_SetString(PyExc_TypeError, "plain_ack: cls must make a dict");
        return NULL;
    }
    if ((v = ack_stream(a.stream, a.sl)) == NULL || PyDict_SetItem(ack, ack_keys[0], v) < 0)
        goto fail;
    Py_DECREF(v);
    if ((v = ack_seq(&a)) == NULL || PyDict_SetItem(ack, ack_keys[1], v) < 0)
        goto fail;
    Py_DECREF(v);
    v = NULL;
    if (a.domain != NULL) {
        if ((v = PyUnicode_DecodeUTF8((const char *)a.domain, (Py_ssize_t)a.dl, NULL)) == NULL
            || PyDict_SetItem(ack, ack_keys[2], v) < 0)
            goto fail;
        Py_DECREF(v);
        v = NULL;
    }
    if (a.dup && PyDict_SetItem(ack, ack_keys[3], Py_True) < 0)
        goto fail;
    return ack;
fail:
    Py_XDECREF(v);
    Py_DECREF(ack);
    return NULL;
}

/*
 * plain_ack_seq(data) -> int or None: plain_ack(data)["seq"] (a KV put's
 * revision) without the dict; None where plain_ack gives None, and where
 * the stream's or domain's bytes are not ASCII (the caller's general path
 * then decodes them as plain_ack does, UnicodeDecodeError included).
 */
static PyObject *
plain_ack_seq(PyObject *self, PyObject *data)
{
    ack_scan a;
    if (!ack_match(data, &a))
        Py_RETURN_NONE;
    for (size_t k = 0; k < a.sl; k++)
        if (a.stream[k] >= 0x80)
            Py_RETURN_NONE;
    for (size_t k = 0; k < a.dl; k++)
        if (a.domain[k] >= 0x80)
            Py_RETURN_NONE;
    return ack_seq(&a);
}

/*
 * request_pub(prefix, rid, subject, payload) -> (reply, frame): a request's
 * reply subject, f"{prefix}.{rid}" (rid an int from 0), and its PUB frame,
 * encode_pub(subject, reply, payload)'s bytes (Engine.direct_request's pair,
 * made without formatting the int in Python).
 */
static PyObject *
request_pub(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 4 || !PyUnicode_Check(args[0]) || !PyLong_Check(args[1])) {
        PyErr_SetString(PyExc_TypeError, "request_pub(prefix: str, rid: int, subject, payload)");
        return NULL;
    }
    PyObject *prefix = args[0], *reply;
    unsigned long long rid = PyLong_AsUnsignedLongLong(args[1]);
    if (rid == (unsigned long long)-1 && PyErr_Occurred())
        return NULL;
    char digits[24];   /* rid's decimal digits at its end, NUL-terminated */
    int dl = 0;
    digits[sizeof digits - 1] = '\0';
    do {
        digits[sizeof digits - 2 - dl++] = (char)('0' + rid % 10);
        rid /= 10;
    } while (rid);
    const char *d = digits + sizeof digits - 1 - dl;
    if (PyUnicode_IS_ASCII(prefix)) {
        Py_ssize_t pl = PyUnicode_GET_LENGTH(prefix);
        if ((reply = PyUnicode_New(pl + 1 + dl, 127)) == NULL)
            return NULL;
        Py_UCS1 *r = PyUnicode_1BYTE_DATA(reply);
        memcpy(r, PyUnicode_1BYTE_DATA(prefix), (size_t)pl);
        r[pl] = '.';
        memcpy(r + pl + 1, d, (size_t)dl);
    } else if ((reply = PyUnicode_FromFormat("%U.%s", prefix, d)) == NULL) {
        return NULL;
    }
    PyObject *call[3] = {args[2], reply, args[3]};
    PyObject *frame = encode_pub(self, call, 3);
    if (frame == NULL) {
        Py_DECREF(reply);
        return NULL;
    }
    PyObject *out = PyTuple_New(2);
    if (out == NULL) {
        Py_DECREF(reply);
        Py_DECREF(frame);
        return NULL;
    }
    PyTuple_SET_ITEM(out, 0, reply);
    PyTuple_SET_ITEM(out, 1, frame);
    return out;
}

/*
 * iso_ms(ts) -> int or None: engine/js/api.py iso_to_ms for the server's
 * form of a time, "YYYY-MM-DDTHH:MM:SS.F...Z" in ASCII with 1 to 15
 * fraction digits and fields in iso_to_ms's ranges (a year from 1): ms since the epoch,
 * the fraction rounded as round(int(F) / 10 ** len(F) * 1000) rounds it.
 * None for anything else (iso_to_ms's own path decides).
 */
static long long
days_from_civil(long long y, unsigned m, unsigned d)
{
    /* days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's) */
    y -= m <= 2;
    long long era = (y >= 0 ? y : y - 399) / 400;
    unsigned yoe = (unsigned)(y - era * 400);
    unsigned doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
    unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + (long long)doe - 719468;
}

static int
iso_digits(const char *p, int n, long long *v)
{
    long long x = 0;
    for (int i = 0; i < n; i++) {
        if (p[i] < '0' || p[i] > '9')
            return 0;
        x = x * 10 + (p[i] - '0');
    }
    *v = x;
    return 1;
}

/* the ms of the time s[0:n) in the server's form into *ms; 0: not that form */
static int
iso_parse(const char *s, Py_ssize_t n, long long *ms)
{
    long long y, mo, d, h, mi, sec, frac;
    int fl = (int)(n - 21);
    if (n < 22 || fl > 15 || s[4] != '-' || s[7] != '-' || s[10] != 'T' || s[13] != ':' || s[16] != ':'
        || s[19] != '.' || s[n - 1] != 'Z'
        || !iso_digits(s, 4, &y) || !iso_digits(s + 5, 2, &mo) || !iso_digits(s + 8, 2, &d)
        || !iso_digits(s + 11, 2, &h) || !iso_digits(s + 14, 2, &mi) || !iso_digits(s + 17, 2, &sec)
        || !iso_digits(s + 20, fl, &frac)
        || y < 1 || mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || sec > 60)
        return 0;
    long long secs = ((days_from_civil(y, (unsigned)mo, 1) + d - 1) * 24 + h) * 3600 + mi * 60 + sec;
    double p10 = 1.0;
    for (int i = 0; i < fl; i++)
        p10 *= 10.0;
    double x = (double)frac / p10 * 1000.0;
    double r = round(x);   /* Python's round(): halves to even */
    if (fabs(x - r) == 0.5)
        r = 2.0 * round(x / 2.0);
    *ms = secs * 1000 + (long long)r;
    return 1;
}

static PyObject *
iso_ms(PyObject *self, PyObject *arg)
{
    long long ms;
    if (!PyUnicode_Check(arg) || !PyUnicode_IS_ASCII(arg)
        || !iso_parse((const char *)PyUnicode_DATA(arg), PyUnicode_GET_LENGTH(arg), &ms))
        Py_RETURN_NONE;
    return PyLong_FromLongLong(ms);
}

/*
 * kv_entry(make, bucket, key, block, payload) -> entry or None: what
 * engine/js/kv.py Bucket.direct_entry's reference (stored_from_direct, then
 * _stored_entry) makes of the reply to a KV direct get whose header block
 * is the common one: "NATS/1.0" alone on its first line, then lines of
 * printable ASCII and tabs read by headers()'s rules (a name's first value
 * counts), no Status line, Nats-Sequence 1 to 18 digits (none: 0),
 * Nats-Time-Stamp in iso_ms's form (none: 0), KV-Operation (if any) PUT,
 * DEL or PURGE.  The entry is make(bucket, key, payload, seq, created ms,
 * operation, 0, reason): the operation KV-Operation's, else DEL for a
 * Nats-Marker-Reason of Remove, PURGE for another, else PUT; the reason
 * that marker's (None for a PUT).  None for any other block: the reference
 * decides.
 */
enum { KV_SEQ, KV_TIME, KV_OP, KV_REASON, KV_STATUS, KV_NAMES };
static const char *const kv_names[KV_NAMES] = {
    "Nats-Sequence", "Nats-Time-Stamp", "KV-Operation", "Nats-Marker-Reason", "Status",
};
static const unsigned char kv_lens[KV_NAMES] = {13, 15, 12, 18, 6};
static const char *const kv_op_names[3] = {"PUT", "DEL", "PURGE"};
static PyObject *kv_ops[3];

/* which of kv_names the name p[0:n) is; KV_NAMES: none */
static int
kv_name(const unsigned char *p, Py_ssize_t n)
{
    for (int k = 0; k < KV_NAMES; k++) {
        if (n == kv_lens[k] && memcmp(kv_names[k], p, (size_t)n) == 0)
            return k;
    }
    return KV_NAMES;
}

/* whether p[0:n) holds headers()'s bytes only: printable ASCII, tab, CR only
 * before LF; eight at a time while none of them is a control, DEL or past ASCII */
static int
kv_plain_bytes(const unsigned char *p, Py_ssize_t n)
{
    const uint64_t ones = 0x0101010101010101ULL, high = 0x8080808080808080ULL;
    Py_ssize_t i = 0;
    while (i < n) {
        if (n - i >= 8) {
            uint64_t w, del;
            memcpy(&w, p + i, 8);
            del = w ^ (ones * 0x7f);
            /* a byte >= 0x80, < 0x20 (hasless) or 0x7f (haszero of del): byte by byte */
            if (((w | ((w - ones * 0x20) & ~w) | ((del - ones) & ~del)) & high) == 0) {
                i += 8;
                continue;
            }
        }
        for (Py_ssize_t stop = n - i > 8 ? i + 8 : n; i < stop; i++) {
            unsigned char c = p[i];
            if ((c >= 0x20 && c < 0x7f) || c == '\t')
                continue;
            if (c == '\r' && i + 1 < n && p[i + 1] == '\n') { i++; continue; }
            return 0;
        }
    }
    return 1;
}

/* the first value of each of kv_names in the block p[0:n) into v, vl (v NULL:
 * absent); 0: not the common block, or a Status line */
static int
kv_fields(const unsigned char *p, Py_ssize_t n, const unsigned char **v, Py_ssize_t *vl)
{
    Py_ssize_t i;
    if (!kv_plain_bytes(p, n))
        return 0;
    if (n < 10 || memcmp(p, "NATS/1.0\r\n", 10) != 0)
        return 0;
    for (i = 10; i < n; ) {
        Py_ssize_t f[4], end = header_line(p, i, n, f);
        int k = f[1] > f[0] ? kv_name(p + f[0], f[1] - f[0]) : KV_NAMES;
        if (k == KV_STATUS)
            return 0;
        if (k < KV_NAMES && v[k] == NULL) {
            v[k] = p + f[2];
            vl[k] = f[3] - f[2];
        }
        i = end + 2;
    }
    return 1;
}

static PyObject *
kv_entry(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 5) {
        PyErr_SetString(PyExc_TypeError, "kv_entry(make, bucket, key, block, payload)");
        return NULL;
    }
    Py_buffer view;
    if (PyObject_GetBuffer(args[3], &view, PyBUF_SIMPLE) < 0)
        return NULL;
    const unsigned char *v[KV_NAMES] = {NULL, NULL, NULL, NULL, NULL};
    Py_ssize_t vl[KV_NAMES] = {0, 0, 0, 0, 0};
    long long seq = 0, ms = 0;
    int op = 0, ok = kv_fields((const unsigned char *)view.buf, view.len, v, vl);
    if (ok && v[KV_SEQ] != NULL)
        ok = (seq = parse_dec(v[KV_SEQ], (size_t)vl[KV_SEQ])) >= 0;
    if (ok && v[KV_TIME] != NULL)
        ok = iso_parse((const char *)v[KV_TIME], vl[KV_TIME], &ms);
    if (ok && v[KV_OP] != NULL) {
        size_t len = (size_t)vl[KV_OP];
        for (op = 0; op < 3; op++) {
            if (len == strlen(kv_op_names[op]) && memcmp(v[KV_OP], kv_op_names[op], len) == 0)
                break;
        }
        ok = op < 3;
    } else if (ok && v[KV_REASON] != NULL) {
        op = vl[KV_REASON] == 6 && memcmp(v[KV_REASON], "Remove", 6) == 0 ? 1 : 2;
    }
    PyObject *out = NULL;
    if (!ok) {
        out = Py_NewRef(Py_None);
    } else {
        PyObject *reason = op == 0 || v[KV_REASON] == NULL ? Py_NewRef(Py_None)
                           : PyUnicode_DecodeASCII((const char *)v[KV_REASON], vl[KV_REASON], NULL);
        PyObject *o_seq = PyLong_FromLongLong(seq), *o_ms = PyLong_FromLongLong(ms), *zero = PyLong_FromLong(0);
        if (reason != NULL && o_seq != NULL && o_ms != NULL && zero != NULL) {
            PyObject *a[8] = {args[1], args[2], args[4], o_seq, o_ms, kv_ops[op], zero, reason};
            out = PyObject_Vectorcall(args[0], a, 8, NULL);
        }
        Py_XDECREF(reason); Py_XDECREF(o_seq); Py_XDECREF(o_ms); Py_XDECREF(zero);
    }
    PyBuffer_Release(&view);
    return out;
}

/*
 * RecordMaker(cls, fields): a callable that makes an instance of cls from
 * len(fields) arguments, each stored in the slot of that name, running no
 * Python code: what cls(*args) makes when its __init__ only stores its
 * arguments, as the engine's records' do (Msg, Request: records.py).  The
 * engine makes it only for such a class (the check is the caller's);
 * ValueError when fields are not exactly the object slots of cls and its
 * bases, or cls has a __dict__ or is not allocated by tp_alloc.  ``cls``
 * is an attribute.  The made objects are complete: every slot set.
 */
#define MAKER_MAX 16

typedef struct {
    PyObject_HEAD
    PyTypeObject *cls;
    Py_ssize_t n;
    Py_ssize_t off[MAKER_MAX];
    vectorcallfunc vectorcall;
} MakerObject;

/* the object slots (T_OBJECT_EX members) cls and its bases declare: how many */
static Py_ssize_t
count_slots(PyTypeObject *cls)
{
    Py_ssize_t count = 0;
    PyObject *mro = cls->tp_mro;
    for (Py_ssize_t i = 0; mro != NULL && i < PyTuple_GET_SIZE(mro); i++) {
        PyObject *d = ((PyTypeObject *)PyTuple_GET_ITEM(mro, i))->tp_dict, *k, *v;
        Py_ssize_t pos = 0;
        while (d != NULL && PyDict_Next(d, &pos, &k, &v)) {
            if (Py_IS_TYPE(v, &PyMemberDescr_Type)
                && ((PyMemberDescrObject *)v)->d_member->type == Py_T_OBJECT_EX)
                count++;
        }
    }
    return count;
}

static PyObject *
maker_call(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    MakerObject *mk = (MakerObject *)self;
    Py_ssize_t n = PyVectorcall_NARGS(nargsf);
    if (n != mk->n || (kwnames != NULL && PyTuple_GET_SIZE(kwnames) > 0)) {
        PyErr_Format(PyExc_TypeError, "%s maker takes %zd positional arguments", mk->cls->tp_name, mk->n);
        return NULL;
    }
    PyObject *o = mk->cls->tp_alloc(mk->cls, 0);
    if (o == NULL)
        return NULL;
    for (Py_ssize_t k = 0; k < n; k++)
        *(PyObject **)((char *)o + mk->off[k]) = Py_NewRef(args[k]);
    return o;
}

static PyObject *
maker_new(PyTypeObject *type, PyObject *args, PyObject *kw)
{
    PyObject *cls, *fields;
    if (!PyArg_ParseTuple(args, "O!O!:RecordMaker", &PyType_Type, &cls, &PyTuple_Type, &fields))
        return NULL;
    PyTypeObject *t = (PyTypeObject *)cls;
    Py_ssize_t n = PyTuple_GET_SIZE(fields);
    if (n > MAKER_MAX || t->tp_dictoffset != 0 || t->tp_alloc == NULL || count_slots(t) != n) {
        PyErr_Format(PyExc_ValueError, "%s: not a record of %zd slots", t->tp_name, n);
        return NULL;
    }
    MakerObject *mk = (MakerObject *)type->tp_alloc(type, 0);
    if (mk == NULL)
        return NULL;
    mk->cls = (PyTypeObject *)Py_NewRef(cls);
    mk->n = n;
    mk->vectorcall = maker_call;
    for (Py_ssize_t k = 0; k < n; k++) {
        PyObject *d = PyObject_GetAttr(cls, PyTuple_GET_ITEM(fields, k));
        int ok = d != NULL && Py_IS_TYPE(d, &PyMemberDescr_Type);
        if (ok) {
            PyMemberDef *m = ((PyMemberDescrObject *)d)->d_member;
            ok = m->type == Py_T_OBJECT_EX && !(m->flags & Py_READONLY) && m->offset > 0
                 && m->offset + (Py_ssize_t)sizeof(PyObject *) <= t->tp_basicsize
                 && PyType_IsSubtype(t, ((PyMemberDescrObject *)d)->d_common.d_type);
            mk->off[k] = m->offset;
            for (Py_ssize_t j = 0; ok && j < k; j++)
                ok = mk->off[j] != m->offset;
        }
        Py_XDECREF(d);
        if (!ok) {
            Py_DECREF(mk);
            if (!PyErr_Occurred() || PyErr_ExceptionMatches(PyExc_AttributeError)) {
                PyErr_Clear();
                PyErr_Format(PyExc_ValueError, "%s: %R is not one of its slots", t->tp_name,
                             PyTuple_GET_ITEM(fields, k));
            }
            return NULL;
        }
    }
    return (PyObject *)mk;
}

static void
maker_dealloc(MakerObject *mk)
{
    Py_XDECREF(mk->cls);
    Py_TYPE(mk)->tp_free((PyObject *)mk);
}

static PyMemberDef maker_members[] = {
    {"cls", T_OBJECT, offsetof(MakerObject, cls), READONLY, "the class it makes"},
    {NULL}
};

static PyTypeObject MakerType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "tclnats_py._natsproto.RecordMaker",
    .tp_basicsize = sizeof(MakerObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_doc = "RecordMaker(cls, fields): cls's instances from one argument per slot, no Python code run.",
    .tp_vectorcall_offset = offsetof(MakerObject, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_members = maker_members,
    .tp_new = maker_new,
    .tp_dealloc = (destructor)maker_dealloc,
};

/* ------------------------------------------------------------ the blocking face's publish
 *
 * SyncPub(engine, lock, heads, connected, chunk, work): sync/client.py's
 * publish fast path in one call.  publish(subject, data[, reply]) frames
 * the PUB as pub_frame does (heads; max_payload, an attribute, 0 until the
 * server's INFO; a reply checked unless engine.options.check_subjects is
 * false) and queues it as Engine.publish_frame does while engine.status is
 * connected:
 * appended to engine._out with _out_size and stats["out_msgs"] counted when
 * a write is due already (engine._flush_signalled), else through
 * engine.publish_frame(frame, chunk); when the driver has work then (effects
 * to carry out, or chunk bytes queued) work() is called, the lock held.
 * Returns None when nothing was queued (the general path, whose checks and
 * errors are the engine's), else False.
 *
 * The engine is the client's lock's (sync/threads.py: every engine call is
 * made holding it, and it is released only where the engine is whole).  The
 * append needs no Python code and does not let the GIL go, so while nobody
 * holds the lock (lock.locked() false, asked under the GIL) it is made
 * without taking it; otherwise, and for publish_frame's and work's Python,
 * the lock is taken (its acquire, which waits with the GIL released).  The
 * engine's attributes are read and written in its __dict__ (plain instance
 * attributes; Engine has no descriptors of these names).  pubs counts the
 * messages queued here.
 */
typedef struct {
    PyObject_HEAD
    PyObject *engine, *dict, *acquire, *release, *locked, *heads, *connected, *chunk_obj, *work;
    PyObject *append;           /* type(engine._out).append, for that type only */
    PyTypeObject *out_type;
    PyObject *max_payload;      /* an int */
    Py_ssize_t chunk;
    long long pubs;
} SyncPubObject;

static PyObject *sp_status, *sp_flush_signalled, *sp_out, *sp_out_size, *sp_stats, *sp_out_msgs, *sp_options,
                *sp_check_subjects, *sp_publish_frame;

static int
syncpub_names(void)
{
    static const char *names[9] = {"status", "_flush_signalled", "_out", "_out_size", "stats", "out_msgs",
                                   "options", "check_subjects", "publish_frame"};
    PyObject **slots[9] = {&sp_status, &sp_flush_signalled, &sp_out, &sp_out_size, &sp_stats, &sp_out_msgs,
                           &sp_options, &sp_check_subjects, &sp_publish_frame};
    for (int k = 0; k < 9; k++) {
        if (*slots[k] == NULL && (*slots[k] = PyUnicode_InternFromString(names[k])) == NULL)
            return -1;
    }
    return 0;
}

/* d[name] (an exact int) += by; *now its new value; -1 on error */
static int
syncpub_add(PyObject *d, PyObject *name, Py_ssize_t by, Py_ssize_t *now)
{
    PyObject *v = PyDict_GetItemWithError(d, name);     /* borrowed */
    Py_ssize_t n;
    if (v == NULL || !PyLong_CheckExact(v)) {
        if (!PyErr_Occurred())
            PyErr_Format(PyExc_TypeError, "the engine's %R is not an int", name);
        return -1;
    }
    if ((n = PyLong_AsSsize_t(v)) == -1 && PyErr_Occurred())
        return -1;
    if ((v = PyLong_FromSsize_t(n + by)) == NULL)
        return -1;
    int rc = PyDict_SetItem(d, name, v);
    Py_DECREF(v);
    *now = n + by;
    return rc;
}

/* Engine.publish_frame's append (a write is due already): frame to _out,
 * counted; no Python code runs.  1: chunk bytes queued; 0; -2 an exception */
static int
syncpub_append(SyncPubObject *self, PyObject *out, PyObject *frame)
{
    PyObject *stats = PyDict_GetItemWithError(self->dict, sp_stats), *args[2] = {out, frame}, *r;
    Py_ssize_t size, msgs;
    if (stats == NULL || !PyDict_CheckExact(stats)) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_TypeError, "the engine's stats is not a dict");
        return -2;
    }
    if ((r = PyObject_Vectorcall(self->append, args, 2, NULL)) == NULL)
        return -2;
    Py_DECREF(r);
    self->pubs++;
    if (syncpub_add(self->dict, sp_out_size, PyBytes_GET_SIZE(frame), &size) < 0
        || syncpub_add(stats, sp_out_msgs, 1, &msgs) < 0)
        return -2;
    return size >= self->chunk;
}

/* queue frame: 1 or 0 (queued; 1: the driver has work), -1 not connected
 * (nothing queued), -2 an exception; *locked: whether it took the lock
 * (held on return then, also on error) */
static int
syncpub_queue(SyncPubObject *self, PyObject *frame, int *locked)
{
    PyObject *d = self->dict, *v, *out;
    *locked = 1;
#ifndef Py_GIL_DISABLED
    if ((v = PyObject_CallNoArgs(self->locked)) == NULL)
        return -2;
    *locked = v != Py_False;
    Py_DECREF(v);
#endif
    if (*locked) {
        if ((v = PyObject_CallNoArgs(self->acquire)) == NULL) {
            *locked = 0;
            return -2;
        }
        Py_DECREF(v);
    }
    if ((v = PyDict_GetItemWithError(d, sp_status)) != self->connected)
        return v == NULL && PyErr_Occurred() ? -2 : -1;
    if ((v = PyDict_GetItemWithError(d, sp_flush_signalled)) == Py_True
        && (out = PyDict_GetItemWithError(d, sp_out)) != NULL && Py_IS_TYPE(out, self->out_type))
        return syncpub_append(self, out, frame);
    if (PyErr_Occurred())
        return -2;
    /* the first message since the last write (Engine.publish_frame asks
       for one), or an _out of another type: the engine's method, Python
       code, under the lock */
    if (!*locked) {
        if ((v = PyObject_CallNoArgs(self->acquire)) == NULL)
            return -2;
        Py_DECREF(v);
        *locked = 1;
    }
    if ((v = PyObject_CallMethodObjArgs(self->engine, sp_publish_frame, frame, self->chunk_obj, NULL)) == NULL)
        return -2;
    int work = PyObject_IsTrue(v);
    Py_DECREF(v);
    if (work < 0)
        return -2;
    self->pubs++;
    return work;
}

static PyObject *
syncpub_publish(SyncPubObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    PyObject *reply = nargs == 3 ? args[2] : Py_None, *frame, *r;
    int check = 1, queued, locked;
    if (nargs < 2 || nargs > 3) {
        PyErr_SetString(PyExc_TypeError, "publish(subject, data[, reply])");
        return NULL;
    }
    if (self->engine == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "SyncPub cleared");
        return NULL;
    }
    if (self->max_payload == NULL)
        Py_RETURN_NONE;     /* (deleted) */
    if (reply != Py_None) {
        PyObject *o = PyObject_GetAttr(self->engine, sp_options), *c;
        if (o == NULL)
            return NULL;
        c = PyObject_GetAttr(o, sp_check_subjects);
        Py_DECREF(o);
        if (c == NULL)
            return NULL;
        check = PyObject_IsTrue(c);
        Py_DECREF(c);
        if (check < 0)
            return NULL;
    }
    frame = frame_of(self->heads, args[0], args[1], self->max_payload, reply, check);
    if (frame == NULL || frame == Py_None)
        return frame;
    queued = syncpub_queue(self, frame, &locked);
    Py_DECREF(frame);
    if (queued == 1 && !locked) {
        if ((r = PyObject_CallNoArgs(self->acquire)) == NULL)
            return NULL;
        Py_DECREF(r);
        locked = 1;
    }
    if (queued == 1) {
        if ((r = PyObject_CallNoArgs(self->work)) == NULL)
            queued = -2;
        Py_XDECREF(r);
    }
    if (locked) {
        PyObject *et, *ev, *tb;
        PyErr_Fetch(&et, &ev, &tb);
        if ((r = PyObject_CallNoArgs(self->release)) == NULL) {
            Py_XDECREF(et); Py_XDECREF(ev); Py_XDECREF(tb);
            return NULL;
        }
        Py_DECREF(r);
        PyErr_Restore(et, ev, tb);
    }
    if (queued == -2)
        return NULL;
    if (queued == -1)
        Py_RETURN_NONE;
    Py_RETURN_FALSE;
}

static PyObject *
syncpub_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    PyObject *engine, *lock, *heads, *connected, *work, *out;
    Py_ssize_t chunk;
    if (kwds != NULL && PyDict_GET_SIZE(kwds) != 0) {
        PyErr_SetString(PyExc_TypeError, "SyncPub() takes no keyword arguments");
        return NULL;
    }
    if (!PyArg_ParseTuple(args, "OOO!OnO:SyncPub", &engine, &lock, &PyDict_Type, &heads, &connected, &chunk,
                          &work)
        || syncpub_names() < 0)
        return NULL;
    SyncPubObject *o = (SyncPubObject *)type->tp_alloc(type, 0);
    if (o == NULL)
        return NULL;
    o->engine = Py_NewRef(engine);
    o->heads = Py_NewRef(heads);
    o->connected = Py_NewRef(connected);
    o->work = Py_NewRef(work);
    o->chunk = chunk;
    o->max_payload = PyLong_FromLong(0);
    if (o->max_payload == NULL || (o->chunk_obj = PyLong_FromSsize_t(chunk)) == NULL
        || (o->dict = PyObject_GenericGetDict(engine, NULL)) == NULL
        || (o->acquire = PyObject_GetAttrString(lock, "acquire")) == NULL
        || (o->release = PyObject_GetAttrString(lock, "release")) == NULL
        || (o->locked = PyObject_GetAttrString(lock, "locked")) == NULL
        || (out = PyObject_GetAttr(engine, sp_out)) == NULL) {
        Py_DECREF(o);
        return NULL;
    }
    o->out_type = (PyTypeObject *)Py_NewRef(Py_TYPE(out));
    Py_DECREF(out);
    if (!PyDict_Check(o->dict)
        || (o->append = PyObject_GetAttrString((PyObject *)o->out_type, "append")) == NULL) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_TypeError, "SyncPub: the engine has no __dict__");
        Py_DECREF(o);
        return NULL;
    }
    return (PyObject *)o;
}

static int
syncpub_traverse(SyncPubObject *self, visitproc visit, void *arg)
{
    Py_VISIT(self->engine);
    Py_VISIT(self->dict);
    Py_VISIT(self->acquire);
    Py_VISIT(self->release);
    Py_VISIT(self->locked);
    Py_VISIT(self->heads);
    Py_VISIT(self->append);
    Py_VISIT(self->out_type);
    Py_VISIT(self->work);
    return 0;
}

static int
syncpub_clear(SyncPubObject *self)
{
    Py_CLEAR(self->engine);
    Py_CLEAR(self->dict);
    Py_CLEAR(self->acquire);
    Py_CLEAR(self->release);
    Py_CLEAR(self->locked);
    Py_CLEAR(self->heads);
    Py_CLEAR(self->connected);
    Py_CLEAR(self->chunk_obj);
    Py_CLEAR(self->append);
    Py_CLEAR(self->out_type);
    Py_CLEAR(self->work);
    Py_CLEAR(self->max_payload);
    return 0;
}

static void
syncpub_dealloc(SyncPubObject *self)
{
    PyObject_GC_UnTrack(self);
    syncpub_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyMethodDef syncpub_methods[] = {
    {"publish", (PyCFunction)(void (*)(void))syncpub_publish, METH_FASTCALL,
     "publish(subject, data[, reply]) -> None (the general path) or False (queued; work() called, the lock"
     " held, when the driver has work)"},
    {NULL, NULL, 0, NULL}
};

static PyMemberDef syncpub_members[] = {
    {"max_payload", T_OBJECT_EX, offsetof(SyncPubObject, max_payload), 0,
     "the largest payload framed here (an int)"},
    {"pubs", T_LONGLONG, offsetof(SyncPubObject, pubs), READONLY, "the messages queued here"},
    {NULL, 0, 0, 0, NULL}
};

static PyTypeObject SyncPubType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "tclnats_py._natsproto.SyncPub",
    .tp_basicsize = sizeof(SyncPubObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "The blocking face's publish fast path (sync/client.py).",
    .tp_methods = syncpub_methods,
    .tp_members = syncpub_members,
    .tp_new = syncpub_new,
    .tp_traverse = (traverseproc)syncpub_traverse,
    .tp_clear = (inquiry)syncpub_clear,
    .tp_dealloc = (destructor)syncpub_dealloc,
};

/* SyncPub in the module m */
static int
syncpub_register(PyObject *m)
{
    if (PyType_Ready(&SyncPubType) < 0)
        return -1;
    return PyModule_AddObjectRef(m, "SyncPub", (PyObject *)&SyncPubType);
}

/* ------------------------------------------------------------ WebSocket frames
 *
 * WsReader(max_frame): one WebSocket's server->client frames unframed by
 * natscodec_ws_unframe (engine/websocket.py, when no extension was agreed).
 * feed(data) -> the data frames' payload bytes; where it stopped at
 * something else, (payload, kind, info): kind 1 a control frame (info its
 * bytes: the caller hands it to wsproto, then calls feed(b"") for the rest),
 * 2 a data frame past max_frame (info the length it claimed), 3 a bad frame
 * (info why).  ws_frame(data) -> the masked binary frame of data.
 */
typedef struct {
    PyObject_HEAD
    natscodec_ws st;
    unsigned long long max;
    PyObject *rest;           /* bytes: what is not consumed yet starts at rest_at (NULL: nothing) */
    Py_ssize_t rest_at;
} WsReaderObject;

static PyObject *
ws_reader_new(PyTypeObject *type, PyObject *args, PyObject *kw)
{
    long long max;
    WsReaderObject *self;
    if (!PyArg_ParseTuple(args, "L", &max))
        return NULL;
    if (max < 0) {
        PyErr_SetString(PyExc_ValueError, "max_frame must be >= 0");
        return NULL;
    }
    self = (WsReaderObject *)type->tp_alloc(type, 0);
    if (self != NULL)
        self->max = (unsigned long long)max;
    return (PyObject *)self;
}

static void
ws_reader_dealloc(WsReaderObject *self)
{
    Py_XDECREF(self->rest);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* the bytes to unframe: the rest, then data (a new reference in *src, which
 * holds in[0:n) ) */
static int
ws_input(WsReaderObject *self, PyObject *data, PyObject **src, const unsigned char **in, Py_ssize_t *n)
{
    Py_ssize_t rn = self->rest != NULL ? PyBytes_GET_SIZE(self->rest) - self->rest_at : 0;
    if (rn == 0 && PyBytes_CheckExact(data)) {
        *src = Py_NewRef(data);
        *in = (const unsigned char *)PyBytes_AS_STRING(data);
        *n = PyBytes_GET_SIZE(data);
        return 0;
    }
    Py_buffer view;
    if (PyObject_GetBuffer(data, &view, PyBUF_SIMPLE) < 0)
        return -1;
    if (view.len == 0 && rn > 0) {
        *src = Py_NewRef(self->rest);
        *in = (const unsigned char *)PyBytes_AS_STRING(self->rest) + self->rest_at;
        *n = rn;
        PyBuffer_Release(&view);
        return 0;
    }
    *src = PyBytes_FromStringAndSize(NULL, rn + view.len);
    if (*src == NULL) {
        PyBuffer_Release(&view);
        return -1;
    }
    if (rn > 0)
        memcpy(PyBytes_AS_STRING(*src), PyBytes_AS_STRING(self->rest) + self->rest_at, (size_t)rn);
    memcpy(PyBytes_AS_STRING(*src) + rn, view.buf, (size_t)view.len);
    PyBuffer_Release(&view);
    *in = (const unsigned char *)PyBytes_AS_STRING(*src);
    *n = rn + view.len;
    return 0;
}

static PyObject *
ws_reader_feed(WsReaderObject *self, PyObject *data)
{
    PyObject *src, *out, *info;
    const unsigned char *in;
    Py_ssize_t n;
    size_t olen, used;
    int r;
    if (ws_input(self, data, &src, &in, &n) < 0)
        return NULL;
    out = PyBytes_FromStringAndSize(NULL, n);
    if (out == NULL) {
        Py_DECREF(src);
        return NULL;
    }
    r = natscodec_ws_unframe(&self->st, in, (size_t)n, self->max, (unsigned char *)PyBytes_AS_STRING(out),
                             &olen, &used);
    /* (info first: the control frame's bytes are in src) */
    if (r == NATSCODEC_WS_MORE)
        info = NULL;
    else if (r == NATSCODEC_WS_CONTROL)
        info = PyBytes_FromStringAndSize((const char *)in + self->st.ctl_at, (Py_ssize_t)self->st.ctl_len);
    else if (r == NATSCODEC_WS_TOOBIG)
        info = PyLong_FromUnsignedLongLong(self->st.claimed);
    else
        info = PyUnicode_FromString(natscodec_ws_reason(self->st.bad));
    /* what is left: rest_at of src (which may be the old rest itself) */
    Py_CLEAR(self->rest);
    if ((Py_ssize_t)used < n) {
        self->rest = src;
        self->rest_at = (Py_ssize_t)(in + used - (const unsigned char *)PyBytes_AS_STRING(src));
    } else {
        Py_DECREF(src);
    }
    if (r != NATSCODEC_WS_MORE && info == NULL) {
        Py_DECREF(out);
        return NULL;
    }
    if ((Py_ssize_t)olen != n && _PyBytes_Resize(&out, (Py_ssize_t)olen) < 0) {
        Py_XDECREF(info);
        return NULL;
    }
    if (r == NATSCODEC_WS_MORE)
        return out;
    return Py_BuildValue("(NiN)", out, r, info);
}

static PyObject *
ws_reader_state(WsReaderObject *self, PyObject *Py_UNUSED(ignored))
{
    PyObject *rest = self->rest != NULL
        ? PyBytes_FromStringAndSize(PyBytes_AS_STRING(self->rest) + self->rest_at,
                                    PyBytes_GET_SIZE(self->rest) - self->rest_at)
        : PyBytes_FromStringAndSize(NULL, 0);
    if (rest == NULL)
        return NULL;
    return Py_BuildValue("(NKi)", rest, self->st.left, self->st.in_msg);
}

static PyMethodDef ws_reader_methods[] = {
    {"feed", (PyCFunction)ws_reader_feed, METH_O,
     "feed(data) -> payload bytes, or (payload, kind, info) where it stopped (1 control frame, 2 too big, 3 bad)"},
    {"state", (PyCFunction)ws_reader_state, METH_NOARGS,
     "state() -> (bytes not consumed, payload bytes of the current frame still to come, in a fragmented message)"},
    {NULL, NULL, 0, NULL}
};

static PyTypeObject WsReaderType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "tclnats_py._natsproto.WsReader",
    .tp_basicsize = sizeof(WsReaderObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "WsReader(max_frame): a WebSocket's server frames unframed (natscodec.h).",
    .tp_methods = ws_reader_methods,
    .tp_new = ws_reader_new,
    .tp_dealloc = (destructor)ws_reader_dealloc,
};

/* mask keys: 4 bytes each from os.urandom, 1024 keys a call; a forked
 * child draws new ones (it must not repeat its parent's keys) */
static unsigned char ws_keys[4096];
static size_t ws_keys_at = sizeof ws_keys;
static PyObject *ws_urandom = NULL;

static void
ws_keys_forget(void)
{
    ws_keys_at = sizeof ws_keys;
}

static int
ws_key(unsigned char key[4])
{
    if (ws_keys_at + 4 > sizeof ws_keys) {
        PyObject *b;
        if (ws_urandom == NULL) {
            PyObject *os = PyImport_ImportModule("os");
            if (os == NULL)
                return -1;
            ws_urandom = PyObject_GetAttrString(os, "urandom");
            Py_DECREF(os);
            if (ws_urandom == NULL)
                return -1;
        }
        b = PyObject_CallFunction(ws_urandom, "n", (Py_ssize_t)sizeof ws_keys);
        if (b == NULL)
            return -1;
        if (!PyBytes_Check(b) || PyBytes_GET_SIZE(b) != (Py_ssize_t)sizeof ws_keys) {
            Py_DECREF(b);
            PyErr_SetString(PyExc_RuntimeError, "os.urandom gave too few bytes");
            return -1;
        }
        memcpy(ws_keys, PyBytes_AS_STRING(b), sizeof ws_keys);
        Py_DECREF(b);
        ws_keys_at = 0;
    }
    memcpy(key, ws_keys + ws_keys_at, 4);
    ws_keys_at += 4;
    return 0;
}

static PyObject *
ws_frame(PyObject *self, PyObject *data)
{
    Py_buffer view;
    unsigned char key[4];
    PyObject *out;
    if (PyObject_GetBuffer(data, &view, PyBUF_SIMPLE) < 0)
        return NULL;
    if (ws_key(key) < 0) {
        PyBuffer_Release(&view);
        return NULL;
    }
    out = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)natscodec_ws_frame_len((size_t)view.len));
    if (out != NULL)
        natscodec_ws_frame((unsigned char *)PyBytes_AS_STRING(out), view.buf, (size_t)view.len, key);
    PyBuffer_Release(&view);
    return out;
}

static PyObject *
setup(PyObject *self, PyObject *args)
{
    PyObject *m, *pi, *po, *ok;
    if (!PyArg_ParseTuple(args, "OOOO", &m, &pi, &po, &ok))
        return NULL;
    Py_XSETREF(MSG_TAG, Py_NewRef(m));
    Py_XSETREF(PING_OP, Py_NewRef(pi));
    Py_XSETREF(PONG_OP, Py_NewRef(po));
    Py_XSETREF(OK_OP, Py_NewRef(ok));
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"scan", scan, METH_VARARGS,
     "scan(buf, pos, ops) -> pos: append the plain MSG/HMSG/PING/PONG/+OK operations from pos to ops;"
     " stop at the first thing the Python parser must look at"},
    {"pub_frame", (PyCFunction)(void (*)(void))pub_frame, METH_FASTCALL,
     "pub_frame(heads, subject, data, limit[, reply, check]) -> the PUB frame, or None for the general path"},
    {"take_msgs", (PyCFunction)(void (*)(void))take_msgs, METH_FASTCALL,
     "take_msgs(ops, i, sid, cls, out) -> the index after the plain MSG operations for sid from i, made cls"
     " instances in out; None when cls lacks Msg's slots"},
    {"headers", headers, METH_O,
     "headers(block) -> parse_headers(block) for a plain block (NATS/1.0, ASCII lines), else None"},
    {"kv_entry", (PyCFunction)(void (*)(void))kv_entry, METH_FASTCALL,
     "kv_entry(make, bucket, key, block, payload) -> the entry of a KV direct get's common reply, or None"},
    {"step", (PyCFunction)(void (*)(void))step, METH_FASTCALL,
     "step(cb, msg) -> None, (coro, yielded) or (result, module): cb(msg) run up to its first wait"},
    {"scan_columns", (PyCFunction)(void (*)(void))scan_columns, METH_FASTCALL,
     "scan_columns(buf, pos, subjects, datas, ts, events, last, sid, ack_prefix, ping_event, last_event)"
     " -> (pos, seqs, done): a pull's plain deliveries into columns (engine/js/columns.py)"},
    {"scan_direct_columns", (PyCFunction)(void (*)(void))scan_direct_columns, METH_FASTCALL,
     "scan_direct_columns(buf, pos, subjects, datas, ts, events, last, sid, ping_event, last_event)"
     " -> (pos, seqs, done): a batch direct get's plain replies into columns (engine/js/columns.py)"},
    {"data_size", data_size, METH_O, "data_size(msgs) -> the sum of len(m.data) over msgs"},
    {"encode_pub", (PyCFunction)(void (*)(void))encode_pub, METH_FASTCALL,
     "encode_pub(subject, reply, payload[, header]) -> protocol.encode_pub's frame, from the C framer"},
#ifndef _WIN32
    {"read_reply", (PyCFunction)(void (*)(void))read_reply, METH_FASTCALL,
     "read_reply(fd, sid, reply, budget) -> (reply_to, header, payload, n) when what came is exactly the"
     " reply on sid to subject reply; else the bytes read, b'' (end of stream), None (nothing) or str (error)"},
#endif
    {"iso_ms", iso_ms, METH_O,
     "iso_ms(ts) -> iso_to_ms(ts) for the server's form of a time (UTC, a fraction), else None"},
    {"plain_ack", (PyCFunction)(void (*)(void))plain_ack, METH_FASTCALL,
     "plain_ack(data[, cls]) -> the PubAck dict (made cls()) of a plain publish ack (parse_ack_fast's), else None"},
    {"plain_ack_seq", (PyCFunction)plain_ack_seq, METH_O,
     "plain_ack_seq(data) -> plain_ack(data)['seq'] of an ASCII plain publish ack, else None"},
    {"request_pub", (PyCFunction)(void (*)(void))request_pub, METH_FASTCALL,
     "request_pub(prefix, rid, subject, payload) -> (f'{prefix}.{rid}', the PUB frame to it)"},
    {"ws_frame", ws_frame, METH_O,
     "ws_frame(data) -> data in one binary WebSocket frame, masked with a key from os.urandom"},
    {"setup", setup, METH_VARARGS, "setup(msg_tag, ping_op, pong_op, ok_op): the Python parser's tag objects"},
    {NULL, NULL, 0, NULL}
};

static struct PyModuleDef moddef = {
    PyModuleDef_HEAD_INIT, "_natsproto",
    "The optional accelerator of tclnats_py.engine.protocol.Parser (see natsproto.c).", -1, methods,
};

PyMODINIT_FUNC
PyInit__natsproto(void)
{
    if (PyType_Ready(&DoneType) < 0 || PyType_Ready(&SpinType) < 0 || PyType_Ready(&WsReaderType) < 0
        || PyType_Ready(&MakerType) < 0)
        return NULL;
    static const char *names[5] = {"subject", "data", "reply", "headers", "sid"};
    for (int k = 0; k < 5; k++) {
        if (slot_names[k] == NULL && (slot_names[k] = PyUnicode_InternFromString(names[k])) == NULL)
            return NULL;
    }
    for (int k = 0; k < N_KNOWN; k++) {
        if (known_keys[k] == NULL && (known_keys[k] = PyUnicode_InternFromString(known_names[k])) == NULL)
            return NULL;
        known_len[k] = (unsigned char)strlen(known_names[k]);
    }
    for (int k = 0; k < 3; k++) {
        if (kv_ops[k] == NULL && (kv_ops[k] = PyUnicode_InternFromString(kv_op_names[k])) == NULL)
            return NULL;
    }
    static const char *ack_names[4] = {"stream", "seq", "domain", "duplicate"};
    for (int k = 0; k < 4; k++) {
        if (ack_keys[k] == NULL && (ack_keys[k] = PyUnicode_InternFromString(ack_names[k])) == NULL)
            return NULL;
    }
    if (empty_args == NULL && (empty_args = PyTuple_New(0)) == NULL)
        return NULL;
    PyObject *m = PyModule_Create(&moddef);
    if (m == NULL)
        return NULL;
#ifndef _WIN32
    pthread_atfork(NULL, NULL, ws_keys_forget);
#endif
    if (PyModule_AddObjectRef(m, "Done", (PyObject *)&DoneType) < 0
        || PyModule_AddObjectRef(m, "SpinPolicy", (PyObject *)&SpinType) < 0
        || PyModule_AddObjectRef(m, "RecordMaker", (PyObject *)&MakerType) < 0
        || PyModule_AddObjectRef(m, "WsReader", (PyObject *)&WsReaderType) < 0
        || syncpub_register(m) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
