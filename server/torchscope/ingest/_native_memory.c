/* The scan's [memory] events (see _native_scan.h): kept as records while scanning, made
 * into MemoryEvents once the scan knows the origin and tracks. The scan (_native_scan.c)
 * calls this file; this file calls only _native_event.c's id_obj/pair, never the scan. */
#include "_native_scan.h"
#include "_native_record.h"

/* MemoryEvent: ingest/model.py's MemoryEvent in 64 bytes (a tuple of six objects took
 * about 190; a trace recorded with profile_memory has one such event per seven). */
typedef struct {
    PyObject_HEAD
    double ts;
    int64_t bytes, addr;
    int32_t device_type, device_id, track, int_ts;
} MemEvent;

static PyObject *mem_field(PyObject *self, Py_ssize_t i) {
    MemEvent *m = (MemEvent *)self;
    switch (i) {
    case 0: return m->int_ts ? PyLong_FromLongLong((long long)m->ts) : PyFloat_FromDouble(m->ts);
    case 1: return PyLong_FromLong(m->track);
    case 2: return PyLong_FromLongLong(m->bytes);
    case 3: return PyLong_FromLongLong(m->addr);
    case 4: return PyLong_FromLong(m->device_type);
    default: return PyLong_FromLong(m->device_id);
    }
}

static PyObject *own_type(PyObject *self) { return Py_NewRef((PyObject *)Py_TYPE(self)); }

RECORD_METHODS(mem, mem_field, own_type,
               "MemoryEvent(ts=%r, track=%r, bytes=%r, addr=%r, device_type=%r, device_id=%r)")

static int fits32(long long v) { return v >= INT32_MIN && v <= INT32_MAX; }

/* A MemoryEvent, or NULL: with no exception set, a number does not fit in its field. */
static PyObject *mem_make(const Num *ts, long long track, const long long v[4]) {
    if (!fits32(track) || !fits32(v[2]) || !fits32(v[3])) return NULL;
    MemEvent *m = PyObject_New(MemEvent, MemEventType);
    if (m == NULL) return NULL;
    m->ts = ts->is_int ? (double)ts->i : ts->d;
    m->int_ts = ts->is_int;
    m->track = (int32_t)track;
    m->bytes = v[0];
    m->addr = v[1];
    m->device_type = (int32_t)v[2];
    m->device_id = (int32_t)v[3];
    return (PyObject *)m;
}

/* MemoryEvent(ts, track, bytes, addr, device_type, device_id): for pickling. */
static PyObject *mem_new(PyTypeObject *Py_UNUSED(type), PyObject *a, PyObject *kw) {
    PyObject *ts;
    long long track, v[4];
    static char *kwlist[] = {"ts", "track", "bytes", "addr", "device_type", "device_id", NULL};
    if (!PyArg_ParseTupleAndKeywords(a, kw, "OLLLLL:MemoryEvent", kwlist, &ts, &track, &v[0],
                                     &v[1], &v[2], &v[3]))
        return NULL;
    Num n;
    if (num_from(ts, &n) != 0) {
        PyErr_SetString(PyExc_TypeError, "MemoryEvent: ts is an int below 2**53 or a float");
        return NULL;
    }
    PyObject *out = mem_make(&n, track, v);
    if (out == NULL && !PyErr_Occurred())
        PyErr_SetString(PyExc_OverflowError, "MemoryEvent: track or device beyond 2**31");
    return out;
}

static PyGetSetDef mem_getset[] = {
    {"ts", mem_get_0, NULL, NULL, NULL},          {"track", mem_get_1, NULL, NULL, NULL},
    {"bytes", mem_get_2, NULL, NULL, NULL},       {"addr", mem_get_3, NULL, NULL, NULL},
    {"device_type", mem_get_4, NULL, NULL, NULL}, {"device_id", mem_get_5, NULL, NULL, NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyType_Slot mem_slots[] = {
    {Py_tp_dealloc, free_instance},
    {Py_tp_doc, "One [memory] event, its fields inline (ingest/model.py's MemoryEvent, compact)."},
    {Py_tp_getset, mem_getset},
    {Py_tp_new, mem_new},
    RECORD_TYPE_SLOTS(mem),
    {0, NULL},
};

PyType_Spec MemEventSpec = {
    "torchscope.ingest._native.MemoryEvent", sizeof(MemEvent), 0, Py_TPFLAGS_DEFAULT, mem_slots,
};
PyTypeObject *MemEventType;

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
    if (!ev->has_ts || !memory_fields(ev->args, ev->args_len, r->v)) return BAIL;
    /* a compact MemoryEvent holds device type and id in 32 bits (Kineto's are small) */
    int compact = c->memory_type == (PyObject *)MemEventType;
    return !compact || (fits32(r->v[2]) && fits32(r->v[3])) ? 0 : BAIL;
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
        PyObject *e = NULL;
        if (key != NULL && !PyErr_Occurred() && c->memory_type == (PyObject *)MemEventType) {
            long t = track != NULL ? PyLong_AsLong(track) : -1;
            if (!PyErr_Occurred()) e = mem_make(&ts, t, r->v); /* they fit: memory_event */
            if (e == NULL || PyList_Append(out, e) < 0) Py_CLEAR(out);
            Py_XDECREF(e);
            continue;
        }
        PyObject *items[6] = {num_obj(&ts), track != NULL ? Py_NewRef(track) : PyLong_FromLong(-1),
                              PyLong_FromLongLong(r->v[0]), PyLong_FromLongLong(r->v[1]),
                              PyLong_FromLongLong(r->v[2]), PyLong_FromLongLong(r->v[3])};
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
