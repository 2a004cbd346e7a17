/* membench.trec._trecscan: the TREC reader's inner loops in C (optional: membench.trec.parse
 * does the same in numpy and pyarrow where this was not built).
 *
 * scan(raw, size, compat, qs, qe, ds, de, rank, score, dh, qchg) -> (n, longest docid) | None
 *
 *   One pass over a piece of a run (raw[:size], ending with "\n", >= 8 bytes of slack after
 *   it) in the usual layout: lines of exactly six fields separated by single spaces, "\n"
 *   line ends, no other byte below 0x20, every field non-empty, a rank [+-]digits that fits
 *   32 bits, a finite score [+-](digits[.digits] | .digits)[(e|E)[+-]digits]. Fills, per
 *   line, the qid and docid token offsets (int64), the rank (int32), the score (float64: the
 *   double float() and C's atof give), the docid's 64-bit hash (uint64: the same as
 *   membench.trec.parse._hash for docids of up to 64 bytes; the caller hashes longer ones)
 *   and whether the qid differs from the previous line's (bool). Returns None, having
 *   decided nothing, for any other piece (a tab, CRLF, a blank line, a malformed field,
 *   with `compat` a line starting with "#", more lines than the arrays hold): the strict
 *   reader then reads it and locates any error.
 *
 *   Scores: Clinger's exact fast path (a decimal mantissa <= 2**53 and a power of ten
 *   within 1e22: one correctly rounded multiply or divide); anything else through strtod
 *   (correctly rounded in glibc), refused unless it reads the whole token (another
 *   locale's decimal point) and the value is finite.
 *
 * count_lines(raw, size) -> the newlines in raw[:size] (the arrays scan fills are that long).
 *
 * words(raw, ds, de, k, out) -> None
 *
 *   Each docid raw[ds[i]:de[i]] as k big-endian 8-byte words, zero-padded (the rows compare
 *   as C's strcmp compares the docids), into out (uint64, lines x k).
 *
 * distinct(raw, s, e, change, inv, first) -> m
 *
 *   The tokens raw[s[i]:e[i]] numbered by first appearance: inv[i] (int32) the number of
 *   token i's bytes, first[g] (int64) the first token of number g, m the numbers used. Only
 *   the tokens that start a run (change[i], and the first) are looked up, in a hash table of
 *   their bytes (every match compared on the bytes); the others take the previous number.
 *
 * order_trec_eval(q, score, dw, k, out) -> None
 *
 *   trec_eval 10.0's ranking order of some lines (positions into out, int64): query index
 *   ascending, score descending (doubles, -0.0 equal to 0.0), docid descending (its k
 *   big-endian words; k may be 0), then the later line first: the order
 *   membench.trec.evaluate._lexsort_trec_eval gives. The lines are first put by query with a
 *   counting sort (when the query indices span at most a few times the lines), then each
 *   query's lines merge-sorted; a wider span is one merge sort with the query as first key.
 *   NaN scores are placed somewhere within their query (the caller orders such a query).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define FNV_OFFSET 0xCBF29CE484222325ULL
#define FNV_PRIME 0x100000001B3ULL

static const double POW10[23] = {1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10,
                                 1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19,
                                 1e20, 1e21, 1e22};

/* bytes p[0..7] as a little-endian word, whatever the machine's byte order */
static inline uint64_t
load_le(const unsigned char *p)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    uint64_t w;
    memcpy(&w, p, 8);
    return w;
#else
    uint64_t w = 0;
    for (int i = 7; i >= 0; i--)
        w = (w << 8) | p[i];
    return w;
#endif
}

static inline uint64_t
bswap64(uint64_t w)
{
#if defined(__GNUC__)
    return __builtin_bswap64(w);
#else
    uint64_t r = 0;
    for (int i = 0; i < 8; i++, w >>= 8)
        r = (r << 8) | (w & 0xFF);
    return r;
#endif
}

/* word j of a token of L bytes, bytes past its end zeroed (the token has >= 8 readable
   bytes after p + 8j: the piece's slack) */
static inline uint64_t
masked(const unsigned char *p, Py_ssize_t L, Py_ssize_t j)
{
    Py_ssize_t r = L - 8 * j;
    if (r <= 0)
        return 0;
    uint64_t w = load_le(p + 8 * j);
    if (r < 8)
        w &= (((uint64_t)1) << (8 * r)) - 1;
    return w;
}

/* membench.trec.parse._hash for one token of up to 64 bytes */
static inline uint64_t
token_hash(const unsigned char *p, Py_ssize_t L)
{
    uint64_t h = FNV_OFFSET ^ (uint64_t)L;
    for (Py_ssize_t j = 0; 8 * j < L; j++) {
        h = (h ^ masked(p, L, j)) * FNV_PRIME;
        h ^= h >> 29;
    }
    return h;
}

/* a TREC score ([+-](digits[.digits] | .digits)[(e|E)[+-]digits]) -> 0, *out; else -1 */
static int
parse_score(const unsigned char *p, Py_ssize_t L, double *out)
{
    Py_ssize_t i = 0;
    int neg = 0, ndig = 0, frac = 0, dot = 0;
    uint64_t mant = 0;
    if (p[0] == '+' || p[0] == '-') {
        neg = p[0] == '-';
        i = 1;
    }
    for (; i < L; i++) {
        unsigned d = (unsigned)p[i] - '0';
        if (d < 10) {
            if (ndig < 19)
                mant = mant * 10 + d;
            ndig++;
            frac += dot;
        }
        else if (p[i] == '.' && !dot)
            dot = 1;
        else
            break;
    }
    if (ndig == 0)
        return -1;
    long ex = 0;
    if (i < L) {
        if (p[i] != 'e' && p[i] != 'E')
            return -1;
        i++;
        int eneg = 0, edig = 0;
        if (i < L && (p[i] == '+' || p[i] == '-')) {
            eneg = p[i] == '-';
            i++;
        }
        for (; i < L; i++) {
            unsigned d = (unsigned)p[i] - '0';
            if (d >= 10)
                return -1;
            if (edig < 9)
                ex = ex * 10 + d;
            edig++;
        }
        if (edig == 0)
            return -1;
        if (edig >= 9)
            ex = 1000000000L;      /* far out of range either way: strtod decides */
        if (eneg)
            ex = -ex;
    }
    long e10 = ex - frac;
    if (ndig <= 19 && mant <= ((uint64_t)1 << 53) && e10 >= -22 && e10 <= 22) {
        double m = (double)mant;
        double v = e10 >= 0 ? m * POW10[e10] : m / POW10[-e10];
        *out = neg ? -v : v;
        return 0;
    }
    char buf[128];
    if (L >= (Py_ssize_t)sizeof(buf))
        return -1;
    memcpy(buf, p, (size_t)L);
    buf[L] = 0;
    char *end;
    double v = strtod(buf, &end);
    if (end != buf + L || !isfinite(v))
        return -1;
    *out = v;
    return 0;
}

/* a rank [+-]digits within 32 bits -> 0, *out; else -1 */
static int
parse_rank(const unsigned char *p, Py_ssize_t L, int32_t *out)
{
    Py_ssize_t i = 0;
    int neg = 0;
    if (p[0] == '+' || p[0] == '-') {
        neg = p[0] == '-';
        i = 1;
    }
    if (i == L || L - i > 10)
        return -1;
    int64_t v = 0;
    for (; i < L; i++) {
        unsigned d = (unsigned)p[i] - '0';
        if (d >= 10)
            return -1;
        v = v * 10 + d;
    }
    if (neg)
        v = -v;
    if (v < INT32_MIN || v > INT32_MAX)
        return -1;
    *out = (int32_t)v;
    return 0;
}

/* a writable buffer of at least n items of `size` bytes */
static int
need(Py_buffer *b, Py_ssize_t n, Py_ssize_t size, const char *name)
{
    if (b->len < n * size) {
        PyErr_Format(PyExc_ValueError, "%s: %zd bytes, %zd needed", name, b->len, n * size);
        return -1;
    }
    return 0;
}

static PyObject *
scan(PyObject *self, PyObject *args)
{
    Py_buffer raw, qs, qe, ds, de, rk, sc, dh, qc;
    Py_ssize_t size;
    int compat;
    if (!PyArg_ParseTuple(args, "y*npw*w*w*w*w*w*w*w*", &raw, &size, &compat, &qs, &qe, &ds,
                          &de, &rk, &sc, &dh, &qc))
        return NULL;
    PyObject *result = NULL;
    Py_ssize_t cap = qs.len / 8;
    if (size < 0 || raw.len < size + 8) {
        PyErr_SetString(PyExc_ValueError, "raw: needs 8 bytes of slack after size");
        goto done;
    }
    if (need(&qe, cap, 8, "qe") || need(&ds, cap, 8, "ds") || need(&de, cap, 8, "de") ||
        need(&rk, cap, 4, "rank") || need(&sc, cap, 8, "score") || need(&dh, cap, 8, "dh") ||
        need(&qc, cap, 1, "qchg"))
        goto done;
    const unsigned char *b = raw.buf;
    int64_t *QS = qs.buf, *QE = qe.buf, *DS = ds.buf, *DE = de.buf;
    int32_t *RK = rk.buf;
    double *SC = sc.buf;
    uint64_t *DH = dh.buf;
    unsigned char *QC = qc.buf;
    Py_ssize_t n = 0, longest = 0, pos = 0;
    int ok = 1;
    if (size > 0 && b[size - 1] != '\n')
        ok = 0;
    Py_BEGIN_ALLOW_THREADS
    Py_ssize_t pq = 0, pql = -1;          /* the previous line's qid */
    while (ok && pos < size) {
        Py_ssize_t s[6], L[6];
        if (n >= cap || (compat && b[pos] == '#')) {
            ok = 0;
            break;
        }
        for (int f = 0; f < 6; f++) {
            Py_ssize_t a = pos;
            while (b[pos] > 0x20)        /* stops at the piece's final "\n" at the latest */
                pos++;
            s[f] = a;
            L[f] = pos - a;
            if (L[f] == 0 || b[pos] != (f < 5 ? ' ' : '\n')) {
                ok = 0;
                break;
            }
            pos++;
        }
        if (!ok || parse_rank(b + s[3], L[3], RK + n) || parse_score(b + s[4], L[4], SC + n)) {
            ok = 0;
            break;
        }
        QS[n] = s[0];
        QE[n] = s[0] + L[0];
        DS[n] = s[2];
        DE[n] = s[2] + L[2];
        QC[n] = !(L[0] == pql && memcmp(b + s[0], b + pq, (size_t)L[0]) == 0);
        pq = s[0];
        pql = L[0];
        DH[n] = token_hash(b + s[2], L[2]);
        if (L[2] > longest)
            longest = L[2];
        n++;
    }
    Py_END_ALLOW_THREADS
    if (!ok) {
        result = Py_None;
        Py_INCREF(result);
    }
    else
        result = Py_BuildValue("nn", n, longest);
done:
    PyBuffer_Release(&raw);
    PyBuffer_Release(&qs);
    PyBuffer_Release(&qe);
    PyBuffer_Release(&ds);
    PyBuffer_Release(&de);
    PyBuffer_Release(&rk);
    PyBuffer_Release(&sc);
    PyBuffer_Release(&dh);
    PyBuffer_Release(&qc);
    return result;
}

static PyObject *
count_lines(PyObject *self, PyObject *args)
{
    Py_buffer raw;
    Py_ssize_t size, n = 0;
    if (!PyArg_ParseTuple(args, "y*n", &raw, &size))
        return NULL;
    if (size < 0 || size > raw.len) {
        PyBuffer_Release(&raw);
        PyErr_SetString(PyExc_ValueError, "count_lines: size out of range");
        return NULL;
    }
    Py_BEGIN_ALLOW_THREADS
    const char *p = raw.buf, *end = p + size;
    while ((p = memchr(p, '\n', (size_t)(end - p))) != NULL) {
        n++;
        p++;
    }
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&raw);
    return PyLong_FromSsize_t(n);
}

static PyObject *
words(PyObject *self, PyObject *args)
{
    Py_buffer raw, ds, de, out;
    Py_ssize_t k;
    if (!PyArg_ParseTuple(args, "y*y*y*nw*", &raw, &ds, &de, &k, &out))
        return NULL;
    PyObject *result = NULL;
    Py_ssize_t n = ds.len / 8;
    if (k < 0 || de.len < n * 8 || out.len < n * k * 8) {
        PyErr_SetString(PyExc_ValueError, "words: arrays too short");
        goto done;
    }
    const unsigned char *b = raw.buf;
    const int64_t *DS = ds.buf, *DE = de.buf;
    uint64_t *O = out.buf;
    for (Py_ssize_t i = 0; i < n; i++) {       /* bounds: every token + 8k within raw */
        if (DS[i] < 0 || DE[i] < DS[i] || DE[i] > raw.len - 8 || DE[i] - DS[i] > 8 * k) {
            PyErr_SetString(PyExc_ValueError, "words: a token out of range");
            goto done;
        }
    }
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_ssize_t L = DE[i] - DS[i];
        for (Py_ssize_t j = 0; j < k; j++)
            O[i * k + j] = bswap64(masked(b + DS[i], L, j));
    }
    Py_END_ALLOW_THREADS
    result = Py_None;
    Py_INCREF(result);
done:
    PyBuffer_Release(&raw);
    PyBuffer_Release(&ds);
    PyBuffer_Release(&de);
    PyBuffer_Release(&out);
    return result;
}

/* ------------------------------------------------------------------ equal tokens */

static PyObject *
distinct(PyObject *self, PyObject *args)
{
    Py_buffer raw, sb, eb, cb, ib, fb;
    if (!PyArg_ParseTuple(args, "y*y*y*y*w*w*", &raw, &sb, &eb, &cb, &ib, &fb))
        return NULL;
    PyObject *result = NULL;
    int32_t *table = NULL;
    Py_ssize_t n = sb.len / 8, m = 0, runs = 0;
    if (eb.len < n * 8 || cb.len < n || ib.len < n * 4 || fb.len < n * 8) {
        PyErr_SetString(PyExc_ValueError, "distinct: arrays too short");
        goto done;
    }
    const unsigned char *b = raw.buf, *change = cb.buf;
    const int64_t *S = sb.buf, *E = eb.buf;
    int32_t *inv = ib.buf;
    int64_t *first = fb.buf;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (S[i] < 0 || E[i] < S[i] || E[i] > raw.len - 8) {
            PyErr_SetString(PyExc_ValueError, "distinct: a token out of range");
            goto done;
        }
        runs += i == 0 || change[i];
    }
    Py_ssize_t cap = 16;
    while (cap < 2 * runs)
        cap <<= 1;
    table = PyMem_RawMalloc((size_t)cap * sizeof(int32_t));
    if (!table) {
        PyErr_NoMemory();
        goto done;
    }
    Py_BEGIN_ALLOW_THREADS
    memset(table, 0xFF, (size_t)cap * sizeof(int32_t));       /* -1: empty */
    int32_t g = -1;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (i == 0 || change[i]) {
            Py_ssize_t L = E[i] - S[i];
            const unsigned char *p = b + S[i];
            uint64_t h = token_hash(p, L);
            Py_ssize_t slot = (Py_ssize_t)(h & (uint64_t)(cap - 1));
            for (;;) {
                int32_t t = table[slot];
                if (t < 0) {
                    table[slot] = g = (int32_t)m;
                    first[m++] = i;
                    break;
                }
                Py_ssize_t f = first[t];
                if (E[f] - S[f] == L && memcmp(b + S[f], p, (size_t)L) == 0) {
                    g = t;
                    break;
                }
                slot = (slot + 1) & (cap - 1);
            }
        }
        inv[i] = g;
    }
    Py_END_ALLOW_THREADS
    result = PyLong_FromSsize_t(m);
done:
    PyMem_RawFree(table);
    PyBuffer_Release(&raw);
    PyBuffer_Release(&sb);
    PyBuffer_Release(&eb);
    PyBuffer_Release(&cb);
    PyBuffer_Release(&ib);
    PyBuffer_Release(&fb);
    return result;
}

/* ------------------------------------------------------------------ trec_eval's order */

typedef struct {
    uint64_t sk;        /* ascending = score descending */
    uint64_t w0;        /* the docid's first word (0 when k is 0) */
    int64_t idx;
} Item;

typedef struct {
    const int32_t *q;   /* NULL: every item of one query */
    const uint64_t *dw;
    Py_ssize_t k;
} Keys;

/* a before b? (query, score desc, docid words desc, later line first; never equal) */
static inline int
before(const Keys *K, const Item *a, const Item *b)
{
    if (K->q) {
        int32_t qa = K->q[a->idx], qb = K->q[b->idx];
        if (qa != qb)
            return qa < qb;
    }
    if (a->sk != b->sk)
        return a->sk < b->sk;
    if (a->w0 != b->w0)
        return a->w0 > b->w0;
    const uint64_t *wa = K->dw + a->idx * K->k, *wb = K->dw + b->idx * K->k;
    for (Py_ssize_t j = 1; j < K->k; j++)
        if (wa[j] != wb[j])
            return wa[j] > wb[j];
    return a->idx > b->idx;
}

static void
msort(const Keys *K, Item *a, Item *tmp, Py_ssize_t n)
{
    if (n <= 16) {                           /* insertion sort */
        for (Py_ssize_t i = 1; i < n; i++) {
            Item x = a[i];
            Py_ssize_t j = i;
            while (j > 0 && before(K, &x, &a[j - 1])) {
                a[j] = a[j - 1];
                j--;
            }
            a[j] = x;
        }
        return;
    }
    Py_ssize_t h = n / 2;
    msort(K, a, tmp, h);
    msort(K, a + h, tmp, n - h);
    if (!before(K, &a[h], &a[h - 1]))        /* already in order */
        return;
    memcpy(tmp, a, (size_t)h * sizeof(Item));
    Py_ssize_t i = 0, j = h, o = 0;
    while (i < h && j < n) {
        if (before(K, &a[j], &tmp[i]))
            a[o++] = a[j++];
        else
            a[o++] = tmp[i++];
    }
    while (i < h)
        a[o++] = tmp[i++];
}

static inline uint64_t
desc_key(double s)
{
    uint64_t u;
    s += 0.0;                                 /* -0.0 -> 0.0 */
    memcpy(&u, &s, 8);
    uint64_t m = ((u >> 63) * 0x7FFFFFFFFFFFFFFFULL) | 0x8000000000000000ULL;
    return ~(m ^ u);
}

static PyObject *
order_trec_eval(PyObject *self, PyObject *args)
{
    Py_buffer qb, sb, wb, ob;
    Py_ssize_t k;
    if (!PyArg_ParseTuple(args, "y*y*y*nw*", &qb, &sb, &wb, &k, &ob))
        return NULL;
    PyObject *result = NULL;
    Item *items = NULL, *tmp = NULL;
    Py_ssize_t *start = NULL;
    Py_ssize_t n = qb.len / 4;
    if (k < 0 || sb.len < n * 8 || wb.len < n * k * 8 || ob.len < n * 8) {
        PyErr_SetString(PyExc_ValueError, "order_trec_eval: arrays too short");
        goto done;
    }
    const int32_t *q = qb.buf;
    const double *score = sb.buf;
    int64_t *out = ob.buf;
    Keys K = {NULL, wb.buf, k};
    int32_t lo = 0, hi = -1;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (i == 0 || q[i] < lo)
            lo = q[i];
        if (i == 0 || q[i] > hi)
            hi = q[i];
    }
    int64_t span = (int64_t)hi - lo + 1;
    int by_query = n > 0 && span <= 4 * (int64_t)n + 65536;
    items = PyMem_RawMalloc((size_t)(n ? n : 1) * sizeof(Item));
    if (by_query)
        start = PyMem_RawCalloc((size_t)span + 1, sizeof(Py_ssize_t));
    if (!items || (by_query && !start)) {
        PyErr_NoMemory();
        goto done;
    }
    int failed = 0;
    Py_BEGIN_ALLOW_THREADS
    if (by_query) {
        for (Py_ssize_t i = 0; i < n; i++)
            start[q[i] - lo + 1]++;
        Py_ssize_t longest = 0;
        for (int64_t g = 0; g < span; g++) {
            if (start[g + 1] > longest)
                longest = start[g + 1];
            start[g + 1] += start[g];
        }
        tmp = malloc((size_t)(longest / 2 + 1) * sizeof(Item));
        if (!tmp)
            failed = 1;
        else {
            for (Py_ssize_t i = 0; i < n; i++) {     /* by query, file order within */
                Py_ssize_t at = start[q[i] - lo]++;
                items[at].sk = desc_key(score[i]);
                items[at].w0 = k ? K.dw[i * k] : 0;
                items[at].idx = i;
            }
            Py_ssize_t a = 0;                         /* start[g] is now query g's end */
            for (int64_t g = 0; g < span; g++) {
                Py_ssize_t z = start[g];
                if (z - a > 1)
                    msort(&K, items + a, tmp, z - a);
                a = z;
            }
        }
    }
    else {
        K.q = q;
        tmp = malloc((size_t)(n / 2 + 1) * sizeof(Item));
        if (!tmp)
            failed = 1;
        else {
            for (Py_ssize_t i = 0; i < n; i++) {
                items[i].sk = desc_key(score[i]);
                items[i].w0 = k ? K.dw[i * k] : 0;
                items[i].idx = i;
            }
            msort(&K, items, tmp, n);
        }
    }
    if (!failed)
        for (Py_ssize_t i = 0; i < n; i++)
            out[i] = items[i].idx;
    Py_END_ALLOW_THREADS
    if (failed) {
        PyErr_NoMemory();
        goto done;
    }
    result = Py_None;
    Py_INCREF(result);
done:
    free(tmp);
    PyMem_RawFree(items);
    PyMem_RawFree(start);
    PyBuffer_Release(&qb);
    PyBuffer_Release(&sb);
    PyBuffer_Release(&wb);
    PyBuffer_Release(&ob);
    return result;
}

static PyMethodDef methods[] = {
    {"scan", scan, METH_VARARGS,
     "scan(raw, size, compat, qs, qe, ds, de, rank, score, dh, qchg) -> (n, longest docid) "
     "| None: a piece of a run in the usual layout, parsed into the arrays (module "
     "docstring)."},
    {"count_lines", count_lines, METH_VARARGS,
     "count_lines(raw, size) -> the newlines in raw[:size]."},
    {"words", words, METH_VARARGS,
     "words(raw, ds, de, k, out): docids as k big-endian 8-byte words."},
    {"distinct", distinct, METH_VARARGS,
     "distinct(raw, s, e, change, inv, first) -> m: equal tokens numbered."},
    {"order_trec_eval", order_trec_eval, METH_VARARGS,
     "order_trec_eval(q, score, dw, k, out): trec_eval's ranking order into out."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_trecscan",
    "The TREC reader's inner loops: scan, words, order_trec_eval (see the source's header).",
    -1, methods,
};

PyMODINIT_FUNC
PyInit__trecscan(void)
{
    return PyModule_Create(&module);
}
