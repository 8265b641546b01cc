/* torchscope.analysis._native: the analysis stages that run once per event, in C.
 *
 * Optional: pip builds it where a C compiler is found, and every function here has a
 * Python twin that the analysis runs instead when it is missing or returns None (an input
 * it does not take). Parity tests hold each pair equal (tests/unit/test_analysis_native.py).
 *
 * - scan: the trace's event array → the EventSink's spans (fastload.py): _native_scan.c,
 *   with _native_json.h (the JSON reader), _native_event.c (one event's fields),
 *   _native_names.c (its strings) and _native_memory.c ([memory] events);
 * - scan_stream: the same, over the array as it inflates (stream.py): _native_stream.c;
 * - loads: a JSON value, as msgspec decodes it, for those it is sure of: _native_decode.c;
 * - Args: an event's args, read from the trace bytes when first used (lazyjson.LazyArgs):
 *   _native_args.c;
 * - nest: the per-thread containment sweep (nesting.py): _native_nest.c;
 * - merge: the union of sorted intervals (intervals.py): _native_merge.c.
 */
#include "_native.h"

static void pin_dealloc(PyObject *self) {
    PyBuffer_Release(&((Pin *)self)->view);
    Py_TYPE(self)->tp_free(self);
}

PyTypeObject PinType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "torchscope.analysis._native.Pin",
    .tp_basicsize = sizeof(Pin),
    .tp_dealloc = pin_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Holds the trace bytes exported while any Args into them lives.",
};

static PyMethodDef methods[] = {
    {"merge", native_merge, METH_O,
     "merge(pairs) -> (starts, ends)\n\nintervals._merge in C: the union of (start, end)"
     " pairs sorted by start, touching ones merged."},
    {"loads", native_loads, METH_O,
     "loads(buffer) -> object\n\nThe JSON value in buffer, as msgspec.json.decode gives it;"
     " ValueError for one it leaves to msgspec (big integers, surrogates, invalid JSON)."},
    {"scan", native_scan, METH_VARARGS,
     "scan(data, lo, hi, sink, consts, decode_any) -> (origin, skipped, not_events, legacy,"
     " end) | None\n\nNormalise the event array starting at data[lo] (and ending by hi) into"
     " sink, an EventSink; end is just past its closing bracket. None: not a document this"
     " reader takes (sink is then partly filled and must be dropped)."},
    {"scan_stream", native_scan_stream, METH_VARARGS,
     "scan_stream(read, first, sink, consts, decode_any, low=65536) -> (origin, skipped,"
     " not_events, legacy, rest, memory) | None\n\nscan() over an event array read as a"
     " stream: first holds its start (from its opening bracket), read(n) -> bytes the next"
     " piece (b'' at the end); rest is what was read past its closing bracket. Each Args"
     " holds a copy of its bytes. low: the bytes read ahead of an event before it is read"
     " (the window holds 16 times as many); tests make it small."},
    {"nest", native_nest, METH_VARARGS,
     "nest(annotations, python, ops, runtime, runtime_subset, (op_parent, op_self, op_ann,"
     " op_py, rt_op, rt_ann, rt_py, ann_parent, ann_op, ann_py, py_parent), tolerance) ->"
     " True | None\n\nnesting._sweep in C, writing the same links and self times into the"
     " lists; None: spans it does not take (the lists are then untouched)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "torchscope.analysis._native",
    "The analysis stages that run once per event, in C (see _native.c).", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__native(void) {
    if (PyType_Ready(&PinType) < 0 || PyType_Ready(&ArgsType) < 0) return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m == NULL) return NULL;
    Py_INCREF(&ArgsType);
    if (PyModule_AddObject(m, "Args", (PyObject *)&ArgsType) < 0) {
        Py_DECREF(&ArgsType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
