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
    {"setup", setup, METH_VARARGS, "setup(msg_tag, ping_op, pong_op, ok_op): the Python parser's tag objects"},
    {NULL, NULL, 0, NULL}
};

static struct PyModuleDef moddef = {
    PyModuleDef_HEAD_INIT, "_natsproto",
    "The optional accelerator of tclnats_py.engine.protocol.Parser (see natsproto.c).", -1, methods,
};

PyMODINIT_FUNC PyInit__natsproto(void)
{
    return PyModule_Create(&moddef);
}
