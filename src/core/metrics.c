/* metrics.c - Prometheus text exposition (format 0.0.4) for /metrics.
 *
 * Three kinds of series, all behind one mutex:
 *
 *   request series  one per (verb, resource) in a hash table (core/htab.h); each
 *                   holds the latency histogram (per-bucket counts, sum, count) and a
 *                   short array of (code, count) pairs, so fl_metrics_request costs one
 *                   hash, one bucket walk and a few additions under the lock. They render as
 *                   flotilla_apiserver_request_total{verb,resource,code} and
 *                   flotilla_apiserver_request_duration_seconds{verb,resource}.
 *   counters        name -> value, created on first fl_metrics_count.
 *   gauges          callbacks, read at scrape time.
 *   families        labelled counters, gauges and histograms (fl_metric_*), counted
 *                   lock-free through handles; see the section below.
 *
 * Resource names arrive from request paths, so their number is bounded only by what
 * clients send. Past MAX_SERIES distinct (verb, resource) pairs new pairs are counted
 * under resource="_other" instead of growing without limit.
 *
 * Gauge callbacks run without the lock held, so a callback may itself call
 * fl_metrics_count without deadlocking. Output is sorted (series by verb, resource;
 * codes ascending) so that scrapes and tests are deterministic. */
#include "core/metrics.h"

#include "core/htab.h"
#include "core/mem.h"
#include "core/strbuf.h"

#include <math.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define REQ_TOTAL "flotilla_apiserver_request_total"
#define REQ_DURATION "flotilla_apiserver_request_duration_seconds"
#define MAX_SERIES 4096
#define OTHER_RESOURCE "_other"

/* Upper bounds of the latency buckets, and the same bounds as the label text that
 * Prometheus expects (written once, so "0.0005" never renders as "5e-04"). */
static const double bucket_le[] = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                                   0.1,    0.25,  0.5,    1,     2.5,  5};
static const char *const bucket_label[] = {"0.0005", "0.001", "0.0025", "0.005", "0.01",
                                           "0.025",  "0.05",  "0.1",    "0.25",  "0.5",
                                           "1",      "2.5",   "5"};
#define NBUCKETS (sizeof bucket_le / sizeof bucket_le[0])
_Static_assert(sizeof bucket_le / sizeof bucket_le[0] == sizeof bucket_label / sizeof bucket_label[0],
               "bucket bounds and labels must line up");

typedef struct code_count {
    int code;
    uint64_t n;
} code_count;

typedef struct req_series {
    fl_hnode node; /* in table, by (verb, resource) */
    char *verb;
    char *resource;
    uint64_t bucket[NBUCKETS + 1];  /* non-cumulative; last is (5, +Inf) */
    uint64_t count;
    double sum;
    code_count *codes;
    size_t ncodes, capcodes;
} req_series;

typedef struct counter {
    const char *name;
    const char *help;
    double value;
} counter;

typedef struct gauge {
    const char *name;
    const char *help;
    double (*fn)(void *ctx);
    void *ctx;
} gauge;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static fl_htab table;           /* req_series; zeroed: empty */
static counter *counters;
static size_t ncounters, capcounters;
static gauge *gauges;
static size_t ngauges, capgauges;

static void families_reset(void); /* the labelled families, below */

/* ---------- request series ---------- */

/* FNV-1a over verb, a separator, and resource. */
static uint64_t series_hash(const char *verb, const char *resource)
{
    uint64_t h = 14695981039346656037ULL;
    for (const unsigned char *p = (const unsigned char *)verb; *p; p++)
        h = (h ^ *p) * 1099511628211ULL;
    h = (h ^ 0xff) * 1099511628211ULL;
    for (const unsigned char *p = (const unsigned char *)resource; *p; p++)
        h = (h ^ *p) * 1099511628211ULL;
    return h;
}

typedef struct series_key {
    const char *verb, *resource;
} series_key;

static bool series_is(const fl_hnode *n, const void *key)
{
    const req_series *s = fl_htab_entry(n, req_series, node);
    const series_key *k = key;
    return !strcmp(s->verb, k->verb) && !strcmp(s->resource, k->resource);
}

/* The series for (verb, resource), created if new. Lock held. */
static req_series *series_get(uint64_t h, const char *verb, const char *resource)
{
    series_key k = {verb, resource};
    req_series *s = fl_htab_entry(fl_htab_find(&table, h, series_is, &k), req_series, node);
    if (s)
        return s;
    if (fl_htab_count(&table) >= MAX_SERIES && strcmp(resource, OTHER_RESOURCE) != 0)
        return series_get(series_hash(verb, OTHER_RESOURCE), verb, OTHER_RESOURCE);
    s = fl_calloc(1, sizeof *s);
    s->verb = fl_strdup(verb);
    s->resource = fl_strdup(resource);
    fl_htab_add(&table, &s->node, h);
    return s;
}

void fl_metrics_request(const char *verb, const char *resource, int code, double seconds)
{
    if (!verb)
        verb = "";
    if (!resource)
        resource = "";
    /* A clock that stepped backwards must not poison the sum. */
    if (!(seconds >= 0))
        seconds = 0;
    size_t b = 0;
    while (b < NBUCKETS && seconds > bucket_le[b])
        b++;
    uint64_t h = series_hash(verb, resource);

    pthread_mutex_lock(&lock);
    req_series *s = series_get(h, verb, resource);
    s->bucket[b]++;
    s->count++;
    s->sum += seconds;
    size_t i = 0;
    while (i < s->ncodes && s->codes[i].code != code)
        i++;
    if (i == s->ncodes) {
        if (s->ncodes == s->capcodes) {
            s->capcodes = s->capcodes ? s->capcodes * 2 : 4;
            s->codes = fl_realloc(s->codes, s->capcodes * sizeof *s->codes);
        }
        s->codes[s->ncodes++] = (code_count){code, 0};
    }
    s->codes[i].n++;
    pthread_mutex_unlock(&lock);
}

/* ---------- counters and gauges ---------- */

void fl_metrics_count(const char *name, const char *help, double delta)
{
    pthread_mutex_lock(&lock);
    size_t i = 0;
    /* Names are static strings, so the pointer usually matches before strcmp runs. */
    while (i < ncounters && counters[i].name != name && strcmp(counters[i].name, name))
        i++;
    if (i == ncounters) {
        if (ncounters == capcounters) {
            capcounters = capcounters ? capcounters * 2 : 16;
            counters = fl_realloc(counters, capcounters * sizeof *counters);
        }
        counters[ncounters++] = (counter){name, help, 0};
    }
    counters[i].value += delta;
    pthread_mutex_unlock(&lock);
}

void fl_metrics_gauge(const char *name, const char *help, double (*fn)(void *ctx), void *ctx)
{
    pthread_mutex_lock(&lock);
    size_t i = 0;
    while (i < ngauges && strcmp(gauges[i].name, name))
        i++;
    if (i == ngauges) {
        if (ngauges == capgauges) {
            capgauges = capgauges ? capgauges * 2 : 16;
            gauges = fl_realloc(gauges, capgauges * sizeof *gauges);
        }
        ngauges++;
    }
    /* Re-registering a name replaces the callback: one family, one source. */
    gauges[i] = (gauge){name, help, fn, ctx};
    pthread_mutex_unlock(&lock);
}

void fl_metrics_reset(void)
{
    pthread_mutex_lock(&lock);
    fl_htab_iter it;
    for (fl_hnode *n = fl_htab_first(&table, &it); n; n = fl_htab_next(&it)) {
        req_series *s = fl_htab_entry(n, req_series, node);
        free(s->verb);
        free(s->resource);
        free(s->codes);
        free(s);
    }
    fl_htab_close(&table);
    free(counters);
    counters = NULL;
    ncounters = capcounters = 0;
    free(gauges);
    gauges = NULL;
    ngauges = capgauges = 0;
    families_reset();
    pthread_mutex_unlock(&lock);
}

/* ---------- rendering ---------- */

/* HELP text escapes backslash and newline only. */
static void put_help(fl_strbuf *f, const char *name, const char *help, const char *type)
{
    fl_strbuf_printf(f, "# HELP %s ", name);
    for (const char *s = help ? help : ""; *s; s++) {
        if (*s == '\\')
            fl_strbuf_adds(f, "\\\\");
        else if (*s == '\n')
            fl_strbuf_adds(f, "\\n");
        else
            fl_strbuf_addc(f, *s);
    }
    fl_strbuf_printf(f, "\n# TYPE %s %s\n", name, type);
}

/* n in decimal */
static void put_u64(fl_strbuf *f, unsigned long long n)
{
    char buf[24], *p = buf + sizeof buf;
    do {
        *--p = (char)('0' + n % 10);
        n /= 10;
    } while (n);
    fl_strbuf_add(f, p, (size_t)(buf + sizeof buf - p));
}

/* Shortest text that reads back as the same double ("0.1", not
 * "0.10000000000000001"); Prometheus spellings for the special values. */
static void put_value(fl_strbuf *f, double v)
{
    if (isnan(v)) {
        fl_strbuf_adds(f, "NaN");
        return;
    }
    if (isinf(v)) {
        fl_strbuf_adds(f, v > 0 ? "+Inf" : "-Inf");
        return;
    }
    if (fabs(v) < 9007199254740992.0 && v == (double)(long long)v && !(v == 0 && signbit(v))) {
        /* a whole number (counters, most gauges): the same text, without the search below */
        if (v < 0)
            fl_strbuf_addc(f, '-');
        put_u64(f, (unsigned long long)fabs(v));
        return;
    }
    char buf[32];
    for (int prec = 15; prec <= 17; prec++) {
        snprintf(buf, sizeof buf, "%.*g", prec, v);
        if (strtod(buf, NULL) == v)
            break;
    }
    fl_strbuf_adds(f, buf);
}

/* ---------- labelled families ----------
 *
 * Families and their series are allocated once and never freed (fl_metrics_reset zeroes
 * and hides them), so a handle taken by a queue or a controller can never dangle. A
 * value is a double kept as its bits in an atomic 64-bit word: adding is a CAS loop,
 * setting a store; histogram buckets are plain atomic counts. */

const double fl_metric_latency_buckets[] = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
                                            0.5,   1,      2.5,   5,    10,   30,    60,  300, 600};
const size_t fl_metric_latency_nbuckets = sizeof fl_metric_latency_buckets / sizeof fl_metric_latency_buckets[0];

#define MAX_FAMILIES 256
#define MAX_BUCKETS 32

struct fl_metric_series {
    fl_hnode node; /* in the family's table, by (v1, v2) */
    fl_metric *fam;
    char *v1, *v2;
    _Atomic bool hidden;
    _Atomic uint64_t bits;     /* counter/gauge value; histogram sum */
    _Atomic uint64_t count;    /* histogram */
    _Atomic uint64_t *buckets; /* histogram: nbuckets + 1, non-cumulative */
};

struct fl_metric {
    fl_metric_type type;
    const char *name, *help, *label1, *label2;
    double le[MAX_BUCKETS];
    char le_text[MAX_BUCKETS][24];
    size_t nbuckets;
    fl_htab series;
};

static fl_metric *families[MAX_FAMILIES];
static size_t nfamilies;

typedef struct hook {
    void (*fn)(void *ctx);
    void *ctx;
} hook;
static pthread_mutex_t hook_lock = PTHREAD_MUTEX_INITIALIZER;
static hook *hooks;
static size_t nhooks, caphooks;

static uint64_t dbits(double v)
{
    uint64_t u;
    memcpy(&u, &v, sizeof u);
    return u;
}

static double bitsd(uint64_t u)
{
    double v;
    memcpy(&v, &u, sizeof v);
    return v;
}

static void atomic_add_double(_Atomic uint64_t *a, double d)
{
    uint64_t old = atomic_load_explicit(a, memory_order_relaxed);
    while (!atomic_compare_exchange_weak_explicit(a, &old, dbits(bitsd(old) + d), memory_order_relaxed,
                                                  memory_order_relaxed))
        ;
}

fl_metric *fl_metric_family(fl_metric_type type, const char *name, const char *help, const char *label1,
                            const char *label2, const double *buckets, size_t nbuckets)
{
    pthread_mutex_lock(&lock);
    for (size_t i = 0; i < nfamilies; i++)
        if (!strcmp(families[i]->name, name)) {
            pthread_mutex_unlock(&lock);
            return families[i];
        }
    /* A fixed table: families are declared in code, never from input. */
    if (nfamilies == MAX_FAMILIES) {
        fputs("flotilla: too many metric families\n", stderr);
        abort();
    }
    fl_metric *m = fl_calloc(1, sizeof *m);
    m->type = type;
    m->name = name;
    m->help = help;
    m->label1 = label1;
    m->label2 = label1 ? label2 : NULL;
    if (type == FL_METRIC_HISTOGRAM) {
        if (!buckets) {
            buckets = fl_metric_latency_buckets;
            nbuckets = fl_metric_latency_nbuckets;
        }
        if (nbuckets > MAX_BUCKETS)
            nbuckets = MAX_BUCKETS;
        for (size_t b = 0; b < nbuckets; b++) {
            m->le[b] = buckets[b];
            snprintf(m->le_text[b], sizeof m->le_text[b], "%g", buckets[b]);
        }
        m->nbuckets = nbuckets;
    }
    families[nfamilies++] = m;
    pthread_mutex_unlock(&lock);
    return m;
}

typedef struct label_key {
    const char *v1, *v2;
} label_key;

static bool labels_are(const fl_hnode *n, const void *key)
{
    const fl_metric_series *s = fl_htab_entry(n, fl_metric_series, node);
    const label_key *k = key;
    return !strcmp(s->v1, k->v1) && !strcmp(s->v2, k->v2);
}

/* The series of (v1, v2) or NULL. Lock held. */
static fl_metric_series *series_find(fl_metric *m, const char *v1, const char *v2, uint64_t *h)
{
    label_key k = {v1 ? v1 : "", v2 ? v2 : ""};
    *h = series_hash(k.v1, k.v2);
    return fl_htab_entry(fl_htab_find(&m->series, *h, labels_are, &k), fl_metric_series, node);
}

fl_metric_series *fl_metric_with(fl_metric *m, const char *v1, const char *v2)
{
    uint64_t h;
    pthread_mutex_lock(&lock);
    fl_metric_series *s = series_find(m, v1, v2, &h);
    if (!s && fl_htab_count(&m->series) >= FL_METRIC_MAX_SERIES) {
        /* unbounded values would grow memory and every scrape: fold them into one series */
        v1 = m->label1 ? OTHER_RESOURCE : NULL;
        v2 = m->label2 ? OTHER_RESOURCE : NULL;
        s = series_find(m, v1, v2, &h);
    }
    if (!s) {
        s = fl_calloc(1, sizeof *s);
        s->fam = m;
        s->v1 = fl_strdup(v1 ? v1 : "");
        s->v2 = fl_strdup(v2 ? v2 : "");
        if (m->type == FL_METRIC_HISTOGRAM)
            s->buckets = fl_calloc(m->nbuckets + 1, sizeof *s->buckets);
        fl_htab_add(&m->series, &s->node, h);
    }
    atomic_store(&s->hidden, false);
    pthread_mutex_unlock(&lock);
    return s;
}

void fl_metric_drop(fl_metric *m, const char *v1, const char *v2)
{
    uint64_t h;
    pthread_mutex_lock(&lock);
    fl_metric_series *s = series_find(m, v1, v2, &h);
    if (s)
        atomic_store(&s->hidden, true);
    pthread_mutex_unlock(&lock);
}

void fl_metric_drop_first(fl_metric *m, const char *v1)
{
    fl_htab_iter it;
    pthread_mutex_lock(&lock);
    for (fl_hnode *n = fl_htab_first(&m->series, &it); n; n = fl_htab_next(&it)) {
        fl_metric_series *s = fl_htab_entry(n, fl_metric_series, node);
        if (!strcmp(s->v1, v1))
            atomic_store(&s->hidden, true);
    }
    pthread_mutex_unlock(&lock);
}

void fl_metric_add(fl_metric_series *s, double delta)
{
    if (s->fam->type == FL_METRIC_COUNTER && !(delta >= 0))
        return; /* a counter only goes up */
    atomic_add_double(&s->bits, delta);
}

void fl_metric_set(fl_metric_series *s, double v)
{
    atomic_store_explicit(&s->bits, dbits(v), memory_order_relaxed);
}

double fl_metric_value(const fl_metric_series *s)
{
    return bitsd(atomic_load_explicit(&((fl_metric_series *)s)->bits, memory_order_relaxed));
}

void fl_metric_observe(fl_metric_series *s, double v)
{
    const fl_metric *m = s->fam;
    if (!(v >= 0))
        v = 0;
    size_t b = 0;
    while (b < m->nbuckets && v > m->le[b])
        b++;
    atomic_fetch_add_explicit(&s->buckets[b], 1, memory_order_relaxed);
    atomic_add_double(&s->bits, v);
    atomic_fetch_add_explicit(&s->count, 1, memory_order_relaxed);
}

void fl_metrics_on_scrape(void (*fn)(void *ctx), void *ctx)
{
    pthread_mutex_lock(&hook_lock);
    for (size_t i = 0; i < nhooks; i++)
        if (hooks[i].fn == fn && hooks[i].ctx == ctx) {
            pthread_mutex_unlock(&hook_lock);
            return;
        }
    if (nhooks == caphooks) {
        caphooks = caphooks ? caphooks * 2 : 16;
        hooks = fl_realloc(hooks, caphooks * sizeof *hooks);
    }
    hooks[nhooks++] = (hook){fn, ctx};
    pthread_mutex_unlock(&hook_lock);
}

void fl_metrics_remove_hook(void (*fn)(void *ctx), void *ctx)
{
    pthread_mutex_lock(&hook_lock);
    for (size_t i = 0; i < nhooks; i++)
        if (hooks[i].fn == fn && hooks[i].ctx == ctx) {
            hooks[i] = hooks[--nhooks];
            break;
        }
    pthread_mutex_unlock(&hook_lock);
}

static void run_hooks(void)
{
    pthread_mutex_lock(&hook_lock);
    for (size_t i = 0; i < nhooks; i++)
        hooks[i].fn(hooks[i].ctx);
    pthread_mutex_unlock(&hook_lock);
}

/* Zero and hide every series (fl_metrics_reset). Lock held. */
static void families_reset(void)
{
    for (size_t i = 0; i < nfamilies; i++) {
        fl_htab_iter it;
        for (fl_hnode *n = fl_htab_first(&families[i]->series, &it); n; n = fl_htab_next(&it)) {
            fl_metric_series *s = fl_htab_entry(n, fl_metric_series, node);
            atomic_store(&s->hidden, true);
            atomic_store(&s->bits, dbits(0));
            atomic_store(&s->count, 0);
            for (size_t b = 0; s->buckets && b <= families[i]->nbuckets; b++)
                atomic_store(&s->buckets[b], 0);
        }
    }
}

/* A series' labels as text, `l1="v1",l2="v2"` escaped, or "" without labels: built once per
 * series and render, since a histogram writes it on twenty lines. Heap string. */
static char *labelled_text(const fl_metric *m, const fl_metric_series *s)
{
    const char *parts[] = {m->label1, "=\"", s->v1, "\"", m->label2 ? "," : NULL, m->label2, "=\"", s->v2, "\""};
    size_t np = !m->label1 ? 0 : m->label2 ? 9 : 4, cap = 1;
    for (size_t i = 0; i < np; i++)
        cap += 2 * strlen(parts[i]); /* every byte of a value may need its escape */
    char *buf = fl_malloc(cap), *o = buf;
    for (size_t i = 0; i < np; i++) {
        bool value = i == 2 || i == 7;
        for (const char *c = parts[i]; *c; c++) {
            if (value && (*c == '\\' || *c == '"' || *c == '\n')) {
                *o++ = '\\';
                *o++ = *c == '\n' ? 'n' : *c;
            } else {
                *o++ = *c;
            }
        }
    }
    *o = '\0';
    return buf;
}

/* name{labels[,le="x"]} -- the braces left out when there is no label at all. */
static void put_series_name(fl_strbuf *f, const fl_metric *m, const char *labels, const char *suffix, const char *le)
{
    fl_strbuf_adds(f, m->name);
    fl_strbuf_adds(f, suffix);
    if (!*labels && !le) {
        fl_strbuf_addc(f, ' ');
        return;
    }
    fl_strbuf_addc(f, '{');
    fl_strbuf_adds(f, labels);
    if (le) {
        fl_strbuf_adds(f, *labels ? ",le=\"" : "le=\"");
        fl_strbuf_adds(f, le);
        fl_strbuf_addc(f, '"');
    }
    fl_strbuf_adds(f, "} ");
}

static int cmp_family(const void *a, const void *b)
{
    return strcmp((*(fl_metric *const *)a)->name, (*(fl_metric *const *)b)->name);
}

static int cmp_labelled(const void *a, const void *b)
{
    const fl_metric_series *x = *(fl_metric_series *const *)a, *y = *(fl_metric_series *const *)b;
    int c = strcmp(x->v1, y->v1);
    return c ? c : strcmp(x->v2, y->v2);
}

static void render_family(fl_strbuf *f, fl_metric *m)
{
    size_t len = fl_htab_count(&m->series), n = 0;
    fl_metric_series **v = fl_malloc((len ? len : 1) * sizeof *v);
    fl_htab_iter it;
    for (fl_hnode *hn = fl_htab_first(&m->series, &it); hn; hn = fl_htab_next(&it)) {
        fl_metric_series *s = fl_htab_entry(hn, fl_metric_series, node);
        if (!atomic_load(&s->hidden))
            v[n++] = s;
    }
    if (n) {
        static const char *const type_name[] = {"counter", "gauge", "histogram"};
        qsort(v, n, sizeof *v, cmp_labelled);
        put_help(f, m->name, m->help, type_name[m->type]);
    }
    for (size_t i = 0; i < n; i++) {
        fl_metric_series *s = v[i];
        char *labels = labelled_text(m, s);
        if (m->type != FL_METRIC_HISTOGRAM) {
            put_series_name(f, m, labels, "", NULL);
            put_value(f, fl_metric_value(s));
            fl_strbuf_addc(f, '\n');
            free(labels);
            continue;
        }
        /* count first: a reader racing an observation then sees buckets >= count, never
         * a +Inf bucket below _count */
        uint64_t count = atomic_load(&s->count), cum = 0;
        for (size_t b = 0; b <= m->nbuckets; b++) {
            cum += atomic_load_explicit(&s->buckets[b], memory_order_relaxed);
            put_series_name(f, m, labels, "_bucket", b < m->nbuckets ? m->le_text[b] : "+Inf");
            put_u64(f, b < m->nbuckets ? cum : (cum > count ? cum : count));
            fl_strbuf_addc(f, '\n');
        }
        put_series_name(f, m, labels, "_sum", NULL);
        put_value(f, fl_metric_value(s));
        fl_strbuf_addc(f, '\n');
        put_series_name(f, m, labels, "_count", NULL);
        put_u64(f, cum > count ? cum : count);
        fl_strbuf_addc(f, '\n');
        free(labels);
    }
    free(v);
}

/* Every labelled family, by name. Lock held. */
static void render_families(fl_strbuf *f)
{
    fl_metric *sorted[MAX_FAMILIES];
    memcpy(sorted, families, nfamilies * sizeof *sorted);
    qsort(sorted, nfamilies, sizeof *sorted, cmp_family);
    for (size_t i = 0; i < nfamilies; i++)
        render_family(f, sorted[i]);
}

static int cmp_series(const void *a, const void *b)
{
    const req_series *x = *(req_series *const *)a, *y = *(req_series *const *)b;
    int c = strcmp(x->verb, y->verb);
    return c ? c : strcmp(x->resource, y->resource);
}

static int cmp_code(const void *a, const void *b)
{
    int x = ((const code_count *)a)->code, y = ((const code_count *)b)->code;
    return (x > y) - (x < y);
}

static int cmp_counter(const void *a, const void *b)
{
    return strcmp(((const counter *)a)->name, ((const counter *)b)->name);
}

static int cmp_gauge(const void *a, const void *b)
{
    return strcmp(((const gauge *)a)->name, ((const gauge *)b)->name);
}

/* A series' labels as text, `{verb="...",resource="..."` (no closing brace: a code or
 * bucket label may follow), escaped once for the dozen lines that carry them. */
static char *series_labels(const req_series *s)
{
    const char *parts[] = {"{verb=\"", s->verb, "\",resource=\"", s->resource, "\""};
    size_t cap = 1;
    for (size_t i = 0; i < 5; i++)
        cap += 2 * strlen(parts[i]); /* every byte of a value may need its escape */
    char *buf = fl_malloc(cap), *o = buf;
    for (size_t i = 0; i < 5; i++) {
        for (const char *c = parts[i]; *c; c++) {
            if (i % 2 && /* 1, 3: label values */ (*c == '\\' || *c == '"' || *c == '\n')) {
                *o++ = '\\';
                *o++ = *c == '\n' ? 'n' : *c;
            } else {
                *o++ = *c;
            }
        }
    }
    *o = '\0';
    return buf;
}

/* Request families. Lock held. Sorting the code arrays in place is harmless: the
 * hot path finds codes by linear search either way. */
static void render_requests(fl_strbuf *f)
{
    size_t len = fl_htab_count(&table);
    req_series **v = fl_malloc((len ? len : 1) * sizeof *v);
    char **labels = fl_malloc((len ? len : 1) * sizeof *labels);
    size_t n = 0;
    fl_htab_iter it;
    for (fl_hnode *hn = fl_htab_first(&table, &it); hn; hn = fl_htab_next(&it))
        v[n++] = fl_htab_entry(hn, req_series, node);
    qsort(v, n, sizeof *v, cmp_series);
    for (size_t i = 0; i < n; i++)
        labels[i] = series_labels(v[i]);

    put_help(f, REQ_TOTAL, "Number of API server requests by verb, resource and HTTP response code.",
             "counter");
    for (size_t i = 0; i < n; i++) {
        req_series *s = v[i];
        qsort(s->codes, s->ncodes, sizeof *s->codes, cmp_code);
        for (size_t j = 0; j < s->ncodes; j++) {
            fl_strbuf_adds(f, REQ_TOTAL);
            fl_strbuf_adds(f, labels[i]);
            fl_strbuf_adds(f, ",code=\"");
            put_u64(f, (unsigned long long)s->codes[j].code);
            fl_strbuf_adds(f, "\"} ");
            put_u64(f, (unsigned long long)s->codes[j].n);
            fl_strbuf_addc(f, '\n');
        }
    }

    put_help(f, REQ_DURATION, "API server request latency in seconds by verb and resource.", "histogram");
    for (size_t i = 0; i < n; i++) {
        req_series *s = v[i];
        uint64_t cum = 0;
        for (size_t b = 0; b <= NBUCKETS; b++) {
            cum += s->bucket[b];
            fl_strbuf_adds(f, REQ_DURATION "_bucket");
            fl_strbuf_adds(f, labels[i]);
            fl_strbuf_adds(f, ",le=\"");
            fl_strbuf_adds(f, b < NBUCKETS ? bucket_label[b] : "+Inf");
            fl_strbuf_adds(f, "\"} ");
            put_u64(f, (unsigned long long)cum);
            fl_strbuf_addc(f, '\n');
        }
        fl_strbuf_printf(f, REQ_DURATION "_sum%s} ", labels[i]);
        put_value(f, s->sum);
        fl_strbuf_adds(f, "\n" REQ_DURATION "_count");
        fl_strbuf_adds(f, labels[i]);
        fl_strbuf_adds(f, "} ");
        put_u64(f, (unsigned long long)s->count);
        fl_strbuf_addc(f, '\n');
        free(labels[i]);
    }
    free(labels);
    free(v);
}

char *fl_metrics_render(size_t *len)
{
    fl_strbuf out = FL_STRBUF_INIT, *f = &out;
    run_hooks(); /* before the lock: hooks take series handles */
    pthread_mutex_lock(&lock);
    render_requests(f);
    render_families(f);
    if (ncounters)
        qsort(counters, ncounters, sizeof *counters, cmp_counter);
    for (size_t i = 0; i < ncounters; i++) {
        put_help(f, counters[i].name, counters[i].help, "counter");
        fl_strbuf_adds(f, counters[i].name);
        fl_strbuf_addc(f, ' ');
        put_value(f, counters[i].value);
        fl_strbuf_addc(f, '\n');
    }
    /* Copy the gauges and call them unlocked (see the file comment). */
    size_t ng = ngauges;
    gauge *g = fl_malloc((ng ? ng : 1) * sizeof *g);
    if (ng)
        memcpy(g, gauges, ng * sizeof *g);
    pthread_mutex_unlock(&lock);

    qsort(g, ng, sizeof *g, cmp_gauge);
    for (size_t i = 0; i < ng; i++) {
        double v = g[i].fn(g[i].ctx);
        put_help(f, g[i].name, g[i].help, "gauge");
        fl_strbuf_adds(f, g[i].name);
        fl_strbuf_addc(f, ' ');
        put_value(f, v);
        fl_strbuf_addc(f, '\n');
    }
    free(g);
    if (len)
        *len = out.len;
    return fl_strbuf_take(&out);
}

void fl_metric_gauge_set(const char *name, const char *help, const char *label, const char *value, double v)
{
    fl_metric_set(fl_metric_with(fl_metric_family(FL_METRIC_GAUGE, name, help, label, NULL, NULL, 0), value, NULL), v);
}
