/*
 * tclcross_convert.c: Tcl values as Python values and back, converted the
 * way tkinter (wantobjects) does, so the bridge sees the same values on an
 * interpreter that tkinter created and on one that loaded the package.
 */
#include "tclcross.h"
#include <string.h>

/* Tcl object types, looked up once (NULL where this Tcl has no such type) */
static const Tcl_ObjType *t_bytearray, *t_boolean, *t_booleanString, *t_double,
    *t_int, *t_wideInt, *t_bignum, *t_list, *t_string;
static int types_ready = 0;

void
init_types(void)
{
    if (types_ready)
        return;
    t_bytearray = Tcl_GetObjType("bytearray");
    t_boolean = Tcl_GetObjType("boolean");
    t_booleanString = Tcl_GetObjType("booleanString");
    t_double = Tcl_GetObjType("double");
    t_int = Tcl_GetObjType("int");
    t_wideInt = Tcl_GetObjType("wideInt");
    t_bignum = Tcl_GetObjType("bignum");
    t_list = Tcl_GetObjType("list");
    t_string = Tcl_GetObjType("string");
    types_ready = 1;
}

/* A Tcl string (Tcl's internal UTF-8: NUL as C0 80, characters beyond the
 * BMP as surrogate pairs) as a Python str.  The common case decodes
 * directly; anything else goes through Tcl's own UTF-16 view, so nothing is
 * lost. */
PyObject *
str_from_obj(Tcl_Obj *obj)
{
    int len;
    const char *s;
    PyObject *r;

    if (obj->typePtr == t_bytearray && obj->bytes == NULL) {
        /* a pure byte array: each byte is the character of that code
         * (what its string form would say), without making that form */
        int n;
        unsigned char *b = Tcl_GetByteArrayFromObj(obj, &n);
        return PyUnicode_DecodeLatin1((const char *)b, n, NULL);
    }
    s = Tcl_GetStringFromObj(obj, &len);
    r = PyUnicode_DecodeUTF8(s, len, NULL);
    if (r != NULL)
        return r;
    PyErr_Clear();
    {
        int n;
        Tcl_UniChar *u = Tcl_GetUnicodeFromObj(obj, &n);
        int order = -1;  /* little endian: Tcl_UniChar is native (x86, arm) */
#if defined(WORDS_BIGENDIAN)
        order = 1;
#endif
        if (sizeof(Tcl_UniChar) == 2)
            return PyUnicode_DecodeUTF16((const char *)u, (Py_ssize_t)n * 2, "surrogatepass", &order);
        return PyUnicode_DecodeUTF32((const char *)u, (Py_ssize_t)n * 4, "surrogatepass", &order);
    }
}

/* A Tcl value as tkinter (wantobjects) gives it: bytes, bool, int, float,
 * tuple, else str. */
PyObject *
from_obj(Tcl_Interp *interp, Tcl_Obj *obj)
{
    const Tcl_ObjType *t = obj->typePtr;

    if (t == NULL)
        return str_from_obj(obj);
    if (t == t_bytearray) {
        int n;
        unsigned char *b = Tcl_GetByteArrayFromObj(obj, &n);
        return PyBytes_FromStringAndSize((const char *)b, n);
    }
    if (t == t_boolean || (t_booleanString && t == t_booleanString)) {
        int v;
        if (Tcl_GetBooleanFromObj(NULL, obj, &v) == TCL_OK)
            return PyBool_FromLong(v);
    }
    if (t == t_int || (t_wideInt && t == t_wideInt)) {
        Tcl_WideInt w;
        if (Tcl_GetWideIntFromObj(NULL, obj, &w) == TCL_OK)
            return PyLong_FromLongLong((long long)w);
    }
    if (t_bignum && t == t_bignum) {
        PyObject *s = str_from_obj(obj);
        PyObject *r;
        if (s == NULL)
            return NULL;
        r = PyLong_FromUnicodeObject(s, 10);
        Py_DECREF(s);
        return r;
    }
    if (t == t_double) {
        double d;
        if (Tcl_GetDoubleFromObj(NULL, obj, &d) == TCL_OK)
            return PyFloat_FromDouble(d);
    }
    if (t == t_list) {
        int n;
        Tcl_Obj **items;
        if (Tcl_ListObjGetElements(NULL, obj, &n, &items) != TCL_OK)
            return str_from_obj(obj);
        return tuple_of(interp, items, n, 0);
    }
    return str_from_obj(obj);
}

/* Tcl list elements as a tuple: each converted by from_obj, or (as_str)
 * always as str */
PyObject *
tuple_of(Tcl_Interp *interp, Tcl_Obj **items, int n, int as_str)
{
    int i;
    PyObject *tup = PyTuple_New(n);
    if (tup == NULL)
        return NULL;
    for (i = 0; i < n; i++) {
        PyObject *v = as_str ? str_from_obj(items[i]) : from_obj(interp, items[i]);
        if (v == NULL) {
            Py_DECREF(tup);
            return NULL;
        }
        PyTuple_SET_ITEM(tup, i, v);
    }
    return tup;
}

Tcl_Obj *
str_to_obj(PyObject *s)
{
    Py_ssize_t n;
    const char *u;

    if (PyUnicode_IS_ASCII(s))
        return Tcl_NewStringObj((const char *)PyUnicode_DATA(s), (int)PyUnicode_GET_LENGTH(s));
    if (PyUnicode_KIND(s) != PyUnicode_4BYTE_KIND) {
        u = PyUnicode_AsUTF8AndSize(s, &n);
        if (u != NULL && memchr(u, 0, (size_t)n) == NULL)
            return Tcl_NewStringObj(u, (int)n);
        if (u == NULL)
            PyErr_Clear();   /* lone surrogates: the UTF-16 path keeps them */
    }
    {
        /* NUL or characters beyond the BMP: through UTF-16, as Tcl 8.6 keeps them */
        PyObject *b = PyUnicode_AsEncodedString(s, "utf-16-le", "surrogatepass");
        Tcl_Obj *o;
        if (b == NULL)
            return NULL;
        if (sizeof(Tcl_UniChar) == 2) {
            o = Tcl_NewUnicodeObj((const Tcl_UniChar *)PyBytes_AS_STRING(b),
                                  (int)(PyBytes_GET_SIZE(b) / 2));
        } else {
            o = Tcl_NewStringObj(PyUnicode_AsUTF8(s), -1);
        }
        Py_DECREF(b);
        return o;
    }
}

/* Any other value: its str(), as tkinter does */
static Tcl_Obj *
via_str(PyObject *v)
{
    PyObject *s = PyObject_Str(v);
    Tcl_Obj *o;
    if (s == NULL)
        return NULL;
    o = str_to_obj(s);
    Py_DECREF(s);
    return o;
}

/* A Python value as a Tcl value, as tkinter converts call arguments. */
Tcl_Obj *
to_obj(PyObject *v)
{
    if (PyUnicode_CheckExact(v))
        return str_to_obj(v);
    if (PyBytes_Check(v))
        return Tcl_NewByteArrayObj((const unsigned char *)PyBytes_AS_STRING(v),
                                   (int)PyBytes_GET_SIZE(v));
    if (PyBool_Check(v))
        return Tcl_NewBooleanObj(v == Py_True);
    if (PyLong_CheckExact(v) || PyLong_Check(v)) {
        int overflow = 0;
        long long x = PyLong_AsLongLongAndOverflow(v, &overflow);
        if (x == -1 && PyErr_Occurred())
            return NULL;
        if (!overflow)
            return Tcl_NewWideIntObj((Tcl_WideInt)x);
        return via_str(v);   /* beyond 64 bits: Tcl reads it as a bignum */
    }
    if (PyFloat_Check(v))
        return Tcl_NewDoubleObj(PyFloat_AS_DOUBLE(v));
    if (PyTuple_Check(v) || PyList_Check(v)) {
        Py_ssize_t n = PySequence_Fast_GET_SIZE(v), i;
        PyObject **items = PySequence_Fast_ITEMS(v);
        Tcl_Obj *list = Tcl_NewListObj(0, NULL);
        for (i = 0; i < n; i++) {
            Tcl_Obj *o = to_obj(items[i]);
            if (o == NULL) {
                Tcl_DecrRefCount(list);
                return NULL;
            }
            Tcl_ListObjAppendElement(NULL, list, o);
        }
        return list;
    }
    if (PyUnicode_Check(v))
        return str_to_obj(v);
    if (PyByteArray_Check(v))
        return Tcl_NewByteArrayObj((const unsigned char *)PyByteArray_AS_STRING(v),
                                   (int)PyByteArray_GET_SIZE(v));
    if (PyObject_CheckBuffer(v)) {
        /* a memoryview or another buffer: its bytes, read in place */
        Py_buffer view;
        Tcl_Obj *o;
        if (PyObject_GetBuffer(v, &view, PyBUF_SIMPLE) != 0)
            return NULL;
        o = Tcl_NewByteArrayObj((const unsigned char *)view.buf, (int)view.len);
        PyBuffer_Release(&view);
        return o;
    }
    return via_str(v);
}
