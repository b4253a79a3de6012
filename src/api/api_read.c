/* api_read.c - GET, LIST and WATCH.
 *
 * Reads come from the store's in-memory current state, whose values already carry
 * their resourceVersion, so a GET or an unfiltered LIST copies stored bytes into
 * the response without re-encoding. Selectors parse each candidate object.
 * Pagination: the continue token records the list's revision and the last key, and
 * later pages read the store as of that revision (410 Expired once compacted).
 * Watch: a stream that first replays the requested initial state, then relays store
 * events for the collection's key prefix, filtered by the request's selectors. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api/api_internal.h"
#include "api/table.h"
#include "core/json.h"
#include "core/err.h"
#include "core/hash.h"
#include "core/htab.h"
#include "core/mem.h"
#include "core/parallel.h"
#include "core/selector.h"
#include "core/strbuf.h"

/* ---- selectors ---- */

typedef struct filter {
    fl_labelsel *labels;
    fl_fieldsel *fields;
    const char *name;   /* metadata.name pinned by field selector or by the URL */
} filter;

static void filter_close(filter *f)
{
    fl_labelsel_free(f->labels);
    fl_fieldsel_free(f->fields);
}

static bool field_supported(const fl_kind *k, const char *field)
{
    if (!strcmp(field, "metadata.name") || !strcmp(field, "metadata.namespace"))
        return true;
    for (int i = 0; i < 8 && k->field_selectors[i]; i++)
        if (!strcmp(k->field_selectors[i], field))
            return true;
    return k->dynamic;  /* custom resources: the apiserver allows metadata.* only, but be lenient */
}

/* Parse the request's selectors. On error responds 400 and returns -1. */
static int filter_init(filter *f, fl_req *r, const fl_target *t)
{
    memset(f, 0, sizeof *f);
    char *err = NULL;
    const char *ls = fl_req_query(r, "labelSelector");
    if (ls && ls[0] && fl_labelsel_parse(ls, &f->labels, &err) != 0) {
        fl_resp_status(r, 400, "BadRequest", t, NULL, "unable to parse requirement: %s", err ? err : ls);
        free(err);
        return -1;
    }
    const char *fs = fl_req_query(r, "fieldSelector");
    if (fs && fs[0]) {
        if (fl_fieldsel_parse(fs, &f->fields, &err) != 0) {
            fl_resp_status(r, 400, "BadRequest", t, NULL, "invalid field selector: %s", err ? err : fs);
            free(err);
            filter_close(f);
            return -1;
        }
        for (size_t i = 0; i < fl_fieldsel_count(f->fields); i++) {
            const char *field = fl_fieldsel_field(f->fields, i);
            if (!field_supported(t->kind, field)) {
                fl_resp_status(r, 400, "BadRequest", t, NULL, "field label not supported: %s", field);
                filter_close(f);
                return -1;
            }
        }
        f->name = fl_fieldsel_exact(f->fields, "metadata.name");
    }
    if (t->name[0])
        f->name = t->name;
    return 0;
}

static bool filter_active(const filter *f)
{
    return f->labels || f->fields;
}

/* Does the stored object match? Parses only when a selector needs the body: into *parsed
 * (whole, for the caller to use too), or, when the caller will not use it (!whole) and a
 * label selector is all there is, only the labels, found in the stored text. A control
 * plane's member watches list every Deployment and ConfigMap it manages by label, and start
 * each watch by matching them all again. */
static bool filter_match(const filter *f, const char *key, const fl_blob *v, json_t **parsed, bool whole)
{
    if (f->name) {
        const char *slash = strrchr(key, '/');
        if (!slash || strcmp(slash + 1, f->name))
            return false;
    }
    if (!f->labels && !f->fields)
        return true;
    if (!*parsed && !whole && !f->fields) {
        size_t at, n;
        json_t *labels = fl_json_find(v->data, v->len, "metadata.labels", &at, &n) ? NULL
                                                                                   : fl_json_load(v->data + at, n);
        bool ok = fl_labelsel_match(f->labels, labels);
        json_decref(labels);
        return ok;
    }
    json_t *obj = *parsed;
    if (!obj) {
        obj = fl_api_decoded(v);
        *parsed = obj;
    }
    if (!obj)
        return false;
    if (f->labels && !fl_labelsel_match(f->labels, json_object_get(json_object_get(obj, "metadata"), "labels")))
        return false;
    if (f->fields && !fl_fieldsel_match(f->fields, obj))
        return false;
    return true;
}

/* ---- resourceVersion ---- */

/* The resourceVersion query parameter as a revision: 0 when absent or empty, else a
 * non-negative integer. Anything else is answered with 400 naming the parameter (a
 * misspelt revision must not be read as "the latest"); returns -1 then, 0 otherwise. */
static int query_rv(fl_req *r, const fl_target *t, int64_t *rv)
{
    *rv = 0;
    const char *q = fl_req_query(r, "resourceVersion");
    if (!q || !q[0])
        return 0;
    char *end;
    errno = 0;
    long long v = strtoll(q, &end, 10);
    if (*end || v < 0 || errno || q[0] == '-' || q[0] == '+' || q[0] == ' ') {
        json_t *causes = json_pack("[{s:s, s:s, s:s}]", "reason", "FieldValueInvalid", "field", "resourceVersion",
                                   "message", "must be a non-negative integer");
        fl_resp_status(r, 400, "BadRequest", t, causes,
                       "resourceVersion: Invalid value: \"%s\": must be a non-negative integer", q);
        return -1;
    }
    *rv = v;
    return 0;
}

/* A ListOptions refusal as kube-apiserver words it (422, the field named in the causes). */
static void list_options_invalid(fl_req *r, const char *type, const char *detail)
{
    json_t *causes = json_pack("[{s:s, s:s, s:s}]", "reason", type, "field", "resourceVersionMatch", "message",
                               detail);
    fl_resp_status(r, 422, "Invalid", NULL, causes,
                   "ListOptions.meta.k8s.io \"\" is invalid: resourceVersionMatch: %s: %s",
                   !strcmp(type, "FieldValueForbidden") ? "Forbidden" : "Unsupported value", detail);
}

/* The revision a LIST reads at, from resourceVersion and resourceVersionMatch, checked as
 * kube-apiserver's ValidateListOptions checks them: 0 for the current state (no
 * resourceVersion, "0", or NotOlderThan, which the current state always satisfies), else
 * the revision an Exact list must answer as of. Without a resourceVersionMatch, a non-zero
 * resourceVersion with a limit (the first page of a paginated list) is Exact, as in
 * kube-apiserver; without a limit it is NotOlderThan. Returns -1 once it has answered the
 * request (400, 422, or 504 for a revision the store has not reached), 0 otherwise. */
/* A resourceVersion newer than this server's head: a replica behind the others (replicas on
 * etcd share its revisions), or a client resuming against a store that lost history. Wait
 * briefly for the head to reach it, then refuse, as kube-apiserver's watch cache does: 0
 * once the head is there, else -1 with the 504 answered. */
static int wait_for_rev(fl_api *api, fl_req *r, const fl_target *t, int64_t rv)
{
    for (int waited = 0; rv > fl_store_rev(api->store); waited += 50) {
        if (waited >= 3000) {
            json_t *causes = json_pack("[{s:s, s:s}]", "reason", "ResourceVersionTooLarge", "message",
                                       "Too large resource version");
            fl_resp_status(r, 504, "Timeout", t, causes, "Too large resource version: %lld, current: %lld",
                           (long long)rv, (long long)fl_store_rev(api->store));
            return -1;
        }
        struct timespec ts = {0, 50 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    return 0;
}

static int list_rv(fl_api *api, fl_req *r, const fl_target *t, bool has_continue, bool has_limit, int64_t *at_rev)
{
    *at_rev = 0;
    int64_t rv;
    if (query_rv(r, t, &rv))
        return -1;
    const char *rvq = fl_req_query(r, "resourceVersion");
    const char *match = fl_req_query(r, "resourceVersionMatch");
    if (!match || !match[0]) {
        if (!has_limit || has_continue || rv == 0)
            return 0;
        match = "Exact";
    }
    if (!rvq || !rvq[0]) {
        list_options_invalid(r, "FieldValueForbidden",
                             "resourceVersionMatch is forbidden unless resourceVersion is provided");
        return -1;
    }
    if (has_continue) {
        list_options_invalid(r, "FieldValueForbidden", "resourceVersionMatch is forbidden when continue is provided");
        return -1;
    }
    bool exact = !strcmp(match, "Exact");
    if (!exact && strcmp(match, "NotOlderThan")) {
        char detail[160];
        snprintf(detail, sizeof detail, "\"%.64s\": supported values: \"Exact\", \"NotOlderThan\", \"\"", match);
        list_options_invalid(r, "FieldValueNotSupported", detail);
        return -1;
    }
    if (exact && rv == 0) {
        list_options_invalid(r, "FieldValueForbidden", "resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\"");
        return -1;
    }
    if (wait_for_rev(api, r, t, rv))
        return -1;
    *at_rev = exact ? rv : 0;
    return 0;
}

/* ---- GET ---- */

void fl_api_get(fl_api *api, fl_req *r, const fl_target *t)
{
    int64_t rv_unused;
    if (query_rv(r, t, &rv_unused)) /* any valid one is satisfied by the current object */
        return;
    char *key = fl_obj_key(t->kind, t->ns, t->name);
    fl_kv kv;
    int rc = fl_store_get(api->store, key, &kv);
    free(key);
    if (rc) {
        fl_resp_store_error(r, rc, t);
        return;
    }
    if (!strcmp(t->sub, "scale")) {
        json_t *obj = fl_json_load(kv.value->data, kv.value->len);
        fl_blob_unref(kv.value);
        if (!obj) {
            fl_resp_store_error(r, FL_EIO, t);
            return;
        }
        fl_resp_json(r, 200, fl_scale_view(t->kind, obj));
        json_decref(obj);
        return;
    }
    if (fl_req_wants_table(r)) {
        json_t *obj = fl_json_load(kv.value->data, kv.value->len);
        json_t *items = json_array();
        if (obj)
            json_array_append_new(items, obj);
        const char *inc = fl_req_query(r, "includeObject");
        json_t *tbl = fl_table_render(t->kind, items, inc ? inc : "Metadata", NULL, NULL);
        json_decref(items);
        fl_resp_json(r, 200, tbl);
    } else {
        fl_resp_raw(r, 200, kv.value->data, kv.value->len);
    }
    fl_blob_unref(kv.value);
}

/* ---- LIST ---- */

typedef struct list_ctx {
    filter *f;
    fl_strbuf out;
    json_t *items;       /* for Table output */
    json_t *objs;        /* in process (want_obj): the stored objects, shared, as items */
    const fl_client_local_list *in; /* with objs: how the caller takes them (may be NULL) */
    const fl_kind *kind;
    size_t kind_plen;    /* the length of the kind's key prefix: an item's key is that, then
                          * "ns/name" or "name" */
    size_t count;
    size_t limit;
    bool more;
    char *last_key;
    /* with objs: the next chunk's items, as stored values and perhaps decoded already */
    fl_blob **pend;
    json_t **pend_obj;
    int64_t *pend_rev;
    size_t npend;
    int parts; /* the decoders of the pending items */
    /* with objs and in->on_items: the stored value of each of objs */
    fl_blob **texts;
    size_t ntexts;
} list_ctx;

/* In process, how many items a list decodes at a time, and hands over (fl_client_local_list.on_items) */
#define LIST_CHUNK 256
/* ... and on how many threads each chunk is decoded (fl_parallel): after a restart the
 * Work list, 180,000 of them, gates every controller that reads Works, and once the other
 * lists were done it ran alone on one core */
#define LIST_DECODERS 2

static void decode_part(void *ctx, int part)
{
    list_ctx *c = ctx;
    size_t per = (c->npend + c->parts - 1) / c->parts;
    for (size_t i = (size_t)part * per; i < c->npend && i < (size_t)(part + 1) * per; i++) {
        if (!c->pend_obj[i])
            c->pend_obj[i] = fl_api_decoded_skipping(c->pend[i], c->in ? c->in->item_skip : NULL);
    }
}

/* The pending items decoded, in order, into c->objs: as watch events in process are, the
 * decoding the store's value already has (or one made now), behind a top level and metadata
 * of the caller's own (an informer's transform trims those). */
static void pend_flush(list_ctx *c)
{
    if (!c->npend)
        return;
    c->parts = c->npend >= LIST_CHUNK / 4 ? LIST_DECODERS : 1;
    fl_parallel(c->parts, LIST_DECODERS, decode_part, c);
    bool texts = c->in && c->in->on_items;
    if (texts)
        c->texts = fl_realloc(c->texts, (c->ntexts + c->npend) * sizeof *c->texts);
    for (size_t i = 0; i < c->npend; i++) {
        if (c->pend_obj[i]) {
            /* a bare item (no stored value) is this list's own already */
            json_array_append_new(c->objs, c->pend[i] ? fl_json_meta_own(c->pend_obj[i]) : c->pend_obj[i]);
            if (texts)
                c->texts[c->ntexts++] = fl_blob_ref(c->pend[i]);
        }
        fl_blob_unref(c->pend[i]);
    }
    c->npend = 0;
}

/* The items decoded so far, with their stored values, to the caller that takes them as the
 * list goes (fl_client_local_list.on_items). */
static void hand_items(list_ctx *c)
{
    if (!c->in || !c->in->on_items || !json_array_size(c->objs))
        return;
    c->in->on_items(c->in->items_ctx, c->objs, c->texts);
    json_array_clear(c->objs);
    for (size_t i = 0; i < c->ntexts; i++)
        fl_blob_unref(c->texts[i]);
    c->ntexts = 0;
}

/* An item a list leaves bare (fl_client_local_list.bare_upto): its names and resourceVersion,
 * from its key. */
static json_t *bare_item(const list_ctx *c, const char *key, int64_t rev)
{
    const char *rest = key + c->kind_plen, *slash = c->kind->namespaced ? strchr(rest, '/') : NULL;
    char rv[24];
    snprintf(rv, sizeof rv, "%lld", (long long)rev);
    json_t *md = json_pack("{s:s, s:s}", "name", slash ? slash + 1 : rest, "resourceVersion", rv);
    if (slash)
        json_object_set_new(md, "namespace", json_stringn(rest, (size_t)(slash - rest)));
    return json_pack("{s:s, s:s, s:o}", "apiVersion", c->kind->api_version, "kind", c->kind->kind, "metadata", md);
}

static bool list_cb(void *vctx, const char *key, const fl_kv *kv)
{
    list_ctx *c = vctx;
    json_t *parsed = NULL;
    if (!filter_match(c->f, key, kv->value, &parsed, c->items || c->objs)) {
        json_decref(parsed);
        return true;
    }
    if (c->limit && c->count == c->limit) {
        c->more = true;
        json_decref(parsed);
        return false;
    }
    if (c->items) {
        if (!parsed)
            parsed = fl_json_load(kv->value->data, kv->value->len);
        if (parsed)
            json_array_append(c->items, parsed);
    } else if (c->objs) {
        /* no text to build and parse again: decoded with the rest of its chunk */
        if (!c->pend) {
            c->pend = fl_malloc(LIST_CHUNK * sizeof *c->pend);
            c->pend_obj = fl_malloc(LIST_CHUNK * sizeof *c->pend_obj);
            c->pend_rev = fl_malloc(LIST_CHUNK * sizeof *c->pend_rev);
        }
        c->pend_rev[c->npend] = kv->rev;
        c->pend[c->npend] = fl_blob_ref(kv->value);
        c->pend_obj[c->npend++] = kv->value ? json_incref(parsed) : bare_item(c, key, kv->rev);
        if (c->npend == LIST_CHUNK) {
            pend_flush(c);
            hand_items(c);
        }
    } else {
        if (c->count)
            fl_strbuf_addc(&c->out, ',');
        fl_strbuf_add(&c->out, kv->value->data, kv->value->len);
    }
    json_decref(parsed);
    c->count++;
    free(c->last_key);
    c->last_key = fl_strdup(key);
    return true;
}

/* Continue token: base64 of {"v":"meta.k8s.io/v1","rv":N,"start":"<last key>"}. */
static char *make_continue(int64_t rv, const char *last_key)
{
    json_t *j = json_pack("{s:s, s:I, s:s}", "v", "meta.k8s.io/v1", "rv", (json_int_t)rv, "start", last_key);
    char *s = fl_json_dumps(j, NULL);
    json_decref(j);
    char *out = fl_base64_encode(s, strlen(s));
    free(s);
    return out;
}

static int parse_continue(const char *tok, const char *prefix, int64_t *rv, char **start)
{
    size_t len;
    char *raw = fl_base64_decode(tok, &len);
    if (!raw)
        return -1;
    json_t *j = fl_json_load(raw, len);
    free(raw);
    const char *st = json_string_value(json_object_get(j, "start"));
    json_t *jrv = json_object_get(j, "rv");
    if (!j || !st || !json_is_integer(jrv) || json_integer_value(jrv) <= 0 || strncmp(st, prefix, strlen(prefix))) {
        json_decref(j);
        return -1;
    }
    *rv = json_integer_value(jrv);
    *start = fl_strdup(st);
    json_decref(j);
    return 0;
}

void fl_api_list(fl_api *api, fl_req *r, const fl_target *t)
{
    filter f;
    if (filter_init(&f, r, t))
        return;
    list_ctx c;
    memset(&c, 0, sizeof c);
    c.f = &f;
    const char *lim = fl_req_query(r, "limit");
    if (lim && lim[0]) {
        char *end;
        long long l = strtoll(lim, &end, 10);
        if (*end || l < 0) {
            fl_resp_status(r, 400, "BadRequest", t, NULL, "invalid limit: %s", lim);
            filter_close(&f);
            return;
        }
        c.limit = (size_t)l;
    }
    char *prefix = fl_coll_prefix(t->kind, t->has_ns ? t->ns : NULL);
    int64_t at_rev = 0;
    char *start = NULL;
    const char *cont = fl_req_query(r, "continue");
    if (list_rv(api, r, t, cont && cont[0], c.limit > 0, &at_rev))
        goto out;
    bool exact = at_rev > 0;
    if (cont && cont[0]) {
        if (parse_continue(cont, prefix, &at_rev, &start)) {
            fl_resp_status(r, 400, "BadRequest", t, NULL, "continue key is not valid: %s", cont);
            goto out;
        }
    }
    bool table = fl_req_wants_table(r);
    if (table)
        c.items = json_array();
    else if (r->want_obj)
        c.objs = json_array();
    c.in = r->list;
    c.kind = t->kind;
    char *kp = fl_kind_prefix(t->kind);
    c.kind_plen = strlen(kp);
    free(kp);
    const char *api_version = t->kind->api_version;
    int64_t rev = 0;
    bool more = false;
    /* in process, a list of every item may leave those the caller knows already bare */
    bool bare = c.objs && c.in && c.in->bare_upto > 0 && !filter_active(&f) && !c.limit && !start && !at_rev;
    int rc = bare ? fl_store_list_bare(api->store, prefix, c.in->bare_upto, list_cb, &c, &rev)
                  : fl_store_list(api->store, prefix, start, at_rev, 0, list_cb, &c, &rev, &more);
    pend_flush(&c);
    hand_items(&c); /* or else the last chunk's items go with the answer */
    free(c.pend);
    free(c.pend_obj);
    free(c.pend_rev);
    free(c.texts);
    if (rc == FL_EEXPIRED && exact) {
        fl_resp_status(r, 410, "Expired", t, NULL, "The resourceVersion for the provided list is too old.");
        goto out;
    }
    if (rc == FL_EEXPIRED) {
        fl_resp_status(r, 410, "Expired", t, NULL,
                       "The provided continue parameter is too old to display a consistent list result. You can "
                       "start a new list without the continue parameter, or use the continue token in this "
                       "response to retrieve the remainder of the results. Continuing with the provided token "
                       "results in an inconsistent list - objects that were created, modified, or deleted "
                       "between the time the first chunk was returned and now may show up in the list.");
        goto out;
    }
    if (rc) {
        fl_resp_store_error(r, rc, t);
        goto out;
    }
    char rvs[32];
    snprintf(rvs, sizeof rvs, "%lld", (long long)rev);
    char *tok = c.more && c.last_key ? make_continue(rev, c.last_key) : NULL;
    if (c.objs) {
        json_t *list = json_pack("{s:s, s:s, s:{s:s}, s:O}", "kind", t->kind->list_kind, "apiVersion", api_version,
                                 "metadata", "resourceVersion", rvs, "items", c.objs);
        if (tok)
            json_object_set_new(json_object_get(list, "metadata"), "continue", json_string(tok));
        r->code = 200;
        r->resp_obj = list;
        r->resp_type = "application/json";
    } else if (table) {
        const char *inc = fl_req_query(r, "includeObject");
        json_t *tbl = fl_table_render(t->kind, c.items, inc ? inc : "Metadata", rvs, tok);
        fl_resp_json(r, 200, tbl);
    } else {
        /* the items' text is in c.out; the List around it needs the revision the list read */
        fl_strbuf hdr = FL_STRBUF_INIT;
        fl_strbuf_adds(&hdr, "{\"kind\":\"");
        fl_strbuf_adds(&hdr, t->kind->list_kind);
        fl_strbuf_adds(&hdr, "\",\"apiVersion\":\"");
        fl_strbuf_adds(&hdr, api_version);
        fl_strbuf_adds(&hdr, "\",\"metadata\":{\"resourceVersion\":\"");
        fl_strbuf_adds(&hdr, rvs);
        fl_strbuf_adds(&hdr, "\"");
        if (tok) {
            fl_strbuf_adds(&hdr, ",\"continue\":\"");
            fl_strbuf_adds(&hdr, tok);
            fl_strbuf_adds(&hdr, "\"");
        }
        fl_strbuf_adds(&hdr, "},\"items\":[");
        if (c.out.len) /* no items: nothing was ever written to it */
            fl_strbuf_add(&hdr, c.out.p, c.out.len);
        fl_strbuf_adds(&hdr, "]}");
        free(r->resp);
        r->code = 200;
        r->resp_len = hdr.len;
        r->resp = fl_strbuf_take(&hdr);
        r->resp_type = "application/json";
    }
    free(tok);
out:
    fl_strbuf_close(&c.out);
    json_decref(c.items);
    json_decref(c.objs);
    free(c.last_key);
    free(start);
    free(prefix);
    filter_close(&f);
}

/* ---- WATCH ---- */

/* A watch stream. Initial events (for resourceVersion unset/0 or sendInitialEvents) are
 * rendered into `pending` up front; then each read takes the next store event. */
struct fl_api_stream {
    fl_api *api;
    fl_watch *w;
    filter f;
    const fl_kind *kind;
    bool table;
    bool bookmarks;
    int64_t last_rev;
    struct timespec deadline;  /* timeoutSeconds */
    fl_strbuf pending;
    size_t pending_off;
    bool done;
    bool objects;              /* want_obj: events go to evq as objects, not to pending */
    struct {
        const char *type;
        json_t *obj;
        fl_blob *text;         /* the stored value obj was decoded from, or NULL */
    } *evq;
    size_t nq, capq, qoff;
    atomic_bool cancelled;     /* fl_api_stream_cancel: end at the next look */
    double last_activity;      /* monotonic seconds of the last event sent (for bookmarks) */
    /* keys currently matching a filtered watch: to turn updates that stop matching into
     * DELETED and ones that start matching into ADDED, as the Kubernetes watch cache does */
    fl_htab seen;              /* seen_key by key */
    json_t *(*convert)(const json_t *obj); /* stored object -> the watched version, or NULL */
};

typedef struct seen_key {
    fl_hnode node;
    char key[];
} seen_key;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Queue one event: type, and the object as bytes (data, len), stored as blob under key when
 * it is a stored value (key and blob NULL for bookmarks and errors). */
static void emit(fl_api_stream *s, const char *type, const char *key, const fl_blob *blob, const char *data,
                 size_t len)
{
    bool convert = s->convert && strcmp(type, "BOOKMARK") && strcmp(type, "ERROR");
    if (s->objects) {
        json_t *obj = blob ? fl_api_decoded(blob) : fl_json_load(data, len);
        if (!obj)
            return;
        if (convert) {
            json_t *c = s->convert(obj);
            json_decref(obj);
            obj = c;
            blob = NULL;
        }
        if (s->nq == s->capq) {
            s->capq = s->capq ? s->capq * 2 : 16;
            s->evq = fl_realloc(s->evq, s->capq * sizeof *s->evq);
        }
        s->evq[s->nq].type = type;
        /* the watcher's own top level and metadata (which an informer's transform may trim) */
        s->evq[s->nq].obj = fl_json_meta_own(obj);
        s->evq[s->nq].text = fl_blob_ref((fl_blob *)blob);
        s->nq++;
        return;
    }
    fl_strbuf_adds(&s->pending, "{\"type\":\"");
    fl_strbuf_adds(&s->pending, type);
    fl_strbuf_adds(&s->pending, "\",\"object\":");
    if (s->table && strcmp(type, "BOOKMARK") && strcmp(type, "ERROR")) {
        json_t *obj = fl_json_load(data, len);
        json_t *items = json_array();
        if (obj)
            json_array_append_new(items, obj);
        json_t *tbl = fl_table_render(s->kind, items, "Metadata", NULL, NULL);
        json_decref(items);
        char *txt = fl_json_dumps(tbl, NULL);
        json_decref(tbl);
        fl_strbuf_adds(&s->pending, txt);
        free(txt);
    } else if (convert) {
        json_t *obj = fl_json_load(data, len), *c = obj ? s->convert(obj) : NULL;
        char *txt = c ? fl_json_dumps(c, NULL) : NULL;
        fl_strbuf_adds(&s->pending, txt ? txt : "null");
        free(txt);
        json_decref(c);
        json_decref(obj);
    } else {
        fl_strbuf_add(&s->pending, data, len);
    }
    fl_strbuf_adds(&s->pending, "}\n");
}

static void emit_bookmark(fl_api_stream *s, int64_t rev, bool initial_end)
{
    char *o = fl_asprintf("{\"kind\":\"%s\",\"apiVersion\":\"%s\",\"metadata\":{\"resourceVersion\":\"%lld\"%s}}",
                          s->kind->kind, s->kind->api_version, (long long)rev,
                          initial_end ? ",\"annotations\":{\"k8s.io/initial-events-end\":\"true\"}" : "");
    emit(s, "BOOKMARK", NULL, NULL, o, strlen(o));
    free(o);
}

static void emit_expired(fl_api_stream *s, const char *msg)
{
    json_t *st = json_pack("{s:s, s:s, s:{}, s:s, s:s, s:s, s:i}", "kind", "Status", "apiVersion", "v1", "metadata",
                           "status", "Failure", "message", msg, "reason", "Expired", "code", 410);
    char *txt = fl_json_dumps(st, NULL);
    json_decref(st);
    emit(s, "ERROR", NULL, NULL, txt, strlen(txt));
    free(txt);
    s->done = true;
}

/* The matching keys are a hash set: a selector watch of a large collection learns every key
 * that matches at its start, and a list searched from the start for each made that start
 * quadratic (30,000 member objects: seconds of strcmp). */
static bool seen_is(const fl_hnode *n, const void *key)
{
    return !strcmp(fl_htab_entry(n, seen_key, node)->key, key);
}

static seen_key *seen_find(fl_api_stream *s, const char *key, uint64_t h)
{
    return fl_htab_entry(fl_htab_find(&s->seen, h, seen_is, key), seen_key, node);
}

static bool seen_has(fl_api_stream *s, const char *key)
{
    return seen_find(s, key, fl_hash_str(key)) != NULL;
}

static void seen_add(fl_api_stream *s, const char *key)
{
    uint64_t h = fl_hash_str(key);
    if (seen_find(s, key, h))
        return;
    size_t len = strlen(key);
    seen_key *e = fl_malloc(sizeof *e + len + 1);
    memcpy(e->key, key, len + 1);
    fl_htab_add(&s->seen, &e->node, h);
}

static void seen_del(fl_api_stream *s, const char *key)
{
    seen_key *e = seen_find(s, key, fl_hash_str(key));
    if (e) {
        fl_htab_remove(&s->seen, &e->node);
        free(e);
    }
}

typedef struct init_ctx {
    fl_api_stream *s;
    bool emit;      /* false: only note which keys match (watch resumed from a revision) */
} init_ctx;

static bool initial_cb(void *vctx, const char *key, const fl_kv *kv)
{
    init_ctx *ic = vctx;
    fl_api_stream *s = ic->s;
    json_t *parsed = NULL;
    if (filter_match(&s->f, key, kv->value, &parsed, false)) {
        if (ic->emit)
            emit(s, "ADDED", key, kv->value, kv->value->data, kv->value->len);
        if (filter_active(&s->f))
            seen_add(s, key);
    }
    json_decref(parsed);
    return true;
}

/* Turn one store event into zero or one watch event. */
static void relay(fl_api_stream *s, const fl_watch_event *ev)
{
    s->last_rev = ev->rev;
    s->last_activity = now_s();
    json_t *parsed = NULL;
    bool match = filter_match(&s->f, ev->key, ev->value, &parsed, false);
    json_decref(parsed);
    if (!filter_active(&s->f)) {
        /* at most a name filter, which an update cannot change */
        if (match) {
            const char *type =
                ev->type == FL_EV_DELETE ? "DELETED" : ev->type == FL_EV_PUT_CREATE ? "ADDED" : "MODIFIED";
            emit(s, type, ev->key, ev->value, ev->value->data, ev->value->len);
        }
        return;
    }
    bool had = seen_has(s, ev->key);
    if (ev->type == FL_EV_DELETE) {
        if (match || had)
            emit(s, "DELETED", ev->key, ev->value, ev->value->data, ev->value->len);
        if (had)
            seen_del(s, ev->key);
        return;
    }
    if (match) {
        emit(s, had ? "MODIFIED" : "ADDED", ev->key, ev->value, ev->value->data, ev->value->len);
        seen_add(s, ev->key);
    } else if (had) {
        emit(s, "DELETED", ev->key, ev->value, ev->value->data, ev->value->len);
        seen_del(s, ev->key);
    }
}

void fl_api_watch(fl_api *api, fl_req *r, const fl_target *t)
{
    fl_api_stream *s = fl_calloc(1, sizeof *s);
    fl_htab_init(&s->seen, 16);
    s->api = api;
    s->kind = t->kind;
    s->convert = t->kind->from_storage; /* a version served from another's objects */
    if (filter_init(&s->f, r, t)) {
        free(s);
        return;
    }
    s->table = fl_req_wants_table(r);
    s->objects = r->want_obj && !s->table;
    const char *bm = fl_req_query(r, "allowWatchBookmarks");
    s->bookmarks = fl_query_true(bm);
    const char *to = fl_req_query(r, "timeoutSeconds");
    long timeout = to ? strtol(to, NULL, 10) : 0;
    if (timeout <= 0)
        timeout = 1800;
    clock_gettime(CLOCK_MONOTONIC, &s->deadline);
    s->deadline.tv_sec += timeout;

    const char *rvq = fl_req_query(r, "resourceVersion");
    const char *sie = fl_req_query(r, "sendInitialEvents");
    bool send_initial = fl_query_true(sie);
    if (send_initial) {
        const char *match = fl_req_query(r, "resourceVersionMatch");
        if (!match || strcmp(match, "NotOlderThan") || !s->bookmarks) {
            fl_resp_status(r, 422, "Invalid", t, NULL,
                           "sendInitialEvents requires resourceVersionMatch=NotOlderThan and allowWatchBookmarks=true");
            filter_close(&s->f);
            free(s);
            return;
        }
    }
    int64_t from = 0;
    bool initial = false;
    if (!rvq || !rvq[0] || !strcmp(rvq, "0")) {
        initial = !sie || fl_query_true(sie);
        from = fl_store_rev(api->store); /* without initial events: changes from now on */
    } else {
        int64_t v;
        if (query_rv(r, t, &v)) {
            filter_close(&s->f);
            free(s);
            return;
        }
        from = v;
        initial = send_initial;
    }
    if (!initial && wait_for_rev(api, r, t, from)) {
        filter_close(&s->f);
        free(s);
        return;
    }
    char *prefix = fl_coll_prefix(t->kind, t->has_ns ? t->ns : NULL);
    int rc = 0;
    if (initial) {
        init_ctx ic = {s, true};
        int64_t rev = 0;
        /* state as of now, then changes after it */
        rc = fl_store_list(api->store, prefix, NULL, 0, 0, initial_cb, &ic, &rev, NULL);
        if (rc == 0) {
            from = rev;
            if (send_initial)
                emit_bookmark(s, rev, true);
        }
    }
    else if (filter_active(&s->f)) {
        /* resumed selector watch: learn which objects match now, so that an update that
         * makes one stop matching is reported as DELETED */
        init_ctx ic = {s, false};
        int64_t rev = 0;
        fl_store_list(api->store, prefix, NULL, 0, 0, initial_cb, &ic, &rev, NULL);
    }
    if (rc == 0)
        rc = fl_store_watch(api->store, prefix, from, &s->w);
    free(prefix);
    s->last_rev = from;
    s->last_activity = now_s();
    if (rc == FL_EEXPIRED) {
        char msg[160];
        snprintf(msg, sizeof msg, "too old resource version: %lld (%lld)", (long long)from,
                 (long long)fl_store_compact_rev(api->store));
        emit_expired(s, msg);
    } else if (rc) {
        fl_resp_store_error(r, rc, t);
        fl_api_stream_free(s);
        return;
    }
    r->code = 200;
    r->resp_type = "application/json";
    r->stream = s;
}

/* Wait for the next store event (or the time for a bookmark) and relay it: 1 when something
 * was relayed (or a wait ended without one, blocking), 0 when the stream has ended. With
 * block false it does not wait: -1 when nothing is ready, with *wake_ms the time it next
 * needs a look (the bookmark interval, the deadline). */
static int stream_pull(fl_api_stream *s, bool block, int64_t *wake_ms)
{
    if (s->done || s->api->stopping || !s->w || atomic_load(&s->cancelled))
        return 0;
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    double left = (double)(s->deadline.tv_sec - now.tv_sec) + (s->deadline.tv_nsec - now.tv_nsec) / 1e9;
    if (left <= 0)
        return 0;
    int wait_ms = (int)(left * 1000) + 1;
    int bmi = s->api->bookmark_interval_ms > 0 ? s->api->bookmark_interval_ms : 60000;
    if (wait_ms > bmi)
        wait_ms = bmi;
    if (wait_ms > 1000)
        wait_ms = 1000;  /* wake at least once a second to notice shutdown */
    if (!block)
        wait_ms = 0;
    fl_watch_event *ev = NULL;
    int rc = fl_watch_next(s->w, &ev, wait_ms);
    if (rc == 0) {
        relay(s, ev);
        return 1;
    }
    if (rc == FL_ETIMEDOUT) {
        if (block && wait_ms >= FL_NODE_IDLE_MS)
            fl_node_cache_drain(); /* a second without an event: the watcher is idle */
        if (s->bookmarks && now_s() - s->last_activity >= bmi / 1000.0) {
            s->last_activity = now_s();
            int64_t head = fl_store_rev(s->api->store);
            emit_bookmark(s, head > s->last_rev ? head : s->last_rev, false);
            return 1;
        }
        if (block)
            return 1;
        int64_t at = (int64_t)s->deadline.tv_sec * 1000 + s->deadline.tv_nsec / 1000000 + 1;
        if (s->bookmarks) {
            int64_t bm = (int64_t)((s->last_activity + bmi / 1000.0) * 1000) + 1;
            if (bm < at)
                at = bm;
        }
        *wake_ms = at;
        return -1;
    }
    if (rc == FL_EEXPIRED) {
        emit_expired(s, "watch fell too far behind; re-list and watch again");
        return 1;
    }
    return 0; /* closed */
}

/* Hand out what is pending, up to cap bytes; 0 when nothing is. */
static size_t take_pending(fl_api_stream *s, char *out, size_t cap)
{
    size_t n = s->pending.len - s->pending_off;
    if (n > cap)
        n = cap;
    memcpy(out, s->pending.p + s->pending_off, n);
    s->pending_off += n;
    if (s->pending_off == s->pending.len) { /* all read: the memory serves the next event */
        fl_strbuf_truncate(&s->pending, 0);
        s->pending_off = 0;
    }
    return n;
}

size_t fl_api_stream_read(fl_api_stream *s, char *out, size_t cap)
{
    for (;;) {
        if (s->pending_off < s->pending.len)
            return take_pending(s, out, cap);
        if (!stream_pull(s, true, NULL))
            return 0;
    }
}

long fl_api_stream_try_read(fl_api_stream *s, char *out, size_t cap, int64_t *wake_ms)
{
    for (;;) {
        if (s->pending_off < s->pending.len)
            return (long)take_pending(s, out, cap);
        int rc = stream_pull(s, false, wake_ms);
        if (rc == 0)
            return -1;
        if (rc < 0)
            return 0;
    }
}

void fl_api_stream_set_notify(fl_api_stream *s, void (*fn)(void *ctx), void *ctx)
{
    if (s->w)
        fl_watch_set_notify(s->w, fn, ctx);
}

int fl_api_stream_next(fl_api_stream *s, const char **type, json_t **obj, fl_blob **text)
{
    for (;;) {
        if (s->qoff < s->nq) {
            *type = s->evq[s->qoff].type;
            *obj = s->evq[s->qoff].obj;
            *text = s->evq[s->qoff].text;
            if (++s->qoff == s->nq)
                s->nq = s->qoff = 0;
            return 1;
        }
        if (!stream_pull(s, true, NULL))
            return 0;
    }
}

void fl_api_stream_cancel(fl_api_stream *s)
{
    atomic_store(&s->cancelled, true);
    if (s->w)
        fl_watch_cancel(s->w);
}

void fl_api_stream_free(fl_api_stream *s)
{
    if (!s)
        return;
    fl_watch_free(s->w);
    filter_close(&s->f);
    fl_strbuf_close(&s->pending);
    for (size_t i = s->qoff; i < s->nq; i++) {
        json_decref(s->evq[i].obj);
        fl_blob_unref(s->evq[i].text);
    }
    free(s->evq);
    fl_htab_iter it;
    for (fl_hnode *n = fl_htab_first(&s->seen, &it); n; n = fl_htab_next(&it))
        free(fl_htab_entry(n, seen_key, node));
    fl_htab_close(&s->seen);
    free(s);
}
