/*
 * _torch.cpp — tally._torch: PyTorch's operators and allocations into tally's recorder.
 *
 * The only C++ in tally, because PyTorch's hooks are C++. Two of them, the ones torch's own
 * profiler uses:
 *   - a global RecordFunction callback: every ATen operator, autograd node and record_function
 *     label, on every thread (autograd's backward threads included), becomes a push at its start
 *     and a pop at its end, with its input shapes when asked ("[[2, 3], [3, 4], []]", torch's
 *     Input Shapes);
 *   - c10's memory-reporting hook (a MemoryReportingInfoBase in the thread-local debug info, which
 *     the autograd engine carries to its threads): every allocation and free of the caching
 *     allocators becomes a MEMORY record on the thread that made it.
 * Both record through the core extension's function table (capi.h), so there is one recorder and
 * one session per process. A callback costs a gate test when the schedule's window is closed.
 *
 * Names: an operator's name is interned once into a call site that lives as long as the process,
 * found again through a small per-thread cache keyed by the name's address (checked against the
 * text, since names of autograd nodes and labels are std::strings whose buffers are reused).
 *
 *   tally._torch.enable(record_shapes, profile_memory)   at tally.profile's start (dry_run=True:
 *                                                        hooked in, recording nothing: the floor
 *                                                        that PyTorch's machinery sets)
 *   tally._torch.disable()                               at its stop
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <ATen/record_function.h>
#include <c10/core/Allocator.h>
#include <c10/util/ThreadLocalDebugInfo.h>

#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

extern "C" {
#include "capi.h"
}

/* The module's thread-locals without a call to __tls_get_addr each time (the module is loaded
 * with the interpreter's modules, which leaves room in the static TLS block). */
#define TLS_MODEL __attribute__((tls_model("initial-exec")))

namespace {

const tally_capi *api;
std::mutex lock; /* enable/disable and the name table */
bool enabled;
bool shapes;
bool dry; /* callbacks registered, nothing recorded: what PyTorch's machinery alone costs */
at::CallbackHandle handle;

/* ---- names ------------------------------------------------------------------------------------ */

/* Every name met, once: the text and its call site live until the process ends (the recorder
 * keeps pointers to them until the trace is written). */
struct Site {
    std::string text;
    tally_srcloc loc;
};
std::unordered_map<std::string, Site *> *sites; /* leaked on purpose: used from any thread */

uint32_t category_of(const char *name, at::RecordScope scope)
{
    if (scope == at::RecordScope::USER_SCOPE) {
        /* the labels PyTorch itself puts around an optimizer step and a DataLoader batch */
        if (!std::strncmp(name, "Optimizer.step#", 15) ||
            !std::strncmp(name, "Optimizer.zero_grad#", 20))
            return TALLY_OPTIMIZER;
        if (!std::strncmp(name, "enumerate(DataLoader)#", 22))
            return TALLY_DATALOADER;
        return TALLY_USER;
    }
    return TALLY_OPERATOR;
}

const tally_srcloc *intern(const char *name, uint32_t category)
{
    std::lock_guard<std::mutex> g(lock);
    if (!sites)
        sites = new std::unordered_map<std::string, Site *>();
    std::string key(name);
    key.push_back(static_cast<char>('0' + category)); /* one site per name and category */
    auto it = sites->find(key);
    if (it != sites->end())
        return &it->second->loc;
    Site *s = new Site{std::string(name), tally_srcloc{}};
    s->loc.name = s->text.c_str();
    s->loc.file = "pytorch";
    s->loc.function = nullptr;
    s->loc.line = 0;
    s->loc.category = category;
    sites->emplace(std::move(key), s);
    return &s->loc;
}

/* A thread's caches, made at its first operator (and kept until the process ends: a thread
 * that runs operators is rarely short-lived). Only the pointer is thread-local, so that the
 * static TLS block, which is small, has room for it. */
struct Entry {
    const char *ptr;
    const tally_srcloc *loc;
    uint64_t hash;
    uint8_t scope;
};
struct ThreadCaches {
    Entry by_ptr[256];
    Entry by_text[1024];
    char shapes[4096];
};
thread_local ThreadCaches *caches TLS_MODEL;

inline ThreadCaches &my_caches()
{
    if (__builtin_expect(!caches, 0))
        caches = new ThreadCaches();
    return *caches;
}

/* The call site of name, through two per-thread caches in front of the table: by the name's
 * address (an operator's name lives in its schema: the same address at every call), then by a
 * hash of its text (autograd nodes and labels build their names anew at each call). */
const tally_srcloc *site_of(const char *name, at::RecordScope scope)
{
    ThreadCaches &c = my_caches();
    Entry *by_ptr = c.by_ptr, *by_text = c.by_text;
    uint8_t sc = static_cast<uint8_t>(scope);
    Entry &e = by_ptr[(reinterpret_cast<uintptr_t>(name) >> 3) & 255];
    if (e.ptr == name && e.scope == sc && std::strcmp(e.loc->name, name) == 0)
        return e.loc;
    uint64_t h = UINT64_C(0xcbf29ce484222325); /* FNV-1a */
    for (const char *c = name; *c; c++)
        h = (h ^ static_cast<unsigned char>(*c)) * UINT64_C(0x100000001b3);
    Entry &t = by_text[h & 1023];
    const tally_srcloc *loc;
    if (t.loc && t.hash == h && t.scope == sc && std::strcmp(t.loc->name, name) == 0) {
        loc = t.loc;
    } else {
        loc = intern(name, category_of(name, scope));
        t = Entry{nullptr, loc, h, sc};
    }
    e = Entry{name, loc, h, sc};
    return loc;
}

/* ---- shapes ----------------------------------------------------------------------------------- */

/* A key for an operator's input shapes, from the sizes themselves: the same shapes at the next
 * step give the same key, and the recorder then writes a reference to the string it already has
 * instead of the string, which is formatted only the first time. */
inline uint64_t mix(uint64_t h, uint64_t x)
{
    h = (h ^ x) * UINT64_C(0x9e3779b97f4a7c15);
    return h ^ (h >> 32);
}

uint64_t shapes_key(const at::RecordFunction &fn)
{
    uint64_t h = UINT64_C(0x243f6a8885a308d3);
    for (const c10::IValue &v : fn.inputs()) {
        if (v.isTensor() && v.toTensor().defined()) {
            c10::IntArrayRef sizes = v.toTensor().sizes();
            h = mix(h, 0x100 + sizes.size());
            for (int64_t d : sizes)
                h = mix(h, static_cast<uint64_t>(d));
        } else {
            h = mix(h, 0x55);
        }
    }
    return h | 1;
}

/* torch's Input Shapes of an operator: one list per input, [] for what is not a tensor. Returns
 * the length written into out (cut, with "...]", at cap). */
size_t input_shapes(const at::RecordFunction &fn, char *out, size_t cap)
{
    size_t n = 0;
    auto put = [&](const char *s, size_t len) {
        if (n + len < cap - 8) {
            std::memcpy(out + n, s, len);
            n += len;
        }
    };
    put("[", 1);
    bool first = true;
    for (const c10::IValue &v : fn.inputs()) {
        if (!first)
            put(", ", 2);
        first = false;
        put("[", 1);
        if (v.isTensor() && v.toTensor().defined()) {
            bool f = true;
            for (int64_t d : v.toTensor().sizes()) {
                if (!f)
                    put(", ", 2);
                f = false;
                char num[24];
                int len = std::snprintf(num, sizeof num, "%lld", static_cast<long long>(d));
                put(num, static_cast<size_t>(len));
            }
        }
        put("]", 1);
    }
    put("]", 1);
    out[n] = 0;
    return n;
}

/* ---- RecordFunction --------------------------------------------------------------------------- */

std::unique_ptr<at::ObserverContext> on_start(const at::RecordFunction &fn)
{
    if (*api->gate != 1 || dry) /* outside the active window */
        return nullptr;
    const tally_srcloc *loc = site_of(fn.name(), fn.scope());
    if (shapes && fn.needsInputs()) {
        uint64_t key = shapes_key(fn);
        if (!api->push_argref(loc, key)) { /* the first time in this file: the string */
            char *buf = my_caches().shapes;
            size_t len = input_shapes(fn, buf, sizeof my_caches().shapes);
            api->push_argkey(loc, key, buf, len);
        }
    } else {
        api->push(loc);
    }
    return nullptr;
}

void on_end(const at::RecordFunction &, at::ObserverContext *)
{
    /* a range that started outside the window ends here as a straddler: the recorder ignores
     * a pop with nothing open on its thread at the window's start */
    if (*api->gate == 1 && !dry)
        api->pop();
}

/* ---- memory ----------------------------------------------------------------------------------- */

struct MemoryHook : public c10::MemoryReportingInfoBase {
    void reportMemoryUsage(void *ptr, int64_t alloc_size, int64_t total_allocated,
                           int64_t total_reserved, c10::Device device) override
    {
        if (*api->gate != 1)
            return;
        api->memory(reinterpret_cast<uint64_t>(ptr), alloc_size,
                    device.is_cpu() ? -1 : static_cast<int32_t>(device.index()), 0,
                    total_allocated, total_reserved);
    }
    bool memoryProfilingEnabled() const override
    {
        return true;
    }
};
bool memory_pushed;

/* ---- the module ------------------------------------------------------------------------------- */

PyObject *enable(PyObject *, PyObject *args, PyObject *kw)
{
    static const char *names[] = {"record_shapes", "profile_memory", "dry_run", nullptr};
    int rec_shapes = 0, memory = 0, dry_run = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|ppp:enable", const_cast<char **>(names),
                                     &rec_shapes, &memory, &dry_run))
        return nullptr;
    std::lock_guard<std::mutex> g(lock);
    if (enabled) {
        PyErr_SetString(PyExc_RuntimeError, "tally._torch is already enabled");
        return nullptr;
    }
    try {
        shapes = rec_shapes != 0;
        dry = dry_run != 0;
        handle = at::addGlobalCallback(
            at::RecordFunctionCallback(on_start, on_end).needsInputs(shapes));
        if (memory) {
            /* on this thread, and on the threads the autograd engine runs it on */
            c10::ThreadLocalDebugInfo::_push(c10::DebugInfoKind::PROFILER_STATE,
                                             std::make_shared<MemoryHook>());
            memory_pushed = true;
        }
    } catch (const std::exception &e) {
        PyErr_Format(PyExc_RuntimeError, "tally: cannot hook into PyTorch: %s", e.what());
        return nullptr;
    }
    enabled = true;
    Py_RETURN_NONE;
}

PyObject *disable(PyObject *, PyObject *)
{
    std::lock_guard<std::mutex> g(lock);
    if (!enabled)
        Py_RETURN_NONE;
    try {
        at::removeCallback(handle);
        if (memory_pushed)
            c10::ThreadLocalDebugInfo::_pop(c10::DebugInfoKind::PROFILER_STATE);
    } catch (const std::exception &e) {
        /* another PROFILER_STATE pushed on top of ours (torch.profiler inside tally.profile) */
        memory_pushed = false;
        enabled = false;
        PyErr_Format(PyExc_RuntimeError, "tally: unhooking from PyTorch: %s", e.what());
        return nullptr;
    }
    memory_pushed = false;
    enabled = false;
    Py_RETURN_NONE;
}

PyMethodDef methods[] = {
    {"enable", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)(void)>(enable)),
     METH_VARARGS | METH_KEYWORDS,
     "enable(record_shapes=False, profile_memory=False, dry_run=False): record PyTorch's "
     "operators (with their input shapes) and allocations into the running tally session; "
     "dry_run: hook in but record nothing (what PyTorch's hooks alone cost)"},
    {"disable", disable, METH_NOARGS, "disable(): stop recording PyTorch's operators"},
    {nullptr, nullptr, 0, nullptr}};

PyModuleDef module = {PyModuleDef_HEAD_INIT, "tally._torch",
                      "PyTorch's operators and allocations into tally's recorder", -1, methods,
                      nullptr, nullptr, nullptr, nullptr};

} // namespace

PyMODINIT_FUNC PyInit__torch(void)
{
    api = static_cast<const tally_capi *>(PyCapsule_Import(TALLY_CAPI_CAPSULE, 0));
    if (!api)
        return nullptr;
    if (api->version != TALLY_CAPI_VERSION || api->size != sizeof(tally_capi) ||
        !api->push_argref || !api->push_argkey) {
        PyErr_Format(PyExc_ImportError,
                     "tally._torch was built for another tally._tally (C API %u, size %u; "
                     "this one: %u, %u): rebuild the package",
                     TALLY_CAPI_VERSION, static_cast<unsigned>(sizeof(tally_capi)),
                     api->version, api->size);
        return nullptr;
    }
    return PyModule_Create(&module);
}
