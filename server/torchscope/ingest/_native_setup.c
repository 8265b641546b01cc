/* _native.scan_stream's set-up (see _native_scan.c): configure() and the tables it keeps,
 * the EventSink's containers and the --steps window unpacked into a scan's Ctx, and the
 * scan's answer. */
#include "_native_scan.h"

Config config;

/* configure(consts): the event model's tables, once, at import (ingest/accel.py):
 * (category_kind, legacy_cats, ann_prefixes, marker, overhead_names, span_type, empty,
 * memory_type, op_kind, ann_kind, overhead_kind, span_keys, decode_any). */
PyObject *native_configure(PyObject *Py_UNUSED(module), PyObject *consts) {
    PyObject *keys;
    if (!PyTuple_Check(consts) || PyTuple_GET_SIZE(consts) != 13) {
        PyErr_SetString(PyExc_TypeError, "configure: a tuple of 13 tables expected");
        return NULL;
    }
    keys = PyTuple_GET_ITEM(consts, 11);
    if (!PyTuple_Check(keys) || PyTuple_GET_SIZE(keys) > MAX_SPAN_KEYS) {
        PyErr_Format(PyExc_ValueError, "configure: span keys: a tuple of at most %d str",
                     (int)MAX_SPAN_KEYS);
        return NULL;
    }
    Config next = {Py_NewRef(consts), (int)PyTuple_GET_SIZE(keys), {NULL}, {0}};
    for (int k = 0; k < next.n_keys; k++) {
        next.keys[k] = PyUnicode_AsUTF8AndSize(PyTuple_GET_ITEM(keys, k), &next.key_len[k]);
        if (next.keys[k] == NULL) {
            Py_DECREF(consts);
            return NULL;
        }
    }
    Py_XDECREF(config.consts);
    config = next; /* the key bytes live in the str objects the held tuple holds */
    args_set_decoder(PyTuple_GET_ITEM(consts, 12));
    span_set_empty(PyTuple_GET_ITEM(consts, 6));
    Py_RETURN_NONE;
}

static int unpack_sink(Ctx *c, PyObject *sink) {
    PyObject *lists = PyObject_GetAttrString(sink, "lists");
    if (lists == NULL) return ERR;
    int ok = PyList_Check(lists);
    c->n_lists = ok ? PyList_GET_SIZE(lists) : 0;
    c->lists = PyMem_Calloc((size_t)c->n_lists + 1, sizeof(PyObject *));
    for (Py_ssize_t i = 0; ok && c->lists != NULL && i < c->n_lists; i++) {
        c->lists[i] = PyList_GET_ITEM(lists, i);
        ok = PyList_Check(c->lists[i]);
    }
    Py_DECREF(lists); /* the sink keeps them alive */
    if (c->lists == NULL) {
        PyErr_NoMemory();
        return ERR;
    }
    if (!ok) {
        PyErr_SetString(PyExc_TypeError, "sink.lists: a list of lists expected");
        return ERR;
    }
    struct { const char *name; PyObject **slot; } attrs[] = {
        {"track_ids", &c->track_ids}, {"track_kinds", &c->track_kinds},
        {"track_keys", &c->track_keys}, {"track_first_args", &c->track_first_args},
        {"thread_names", &c->thread_names},
    };
    for (size_t i = 0; i < sizeof(attrs) / sizeof(attrs[0]); i++) {
        PyObject *v = PyObject_GetAttrString(sink, attrs[i].name);
        if (v == NULL) return ERR;
        *attrs[i].slot = v;
        Py_DECREF(v); /* borrowed from the sink, which outlives the scan */
    }
    return 0;
}

static int unpack_config(Ctx *c) {
    PyObject *keys, *decode;
    if (config.consts == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "_native.configure() was not called");
        return ERR;
    }
    if (!PyArg_ParseTuple(config.consts, "O!O!OO!OO!O!O!iiiOO:configure", &PyDict_Type,
                          &c->category_kind, &PyFrozenSet_Type, &c->legacy_cats,
                          &c->ann_prefixes, &PyUnicode_Type, &c->marker, &c->overhead_names,
                          &PyType_Type, &c->span_type, &PyDict_Type, &c->empty, &PyType_Type,
                          &c->memory_type, &c->op_kind, &c->ann_kind, &c->overhead_kind, &keys,
                          &decode))
        return ERR;
    c->decode_any = decode;
    c->compact = c->span_type == (PyObject *)SpanType;
    if (c->compact && config.n_keys != 1) {
        PyErr_SetString(PyExc_ValueError, "configure: a Span holds one span key (correlation)");
        return ERR;
    }
    int kinds[3] = {c->op_kind, c->ann_kind, c->overhead_kind};
    for (int k = 0; k < 3; k++) {
        if (kinds[k] < 0 || kinds[k] >= c->n_lists) {
            PyErr_SetString(PyExc_ValueError, "configure: a kind beyond the sink's lists");
            return ERR;
        }
    }
    return 0;
}

static int range_of(PyObject *pair, double *lo, double *hi) {
    if (!PyTuple_Check(pair) || PyTuple_GET_SIZE(pair) != 2) {
        PyErr_SetString(PyExc_TypeError, "window: (lo, hi) pairs expected");
        return ERR;
    }
    *lo = PyFloat_AsDouble(PyTuple_GET_ITEM(pair, 0));
    *hi = PyFloat_AsDouble(PyTuple_GET_ITEM(pair, 1));
    return PyErr_Occurred() ? ERR : 0;
}

/* window: None, or (origin or None, ((lo, hi) per kind), (lo, hi) of [memory] events). */
static int unpack_window(Ctx *c, PyObject *window) {
    PyObject *origin, *ranges, *mem;
    if (window == NULL || window == Py_None) return 0;
    if (!PyArg_ParseTuple(window, "OO!O:window", &origin, &PyTuple_Type, &ranges, &mem))
        return ERR;
    if (PyTuple_GET_SIZE(ranges) != c->n_lists) {
        PyErr_SetString(PyExc_ValueError, "window: one (lo, hi) per kind expected");
        return ERR;
    }
    c->windowed = 1;
    c->lo = PyMem_Calloc((size_t)c->n_lists + 1, sizeof(double));
    c->hi = PyMem_Calloc((size_t)c->n_lists + 1, sizeof(double));
    if (c->lo == NULL || c->hi == NULL) {
        PyErr_NoMemory();
        return ERR;
    }
    for (Py_ssize_t k = 0; k < c->n_lists; k++) {
        if (range_of(PyTuple_GET_ITEM(ranges, k), &c->lo[k], &c->hi[k]) < 0) return ERR;
    }
    if (range_of(mem, &c->mem_lo, &c->mem_hi) < 0) return ERR;
    if (origin != Py_None) {
        if (num_from(origin, &c->origin0) != 0) {
            PyErr_SetString(PyExc_ValueError, "window: the origin is not a number");
            return ERR;
        }
        c->preset_origin = 1;
    }
    return 0;
}

/* The scan's answer: (origin, skipped, not_events, legacy, rest, memory), rest (stolen)
 * what was read past the array, memory the MemoryEvents. */
static PyObject *finish(Ctx *c, const State *s, PyObject *where) {
    if (where == NULL) return NULL;
    PyObject *memory = memory_events(c, s);
    PyObject *origin = s->has_origin ? num_obj(&s->origin) : Py_NewRef(Py_None);
    if (memory == NULL || origin == NULL) {
        Py_XDECREF(memory);
        Py_XDECREF(origin);
        Py_DECREF(where);
        return NULL;
    }
    return Py_BuildValue("(NLLONN)", origin, s->skipped, s->not_events,
                         s->legacy ? Py_True : Py_False, where, memory);
}

static void ctx_free(Ctx *c) {
    table_free(&c->table);
    PyMem_Free(c->mem);
    PyMem_Free(c->lists);
    PyMem_Free(c->lo);
    PyMem_Free(c->hi);
    Py_XDECREF(c->store); /* the Args made keep it */
}

int scan_open(Ctx *c, PyObject *sink, PyObject *window, PyObject *file) {
    memset(c, 0, sizeof(*c));
    if (unpack_sink(c, sink) < 0 || unpack_config(c) < 0 || unpack_window(c, window) < 0 ||
        (c->store = store_new(file)) == NULL) {
        ctx_free(c);
        return ERR;
    }
    return 0;
}

PyObject *scan_close(Ctx *c, int st, const State *s, PyObject *where) {
    PyObject *out = st == 0 ? finish(c, s, where) : st == BAIL ? Py_NewRef(Py_None) : NULL;
    ctx_free(c);
    return out;
}
