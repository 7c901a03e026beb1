/*
 * natsproto.c -- the optional accelerator of tclnats_py.engine.protocol.Parser.
 *
 * scan(buf, pos, ops) walks the byte string buf from pos and appends to the
 * list ops every operation it can decode with certainty: MSG and HMSG frames
 * whose control line is plain (ASCII, upper-case verb, fields separated by
 * spaces or tabs, decimal sid and sizes), PING, PONG and +OK.  It returns the
 * position of the first byte it did not consume.  At anything else (INFO,
 * -ERR, an incomplete line or payload, a malformed or unusual line) it stops
 * and the pure-Python parser handles that one operation -- with its own
 * rules and its own error messages -- and calls scan again.  So the
 * operations and the errors are the pure-Python parser's by construction;
 * this file only makes the common frames cheap.
 *
 * setup(msg_tag, ping_op, pong_op, ok_op) hands over the objects the Python
 * parser uses for the tags, so that ops are identical (``op[0] is MSG``).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>
#include <structmember.h>  /* PyMemberDef (take_msgs) */
#include "subject_rule.h"  /* tclnats_plain_subject, shared with tclfast.c */

static PyObject *MSG_TAG = NULL, *PING_OP = NULL, *PONG_OP = NULL, *OK_OP = NULL;

/* a field: [start, end) within the line */
typedef struct { Py_ssize_t s, e; } field_t;

static int is_sep(unsigned char c) { return c == ' ' || c == '\t'; }

/* the fields of line[0:len): at most 7; -1 when the line has a character the
   Python parser's bytes.split() would treat otherwise (other whitespace) or
   a non-ASCII byte */
static int split_fields(const unsigned char *line, Py_ssize_t len, field_t *f, int max)
{
    int n = 0;
    Py_ssize_t i = 0;
    while (i < len) {
        unsigned char c = line[i];
        if (is_sep(c)) { i++; continue; }
        if (n == max) return -1;
        f[n].s = i;
        while (i < len) {
            c = line[i];
            if (is_sep(c)) break;
            if (c < 0x21 || c >= 0x7f) return -1;   /* \r \n \v \f, controls, non-ASCII */
            i++;
        }
        f[n].e = i;
        n++;
    }
    return n;
}

/* a decimal of at most 18 digits; -1 if not all digits or too long */
static long long parse_dec(const unsigned char *p, Py_ssize_t len)
{
    long long v = 0;
    if (len <= 0 || len > 18) return -1;
    for (Py_ssize_t i = 0; i < len; i++) {
        unsigned char c = p[i];
        if (c < '0' || c > '9') return -1;
        v = v * 10 + (c - '0');
    }
    return v;
}

static PyObject *ascii_str(const unsigned char *p, Py_ssize_t len)
{
    /* split_fields guaranteed printable ASCII */
    PyObject *s = PyUnicode_New(len, 127);
    if (s == NULL) return NULL;
    memcpy(PyUnicode_DATA(s), p, (size_t)len);
    return s;
}

static PyObject *scan(PyObject *self, PyObject *args)
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
    field_t f[7];
    while (pos < n) {
        const unsigned char *start = buf + pos;
        const unsigned char *cr = memchr(start, '\r', (size_t)(n - pos));
        if (cr == NULL || cr + 1 >= buf + n || cr[1] != '\n')
            break;                                  /* incomplete line, or a lone CR: Python decides */
        Py_ssize_t eol = cr - buf;
        Py_ssize_t len = eol - pos;
        unsigned char c = start[0];
        if (c == 'M' || c == 'H') {
            int nf = split_fields(start, len, f, 7);
            if (nf < 4) break;
            int hmsg;
            Py_ssize_t l0 = f[0].e - f[0].s;
            if (l0 == 3 && memcmp(start + f[0].s, "MSG", 3) == 0) hmsg = 0;
            else if (l0 == 4 && memcmp(start + f[0].s, "HMSG", 4) == 0) hmsg = 1;
            else break;
            field_t *subj = &f[1], *sidf = &f[2], *reply = NULL, *hsf = NULL, *szf;
            if (!hmsg) {
                if (nf == 5) { reply = &f[3]; szf = &f[4]; }
                else if (nf == 4) { szf = &f[3]; }
                else break;
            } else {
                if (nf == 5) { hsf = &f[3]; szf = &f[4]; }
                else if (nf == 6) { reply = &f[3]; hsf = &f[4]; szf = &f[5]; }
                else break;
            }
            long long sid = parse_dec(start + sidf->s, sidf->e - sidf->s);
            long long size = parse_dec(start + szf->s, szf->e - szf->s);
            long long hsize = 0;
            if (hsf != NULL) hsize = parse_dec(start + hsf->s, hsf->e - hsf->s);
            if (sid < 0 || size < 0 || hsize < 0 || hsize > size || size > PY_SSIZE_T_MAX / 2)
                break;
            Py_ssize_t pstart = eol + 2;
            if (pstart + (Py_ssize_t)size + 2 > n)
                break;                              /* the payload is not all here */
            Py_ssize_t pend = pstart + (Py_ssize_t)size;
            if (buf[pend] != '\r' || buf[pend + 1] != '\n')
                break;
            PyObject *o_subj = ascii_str(start + subj->s, subj->e - subj->s);
            PyObject *o_sid = PyLong_FromLongLong(sid);
            PyObject *o_reply = reply ? ascii_str(start + reply->s, reply->e - reply->s) : Py_NewRef(Py_None);
            PyObject *o_hdr, *o_payload;
            if (hsize) {
                o_hdr = PyBytes_FromStringAndSize((const char *)buf + pstart, (Py_ssize_t)hsize);
                o_payload = PyBytes_FromStringAndSize((const char *)buf + pstart + hsize, (Py_ssize_t)(size - hsize));
            } else {
                o_hdr = Py_NewRef(Py_None);
                o_payload = PyBytes_FromStringAndSize((const char *)buf + pstart, (Py_ssize_t)size);
            }
            if (!o_subj || !o_sid || !o_reply || !o_hdr || !o_payload) {
                Py_XDECREF(o_subj); Py_XDECREF(o_sid); Py_XDECREF(o_reply);
                Py_XDECREF(o_hdr); Py_XDECREF(o_payload);
                PyBuffer_Release(&view);
                return NULL;
            }
            PyObject *op = PyTuple_New(6);
            if (op == NULL) {
                Py_DECREF(o_subj); Py_DECREF(o_sid); Py_DECREF(o_reply); Py_DECREF(o_hdr); Py_DECREF(o_payload);
                PyBuffer_Release(&view);
                return NULL;
            }
            PyTuple_SET_ITEM(op, 0, Py_NewRef(MSG_TAG));
            PyTuple_SET_ITEM(op, 1, o_subj);
            PyTuple_SET_ITEM(op, 2, o_sid);
            PyTuple_SET_ITEM(op, 3, o_reply);
            PyTuple_SET_ITEM(op, 4, o_hdr);
            PyTuple_SET_ITEM(op, 5, o_payload);
            int rc = PyList_Append(ops, op);
            Py_DECREF(op);
            if (rc < 0) {
                PyBuffer_Release(&view);
                return NULL;
            }
            pos = pend + 2;
            continue;
        }
        PyObject *ctl = NULL;
        if (len == 4 && memcmp(start, "PING", 4) == 0) ctl = PING_OP;
        else if (len == 4 && memcmp(start, "PONG", 4) == 0) ctl = PONG_OP;
        else if (len == 3 && memcmp(start, "+OK", 3) == 0) ctl = OK_OP;
        else break;                                 /* INFO, -ERR, anything else */
        if (PyList_Append(ops, ctl) < 0) {
            PyBuffer_Release(&view);
            return NULL;
        }
        pos = eol + 2;
    }
    PyBuffer_Release(&view);
    return PyLong_FromSsize_t(pos);
}

/*
 * pub_frame(heads, subject, data, limit[, reply, check]) -> bytes or None:
 * the PUB frame of the asyncio face's fast path, what protocol.encode_pub
 * (subject, reply, data) gives, in one allocation.  The subject is one with
 * an entry in heads (heads[subject][0] is "PUB <subject>  ": the engine
 * accepted it before), or an ASCII one that passes the engine's check here
 * (a plain subject; with check false: any non-empty one), as a reply must.
 * None when subject or reply is not an exact str so, data not exact bytes,
 * or len(data) > limit: the caller takes its general path, which checks and
 * frames it (and its errors are the engine's).  protocol.py's pure-Python
 * pub_frame gives the same bytes for a subject in heads without a reply,
 * and None for the rest.
 */

static PyObject *pub_frame(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs < 4 || nargs > 6) {
        PyErr_SetString(PyExc_TypeError, "pub_frame(heads, subject, data, limit[, reply, check])");
        return NULL;
    }
    PyObject *heads = args[0], *subject = args[1], *data = args[2];
    if (!PyDict_CheckExact(heads) || !PyUnicode_CheckExact(subject) || !PyBytes_CheckExact(data))
        Py_RETURN_NONE;
    int check = 1;
    if (nargs >= 6 && (check = PyObject_IsTrue(args[5])) < 0)
        return NULL;
    /* a reply: ASCII, a plain subject when checked */
    const char *reply = NULL;
    Py_ssize_t rl = 0;
    if (nargs >= 5 && args[4] != Py_None) {
        if (!PyUnicode_CheckExact(args[4]) || !PyUnicode_IS_ASCII(args[4]))
            Py_RETURN_NONE;
        reply = (const char *)PyUnicode_DATA(args[4]);
        rl = PyUnicode_GET_LENGTH(args[4]);
        if (rl && check && !tclnats_plain_subject((const unsigned char *)reply, (size_t)rl))
            Py_RETURN_NONE;
    }
    Py_ssize_t n = PyBytes_GET_SIZE(data);
    int overflow = 0;
    long long limit = PyLong_AsLongLongAndOverflow(args[3], &overflow);
    if (limit == -1 && PyErr_Occurred()) return NULL;
    if (overflow < 0 || (!overflow && (long long)n > limit))
        Py_RETURN_NONE;
    /* "PUB <subject> ": from heads[subject][0] ("PUB <subject>  ", one space
       less), or made here for an ASCII subject by the same rule as a reply */
    const char *head;
    Py_ssize_t hl;
    char *made = NULL;
    PyObject *entry = PyDict_GetItemWithError(heads, subject);     /* borrowed */
    if (entry != NULL) {
        PyObject *prefix;
        if (!PyTuple_CheckExact(entry) || PyTuple_GET_SIZE(entry) < 1
            || !PyBytes_CheckExact(prefix = PyTuple_GET_ITEM(entry, 0)) || PyBytes_GET_SIZE(prefix) < 1
            || PyBytes_AS_STRING(prefix)[PyBytes_GET_SIZE(prefix) - 1] != ' ')
            Py_RETURN_NONE;
        head = PyBytes_AS_STRING(prefix);
        hl = PyBytes_GET_SIZE(prefix) - 1;
    } else {
        if (PyErr_Occurred()) return NULL;
        Py_ssize_t sl = PyUnicode_GET_LENGTH(subject);
        const unsigned char *sp = (const unsigned char *)PyUnicode_DATA(subject);
        if (!PyUnicode_IS_ASCII(subject) || sl == 0 || (check && !tclnats_plain_subject(sp, (size_t)sl)))
            Py_RETURN_NONE;
        head = NULL;
        hl = 4 + sl + 1;
        made = (char *)sp;
    }
    char digits[24];
    int nd = 0;
    {   /* the decimal size, most significant digit first */
        char tmp[24];
        Py_ssize_t v = n;
        do { tmp[nd++] = (char)('0' + v % 10); v /= 10; } while (v);
        for (int k = 0; k < nd; k++) digits[k] = tmp[nd - 1 - k];
    }
    PyObject *out = PyBytes_FromStringAndSize(NULL, hl + rl + 1 + nd + 2 + n + 2);
    if (out == NULL) return NULL;
    char *w = PyBytes_AS_STRING(out);
    if (head != NULL) {
        memcpy(w, head, (size_t)hl); w += hl;
    } else {
        memcpy(w, "PUB ", 4); w += 4;
        memcpy(w, made, (size_t)(hl - 5)); w += hl - 5;
        *w++ = ' ';
    }
    if (rl) { memcpy(w, reply, (size_t)rl); w += rl; }
    *w++ = ' ';
    memcpy(w, digits, (size_t)nd); w += nd;
    *w++ = '\r'; *w++ = '\n';
    memcpy(w, PyBytes_AS_STRING(data), (size_t)n); w += n;
    *w++ = '\r'; *w = '\n';
    return out;
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

static int slot_offsets(PyTypeObject *cls, Py_ssize_t *off)
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
        if (!ok) return 0;
    }
    return 1;
}

static PyObject *take_msgs(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
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
    if (i == -1 && PyErr_Occurred()) return NULL;
    if (!PyLong_CheckExact(sid)) Py_RETURN_NONE;
    long long want = PyLong_AsLongLong(sid);
    if (want == -1 && PyErr_Occurred()) { PyErr_Clear(); Py_RETURN_NONE; }
    Py_ssize_t off[5];
    if (!slot_offsets(cls, off) || cls->tp_alloc == NULL) Py_RETURN_NONE;
    Py_ssize_t n = PyList_GET_SIZE(ops);
    if (i < 0) i = n;
    while (i < n) {
        PyObject *op = PyList_GET_ITEM(ops, i);
        if (!PyTuple_CheckExact(op) || PyTuple_GET_SIZE(op) != 6 || PyTuple_GET_ITEM(op, 0) != MSG_TAG
            || PyTuple_GET_ITEM(op, 4) != Py_None)
            break;
        PyObject *s = PyTuple_GET_ITEM(op, 2);
        if (s != sid) {
            if (!PyLong_CheckExact(s)) break;
            long long v = PyLong_AsLongLong(s);
            if (v == -1 && PyErr_Occurred()) { PyErr_Clear(); break; }
            if (v != want) break;
        }
        PyObject *m = cls->tp_alloc(cls, 0);
        if (m == NULL) return NULL;
        char *base = (char *)m;
        /* Msg(subject, data, reply, headers, sid) = op[1], op[5], op[3], None, op[2] */
        *(PyObject **)(base + off[0]) = Py_NewRef(PyTuple_GET_ITEM(op, 1));
        *(PyObject **)(base + off[1]) = Py_NewRef(PyTuple_GET_ITEM(op, 5));
        *(PyObject **)(base + off[2]) = Py_NewRef(PyTuple_GET_ITEM(op, 3));
        *(PyObject **)(base + off[3]) = Py_NewRef(Py_None);
        *(PyObject **)(base + off[4]) = Py_NewRef(s);
        int rc = PyList_Append(out, m);
        Py_DECREF(m);
        if (rc < 0) return NULL;
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
static int hspace(unsigned char c) { return c == ' ' || c == '\t'; }

static PyObject *headers(PyObject *self, PyObject *arg)
{
    Py_buffer view;
    if (PyObject_GetBuffer(arg, &view, PyBUF_SIMPLE) < 0) return NULL;
    const unsigned char *p = (const unsigned char *)view.buf;
    Py_ssize_t n = view.len, i;
    PyObject *d = NULL;
    for (i = 0; i < n; i++) {       /* printable ASCII, tab, and CR only before LF */
        unsigned char c = p[i];
        if (c >= 0x20 && c < 0x7f) continue;
        if (c == '\t') continue;
        if (c == '\r' && i + 1 < n && p[i + 1] == '\n') { i++; continue; }
        goto fallback;
    }
    if (n < 8 || memcmp(p, "NATS/1.0", 8) != 0 || (n > 8 && !(n >= 10 && p[8] == '\r')))
        goto fallback;
    d = PyDict_New();
    if (d == NULL) goto error;
    i = n > 8 ? 10 : 8;
    while (i < n) {
        const unsigned char *cr = memchr(p + i, '\r', (size_t)(n - i));
        Py_ssize_t end = cr ? cr - p : n;          /* the line is p[i:end] */
        const unsigned char *colon = memchr(p + i, ':', (size_t)(end - i));
        if (colon != NULL && (colon - p) + 1 < end) {  /* a colon, something after it */
            Py_ssize_t ks = i, ke = colon - p, vs = ke + 1, ve = end;
            while (ks < ke && hspace(p[ks])) ks++;
            while (ke > ks && hspace(p[ke - 1])) ke--;
            while (vs < ve && hspace(p[vs])) vs++;
            while (ve > vs && hspace(p[ve - 1])) ve--;
            if (ke > ks) {
                PyObject *k = PyUnicode_DecodeASCII((const char *)p + ks, ke - ks, NULL);
                PyObject *v = k ? PyUnicode_DecodeASCII((const char *)p + vs, ve - vs, NULL) : NULL;
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
                if (rc < 0) goto error;
            }
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
static PyObject *step(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "step(cb, msg)");
        return NULL;
    }
    PyObject *r = PyObject_CallOneArg(args[0], args[1]);
    if (r == NULL) return NULL;
    if (r == Py_None) return r;
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

static PyObject *done_await(PyObject *self) { return Py_NewRef(self); }
static PyObject *done_next(PyObject *self) { return NULL; }    /* StopIteration: the result None */
static PySendResult done_send(PyObject *self, PyObject *arg, PyObject **result)
{
    *result = Py_NewRef(Py_None);
    return PYGEN_RETURN;
}
static PyObject *done_repr(PyObject *self) { return PyUnicode_FromString("<publish: queued>"); }

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

static PyObject *setup(PyObject *self, PyObject *args)
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
    {"step", (PyCFunction)(void (*)(void))step, METH_FASTCALL,
     "step(cb, msg) -> None, (coro, yielded) or (result, module): cb(msg) run up to its first wait"},
    {"setup", setup, METH_VARARGS, "setup(msg_tag, ping_op, pong_op, ok_op): the Python parser's tag objects"},
    {NULL, NULL, 0, NULL}
};

static struct PyModuleDef moddef = {
    PyModuleDef_HEAD_INIT, "_natsproto",
    "The optional accelerator of tclnats_py.engine.protocol.Parser (see natsproto.c).", -1, methods,
};

PyMODINIT_FUNC PyInit__natsproto(void)
{
    if (PyType_Ready(&DoneType) < 0) return NULL;
    static const char *names[5] = {"subject", "data", "reply", "headers", "sid"};
    for (int k = 0; k < 5; k++) {
        if (slot_names[k] == NULL && (slot_names[k] = PyUnicode_InternFromString(names[k])) == NULL)
            return NULL;
    }
    PyObject *m = PyModule_Create(&moddef);
    if (m == NULL) return NULL;
    if (PyModule_AddObjectRef(m, "Done", (PyObject *)&DoneType) < 0) { Py_DECREF(m); return NULL; }
    return m;
}
