/*
 * The Tcl extension of tclnats_py: [load]ed by pkgIndex.tcl into any Tcl 8.6
 * interpreter (stock tclsh, wish, Thread workers, child interpreters, a C
 * program that links libtcl, or a tkinter interpreter inside Python).
 *
 * It uses no Python symbol itself, so Tcl can load it into a process that
 * has no Python.  It finds the Python that tclnats_py was installed with:
 *   - a running CPython in this process (tkinter, a Python program) is
 *     joined;
 *   - else the libpython recorded at build time (TCLNATS_PYTHON_LIBRARY in
 *     the environment overrides it) is loaded, and the Python executable of
 *     the venv that holds the package (or the one recorded at build time:
 *     python_program) names the interpreter to start, so sys.prefix and site-packages are
 *     the install's, whatever PATH or PYTHONHOME say.
 * Then it loads the Python extension module _tclcross from the same folder.
 * Starting Python (or joining it) and installing the bridge, which takes most
 * of the time and memory, waits for the first command that needs it: the
 * command ::tclnats::_start hands over to TclnatsCross_TclInit, once per
 * interpreter (pkgIndex.tcl's stand-ins for the bridge's commands call it).
 * What can be checked without starting Python (the library, the module) is
 * checked here, so [package require nats] still fails when they are missing.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <tcl.h>
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef TCLNATS_PYTHON_LIBRARY
#define TCLNATS_PYTHON_LIBRARY ""
#endif
#ifndef TCLNATS_PYTHON_EXECUTABLE
#define TCLNATS_PYTHON_EXECUTABLE ""
#endif
#ifndef TCLNATS_PYTHON_VENV_EXECUTABLE
#define TCLNATS_PYTHON_VENV_EXECUTABLE ""
#endif
#ifndef TCLNATS_PYTHON_VERSION
#define TCLNATS_PYTHON_VERSION "3"
#endif
#ifndef TCLNATS_CROSS_FILE
#define TCLNATS_CROSS_FILE "_tclcross.so"
#endif

#define EXPORT __attribute__((visibility("default")))

typedef int (*cross_init_t)(Tcl_Interp *, const char *, const char *);
typedef int (*py_isinit_t)(void);

EXPORT int Tclnats_Init(Tcl_Interp *interp);
EXPORT int Tclnats_SafeInit(Tcl_Interp *interp);

/* what ::tclnats::_start needs, one per interpreter */
typedef struct {
    cross_init_t init;
    int started;
    char sitedir[PATH_MAX];
    char program[PATH_MAX];
} StartData;

static int
fail(Tcl_Interp *interp, const char *code, Tcl_Obj *msg)
{
    Tcl_SetObjResult(interp, msg);
    Tcl_SetErrorCode(interp, "NATS", code, NULL);
    return TCL_ERROR;
}

/* the folder of this file: .../site-packages/tclnats_py */
static int
own_dir(char *out, size_t size)
{
    Dl_info info;
    char *slash;
    if (dladdr((void *)&Tclnats_Init, &info) == 0 || info.dli_fname == NULL)
        return 0;
    if (realpath(info.dli_fname, out) == NULL) {
        if (strlen(info.dli_fname) >= size)
            return 0;
        strcpy(out, info.dli_fname);
    }
    slash = strrchr(out, '/');
    if (slash == NULL)
        return 0;
    *slash = '\0';
    return 1;
}

/* The Python executable of the venv holding pkgdir (pyvenv.cfg found in one
 * of the folders above it), or "" */
static void
venv_python(const char *pkgdir, char *out, size_t size)
{
    char dir[PATH_MAX], probe[PATH_MAX + 32];
    int up;
    out[0] = '\0';
    if (strlen(pkgdir) >= sizeof dir)
        return;
    strcpy(dir, pkgdir);
    for (up = 0; up < 5; up++) {
        char *slash = strrchr(dir, '/');
        if (slash == NULL || slash == dir)
            return;
        *slash = '\0';
        snprintf(probe, sizeof probe, "%s/pyvenv.cfg", dir);
        if (access(probe, R_OK) == 0) {
            static const char *names[] = {"python" TCLNATS_PYTHON_VERSION, "python3", "python"};
            size_t i;
            for (i = 0; i < sizeof names / sizeof names[0]; i++) {
                snprintf(probe, sizeof probe, "%s/bin/%s", dir, names[i]);
                if (access(probe, X_OK) == 0 && strlen(probe) < size) {
                    strcpy(out, probe);
                    return;
                }
            }
            return;
        }
    }
}

/* The Python executable to start: the venv's that holds pkgdir; else
 * TCLNATS_PYTHON_EXECUTABLE from the environment; else the venv python
 * that built the extension (an editable install: pkgdir is the checkout,
 * outside the venv) while it still exists (a build tool's throw-away venv
 * does not); else the base Python that built it. */
static void
python_program(const char *pkgdir, char *out, size_t size)
{
    const char *env;
    venv_python(pkgdir, out, size);
    if (out[0] != '\0')
        return;
    env = getenv("TCLNATS_PYTHON_EXECUTABLE");
    if (env != NULL && *env)
        snprintf(out, size, "%s", env);
    else if (*TCLNATS_PYTHON_VENV_EXECUTABLE && access(TCLNATS_PYTHON_VENV_EXECUTABLE, X_OK) == 0)
        snprintf(out, size, "%s", TCLNATS_PYTHON_VENV_EXECUTABLE);
    else
        snprintf(out, size, "%s", TCLNATS_PYTHON_EXECUTABLE);
}

static void
StartFree(ClientData cd)
{
    ckfree((char *)cd);
}

/* ::tclnats::_start: start (or join) Python and install the bridge into
 * this interpreter; later calls do nothing */
static int
StartCmd(ClientData cd, Tcl_Interp *interp, int objc, Tcl_Obj *const objv[])
{
    StartData *data = (StartData *)cd;
    if (objc != 1) {
        Tcl_WrongNumArgs(interp, 1, objv, "");
        return TCL_ERROR;
    }
    if (data->started)
        return TCL_OK;
    if (data->init(interp, data->sitedir, data->program[0] ? data->program : NULL) != TCL_OK)
        return TCL_ERROR;
    data->started = 1;
    return TCL_OK;
}

EXPORT int
Tclnats_Init(Tcl_Interp *interp)
{
    StartData *data;
    char pkgdir[PATH_MAX], sitedir[PATH_MAX], cross[PATH_MAX + 64], program[PATH_MAX];
    const char *pylib, *env;
    void *sym, *handle;
    cross_init_t init;
    int running;

    if (Tcl_InitStubs(interp, "8.6", 0) == NULL)
        return TCL_ERROR;
    if (!own_dir(pkgdir, sizeof pkgdir))
        return fail(interp, "ErrPython", Tcl_NewStringObj(
            "tclnats_py: cannot tell where its Tcl extension was loaded from", -1));
    strcpy(sitedir, pkgdir);
    *strrchr(sitedir, '/') = '\0';
    if (sitedir[0] == '\0')
        strcpy(sitedir, "/");

    sym = dlsym(RTLD_DEFAULT, "Py_IsInitialized");
    running = sym != NULL && ((py_isinit_t)sym)();
    program[0] = '\0';
    if (!running) {
        env = getenv("TCLNATS_PYTHON_LIBRARY");
        pylib = (env != NULL && *env) ? env : TCLNATS_PYTHON_LIBRARY;
        if (*pylib == '\0')
            return fail(interp, "ErrPython", Tcl_ObjPrintf(
                "tclnats_py: the Python %s it was installed with has no shared library "
                "(libpython%s.so), so it cannot be started from Tcl; install tclnats_py "
                "with a Python built with --enable-shared (Debian: package libpython%s), "
                "or set TCLNATS_PYTHON_LIBRARY to one",
                TCLNATS_PYTHON_VERSION, TCLNATS_PYTHON_VERSION, TCLNATS_PYTHON_VERSION));
        /* RTLD_GLOBAL: Python's own extension modules resolve against it */
        if (dlopen(pylib, RTLD_NOW | RTLD_GLOBAL) == NULL)
            return fail(interp, "ErrPython", Tcl_ObjPrintf(
                "tclnats_py: cannot load the Python library it was installed with (%s): %s; "
                "reinstall tclnats_py with the Python you want to serve Tcl "
                "(python3 -m pip install --force-reinstall tclnats_py), "
                "or set TCLNATS_PYTHON_LIBRARY to a libpython%s shared library",
                pylib, dlerror(), TCLNATS_PYTHON_VERSION));
        python_program(pkgdir, program, sizeof program);
    }
    snprintf(cross, sizeof cross, "%s/%s", pkgdir, TCLNATS_CROSS_FILE);
    handle = dlopen(cross, RTLD_NOW | RTLD_LOCAL);
    if (handle == NULL)
        return fail(interp, "ErrPython", Tcl_ObjPrintf(
            "tclnats_py: cannot load %s: %s; reinstall tclnats_py "
            "(python3 -m pip install --force-reinstall tclnats_py)", cross, dlerror()));
    init = (cross_init_t)dlsym(handle, "TclnatsCross_TclInit");
    if (init == NULL)
        return fail(interp, "ErrPython", Tcl_ObjPrintf(
            "tclnats_py: %s has no TclnatsCross_TclInit: reinstall tclnats_py", cross));
    data = (StartData *)ckalloc(sizeof *data);
    data->init = init;
    data->started = 0;
    strcpy(data->sitedir, sitedir);
    strcpy(data->program, program);
    Tcl_CreateObjCommand(interp, "::tclnats::_start", StartCmd, data, StartFree);
    return Tcl_PkgProvide(interp, "tclnats", "0.1");
}

EXPORT int
Tclnats_SafeInit(Tcl_Interp *interp)
{
    if (Tcl_InitStubs(interp, "8.6", 0) == NULL)
        return TCL_ERROR;
    return fail(interp, "ErrPython", Tcl_NewStringObj(
        "package nats (tclnats_py) opens sockets and runs Python, so it cannot be loaded "
        "into a safe interpreter; connect in a trusted interpreter and give the safe one "
        "aliases to the commands it may use (interp alias)", -1));
}
