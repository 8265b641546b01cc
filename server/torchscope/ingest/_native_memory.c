/* The scan's [memory] events (see _native_scan.h): kept as records while scanning, made
 * into MemoryEvents once the scan knows the origin and tracks. The scan (_native_scan.c)
 * calls this file; this file calls only _native_event.c's id_obj/pair, never the scan. */
#include "_native_scan.h"

static const char *const MEM_KEYS[4] = {"Bytes", "Addr", "Device Type", "Device Id"};

/* The four numbers of a [memory] event's args; 0 unless all present ones are JSON ints
 * and Bytes is there (the defaults are _memory_events's: Addr 0, Device Type 0, Id -1). */
static int memory_fields(const char *p, Py_ssize_t n, long long v[4]) {
    static const long long DEFAULTS[4] = {0, 0, 0, -1};
    const char *at[4];
    Py_ssize_t len[4];
    if (object_fields(p, n, MEM_KEYS, 4, at, len) != 0 || len[0] == 0) return 0;
    for (int k = 0; k < 4; k++) {
        v[k] = DEFAULTS[k];
        if (len[k] == 0) continue;
        Cur cur = {at[k], at[k] + len[k]};
        Num num;
        if (*cur.p != '-' && (*cur.p < '0' || *cur.p > '9')) return 0;
        if (read_number(&cur, &num) || !num.is_int || cur.p != cur.end) return 0;
        v[k] = num.i;
    }
    return 1;
}

int memory_event(Ctx *c, const Event *ev) {
    if (c->n_mem == c->cap_mem) {
        Py_ssize_t cap = c->cap_mem ? c->cap_mem * 2 : 1024;
        MemRec *mem = PyMem_Realloc(c->mem, (size_t)cap * sizeof(MemRec));
        if (mem == NULL) {
            PyErr_NoMemory();
            return ERR;
        }
        c->mem = mem;
        c->cap_mem = cap;
    }
    MemRec *r = &c->mem[c->n_mem++];
    r->has_ts = ev->has_ts;
    r->ts = ev->ts;
    r->pid = ev->pid;
    r->tid = ev->tid;
    /* One that is not simple: the reference reader takes the trace (Kineto writes every
     * one simple; the scan no longer holds the args to hand them over raw). */
    return ev->has_ts && memory_fields(ev->args, ev->args_len, r->v) ? 0 : BAIL;
}

/* The MemoryEvents, in file order (the caller sorts them by time, as _memory_events does). */
PyObject *memory_events(Ctx *c, const State *s) {
    /* _memory_events subtracts ``origin or 0``: nothing from a zero or missing origin. */
    int shift = s->has_origin && as_double(&s->origin) != 0.0;
    PyObject *out = PyList_New(0);
    for (Py_ssize_t i = 0; out != NULL && i < c->n_mem; i++) {
        MemRec *r = &c->mem[i];
        Num ts = shift ? sub(&r->ts, &s->origin) : r->ts;
        Event ev;
        ev.pid = r->pid;
        ev.tid = r->tid;
        PyObject *key = pair(&ev), *track = NULL;
        if (key != NULL) {
            track = PyDict_GetItemWithError(c->track_ids, key);
            Py_DECREF(key);
        }
        PyObject *items[6] = {num_obj(&ts), track != NULL ? Py_NewRef(track) : PyLong_FromLong(-1),
                              PyLong_FromLongLong(r->v[0]), PyLong_FromLongLong(r->v[1]),
                              PyLong_FromLongLong(r->v[2]), PyLong_FromLongLong(r->v[3])};
        PyObject *e = NULL;
        if (key != NULL && !PyErr_Occurred()) {
            int ok = 1;
            for (int k = 0; k < 6; k++) ok &= items[k] != NULL;
            if (ok) {
                e = new_tuple((PyTypeObject *)c->memory_type, items, 6);
            } else {
                for (int k = 0; k < 6; k++) Py_XDECREF(items[k]);
            }
        } else {
            for (int k = 0; k < 6; k++) Py_XDECREF(items[k]);
        }
        if (e == NULL || PyList_Append(out, e) < 0) Py_CLEAR(out);
        Py_XDECREF(e);
    }
    return out;
}
