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

/* Span keys: the args keys whose values every span carries (kineto.SPAN_ARG_KEYS); a
 * capacity, not a count: configure() takes up to this many. */
enum { MAX_SPAN_KEYS = 8 };

/* What configure() was given once, at import (ingest/accel.py): the event model's tables
 * (ingest/kineto.py) and the span keys as bytes. */
typedef struct {
    PyObject *consts; /* the tuple, held */
    int n_keys;
    const char *keys[MAX_SPAN_KEYS];
    Py_ssize_t key_len[MAX_SPAN_KEYS];
} Config;
extern Config config;

/* A scan's state: the sink's containers and the configured tables. */
typedef struct {
    PyObject **lists; /* one per kind, as many as the sink has (kineto.KINDS) */
    Py_ssize_t n_lists;
    PyObject *track_ids, *track_kinds, *track_keys, *track_first_args;
    PyObject *thread_names;
    PyObject *category_kind, *legacy_cats, *ann_prefixes, *marker, *overhead_names;
    PyObject *span_type, *empty, *decode_any;
    PyObject *memory_type;
    int op_kind, ann_kind, overhead_kind;
    PyObject *store; /* the Store the Args' bytes are set aside in */
    Py_ssize_t last_off; /* where the last compact span's args went in it */
    int compact; /* the sink's span type is Span (_native_span.c), not a tuple type */
    Table table;
    struct MemRec *mem; /* the [memory] events, in file order */
    Py_ssize_t n_mem, cap_mem;
    /* --steps: keep a span of kind k only when lo[k] <= ts < hi[k] (absolute µs), a
     * [memory] event only in [mem_lo, mem_hi); with the whole trace's origin, preset. */
    int windowed;
    double *lo, *hi, mem_lo, mem_hi;
    int preset_origin;
    Num origin0;
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
    const char *key_at[MAX_SPAN_KEYS]; /* the raw values of args' top-level span keys */
    Py_ssize_t key_len[MAX_SPAN_KEYS];
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
 * sink.EventSink._memory_events turns each into a MemoryEvent with int() of its args'
 * Bytes, Addr, Device Type and Device Id. When every one holds these as JSON ints (as
 * Kineto writes them), the MemoryEvents are made here at the end of the scan, on the
 * spans' clock and tracks; otherwise the scan bails and the reference reader takes the
 * trace. */

typedef struct MemRec {
    int has_ts;
    Num ts;
    Id pid, tid;
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
/* A scan's state: scan_open unpacks the sink, the configured tables and the window into c
 * (0 or ERR; it holds nothing then); scan_close gives scan_array's answer for its status st (None on BAIL,
 * NULL on ERR, else the tuple with where, stolen, made by the caller only when st is 0)
 * and frees what c holds. */
int scan_open(Ctx *c, PyObject *sink, PyObject *window, PyObject *file);
PyObject *scan_close(Ctx *c, int st, const State *s, PyObject *where);

Entry *intern(Ctx *c, const char *p, Py_ssize_t n, int escaped, int *status); /* _names.c */
void table_free(Table *t);
int read_event(Ctx *c, Cur *cur, Event *ev); /* _native_event.c: 0, BAIL or ERR */
PyObject *id_obj(const Id *id);
PyObject *pair(const Event *ev); /* (pid, tid) */
int memory_event(Ctx *c, const Event *ev);          /* 0, BAIL or ERR */
PyObject *memory_events(Ctx *c, const State *s);    /* new list, or NULL */

#endif
