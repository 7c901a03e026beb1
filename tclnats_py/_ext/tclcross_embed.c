/*
 * tclcross_embed.c: TclnatsCross_TclInit, called by the Tcl extension
 * (tclload.c) from [load]: it starts CPython when the process has none
 * (stock tclsh, wish, a C program that embeds Tcl) or joins the running one
 * (tkinter), and installs the Tcl face into the loading interpreter.  Each
 * Tcl thread that loads the package keeps one Python thread state for its
 * lifetime, released when the thread exits.  TclnatsCross_TclInit runs
 * under one process-wide lock (start_lock), so that Tcl threads whose first
 * commands come at the same moment start CPython once and install the
 * bridge one after the other.
 */
#include "tclcross.h"
#include <string.h>
#include <pthread.h>

int embedded = 0;

typedef struct {
    int pinned;              /* this thread keeps a Python thread state */
    PyThreadState *saved;
} ThreadData;
static Tcl_ThreadDataKey thread_key;

static void
thread_exit(ClientData Py_UNUSED(unused))
{
    ThreadData *td = (ThreadData *)Tcl_GetThreadData(&thread_key, sizeof(ThreadData));
    if (!td->pinned || !Py_IsInitialized())
        return;
    td->pinned = 0;
    /* take the GIL with this thread's state, then drop that state */
    PyEval_RestoreThread(td->saved);
    PyGILState_Release(PyGILState_UNLOCKED);
}

static void
tcl_exit(ClientData Py_UNUSED(unused))
{
    /* Tcl's [exit]: flush what Python code wrote and run Python's atexit
     * functions; the process ends right after, so CPython is not finalised */
    PyGILState_STATE st;
    if (!Py_IsInitialized())
        return;
    st = PyGILState_Ensure();
    if (PyRun_SimpleString(
            "import atexit, sys\n"
            "atexit._run_exitfuncs()\n"
            "for _f in (sys.stdout, sys.stderr):\n"
            "    try:\n"
            "        _f and _f.flush()\n"
            "    except Exception as _e:\n"
            "        pass\n") != 0)
        PyErr_Clear();
    PyGILState_Release(st);
}

static int
start_python(Tcl_Interp *interp, const char *program)
{
    PyConfig config;
    PyStatus status;

    PyConfig_InitIsolatedConfig(&config);
    /* no site: the Tcl face needs the folder that holds tclnats_py and the
     * install's own site-packages (its dependencies, e.g. nkeys), which
     * TclnatsCross_TclInit puts on sys.path; site's .pth files (editable
     * finders, certificate hooks) would cost tens of ms and MB at each
     * start.  TCLNATS_PYTHON_SITE=1 brings site back for whoever needs it. */
    {
        const char *env = getenv("TCLNATS_PYTHON_SITE");
        config.site_import = (env != NULL && strcmp(env, "1") == 0);
    }
    config.install_signal_handlers = 0;   /* signals stay the host's */
    config.parse_argv = 0;
    config.buffered_stdio = 1;
    if (program != NULL && *program) {
        status = PyConfig_SetBytesString(&config, &config.program_name, program);
        if (PyStatus_Exception(status))
            goto fail;
    }
    status = Py_InitializeFromConfig(&config);
    if (PyStatus_Exception(status))
        goto fail;
    PyConfig_Clear(&config);
    embedded = 1;
    Tcl_CreateExitHandler(tcl_exit, NULL);
    PyEval_SaveThread();   /* the GIL is taken per crossing from now on */
    return TCL_OK;
fail:
    PyConfig_Clear(&config);
    Tcl_SetObjResult(interp, Tcl_ObjPrintf(
        "tclnats_py: could not start Python (%s%s%s); reinstall tclnats_py with the "
        "Python you want to serve Tcl (python3 -m pip install tclnats_py)",
        status.func ? status.func : "", status.func ? ": " : "",
        status.err_msg ? status.err_msg : "unknown error"));
    Tcl_SetErrorCode(interp, "NATS", "ErrPython", NULL);
    return TCL_ERROR;
}

/* the Python exception as the interpreter's error, with its traceback */
static int
python_failed(Tcl_Interp *interp, const char *what)
{
    PyObject *type, *value, *tb, *tbmod, *lines, *text = NULL;
    PyErr_Fetch(&type, &value, &tb);
    PyErr_NormalizeException(&type, &value, &tb);
    tbmod = PyImport_ImportModule("traceback");
    if (tbmod != NULL) {
        lines = PyObject_CallMethod(tbmod, "format_exception", "OOO",
                                    type ? type : Py_None, value ? value : Py_None, tb ? tb : Py_None);
        if (lines != NULL) {
            PyObject *sep = PyUnicode_FromString("");
            text = PyUnicode_Join(sep, lines);
            Py_DECREF(sep);
            Py_DECREF(lines);
        }
        Py_DECREF(tbmod);
    }
    if (text == NULL)
        PyErr_Clear();
    Tcl_SetObjResult(interp, Tcl_ObjPrintf("tclnats_py: %s: %s", what,
                                           text ? PyUnicode_AsUTF8(text) : "(no details)"));
    Tcl_SetErrorCode(interp, "NATS", "ErrPython", NULL);
    Py_XDECREF(text);
    Py_XDECREF(type);
    Py_XDECREF(value);
    Py_XDECREF(tb);
    return TCL_ERROR;
}

/*
 * One lock for the whole process around TclnatsCross_TclInit: every Tcl
 * interpreter of every thread (main, Thread and tpool workers, children)
 * comes through here, and this library is loaded once per process, so the
 * first caller starts CPython (Py_InitializeFromConfig may run only once,
 * and not while another thread is in it: two at once crashed in
 * init_fs_encoding or importlib) while the others wait, then each installs
 * the bridge in turn (no two threads importing tclnats_py's modules for the
 * first time at once).  It is taken without the GIL: a Tcl command reaches
 * ::tclnats::_start only from Tcl code, and every crossing gives the GIL up
 * while Tcl code runs, so no thread holding the GIL waits for it.
 * Recursive: the bridge's set-up runs Tcl code, which could start another
 * interpreter of the same thread.
 */
static pthread_once_t start_lock_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t start_lock;

static void
start_lock_init(void)
{
    pthread_mutexattr_t attr;
    pthread_mutexattr_init(&attr);
    pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_RECURSIVE);
    pthread_mutex_init(&start_lock, &attr);
    pthread_mutexattr_destroy(&attr);
}

static int cross_init(Tcl_Interp *interp, const char *sitedir, const char *program);

/*
 * Called by the Tcl extension's Tclnats_Init.  sitedir is the folder that
 * holds the tclnats_py package; program is the Python executable to start
 * (a venv's python when the package lives in one), NULL to join a running
 * CPython only.
 */
EXPORT int
TclnatsCross_TclInit(Tcl_Interp *interp, const char *sitedir, const char *program)
{
    int code;
    if (Tcl_InitStubs(interp, "8.6", 0) == NULL)
        return TCL_ERROR;
    pthread_once(&start_lock_once, start_lock_init);
    pthread_mutex_lock(&start_lock);
    code = cross_init(interp, sitedir, program);
    pthread_mutex_unlock(&start_lock);
    return code;
}

/* CPython started, or the running one joined when it is the version this
 * was built for */
static int
python_ready(Tcl_Interp *interp, const char *program)
{
    const char *v;
    char want[16];

    if (!Py_IsInitialized())
        return start_python(interp, program);
    v = Py_GetVersion();
    snprintf(want, sizeof want, "%d.%d.", PY_MAJOR_VERSION, PY_MINOR_VERSION);
    if (strncmp(v, want, strlen(want)) != 0) {
        Tcl_SetObjResult(interp, Tcl_ObjPrintf(
            "tclnats_py was built for Python %d.%d but this process runs Python %.10s; "
            "install tclnats_py with this Python", PY_MAJOR_VERSION, PY_MINOR_VERSION, v));
        Tcl_SetErrorCode(interp, "NATS", "ErrPython", NULL);
        return TCL_ERROR;
    }
    return TCL_OK;
}

/* The folder that holds tclnats_py first on sys.path; with site (a host
 * Python, or TCLNATS_PYTHON_SITE=1) its .pth files processed
 * (site.addsitedir); without it, the bridge's install_loaded adds the
 * install's site-packages as site would, minus the .pth files.  A failure
 * is left as the Python error. */
static void
put_sitedir_first(const char *sitedir)
{
    PyObject *globals = PyDict_New();
    PyObject *d = PyUnicode_DecodeFSDefault(sitedir);
    PyObject *r;

    if (globals != NULL && d != NULL
            && PyDict_SetItemString(globals, "__builtins__", PyEval_GetBuiltins()) == 0
            && PyDict_SetItemString(globals, "sitedir", d) == 0) {
        r = PyRun_String(
            "import sys\n"
            "if sys.flags.no_site:\n"
            "    if sitedir in sys.path:\n"
            "        sys.path.remove(sitedir)\n"
            "    sys.path.insert(0, sitedir)\n"
            "elif sitedir not in sys.path:\n"
            "    import site\n"
            "    site.addsitedir(sitedir)\n"
            "    sys.path.remove(sitedir)\n"
            "    sys.path.insert(0, sitedir)\n",
            Py_file_input, globals, globals);
        Py_XDECREF(r);
    }
    Py_XDECREF(globals);
    Py_XDECREF(d);
}

/* The bridge installed into interp (tclnats_py.tclface.bridge's
 * install_loaded), with the GIL held */
static int
install_bridge(Tcl_Interp *interp, const char *sitedir)
{
    InterpObject *obj;
    PyObject *mod, *r;

    if (sitedir != NULL && *sitedir)
        put_sitedir_first(sitedir);
    if (PyErr_Occurred())
        return python_failed(interp, "could not set up sys.path");
    mod = PyImport_ImportModule("tclnats_py.tclface.bridge");
    if (mod == NULL)
        return python_failed(interp, "could not import tclnats_py");
    obj = interp_object(interp);
    if (obj == NULL) {
        Py_DECREF(mod);
        return python_failed(interp, "could not wrap the interpreter");
    }
    r = PyObject_CallMethod(mod, "install_loaded", "O", (PyObject *)obj);
    Py_DECREF(obj);
    Py_DECREF(mod);
    if (r == NULL)
        return python_failed(interp, "could not install the Tcl face");
    Py_DECREF(r);
    return TCL_OK;
}

/* TclnatsCross_TclInit's work, under start_lock */
static int
cross_init(Tcl_Interp *interp, const char *sitedir, const char *program)
{
    PyGILState_STATE st;
    ThreadData *td;
    int pin, code;

    if (python_ready(interp, program) != TCL_OK)
        return TCL_ERROR;
    td = (ThreadData *)Tcl_GetThreadData(&thread_key, sizeof(ThreadData));
    /* a Tcl thread that Python does not know yet keeps one thread state */
    pin = !td->pinned && PyGILState_GetThisThreadState() == NULL;
    st = PyGILState_Ensure();
    code = install_bridge(interp, sitedir);
    if (pin && code == TCL_OK) {
        /* keep this thread's state (and its threading.local data) until the
         * Tcl thread exits; give up the GIL */
        td->pinned = 1;
        td->saved = PyEval_SaveThread();
        Tcl_CreateThreadExitHandler(thread_exit, NULL);
    } else {
        PyGILState_Release(st);
    }
    return code;
}
