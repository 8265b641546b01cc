/* torchscope.ingest._native: the stages that run once per event, in C.
 *
 * Optional: pip builds it where a C compiler is found; ingest/accel.py is the one module
 * that imports it. Without it, the reference reader reads every trace and the analysis
 * runs each stage's Python twin; parity tests hold each pair equal.
 *
 * - configure: the event model's tables (ingest/kineto.py), given once at import;
 * - scan_stream: a trace's event array → the EventSink's spans, as the trace is read
 *   (ingest/fast.py): _native_stream.c, _native_scan.c and _native_setup.c, with
 *   _native_json.h (the JSON reader), _native_event.c (one event's fields),
 *   _native_names.c (its strings), _native_memory.c ([memory] events) and
 *   _native_store.c (where the args go);
 * - loads: a JSON value, for those it is sure to read as stdlib json does: _native_decode.c;
 * - Span: one complete event in 64 bytes, its fields inline: _native_span.c (and
 *   MemoryEvent, a [memory] event in 64: _native_memory.c);
 * - Args: an event's args, set aside in a temporary file (_native_store.c) and read back
 *   and decoded when first read: _native_args.c;
 * - nest: the per-thread containment sweep (analysis/index/nesting.py): _native_nest.c;
 * - merge: the union of sorted intervals (analysis/index/intervals.py): _native_merge.c.
 *
 * nest and merge are analysis stages: they live here so that the C part is one extension
 * behind one boundary (accel.py), not two builds.
 */
#include "_native.h"

static PyMethodDef methods[] = {
    {"merge", native_merge, METH_O,
     "merge(pairs) -> (starts, ends)\n\nintervals._merge in C: the union of (start, end)"
     " pairs sorted by start, touching ones merged."},
    {"loads", native_loads, METH_O,
     "loads(buffer) -> object\n\nThe JSON value in buffer, as stdlib json.loads gives it;"
     " ValueError for one it leaves to stdlib json (big integers, surrogates, invalid JSON)."},
    {"configure", native_configure, METH_O,
     "configure(tables) -> None\n\nThe event model's tables (ingest/kineto.py), once, at import"
     " (ingest/accel.py): (category_kind, legacy_cats, ann_prefixes, marker, overhead_names,"
     " span_type, empty, memory_type, op_kind, ann_kind, overhead_kind, span_keys,"
     " decode_any)."},
    {"scan_stream", native_scan_stream, METH_VARARGS,
     "scan_stream(read, first, sink, file, low=65536, window=None) -> (origin, skipped, not_events,"
     " legacy, rest, memory) | None\n\nNormalise a trace's event array into sink, an"
     " EventSink, as it is read: first holds its start (from its opening bracket), read(n) ->"
     " bytes the next piece (b'' at the end); rest is what was read past its closing bracket."
     " Each Args's bytes are set aside in file (a temporary file, open for reading and writing). low: the bytes read ahead of an event before it"
     " is read (the window holds 16 times as many); tests make it small. window: None, or"
     " (origin or None, ((lo, hi) per kind), (lo, hi) of [memory] events) in absolute"
     " trace µs (--steps). None: not a document this reader takes (sink is then partly filled"
     " and must be dropped)."},
    {"nest", native_nest, METH_VARARGS,
     "nest(annotations, python, ops, runtime, wanted, (op_parent, op_self, op_ann,"
     " op_py, rt_op, rt_ann, rt_py, ann_parent, ann_op, ann_py, py_parent), tolerance) ->"
     " True | None\n\nnesting._sweep in C, writing the same links (into the int32 arrays) and"
     " self times (into op_self, a list); None: spans it does not take (all then untouched)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "torchscope.ingest._native",
    "The analysis stages that run once per event, in C (see _native.c).", -1, methods,
    NULL, NULL, NULL, NULL,
};

/* A type from its spec, held for the life of the process (the globals point at it). */
static PyTypeObject *make_type(PyType_Spec *spec) {
    PyTypeObject *type = (PyTypeObject *)PyType_FromSpec(spec);
#ifndef Py_TPFLAGS_DISALLOW_INSTANTIATION
    if (type != NULL && spec != &MemEventSpec) type->tp_new = NULL; /* 3.9: not from Python */
#endif
    return type;
}

PyMODINIT_FUNC PyInit__native(void) {
    if ((StoreType = make_type(&StoreSpec)) == NULL || (ArgsType = make_type(&ArgsSpec)) == NULL ||
        (SpanType = make_type(&SpanSpec)) == NULL ||
        (MemEventType = make_type(&MemEventSpec)) == NULL)
        return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m == NULL) return NULL;
    if (PyModule_AddObject(m, "Args", Py_NewRef((PyObject *)ArgsType)) < 0 ||
        PyModule_AddObject(m, "Span", Py_NewRef((PyObject *)SpanType)) < 0 ||
        PyModule_AddObject(m, "MemoryEvent", Py_NewRef((PyObject *)MemEventType)) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
