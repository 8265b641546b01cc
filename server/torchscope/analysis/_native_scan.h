/* What the files of _native.scan share: the scan's state, an event as read, [memory]. */
#ifndef TORCHSCOPE_NATIVE_SCAN_H
#define TORCHSCOPE_NATIVE_SCAN_H

#include "_native.h"
#include "_native_json.h"

enum {
    F_X = 1, F_M = 2, F_I = 4, F_THREAD_NAME = 8, F_MEMORY = 16, F_ANN_PREFIX = 32,
    F_MARKER = 64, F_OVERHEAD = 128, F_LEGACY = 256,
};

typedef struct {
    const char *ptr; /* the raw bytes between the quotes (escapes as written) */
    Py_ssize_t len;
    uint64_t hash;
    PyObject *str;
    int flags;
    int kind; /* the category's kind, -1: not a category the analysis reads */
} Entry;

typedef struct {
    Entry **slots; /* each entry allocated once: pointers to it stay valid as the table grows */
    size_t cap, used;
} Table;

/* What scan() was given: the sink's containers and the constants of normalise.py. */
typedef struct {
    PyObject *lists[12];
    PyObject *track_ids, *track_kinds, *track_keys, *track_first_args;
    PyObject *thread_names, *memory_raw;
    PyObject *category_kind, *legacy_cats, *ann_prefixes, *marker, *overhead_names;
    PyObject *span_type, *empty, *decode_any;
    PyObject *unset; /* what a [memory] event without ts holds as its ts (None: skipped) */
    PyObject *memory_type;
    int op_kind, ann_kind, overhead_kind;
    PyObject *pin;   /* the trace bytes the Args point into; NULL: a streaming scan */
    PyObject *arena; /* streaming: the Pin of the block the Args' bytes are copied to */
    Py_ssize_t arena_used, arena_cap;
    Table table;
    struct MemRec *mem; /* the [memory] events, in file order */
    Py_ssize_t n_mem, cap_mem;
    int mem_simple; /* every one holds int Bytes (and Addr, Device Type, Device Id) */
} Ctx;


enum { V_ABSENT, V_NULL, V_INT, V_STR };

typedef struct {
    int type;
    long long i;
    Entry *str;
} Id; /* a pid or tid: int, str or null (absent reads as null) */

typedef struct {
    Entry *ph, *cat, *name;
    Id pid, tid;
    int has_ts, has_dur;
    Num ts, dur;
    const char *args; /* the raw args value, NULL when absent */
    Py_ssize_t args_len;
    const char *corr; /* the raw value of args' top-level "correlation" */
    Py_ssize_t corr_len;
} Event;

typedef struct {
    int has_origin;
    Num origin;
    long long skipped, not_events;
    int legacy;
    Id last_pid, last_tid;
    long last_track;
} State;


/* [memory] events:
 *
 * normalise.EventSink._memory_events turns each into a MemoryEvent with int() of its
 * args' Bytes, Addr, Device Type and Device Id. When every one holds these as JSON ints
 * (as Kineto writes them), the MemoryEvents are made here at the end of the scan, on the
 * spans' clock and tracks; otherwise every one is handed over raw, (ts, pid, tid, args),
 * for the Python loop to convert and skip as it does. */

typedef struct MemRec {
    int has_ts;
    Num ts;
    Id pid, tid;
    const char *args;
    Py_ssize_t args_len;
    long long v[4]; /* Bytes, Addr, Device Type, Device Id */
} MemRec;

/* A streaming scan's window (_native_stream.c): the bytes read from the stream and not yet
 * scanned, buf[0:len). read(n) -> bytes gives the next piece, b"" at the stream's end. */
typedef struct {
    PyObject *read;
    char *buf;
    Py_ssize_t len, cap;
    Py_ssize_t low; /* the bytes it must hold past an event's start before it is read */
    int eof;
} Window;

/* Events are far shorter than low (64 KiB unless a test asks for less); one that is not
 * is read again with twice the bytes, up to WINDOW_MOST. */
enum { WINDOW_MOST = 1 << 24 };
int window_fill(Window *w, Cur *cur, const char **keep, Py_ssize_t need); /* 0 or ERR */
PyObject *make_args(Ctx *c, const char *p, Py_ssize_t n);
int scan_array(Ctx *c, State *s, Cur *cur, Window *w); /* 0, BAIL or ERR */
/* A scan's state: scan_open unpacks the sink and the constants into c (0 or ERR; it holds
 * nothing then); scan_close gives scan_array's answer for its status st (None on BAIL,
 * NULL on ERR, else the tuple with where, stolen, made by the caller only when st is 0)
 * and frees what c holds. */
int scan_open(Ctx *c, PyObject *sink, PyObject *consts, PyObject *decode_any);
PyObject *scan_close(Ctx *c, int st, const State *s, PyObject *where);

Entry *intern(Ctx *c, const char *p, Py_ssize_t n, int escaped, int *status); /* _names.c */
void table_free(Table *t);
int read_event(Ctx *c, Cur *cur, Event *ev); /* _native_event.c: 0, BAIL or ERR */
PyObject *id_obj(const Id *id);
PyObject *pair(const Event *ev); /* (pid, tid) */
int memory_event(Ctx *c, const Event *ev);          /* 0, BAIL or ERR */
int memory_raw(Ctx *c);                             /* 0, BAIL or ERR */
PyObject *memory_events(Ctx *c, const State *s);    /* new list, or NULL */

#endif
