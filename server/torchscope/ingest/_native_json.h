/* The JSON reader of _native.scan_stream: strict (it takes less than stdlib json, never more), and
 * nothing but a walk over the bytes: what it reads, the caller turns into Python values.
 * Each returns 0, or BAIL for what it does not take. In a header, as static functions, so
 * that each file's per-event loop has them inlined. */
#ifndef TORCHSCOPE_NATIVE_JSON_H
#define TORCHSCOPE_NATIVE_JSON_H

#include "_native.h"

#ifdef __SSE2__
#include <emmintrin.h>
#endif

static int skip_value(Cur *cur, int depth);

static inline int hexval(char ch) {
    if (ch >= '0' && ch <= '9') return ch - '0';
    if (ch >= 'a' && ch <= 'f') return ch - 'a' + 10;
    if (ch >= 'A' && ch <= 'F') return ch - 'A' + 10;
    return -1;
}

/* Characters that end a run of plain string bytes: controls, the quote, the backslash. */
static const unsigned char STOP[256] = {
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    ['"'] = 1, ['\\'] = 1,
};


/* The first byte at or after p (before end) that STOP holds, or end. Sixteen bytes a step
 * with SSE2 (every x86-64 has it): a quarter of the scan went to the byte loop, over the
 * names and args strings that are most of a trace's bytes. */
static inline const unsigned char *find_stop(const unsigned char *p, const unsigned char *end) {
#ifdef __SSE2__
    const __m128i quote = _mm_set1_epi8('"'), backslash = _mm_set1_epi8('\\');
    const __m128i control = _mm_set1_epi8(0x1F);
    while (end - p >= 16) {
        __m128i v = _mm_loadu_si128((const __m128i *)p);
        __m128i hit = _mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, backslash));
        hit = _mm_or_si128(hit, _mm_cmpeq_epi8(_mm_min_epu8(v, control), v)); /* v <= 0x1F */
        int mask = _mm_movemask_epi8(hit);
        if (mask) return p + __builtin_ctz((unsigned)mask);
        p += 16;
    }
#endif
    while (p < end && !STOP[*p]) p++;
    return p;
}

/* A string at cur->p (its opening quote): its raw bytes, and whether it holds escapes. */
static inline int read_string(Cur *cur, const char **s, Py_ssize_t *n, int *escaped) {
    const unsigned char *end = (const unsigned char *)cur->end;
    const unsigned char *p = find_stop((const unsigned char *)cur->p + 1, end);
    *escaped = 0;
    if (p < end && *p == '"') { /* the common case: no escapes */
        *s = cur->p + 1;
        *n = (const char *)p - *s;
        cur->p = (const char *)p + 1;
        return 0;
    }
    const char *q, *cend = cur->end;
    for (;;) {
        q = (const char *)find_stop(p, end);
        if (q >= cend || (unsigned char)*q < 0x20) return BAIL;
        if (*q == '"') {
            *s = cur->p + 1;
            *n = q - *s;
            cur->p = q + 1;
            return 0;
        }
        *escaped = 1; /* a backslash */
        if (q + 1 >= cend) return BAIL;
        switch (q[1]) {
        case '"': case '\\': case '/': case 'b': case 'f': case 'n': case 'r': case 't':
            p = (const unsigned char *)q + 2;
            break;
        case 'u': {
            if (q + 6 > cend) return BAIL;
            int v = 0;
            for (int i = 2; i < 6; i++) {
                int h = hexval(q[i]);
                if (h < 0) return BAIL;
                v = v * 16 + h;
            }
            if (v >= 0xD800 && v <= 0xDFFF) return BAIL; /* surrogates: stdlib json's to judge */
            p = (const unsigned char *)q + 6;
            break;
        }
        default:
            return BAIL;
        }
    }
}


static const double POW10[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                               1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                               1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

/* A number at cur->p. With num NULL it is only checked. Integers beyond 2**53 and floats
 * that overflow make it BAIL where they are read (stdlib json keeps big ints exact). */
static int read_number_slow(Cur *cur, Num *num);

/* The common case inline: an integer of up to 16 digits below 2**53 (Kineto's ts, dur,
 * ids, sizes); anything else (fractions, exponents, zero, more digits) goes the full way. */
static inline int read_number(Cur *cur, Num *num) {
    const char *q = cur->p, *end = cur->end;
    int neg = q < end && *q == '-';
    q += neg;
    if (q < end && *q >= '1' && *q <= '9') {
        const char *first = q;
        unsigned long long v = 0;
        while (q < end && (unsigned)(*q - '0') < 10 && q - first < 16) v = v * 10 + (unsigned)(*q++ - '0');
        if (q < end && (unsigned)(*q - '0') >= 10 && *q != '.' && *q != 'e' && *q != 'E' &&
            v < (unsigned long long)EXACT) {
            cur->p = q;
            if (num != NULL) {
                num->is_int = 1;
                num->i = neg ? -(long long)v : (long long)v;
                num->d = (double)num->i;
            }
            return 0;
        }
    }
    return read_number_slow(cur, num);
}

static int read_number_slow(Cur *cur, Num *num) {
    const char *p = cur->p, *end = cur->end, *start = p;
    int neg = 0, sig = 0, lost = 0, frac = 0, is_int = 1, has_exp = 0;
    unsigned long long mant = 0;
    /* The significant digits (leading zeros left out), up to 19 of them in mant. */
#define DIGIT(ch)                                                                         \
    do {                                                                                  \
        unsigned dgt = (unsigned)((ch) - '0');                                            \
        if (mant != 0 || dgt != 0) {                                                      \
            if (sig < 19) {                                                               \
                mant = mant * 10 + dgt;                                                   \
                sig++;                                                                    \
            } else {                                                                      \
                lost = 1;                                                                 \
            }                                                                             \
        }                                                                                 \
    } while (0)
    if (p < end && *p == '-') {
        neg = 1;
        p++;
    }
    if (p >= end) return BAIL;
    if (*p == '0') {
        p++;
    } else if (*p >= '1' && *p <= '9') {
        while (p < end && *p >= '0' && *p <= '9') {
            DIGIT(*p);
            p++;
        }
    } else {
        return BAIL;
    }
    if (p < end && *p == '.') {
        is_int = 0;
        p++;
        if (p >= end || *p < '0' || *p > '9') return BAIL;
        while (p < end && *p >= '0' && *p <= '9') {
            DIGIT(*p);
            frac++;
            p++;
        }
    }
#undef DIGIT
    if (p < end && (*p == 'e' || *p == 'E')) {
        is_int = 0;
        has_exp = 1;
        p++;
        if (p < end && (*p == '+' || *p == '-')) p++;
        if (p >= end || *p < '0' || *p > '9') return BAIL;
        while (p < end && *p >= '0' && *p <= '9') p++;
    }
    cur->p = p;
    if (num == NULL) return 0;
    num->is_int = is_int;
    if (is_int) {
        if (lost || mant >= (unsigned long long)EXACT) return BAIL;
        num->i = neg ? -(long long)mant : (long long)mant;
        num->d = (double)num->i;
        return 0;
    }
    if (!has_exp && !lost && mant < (unsigned long long)EXACT && frac <= 22) {
        /* Both exact doubles, so one division is the correctly rounded value. */
        double v = (double)mant / POW10[frac];
        num->d = neg ? -v : v;
        return 0;
    }
    char buf[128];
    Py_ssize_t n = p - start;
    if (n >= (Py_ssize_t)sizeof(buf)) return BAIL;
    memcpy(buf, start, n);
    buf[n] = 0;
    double v = PyOS_string_to_double(buf, NULL, NULL);
    if (v == -1.0 && PyErr_Occurred()) {
        PyErr_Clear();
        return BAIL;
    }
    if (Py_IS_INFINITY(v)) return BAIL;
    num->d = v;
    return 0;
}


/* The container walk shared by every reader of objects and arrays. */

enum { MORE = 2 }; /* next_item: another item follows */

/* After an item: MORE past a comma (and the blanks after it), 0 past the closing bracket
 * ``close``, BAIL at anything else. */
static inline int next_item(Cur *cur, char close) {
    WS(cur);
    if (cur->p < cur->end && *cur->p == ',') {
        cur->p++;
        WS(cur);
        return MORE;
    }
    if (cur->p < cur->end && *cur->p == close) {
        cur->p++;
        return 0;
    }
    return BAIL;
}

/* An object's key at cur->p and the colon after it, up to its value. */
static inline int read_key(Cur *cur, const char **s, Py_ssize_t *n, int *escaped) {
    if (cur->p >= cur->end || *cur->p != '"' || read_string(cur, s, n, escaped)) return BAIL;
    WS(cur);
    if (cur->p >= cur->end || *cur->p != ':') return BAIL;
    cur->p++;
    WS(cur);
    return 0;
}

/* Enters a container at cur->p (its opening bracket): MORE when an item follows, 0 when it
 * is empty (and skipped whole). */
static inline int enter(Cur *cur, char close) {
    cur->p++;
    WS(cur);
    if (cur->p < cur->end && *cur->p == close) {
        cur->p++;
        return 0;
    }
    return MORE;
}

static int skip_container(Cur *cur, int depth, char close) {
    if (depth > 64) return BAIL;
    int st = enter(cur, close);
    while (st == MORE) {
        const char *s;
        Py_ssize_t n;
        int esc;
        if (close == '}' && read_key(cur, &s, &n, &esc)) return BAIL;
        if (skip_value(cur, depth + 1)) return BAIL;
        st = next_item(cur, close);
    }
    return st;
}

static inline int literal(Cur *cur, const char *word, Py_ssize_t n) {
    if (cur->end - cur->p < n || memcmp(cur->p, word, n) != 0) return BAIL;
    cur->p += n;
    return 0;
}

static int skip_value(Cur *cur, int depth) {
    if (cur->p >= cur->end) return BAIL;
    switch (*cur->p) {
    case '{': return skip_container(cur, depth, '}');
    case '[': return skip_container(cur, depth, ']');
    case '"': {
        const char *s;
        Py_ssize_t n;
        int esc;
        return read_string(cur, &s, &n, &esc);
    }
    case 't': return literal(cur, "true", 4);
    case 'f': return literal(cur, "false", 5);
    case 'n': return literal(cur, "null", 4);
    default: return read_number(cur, NULL);
    }
}

/* The raw values of the keys named in keys[0:n_keys] in the JSON object p[0:n] (the last of
 * a repeated key, as stdlib json reads it; len[k] 0 when absent); BAIL for anything but an
 * object, an escaped key (stdlib json's to read) or invalid JSON. */
static int object_fields(const char *p, Py_ssize_t n, const char *const *keys, int n_keys,
                         const char **at, Py_ssize_t *len) {
    Cur cur = {p, p + n};
    for (int k = 0; k < n_keys; k++) {
        at[k] = p;
        len[k] = 0;
    }
    int st = n >= 2 && *p == '{' ? enter(&cur, '}') : BAIL;
    while (st == MORE) {
        const char *key;
        Py_ssize_t key_len;
        int esc;
        if (read_key(&cur, &key, &key_len, &esc) || esc) return BAIL;
        const char *value = cur.p;
        if (skip_value(&cur, 2)) return BAIL;
        for (int k = 0; k < n_keys; k++) {
            if ((size_t)key_len == strlen(keys[k]) && memcmp(key, keys[k], key_len) == 0) {
                at[k] = value;
                len[k] = cur.p - value;
            }
        }
        st = next_item(&cur, '}');
    }
    return st;
}

#endif
