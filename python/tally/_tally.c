/*
 * _tally.c — tally._tally, the core of the Python package: the recorder, the collectors, the
 * analysis library and the command line, compiled into one extension module, and the CPython
 * C API glue over them. The Python layer (__init__.py, _profile.py) is thin on purpose: what
 * runs per range is here.
 *
 * The hot path. `with tally.range("x"): pass` is a call, a dict lookup and two method calls, so
 * every step of it is made to allocate nothing:
 *   - range(name, category) interns (name, category) into a Range object holding a
 *     `tally_srcloc` that lives as long as the process (the recorder stores its address, never
 *     the string), in one dict per category keyed by the name: the call is that lookup and an
 *     incref. The same object comes back for the same name, so it is never freed either.
 *   - `with` looks __enter__ and __exit__ up on the type and binds them to the object. Binding a
 *     C method makes a new method object each time; here __enter__ is a descriptor that hands
 *     back a method object made once per Range, and __exit__ is a plain function that binds to
 *     nothing (it pops the calling thread's innermost range, so it needs no self).
 * A Range has no state of its own beyond its call site, so one object serves every thread and
 * every nesting level at once. Past TALLY_PY_MAX_SITES distinct names (names made per call,
 * f"step {i}"), ranges are no longer interned: each call makes an object whose name the
 * recorder copies.
 *
 * The session: start() builds a tally_config from keyword arguments; the trace-ready callback is
 * a C function that calls a Python callable on the thread that called step() or stop(), which
 * holds the GIL. An exception raised there is kept and raised again by that step() or stop().
 * A session still running at interpreter exit is stopped by the Python layer's atexit handler,
 * while Python can still run the callback; after that, the bridge never calls Python.
 *
 * Results: Trace loads any file the CLI reads and renders views with the report library, into a
 * memory stream: text as `tally report` prints it, JSON as `--format json` writes it (the Python
 * layer parses it). Errors become TallyError with the CLI's one-line message.
 *
 * The PyTorch shim (tally._torch, C++) records through the function table of capi.h, exported
 * as the capsule tally._tally._C_API, so that there is one recorder per process.
 *
 * The module exports only PyInit__tally and the NVTX and CUDA injection entry points
 * (exports.map): tally_start points NVTX_INJECTION64_PATH at this file, so NVTX ranges of other
 * libraries in the process reach the same recorder.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tally.h>

#include "capi.h"
#include "collect/collect.h"
#include "record/internal.h"
#include "record/recorder.h"
#include "report/summary.h"
#include "report/table.h"
#include "trace/model.h"

/* The command line, compiled in with its main renamed (src/cli/main.c). */
int tally_cli_main(int argc, char **argv);

#define TALLY_PY_MAX_SITES 65536 /* interned (name, category) pairs, then names are copied */

static PyObject *TallyError;

/* ---- categories -------------------------------------------------------------------------------
 */

static const char *const cat_names[TALLY_CATEGORY_COUNT] = {
    "user", "dataloader", "forward", "backward", "optimizer", "communication", "operator"};
static PyObject *cat_str[TALLY_CATEGORY_COUNT]; /* interned names, compared by address first */

/* The category named by o (a str), or -1 with ValueError naming the valid ones. */
static int category_of(PyObject *o)
{
    if (!o || o == Py_None)
        return TALLY_USER;
    for (int i = 0; i < TALLY_CATEGORY_COUNT; i++)
        if (o == cat_str[i])
            return i;
    if (!PyUnicode_Check(o)) {
        PyErr_Format(PyExc_TypeError, "tally: category must be a str, not %.100s",
                     Py_TYPE(o)->tp_name);
        return -1;
    }
    for (int i = 0; i < TALLY_CATEGORY_COUNT; i++)
        if (PyUnicode_CompareWithASCIIString(o, cat_names[i]) == 0)
            return i;
    PyErr_Format(PyExc_ValueError,
                 "tally: unknown category %R; expected one of: user, dataloader, forward, "
                 "backward, optimizer, communication, operator",
                 o);
    return -1;
}

/* ---- Range: a call site, a context manager and a decorator ------------------------------------
 */

typedef struct {
    PyObject ob_base;        /* PyObject_HEAD */
    const tally_srcloc *loc; /* interned: lives as long as the process; NULL: not interned */
    PyObject *name;          /* the str */
    PyObject *enter;         /* interned: __enter__ bound to it, made once (see the top) */
    const char *utf8;        /* name's bytes (owned by name), for the copied form */
    Py_ssize_t len;
    int category;
} RangeObject;

static PyTypeObject RangeType;
static PyTypeObject RangedFunctionType;
static PyObject *g_sites[TALLY_CATEGORY_COUNT]; /* name -> Range, per category */
static Py_ssize_t g_nsites;

static inline void range_push(RangeObject *r)
{
    if (r->loc)
        tally_push(r->loc);
    else
        tally__push_copy(r->utf8, (size_t)r->len, (uint32_t)r->category, NULL, 0);
}

static PyObject *range_enter(PyObject *self, PyObject *unused)
{
    (void)unused;
    range_push((RangeObject *)self);
    Py_INCREF(self);
    return self;
}

/* __exit__(exc_type, exc, tb): unbound, so `with` calls it with those three arguments only.
 * Never suppresses the exception. */
static PyObject *range_exit(PyObject *unused, PyObject *const *args, Py_ssize_t nargs)
{
    (void)unused;
    (void)args;
    (void)nargs;
    tally_pop();
    Py_RETURN_FALSE;
}

static PyMethodDef range_enter_def = {"__enter__", range_enter, METH_NOARGS,
                                      "Open the range on the calling thread; returns the range."};
static PyMethodDef range_exit_def = {"__exit__", (PyCFunction)(void (*)(void))range_exit,
                                     METH_FASTCALL, "Close the calling thread's innermost range."};

/* A new Range (category c) for name; interned when room is left. */
static PyObject *range_new_site(PyObject *name, int c, int intern)
{
    Py_ssize_t len;
    const char *utf8 = PyUnicode_AsUTF8AndSize(name, &len);
    if (!utf8)
        return NULL;
    RangeObject *r = PyObject_GC_New(RangeObject, &RangeType);
    if (!r)
        return NULL;
    r->loc = NULL;
    r->enter = NULL;
    Py_INCREF(name);
    r->name = name;
    r->utf8 = utf8;
    r->len = len;
    r->category = c;
    if (intern) {
        /* never freed: the recorder keeps the address, and the writer reads the name later */
        tally_srcloc *loc = PyMem_RawCalloc(1, sizeof *loc);
        char *copy = PyMem_RawMalloc((size_t)len + 1);
        if (!loc || !copy) {
            PyMem_RawFree(loc);
            PyMem_RawFree(copy);
            Py_DECREF(r);
            return PyErr_NoMemory();
        }
        memcpy(copy, utf8, (size_t)len + 1);
        loc->name = copy;
        loc->file = "<python>";
        loc->category = (uint32_t)c;
        r->loc = loc;
    }
    /* an interned range lives for good: its __enter__ is bound once (a reference cycle that
     * is never collected, on purpose); the others bind it at each `with` */
    if (intern && !(r->enter = PyCFunction_New(&range_enter_def, (PyObject *)r))) {
        Py_DECREF(r);
        return NULL;
    }
    PyObject_GC_Track(r);
    return (PyObject *)r;
}

/* The Range for (name, c): the interned one, made on first use. New reference. */
static PyObject *site_for(PyObject *name, int c)
{
    if (!PyUnicode_Check(name)) {
        PyErr_Format(PyExc_TypeError, "tally: a range's name must be a str, not %.100s",
                     Py_TYPE(name)->tp_name);
        return NULL;
    }
    PyObject *r = PyDict_GetItemWithError(g_sites[c], name);
    if (r) {
        Py_INCREF(r);
        return r;
    }
    if (PyErr_Occurred())
        return NULL;
    if (g_nsites >= TALLY_PY_MAX_SITES || !PyUnicode_CheckExact(name))
        return range_new_site(name, c, 0);
    r = range_new_site(name, c, 1);
    if (!r)
        return NULL;
    if (PyDict_SetItem(g_sites[c], name, r) != 0) {
        Py_DECREF(r);
        return NULL;
    }
    g_nsites++;
    return r;
}

/* (name, category="user") from a vectorcall; 0 or -1 with an exception. */
static int parse_name_cat(const char *fn, PyObject *const *args, Py_ssize_t nargs,
                          PyObject *kwnames, PyObject **name, PyObject **cat)
{
    *name = nargs > 0 ? args[0] : NULL;
    *cat = nargs > 1 ? args[1] : NULL;
    if (nargs > 2) {
        PyErr_Format(PyExc_TypeError, "tally.%s() takes at most 2 arguments (%zd given)", fn,
                     nargs);
        return -1;
    }
    Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    for (Py_ssize_t i = 0; i < nkw; i++) {
        PyObject *k = PyTuple_GET_ITEM(kwnames, i);
        PyObject **slot = NULL;
        if (PyUnicode_CompareWithASCIIString(k, "name") == 0)
            slot = name;
        else if (PyUnicode_CompareWithASCIIString(k, "category") == 0)
            slot = cat;
        if (!slot) {
            PyErr_Format(PyExc_TypeError, "tally.%s() got an unexpected keyword argument '%U'", fn,
                         k);
            return -1;
        }
        if (*slot) {
            PyErr_Format(PyExc_TypeError, "tally.%s() got multiple values for argument '%U'", fn,
                         k);
            return -1;
        }
        *slot = args[nargs + i];
    }
    if (!*name) {
        PyErr_Format(PyExc_TypeError, "tally.%s() missing required argument 'name'", fn);
        return -1;
    }
    return 0;
}

/* tally.range(name, category="user") */
static PyObject *py_range(PyObject *mod, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    (void)mod;
    if (nargs == 1 && !kwnames) /* the common form */
        return site_for(args[0], TALLY_USER);
    PyObject *name, *cat;
    if (parse_name_cat("range", args, nargs, kwnames, &name, &cat) != 0)
        return NULL;
    int c = category_of(cat);
    return c < 0 ? NULL : site_for(name, c);
}

/* tally.push(name, category="user") */
static PyObject *py_push(PyObject *mod, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    PyObject *r = py_range(mod, args, nargs, kwnames);
    if (!r)
        return NULL;
    range_push((RangeObject *)r);
    Py_DECREF(r);
    Py_RETURN_NONE;
}

static PyObject *py_pop(PyObject *mod, PyObject *unused)
{
    (void)mod;
    (void)unused;
    tally_pop();
    Py_RETURN_NONE;
}

/* tally.mark(name) */
static PyObject *py_mark(PyObject *mod, PyObject *name)
{
    (void)mod;
    if (!PyUnicode_Check(name))
        return PyErr_Format(PyExc_TypeError, "tally.mark: the name must be a str, not %.100s",
                            Py_TYPE(name)->tp_name);
    PyObject *r = site_for(name, TALLY_USER);
    if (!r)
        return NULL;
    RangeObject *ro = (RangeObject *)r;
    if (ro->loc)
        tally_mark(ro->loc);
    else
        tally__mark_copy(ro->utf8, (size_t)ro->len);
    Py_DECREF(r);
    Py_RETURN_NONE;
}

/* tally.counter(name, value) */
static PyObject *py_counter(PyObject *mod, PyObject *const *args, Py_ssize_t nargs)
{
    (void)mod;
    if (nargs != 2) {
        PyErr_Format(PyExc_TypeError, "tally.counter() takes 2 arguments (name, value), %zd given",
                     nargs);
        return NULL;
    }
    double v = PyFloat_AsDouble(args[1]);
    if (v == -1.0 && PyErr_Occurred())
        return NULL;
    PyObject *r = site_for(args[0], TALLY_USER);
    if (!r)
        return NULL;
    RangeObject *ro = (RangeObject *)r;
    if (ro->loc) /* a counter's name must live as long as the program: only interned ones */
        tally_counter(ro->loc, v);
    Py_DECREF(r);
    Py_RETURN_NONE;
}

/* ---- decorated functions ------------------------------------------------------------------- */

typedef struct {
    PyObject ob_base; /* PyObject_HEAD */
    PyObject *range;  /* the RangeObject */
    PyObject *func;
    PyObject *dict; /* __name__, __doc__, __wrapped__ ... (functools.update_wrapper) */
    vectorcallfunc vectorcall;
} RangedFunctionObject;

static PyObject *ranged_call(PyObject *self, PyObject *const *args, size_t nargsf,
                             PyObject *kwnames)
{
    RangedFunctionObject *f = (RangedFunctionObject *)self;
    range_push((RangeObject *)f->range);
    PyObject *res = PyObject_Vectorcall(f->func, args, nargsf, kwnames);
    tally_pop(); /* on return and on an exception alike */
    return res;
}

/* A method: bind like a function does. */
static PyObject *ranged_get(PyObject *self, PyObject *obj, PyObject *type)
{
    (void)type;
    if (!obj || obj == Py_None) {
        Py_INCREF(self);
        return self;
    }
    return PyMethod_New(self, obj);
}

static int ranged_traverse(PyObject *self, visitproc visit, void *arg)
{
    RangedFunctionObject *f = (RangedFunctionObject *)self;
    Py_VISIT(f->range);
    Py_VISIT(f->func);
    Py_VISIT(f->dict);
    return 0;
}

static int ranged_clear(PyObject *self)
{
    RangedFunctionObject *f = (RangedFunctionObject *)self;
    Py_CLEAR(f->range);
    Py_CLEAR(f->func);
    Py_CLEAR(f->dict);
    return 0;
}

static void ranged_dealloc(PyObject *self)
{
    PyObject_GC_UnTrack(self);
    ranged_clear(self);
    Py_TYPE(self)->tp_free(self);
}

static PyObject *ranged_repr(PyObject *self)
{
    RangedFunctionObject *f = (RangedFunctionObject *)self;
    return PyUnicode_FromFormat("<%R in tally.range(%R)>", f->func,
                                ((RangeObject *)f->range)->name);
}

static PyMemberDef ranged_members[] = {
    {"__dictoffset__", T_PYSSIZET, offsetof(RangedFunctionObject, dict), READONLY, NULL},
    {"__vectorcalloffset__", T_PYSSIZET, offsetof(RangedFunctionObject, vectorcall), READONLY,
     NULL},
    {NULL, 0, 0, 0, NULL}};

static PyGetSetDef ranged_getset[] = {
    {"__dict__", PyObject_GenericGetDict, PyObject_GenericSetDict, NULL, NULL},
    {NULL, NULL, NULL, NULL, NULL}};

static PyTypeObject RangedFunctionType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "tally.RangedFunction",
    .tp_doc = "A function decorated with tally.range(name): each call is one range.",
    .tp_basicsize = sizeof(RangedFunctionObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL |
                Py_TPFLAGS_METHOD_DESCRIPTOR,
    .tp_dealloc = ranged_dealloc,
    .tp_traverse = ranged_traverse,
    .tp_clear = ranged_clear,
    .tp_call = PyVectorcall_Call,
    .tp_vectorcall_offset = offsetof(RangedFunctionObject, vectorcall),
    .tp_dictoffset = offsetof(RangedFunctionObject, dict),
    .tp_descr_get = ranged_get,
    .tp_repr = ranged_repr,
    .tp_members = ranged_members,
    .tp_getset = ranged_getset,
};

static PyObject *g_update_wrapper; /* functools.update_wrapper */

/* range(func): the decorator form. */
static PyObject *range_call(PyObject *self, PyObject *args, PyObject *kw)
{
    PyObject *func;
    if (kw && PyDict_GET_SIZE(kw)) {
        PyErr_SetString(PyExc_TypeError, "tally.range(...)(func) takes no keyword arguments");
        return NULL;
    }
    if (!PyArg_UnpackTuple(args, "tally.range(...)", 1, 1, &func))
        return NULL;
    if (!PyCallable_Check(func)) {
        PyErr_Format(PyExc_TypeError, "tally.range(%R) decorates a callable, not %.100s",
                     ((RangeObject *)self)->name, Py_TYPE(func)->tp_name);
        return NULL;
    }
    RangedFunctionObject *f = PyObject_GC_New(RangedFunctionObject, &RangedFunctionType);
    if (!f)
        return NULL;
    Py_INCREF(self);
    f->range = self;
    Py_INCREF(func);
    f->func = func;
    f->dict = NULL;
    f->vectorcall = ranged_call;
    PyObject_GC_Track(f);
    if (!g_update_wrapper) {
        PyObject *ft = PyImport_ImportModule("functools");
        if (ft) {
            g_update_wrapper = PyObject_GetAttrString(ft, "update_wrapper");
            Py_DECREF(ft);
        }
        if (!g_update_wrapper) {
            Py_DECREF(f);
            return NULL;
        }
    }
    PyObject *r = PyObject_CallFunctionObjArgs(g_update_wrapper, (PyObject *)f, func, NULL);
    if (!r) {
        Py_DECREF(f);
        return NULL;
    }
    Py_DECREF(r);
    return (PyObject *)f;
}

static int range_traverse(PyObject *self, visitproc visit, void *arg)
{
    RangeObject *r = (RangeObject *)self;
    Py_VISIT(r->enter);
    return 0;
}

static int range_clear(PyObject *self)
{
    RangeObject *r = (RangeObject *)self;
    Py_CLEAR(r->enter);
    return 0;
}

static void range_dealloc(PyObject *self)
{
    RangeObject *r = (RangeObject *)self;
    PyObject_GC_UnTrack(self);
    Py_CLEAR(r->enter);
    Py_CLEAR(r->name);
    /* r->loc of an interned range is never freed (the recorder holds its address) */
    Py_TYPE(self)->tp_free(self);
}

static PyObject *range_repr(PyObject *self)
{
    RangeObject *r = (RangeObject *)self;
    return PyUnicode_FromFormat("tally.range(%R, %R)", r->name, cat_str[r->category]);
}

static PyObject *range_get_category(PyObject *self, void *unused)
{
    (void)unused;
    PyObject *s = cat_str[((RangeObject *)self)->category];
    Py_INCREF(s);
    return s;
}

static PyObject *range_get_name(PyObject *self, void *unused)
{
    (void)unused;
    PyObject *s = ((RangeObject *)self)->name;
    Py_INCREF(s);
    return s;
}

static PyGetSetDef range_getset[] = {
    {"name", range_get_name, NULL, "the range's name", NULL},
    {"category", range_get_category, NULL, "the range's category", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

static PyTypeObject RangeType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "tally.Range",
    .tp_doc = "A named range: `with tally.range(name):` or `@tally.range(name)`.",
    .tp_basicsize = sizeof(RangeObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_dealloc = range_dealloc,
    .tp_traverse = range_traverse,
    .tp_clear = range_clear,
    .tp_call = range_call,
    .tp_repr = range_repr,
    .tp_getset = range_getset,
};

/* The __enter__ descriptor: `with` binds it to a Range; it hands back that Range's method
 * object made at creation, so entering allocates nothing. */
typedef struct {
    PyObject ob_base; /* PyObject_HEAD: the descriptor has no state */
} EnterDescrObject;

static PyObject *enter_descr_get(PyObject *self, PyObject *obj, PyObject *type)
{
    (void)type;
    if (!obj || !PyObject_TypeCheck(obj, &RangeType)) {
        Py_INCREF(self);
        return self;
    }
    PyObject *m = ((RangeObject *)obj)->enter;
    if (!m)
        return PyCFunction_New(&range_enter_def, obj);
    Py_INCREF(m);
    return m;
}

/* Range.__enter__(r), as contextlib.ExitStack calls it: the descriptor got from the type. */
static PyObject *enter_descr_call(PyObject *self, PyObject *args, PyObject *kw)
{
    (void)self;
    PyObject *r;
    if ((kw && PyDict_GET_SIZE(kw)) || !PyArg_UnpackTuple(args, "__enter__", 1, 1, &r))
        return NULL;
    if (!PyObject_TypeCheck(r, &RangeType)) {
        PyErr_Format(PyExc_TypeError, "__enter__ needs a tally range, not %.100s",
                     Py_TYPE(r)->tp_name);
        return NULL;
    }
    return range_enter(r, NULL);
}

static PyTypeObject EnterDescrType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "tally._EnterDescriptor",
    .tp_basicsize = sizeof(EnterDescrObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_descr_get = enter_descr_get,
    .tp_call = enter_descr_call,
};

/* ---- the session ------------------------------------------------------------------------------
 */

static PyObject *g_ready; /* the Python trace-ready callable; NULL = the default handler */
/* An exception the callable raised, raised again by the step() or stop() that ran it. */
static PyObject *g_exc_type, *g_exc_value, *g_exc_tb;
static int g_print_summary = 1; /* the default handler prints its summary */
static int g_python_gone;       /* the interpreter is finalizing: the bridge calls no Python */
static char g_samples_unit[64]; /* tally_stop reads the config's unit: it must outlive start */

/* The recorder's trace-ready callback. The default handler runs first, without its summary
 * when the program gave a callable of its own (JSON conversions asked for by TALLY_WRITE still
 * happen); then the Python callable gets the finished window as (index, first_step, last_step,
 * path, records, dropped, lost, io_errno). */
static void ready_bridge(const tally_window *w, void *user)
{
    (void)user;
    tally_window dw = *w;
    if (!g_print_summary)
        dw.write &= ~(unsigned)TALLY_WRITE_SUMMARY;
    tally_default_trace_ready(&dw, NULL);
    if (!g_ready || g_python_gone || !Py_IsInitialized())
        return;
    PyGILState_STATE gs = PyGILState_Ensure();
    PyObject *path = PyUnicode_DecodeFSDefault(w->path ? w->path : "");
    PyObject *res = NULL;
    if (path) {
        res = PyObject_CallFunction(g_ready, "(iLLOKKKi)", w->index, (long long)w->first_step,
                                    (long long)w->last_step, path, (unsigned long long)w->records,
                                    (unsigned long long)w->dropped, (unsigned long long)w->lost,
                                    w->io_errno);
        Py_DECREF(path);
    }
    if (!res) {
        if (!g_exc_type)
            PyErr_Fetch(&g_exc_type, &g_exc_value, &g_exc_tb);
        else
            PyErr_WriteUnraisable(g_ready); /* a second one while the first waits */
    }
    Py_XDECREF(res);
    PyGILState_Release(gs);
}

/* Raise what the callable raised during the last step() or stop(); NULL then, else None. */
static PyObject *pending_or_none(void)
{
    if (g_exc_type) {
        PyErr_Restore(g_exc_type, g_exc_value, g_exc_tb);
        g_exc_type = g_exc_value = g_exc_tb = NULL;
        return NULL;
    }
    Py_RETURN_NONE;
}

static PyObject *start_error(int rc, const char *dir)
{
    switch (rc) {
    case TALLY_ESTATE:
        PyErr_SetString(TallyError, "a tally session is already running in this process");
        break;
    case TALLY_ECONFIG:
        PyErr_SetString(TallyError, "bad TALLY_* environment variable (named on stderr)");
        break;
    case TALLY_EIO:
        PyErr_Format(TallyError, "cannot write trace files in %s", dir ? dir : ".");
        break;
    default:
        PyErr_Format(TallyError, "cannot start the session: %s", tally_strerror(rc));
    }
    return NULL;
}

/* start(*, output_dir, name, skip_first, wait, warmup, active, repeat, range, timer_only,
 *       on_trace_ready, print_summary, samples_unit, memory_cap, buffer_size, flush_ms, quiet) */
static PyObject *py_start(PyObject *mod, PyObject *args, PyObject *kw)
{
    (void)mod;
    static char *kwlist[] = {"output_dir", "name",           "skip_first",    "wait",
                             "warmup",     "active",         "repeat",        "range",
                             "timer_only", "on_trace_ready", "print_summary", "samples_unit",
                             "memory_cap", "buffer_size",    "flush_ms",      "quiet",
                             NULL};
    tally_config c;
    memset(&c, 0, sizeof c);
    PyObject *range = Py_None, *ready = Py_None;
    const char *unit = NULL;
    Py_ssize_t cap = 0, bufsize = 0;
    int summary = 1;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|$zziiiiiOpOpznnip:start", kwlist, &c.output_dir,
                                     &c.name, &c.skip_first, &c.wait, &c.warmup, &c.active,
                                     &c.repeat, &range, &c.timer_only, &ready, &summary, &unit,
                                     &cap, &bufsize, &c.flush_ms, &c.quiet))
        return NULL;
    if (cap < 0 || bufsize < 0) {
        PyErr_SetString(PyExc_ValueError, "memory_cap and buffer_size must be >= 0");
        return NULL;
    }
    c.memory_cap = (size_t)cap;
    c.buffer_size = (size_t)bufsize;
    if (range != Py_None) {
        int a, b;
        if (!PyArg_ParseTuple(range, "ii;range must be a (start, end) pair of ints", &a, &b))
            return NULL;
        tally_schedule_range(&c, a, b);
    }
    if (ready != Py_None && !PyCallable_Check(ready)) {
        PyErr_SetString(PyExc_TypeError, "on_trace_ready must be callable or None");
        return NULL;
    }
    if (unit) {
        snprintf(g_samples_unit, sizeof g_samples_unit, "%s", unit);
        c.samples_unit = g_samples_unit;
    }
    if (tally_running())
        return start_error(TALLY_ESTATE, NULL);
    Py_XDECREF(g_ready);
    g_ready = NULL;
    if (ready != Py_None) {
        Py_INCREF(ready);
        g_ready = ready;
    }
    g_print_summary = summary;
    c.on_trace_ready = ready_bridge;
    int rc = tally_start(&c);
    if (rc != 0) {
        Py_CLEAR(g_ready);
        return start_error(rc, c.output_dir);
    }
    Py_RETURN_NONE;
}

/* step(samples=0) */
static PyObject *py_step(PyObject *mod, PyObject *const *args, Py_ssize_t nargs)
{
    (void)mod;
    unsigned long long samples = 0;
    if (nargs > 1) {
        PyErr_SetString(PyExc_TypeError, "step() takes at most 1 argument (samples)");
        return NULL;
    }
    if (nargs == 1) {
        samples = PyLong_AsUnsignedLongLong(args[0]);
        if (samples == (unsigned long long)-1 && PyErr_Occurred()) {
            if (PyErr_ExceptionMatches(PyExc_OverflowError)) {
                PyErr_Clear();
                PyErr_SetString(PyExc_ValueError, "step(samples): samples must be >= 0");
            }
            return NULL;
        }
    }
    tally_step((uint64_t)samples);
    return pending_or_none();
}

/* stop() -> 0, or a negative tally_err code (TALLY_ESTATE: no session; TALLY_EIO: a file could
 * not be written whole, said on stderr) */
static PyObject *py_stop(PyObject *mod, PyObject *unused)
{
    (void)mod;
    (void)unused;
    int rc = tally_stop();
    Py_CLEAR(g_ready);
    if (g_exc_type)
        return pending_or_none();
    return PyLong_FromLong(rc);
}

static PyObject *py_running(PyObject *mod, PyObject *unused)
{
    (void)mod;
    (void)unused;
    return PyBool_FromLong(tally_running());
}

/* The hot path's gate: 0 no session, 1 recording, 2 window closed, 3 timer-only. */
static PyObject *py_gate(PyObject *mod, PyObject *unused)
{
    (void)mod;
    (void)unused;
    return PyLong_FromLong(__atomic_load_n(&tally__recording, __ATOMIC_RELAXED));
}

static PyObject *py_stats(PyObject *mod, PyObject *unused)
{
    (void)mod;
    (void)unused;
    tally_stats s;
    tally_get_stats(&s);
    return Py_BuildValue("{sKsKsKsKsKsKsKsKsK}", "records", (unsigned long long)s.records,
                         "dropped", (unsigned long long)s.dropped, "bad_pops",
                         (unsigned long long)s.bad_pops, "bad_ends", (unsigned long long)s.bad_ends,
                         "calls_outside", (unsigned long long)s.calls_outside, "unclosed",
                         (unsigned long long)s.unclosed, "steps", (unsigned long long)s.steps,
                         "buffers_written", (unsigned long long)s.buffers_written, "lost",
                         (unsigned long long)s.lost);
}

/* Called by the Python layer's atexit handler once it has stopped the session: from here on a
 * window closed by the C library's own exit hook goes to the default handler. */
static PyObject *py_python_gone(PyObject *mod, PyObject *unused)
{
    (void)mod;
    (void)unused;
    g_python_gone = 1;
    Py_RETURN_NONE;
}

/* ---- Trace: any trace file, its report and its tables ------------------------------------- */

typedef struct {
    PyObject ob_base; /* PyObject_HEAD */
    tl_trace t;
    char *path; /* t.path points here */
    int loaded;
} TraceObject;

static PyObject *trace_new(PyTypeObject *type, PyObject *args, PyObject *kw)
{
    (void)args;
    (void)kw;
    TraceObject *self = (TraceObject *)type->tp_alloc(type, 0);
    if (self) {
        tl_trace_init(&self->t);
        self->path = NULL;
        self->loaded = 0;
    }
    return (PyObject *)self;
}

static int trace_init(PyObject *op, PyObject *args, PyObject *kw)
{
    TraceObject *self = (TraceObject *)op;
    static char *kwlist[] = {"path", NULL};
    PyObject *bytes = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O&:Trace", kwlist, PyUnicode_FSConverter, &bytes))
        return -1;
    if (self->loaded) {
        Py_DECREF(bytes);
        PyErr_SetString(TallyError, "Trace is already loaded");
        return -1;
    }
    free(self->path); /* a second __init__ after a failed one starts afresh */
    tl_trace_free(&self->t);
    tl_trace_init(&self->t);
    self->path = strdup(PyBytes_AS_STRING(bytes));
    Py_DECREF(bytes);
    if (!self->path) {
        PyErr_NoMemory();
        return -1;
    }
    tl_error err = {{0}};
    PyThreadState *ts = PyEval_SaveThread(); /* a big trace takes seconds: let others run */
    int rc = tl_load(&self->t, self->path, 0, &err);
    if (rc == 0 && !self->t.finished && tl_trace_finish(&self->t) != 0) {
        tl_error_setc(&err, TL_ERR_NOMEM, "%s: out of memory", self->path);
        rc = -1;
    }
    PyEval_RestoreThread(ts);
    if (rc != 0) {
        PyErr_SetString(TallyError, err.msg[0] ? err.msg : "cannot read the trace");
        return -1;
    }
    self->t.path = self->path;
    self->loaded = 1;
    return 0;
}

static void trace_dealloc(PyObject *op)
{
    TraceObject *self = (TraceObject *)op;
    tl_trace_free(&self->t);
    free(self->path);
    Py_TYPE(op)->tp_free(op);
}

static int trace_check(TraceObject *self)
{
    if (!self->loaded) {
        PyErr_SetString(TallyError, "the trace was not loaded");
        return -1;
    }
    return 0;
}

/* A memory stream that the report writers write into. */
typedef struct {
    FILE *f;
    char *buf;
    size_t len;
} membuf;

static int membuf_open(membuf *m)
{
    m->buf = NULL;
    m->len = 0;
    m->f = open_memstream(&m->buf, &m->len);
    if (!m->f) {
        PyErr_NoMemory();
        return -1;
    }
    return 0;
}

/* Close it and turn it into a str; NULL on an error. */
static PyObject *membuf_str(membuf *m)
{
    int bad = ferror(m->f);
    int closed = fclose(m->f);
    PyObject *s = NULL;
    if (bad || closed != 0)
        PyErr_SetString(TallyError, "cannot render the report in memory");
    else
        s = PyUnicode_DecodeUTF8(m->buf ? m->buf : "", (Py_ssize_t)m->len, "replace");
    free(m->buf);
    return s;
}

static int parse_format(const char *s)
{
    int f = tl_format_parse(s ? s : "text");
    if (f < 0)
        PyErr_Format(TallyError, "unknown format '%s'; expected text, csv or json", s);
    return f;
}

/* report(views=None, sort=None, top=0, format="text", header=True) -> str: what `tally report
 * FILE --views VIEWS --sort KEY --top N --format FMT` prints */
static PyObject *trace_report(PyObject *op, PyObject *args, PyObject *kw)
{
    TraceObject *self = (TraceObject *)op;
    static char *kwlist[] = {"views", "sort", "top", "format", "header", NULL};
    tl_report_opts o;
    memset(&o, 0, sizeof o);
    const char *fmt = NULL;
    o.header = 1;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|zzizp:report", kwlist, &o.views, &o.vo.sort,
                                     &o.vo.top, &fmt, &o.header))
        return NULL;
    if (trace_check(self) != 0)
        return NULL;
    if (o.vo.top < 0) {
        PyErr_SetString(PyExc_ValueError, "top must be >= 0");
        return NULL;
    }
    int f = parse_format(fmt);
    if (f < 0)
        return NULL;
    o.fmt = (tl_format)f;
    o.unit = TL_UNIT_AUTO;
    membuf m;
    if (membuf_open(&m) != 0)
        return NULL;
    tl_error err = {{0}};
    int rc;
    PyThreadState *ts = PyEval_SaveThread();
    rc = tl_report_write(m.f, &self->t, &o, &err);
    PyEval_RestoreThread(ts);
    PyObject *s = membuf_str(&m);
    if (rc != 0) {
        Py_XDECREF(s);
        PyErr_SetString(TallyError, err.msg[0] ? err.msg : "the report failed");
        return NULL;
    }
    return s;
}

/* The tables of one view as `--format json` writes them; -1 with err set. */
static int write_view_json(FILE *f, const tl_trace *t, const tl_view_def *d, const tl_view_opts *vo,
                           tl_error *err)
{
    if (vo->sort && !d->sortable) {
        tl_error_setc(err, TL_ERR_USAGE,
                      "--sort '%s': the %s view is not sortable (sortable: ranges and the "
                      "operator, kernel, memcpy, ops and gaps views)",
                      vo->sort, d->name);
        return -1;
    }
    tl_table *tab = d->fn(t, vo, err);
    if (!tab)
        return -1;
    tl_table_name_accel(tab, tl_accel_name(t)); /* as the command line names it */
    tl_out o;
    tl_out_begin(&o, f, TL_FMT_JSON, TL_UNIT_AUTO);
    for (const tl_table *x = tab; x; x = x->next)
        tl_out_table(&o, x);
    tl_out_end(&o);
    tl_table_free(tab);
    return 0;
}

/* tables_json(name, sort=None, top=0) -> (json, is_view): the tables of view `name` as `tally
 * ops FILE --format json` (or `tally report --views NAME`) writes them, with its sort and top;
 * when name is no view, every view's tables (the caller looks for a table of that key). */
static PyObject *trace_tables_json(PyObject *op, PyObject *args, PyObject *kw)
{
    TraceObject *self = (TraceObject *)op;
    static char *kwlist[] = {"name", "sort", "top", NULL};
    const char *name;
    tl_view_opts vo;
    memset(&vo, 0, sizeof vo);
    if (!PyArg_ParseTupleAndKeywords(args, kw, "s|zi:tables_json", kwlist, &name, &vo.sort,
                                     &vo.top))
        return NULL;
    if (trace_check(self) != 0)
        return NULL;
    if (vo.top < 0) {
        PyErr_SetString(PyExc_ValueError, "top must be >= 0");
        return NULL;
    }
    const tl_view_def *d = tl_view_lookup(name);
    membuf m;
    if (membuf_open(&m) != 0)
        return NULL;
    tl_error err = {{0}};
    int rc;
    PyThreadState *ts = PyEval_SaveThread();
    if (d) {
        rc = write_view_json(m.f, &self->t, d, &vo, &err);
    } else {
        tl_report_opts o;
        memset(&o, 0, sizeof o);
        o.vo = vo;
        o.fmt = TL_FMT_JSON;
        rc = tl_report_write(m.f, &self->t, &o, &err);
    }
    PyEval_RestoreThread(ts);
    PyObject *s = membuf_str(&m);
    if (rc != 0) {
        Py_XDECREF(s);
        PyErr_SetString(TallyError, err.msg[0] ? err.msg : "the view failed");
        return NULL;
    }
    if (!s)
        return NULL;
    PyObject *r = Py_BuildValue("(NO)", s, d ? Py_True : Py_False);
    return r;
}

static PyObject *trace_get_path(PyObject *op, void *unused)
{
    (void)unused;
    TraceObject *self = (TraceObject *)op;
    if (!self->path)
        Py_RETURN_NONE;
    return PyUnicode_DecodeFSDefault(self->path);
}

static PyObject *trace_get_source(PyObject *op, void *unused)
{
    (void)unused;
    static const char *const names[] = {"unknown",      "tally",  "kineto",
                                        "torch_legacy", "paddle", "chrome"};
    unsigned s = (unsigned)((TraceObject *)op)->t.source;
    return PyUnicode_FromString(s < sizeof names / sizeof names[0] ? names[s] : "unknown");
}

static PyObject *trace_get_events(PyObject *op, void *unused)
{
    (void)unused;
    return PyLong_FromSize_t(((TraceObject *)op)->t.nev);
}

static PyMethodDef trace_methods[] = {
    {"report", (PyCFunction)(void (*)(void))trace_report, METH_VARARGS | METH_KEYWORDS,
     "report(views=None, sort=None, top=0, format='text', header=True) -> str"},
    {"tables_json", (PyCFunction)(void (*)(void))trace_tables_json, METH_VARARGS | METH_KEYWORDS,
     "tables_json(name, sort=None, top=0) -> (json, is_view)"},
    {NULL, NULL, 0, NULL}};

static PyGetSetDef trace_getset[] = {
    {"path", trace_get_path, NULL, "the file it was read from", NULL},
    {"source", trace_get_source, NULL, "what wrote it: tally, kineto, paddle ...", NULL},
    {"events", trace_get_events, NULL, "the number of events", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

static PyTypeObject TraceType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "tally._tally.Trace",
    .tp_doc = "Trace(path): a trace file of any format tally reads, loaded.",
    .tp_basicsize = sizeof(TraceObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = trace_new,
    .tp_init = trace_init,
    .tp_dealloc = trace_dealloc,
    .tp_methods = trace_methods,
    .tp_getset = trace_getset,
};

/* view_names() -> the report's views in print order */
static PyObject *py_view_names(PyObject *mod, PyObject *unused)
{
    (void)mod;
    (void)unused;
    PyObject *t = PyTuple_New(tl_nview_defs);
    for (int i = 0; t && i < tl_nview_defs; i++) {
        PyObject *s = PyUnicode_FromString(tl_view_defs[i].name);
        if (!s) {
            Py_CLEAR(t);
            break;
        }
        PyTuple_SET_ITEM(t, i, s);
    }
    return t;
}

/* check_views(views): raises TallyError with the CLI's message for an unknown view */
static PyObject *py_check_views(PyObject *mod, PyObject *arg)
{
    (void)mod;
    const char *views = PyUnicode_AsUTF8(arg);
    if (!views)
        return NULL;
    tl_error err = {{0}};
    if (tl_report_check_views(views, &err) != 0) {
        PyErr_SetString(TallyError, err.msg);
        return NULL;
    }
    Py_RETURN_NONE;
}

/* ---- the command line ------------------------------------------------------------------------
 */

/* cli(argv) -> exit status: the tally command, in this process (python3 -m tally) */
static PyObject *py_cli(PyObject *mod, PyObject *arg)
{
    (void)mod;
    PyObject *seq = PySequence_Fast(arg, "cli() takes a list of arguments");
    if (!seq)
        return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    PyObject *bytes = PyList_New(n);
    char **argv = PyMem_Calloc((size_t)n + 1, sizeof *argv);
    int ok = bytes && argv;
    for (Py_ssize_t i = 0; ok && i < n; i++) {
        PyObject *b = NULL;
        if (!PyUnicode_FSConverter(PySequence_Fast_GET_ITEM(seq, i), &b)) {
            ok = 0;
            break;
        }
        PyList_SET_ITEM(bytes, i, b);
        argv[i] = PyBytes_AS_STRING(b);
    }
    PyObject *res = NULL;
    if (ok) {
        PyThreadState *ts = PyEval_SaveThread(); /* tally run and tally demo take a while */
        int rc = tally_cli_main((int)n, argv);
        fflush(stdout);
        fflush(stderr);
        PyEval_RestoreThread(ts);
        res = PyLong_FromLong(rc);
    } else if (!PyErr_Occurred()) {
        PyErr_NoMemory();
    }
    PyMem_Free(argv);
    Py_XDECREF(bytes);
    Py_DECREF(seq);
    return res;
}

static PyObject *py_set_cli_python(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *py = NULL, *pkg = NULL;
    if (!PyArg_ParseTuple(args, "O&O&", PyUnicode_FSConverter, &py, PyUnicode_FSConverter, &pkg)) {
        Py_XDECREF(py);
        return NULL;
    }
    tally__set_cli_python(PyBytes_AS_STRING(py), PyBytes_AS_STRING(pkg));
    Py_DECREF(py);
    Py_DECREF(pkg);
    Py_RETURN_NONE;
}

/* gpu() -> 0 or a negative tally error: start CUPTI (CUDA kernels, copies, memsets and the
 * runtime calls that launched them, linked by correlation id) in the running session. Without a
 * driver or CUPTI, one line on stderr says why, and the session goes on. */
static PyObject *py_gpu(PyObject *mod, PyObject *unused)
{
    (void)mod;
    (void)unused;
    PyThreadState *ts = PyEval_SaveThread(); /* CUPTI's start may call back into the recorder */
    int rc = tally__cupti_start();
    PyEval_RestoreThread(ts);
    return PyLong_FromLong(rc);
}

/* ---- memory labels ----------------------------------------------------------------------------
 */

_Static_assert((int)TL_MEM_CAT_COUNT == (int)TALLY_MEM_CATEGORY_COUNT,
               "the analysis names the recorder's memory categories");

/* The memory category named by o: an int (tally_mem_category, MEM_PARAMETER ...) or its name
 * ("parameter" ...); -1 with TypeError or ValueError. */
static int mem_category_of(PyObject *o)
{
    if (PyUnicode_Check(o)) {
        for (int i = 0; i < TALLY_MEM_CATEGORY_COUNT; i++)
            if (PyUnicode_CompareWithASCIIString(o, tl_mem_cat_name((tl_mem_cat)i)) == 0)
                return i;
        PyErr_Format(PyExc_ValueError,
                     "label_memory(): unknown category %R; expected one of: other, parameter, "
                     "gradient, optimizer_state, activation, input, temporary",
                     o);
        return -1;
    }
    if (!PyLong_Check(o)) {
        PyErr_Format(PyExc_TypeError,
                     "label_memory(): category must be an int or a str, not %.100s",
                     Py_TYPE(o)->tp_name);
        return -1;
    }
    long c = PyLong_AsLong(o);
    if (c == -1 && PyErr_Occurred())
        return -1;
    if (c < 0 || c >= TALLY_MEM_CATEGORY_COUNT) {
        PyErr_Format(PyExc_ValueError, "label_memory(): category must be 0..%d, got %ld",
                     TALLY_MEM_CATEGORY_COUNT - 1, c);
        return -1;
    }
    return (int)c;
}

/* An int argument of label_memory(), lo..hi; -1 with TypeError or ValueError. */
static int mem_int(PyObject *o, const char *what, long long lo, long long hi, long long *out)
{
    if (!PyLong_Check(o)) {
        PyErr_Format(PyExc_TypeError, "label_memory(): %s must be an int, not %.100s", what,
                     Py_TYPE(o)->tp_name);
        return -1;
    }
    int overflow;
    *out = PyLong_AsLongLongAndOverflow(o, &overflow);
    if (*out == -1 && PyErr_Occurred())
        return -1;
    if (overflow || *out < lo || *out > hi) {
        PyErr_Format(PyExc_ValueError, "label_memory(): %s must be %lld..%lld, got %R", what, lo,
                     hi, o);
        return -1;
    }
    return 0;
}

/* label_memory(ptr, bytes, device, category, name=None): tally_label_memory. Records nothing
 * outside a recording window. */
static PyObject *py_label_memory(PyObject *mod, PyObject *const *args, Py_ssize_t nargs)
{
    (void)mod;
    if (nargs < 4 || nargs > 5) {
        PyErr_Format(PyExc_TypeError,
                     "label_memory() takes 4 or 5 arguments (ptr, bytes, device, category, "
                     "name=None), %zd given",
                     nargs);
        return NULL;
    }
    if (!PyLong_Check(args[0])) {
        PyErr_Format(PyExc_TypeError, "label_memory(): ptr must be an int, not %.100s",
                     Py_TYPE(args[0])->tp_name);
        return NULL;
    }
    unsigned long long ptr = PyLong_AsUnsignedLongLong(args[0]);
    if (ptr == (unsigned long long)-1 && PyErr_Occurred()) {
        if (PyErr_ExceptionMatches(PyExc_OverflowError)) {
            PyErr_Clear();
            PyErr_Format(PyExc_ValueError,
                         "label_memory(): ptr must be an address, 0..2**64-1, got %R", args[0]);
        }
        return NULL;
    }
    long long bytes, dev;
    if (mem_int(args[1], "bytes", 0, INT64_MAX, &bytes) != 0 ||
        mem_int(args[2], "device", -1, INT32_MAX, &dev) != 0)
        return NULL;
    int cat = mem_category_of(args[3]);
    if (cat < 0)
        return NULL;
    const char *name = NULL;
    if (nargs == 5 && args[4] != Py_None) {
        if (!PyUnicode_Check(args[4])) {
            PyErr_Format(PyExc_TypeError, "label_memory(): name must be a str or None, not %.100s",
                         Py_TYPE(args[4])->tp_name);
            return NULL;
        }
        if (!(name = PyUnicode_AsUTF8(args[4])))
            return NULL;
    }
    tally_label_memory((const void *)(uintptr_t)ptr, (uint64_t)bytes, (int)dev, cat, name);
    Py_RETURN_NONE;
}

/* ---- the module ------------------------------------------------------------------------------
 */

/* What the PyTorch shim records through (capi.h). */
static tally_capi g_capi;

static PyMethodDef module_methods[] = {
    {"range", (PyCFunction)(void (*)(void))py_range, METH_FASTCALL | METH_KEYWORDS,
     "range(name, category='user'): a context manager and a decorator that records a range"},
    {"push", (PyCFunction)(void (*)(void))py_push, METH_FASTCALL | METH_KEYWORDS,
     "push(name, category='user'): open a range on the calling thread"},
    {"pop", py_pop, METH_NOARGS, "pop(): close the calling thread's innermost range"},
    {"mark", py_mark, METH_O, "mark(name): an instant event"},
    {"counter", (PyCFunction)(void (*)(void))py_counter, METH_FASTCALL,
     "counter(name, value): a counter sample"},
    {"start", (PyCFunction)(void (*)(void))py_start, METH_VARARGS | METH_KEYWORDS,
     "start(**settings): start the session (tally_start)"},
    {"gpu", py_gpu, METH_NOARGS,
     "gpu(): record CUDA activity through CUPTI in the running session (0, or an error code)"},
    {"step", (PyCFunction)(void (*)(void))py_step, METH_FASTCALL,
     "step(samples=0): close the current step (tally_step)"},
    {"stop", py_stop, METH_NOARGS, "stop() -> 0 or a negative code (tally_stop)"},
    {"running", py_running, METH_NOARGS, "running() -> True while a session runs"},
    {"gate", py_gate, METH_NOARGS, "gate() -> 0 off, 1 recording, 2 window closed, 3 timer"},
    {"stats", py_stats, METH_NOARGS, "stats() -> the session's counters (tally_get_stats)"},
    {"python_gone", py_python_gone, METH_NOARGS, "the interpreter is exiting (atexit)"},
    {"view_names", py_view_names, METH_NOARGS, "view_names() -> the report's views"},
    {"check_views", py_check_views, METH_O, "check_views(views): TallyError if one is unknown"},
    {"cli", py_cli, METH_O, "cli(argv) -> exit status of the tally command, run in-process"},
    {"set_cli_python", py_set_cli_python, METH_VARARGS,
     "set_cli_python(python, package_parent): the interpreter and the package's folder, with "
     "which a finished window's conversion (TALLY_WRITE=json.gz) runs this package's command "
     "line when TALLY_BIN names no tally binary"},
    {"label_memory", (PyCFunction)(void (*)(void))py_label_memory, METH_FASTCALL,
     "label_memory(ptr, bytes, device, category, name=None): say what the memory block at ptr "
     "holds until it is freed (tally_label_memory); device -1 is host memory, category a "
     "MEM_* number or its name"},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT,
    .m_name = "tally._tally",
    .m_doc = "The core of the tally package: recorder, analysis and command line in C.",
    .m_size = -1,
    .m_methods = module_methods,
};

PyMODINIT_FUNC PyInit__tally(void)
{
    if (PyType_Ready(&RangeType) < 0 || PyType_Ready(&RangedFunctionType) < 0 ||
        PyType_Ready(&EnterDescrType) < 0 || PyType_Ready(&TraceType) < 0)
        return NULL;
    /* __enter__ and __exit__ go in the type's dict by hand: see the top of the file */
    PyObject *enter = PyType_GenericAlloc(&EnterDescrType, 0);
    PyObject *exit_fn = PyCFunction_New(&range_exit_def, NULL);
    if (!enter || !exit_fn || PyDict_SetItemString(RangeType.tp_dict, "__enter__", enter) < 0 ||
        PyDict_SetItemString(RangeType.tp_dict, "__exit__", exit_fn) < 0) {
        Py_XDECREF(enter);
        Py_XDECREF(exit_fn);
        return NULL;
    }
    Py_DECREF(enter);
    Py_DECREF(exit_fn);
    PyType_Modified(&RangeType);

    for (int i = 0; i < TALLY_CATEGORY_COUNT; i++) {
        if (!cat_str[i] && !(cat_str[i] = PyUnicode_InternFromString(cat_names[i])))
            return NULL;
        if (!g_sites[i] && !(g_sites[i] = PyDict_New()))
            return NULL;
    }
    PyObject *m = PyModule_Create(&module_def);
    if (!m)
        return NULL;
    TallyError = PyErr_NewExceptionWithDoc(
        "tally.TallyError",
        "A tally error: a trace that cannot be read, an unknown view or sort key, a session "
        "that cannot start. The message is the command line's one-line message.",
        NULL, NULL);
    PyObject *cats = PyTuple_New(TALLY_CATEGORY_COUNT);
    if (!TallyError || !cats)
        goto fail;
    for (int i = 0; i < TALLY_CATEGORY_COUNT; i++) {
        Py_INCREF(cat_str[i]);
        PyTuple_SET_ITEM(cats, i, cat_str[i]);
    }
    g_capi.version = TALLY_CAPI_VERSION;
    g_capi.size = (uint32_t)sizeof g_capi;
    g_capi.gate = &tally__recording;
    g_capi.push = tally_push;
    g_capi.push_arg = tally_push_arg;
    g_capi.push_copy = tally__push_copy;
    g_capi.pop = tally_pop;
    g_capi.memory = tally__record_memory;
    g_capi.thread_name = tally_thread_name;
    g_capi.push_argref = tally__push_argref;
    g_capi.push_argkey = tally__push_argkey;
    PyObject *capsule = PyCapsule_New(&g_capi, TALLY_CAPI_CAPSULE, NULL);
    Py_INCREF(TallyError);
    Py_INCREF(&TraceType);
    Py_INCREF(&RangeType);
    Py_INCREF(&RangedFunctionType);
    if (!capsule || PyModule_AddObject(m, "_C_API", capsule) < 0 ||
        PyModule_AddObject(m, "TallyError", TallyError) < 0 ||
        PyModule_AddObject(m, "Trace", (PyObject *)&TraceType) < 0 ||
        PyModule_AddObject(m, "Range", (PyObject *)&RangeType) < 0 ||
        PyModule_AddObject(m, "RangedFunction", (PyObject *)&RangedFunctionType) < 0 ||
        PyModule_AddObject(m, "CATEGORIES", cats) < 0 ||
        PyModule_AddStringConstant(m, "__version__", tally_version_string()) < 0 ||
        PyModule_AddIntConstant(m, "MAX_SITES", TALLY_PY_MAX_SITES) < 0)
        goto fail;
    /* the memory categories of label_memory(): MEM_OTHER ... MEM_TEMPORARY (tally_mem_category)
     * and MEM_CATEGORIES, their names in that order */
    static const char *const mem_consts[TALLY_MEM_CATEGORY_COUNT] = {
        "MEM_OTHER",      "MEM_PARAMETER", "MEM_GRADIENT", "MEM_OPTIMIZER_STATE",
        "MEM_ACTIVATION", "MEM_INPUT",     "MEM_TEMPORARY"};
    PyObject *mem_names = PyTuple_New(TALLY_MEM_CATEGORY_COUNT);
    if (!mem_names)
        goto fail;
    for (int i = 0; i < TALLY_MEM_CATEGORY_COUNT; i++) {
        PyObject *n = PyUnicode_FromString(tl_mem_cat_name((tl_mem_cat)i));
        if (!n) {
            Py_DECREF(mem_names);
            goto fail;
        }
        PyTuple_SET_ITEM(mem_names, i, n);
        if (PyModule_AddIntConstant(m, mem_consts[i], i) < 0) {
            Py_DECREF(mem_names);
            goto fail;
        }
    }
    if (PyModule_AddObject(m, "MEM_CATEGORIES", mem_names) < 0) {
        Py_DECREF(mem_names);
        goto fail;
    }
    return m;
fail:
    Py_DECREF(m);
    return NULL;
}
