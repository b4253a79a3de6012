/* audit.c - the audit log's records and its file (see audit.h).
 *
 * A record (fl_audit_ev) follows one request from its arrival to its answer; each stage the
 * policy keeps becomes one Event, serialized on the request's thread and appended to the log
 * with a single write(2) on an O_APPEND descriptor under the sink's mutex. Rotation is
 * lumberjack's, which kube-apiserver uses: before a write would take the file past
 * --audit-log-maxsize, the file is renamed to NAME-<UTC time>.EXT beside it
 * (audit.log -> audit-2026-12-07T11-09-09.000.log), a new one is opened, and the rotated
 * files past --audit-log-maxbackup or older than --audit-log-maxage days are removed. A
 * failed write is counted (apiserver_audit_error_total) and warned about at most once a
 * minute; the request is served all the same, as kube-apiserver's log backend does. */
#include "api/audit.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "api/api_internal.h"
#include "api/protobuf.h"
#include "core/err.h"
#include "core/json.h"
#include "core/log.h"
#include "core/mem.h"
#include "core/metrics.h"
#include "core/random.h"
#include "core/strbuf.h"
#include "core/timefmt.h"
#include "core/yaml.h"

#define MAX_SOURCE_IPS 4
#define WARN_EVERY_MS 60000

struct fl_audit {
    fl_audit_policy *policy;
    char *path;             /* NULL: standard output, never rotated */
    char *dir, *prefix, *ext; /* path split as lumberjack names the rotated files */
    int fd;
    pthread_mutex_t mu;     /* held for one write, or one rotation */
    long long size;         /* under mu: bytes in the current file */
    long long max_bytes;
    long max_backups, max_age_days;
    int64_t warned_ms;      /* under mu */
    fl_metric_series *m_events, *m_errors;
};

/* What is known of the request's target, in the event's objectRef words. */
typedef struct object_ref {
    char resource[96], sub[32], ns[256], name[256], group[128], version[64];
} object_ref;

struct fl_audit_ev {
    fl_audit *a;
    char id[FL_AUDIT_ID_MAX + 1];
    struct timespec received;
    char *method, *uri, *user_agent;
    char ips[MAX_SOURCE_IPS][64];
    int nips;
    bool has_user;
    fl_identity user;
    fl_identity *imp;     /* the impersonated user, or NULL */
    bool decided, resource_request, streaming;
    char verb[24];
    object_ref ref;
    fl_audit_decision d;
    const char *decision; /* "allow", "forbid" or NULL */
    char *reason;
};

/* ---- the file ---- */

static int open_log(fl_audit *a, char **err)
{
    a->fd = open(a->path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    if (a->fd < 0) {
        if (err)
            *err = fl_asprintf("%s: cannot open the audit log: %s", a->path, strerror(errno));
        return FL_EIO;
    }
    struct stat sb;
    a->size = fstat(a->fd, &sb) == 0 ? (long long)sb.st_size : 0;
    return 0;
}

/* "2026-12-07T11-09-09.000" from a realtime clock reading, as lumberjack stamps backups. */
static void backup_stamp(const struct timespec *ts, char *buf, size_t cap)
{
    struct tm tm;
    time_t s = ts->tv_sec;
    gmtime_r(&s, &tm);
    char base[32];
    strftime(base, sizeof base, "%Y-%m-%dT%H-%M-%S", &tm);
    snprintf(buf, cap, "%s.%03ld", base, ts->tv_nsec / 1000000);
}

static int cmp_names_desc(const void *x, const void *y)
{
    return strcmp(*(char *const *)y, *(char *const *)x);
}

/* Remove the rotated files past max_backups (the newest are kept: their stamps sort by time)
 * or older than max_age_days. Under a->mu, right after a rotation. */
static void remove_old_backups(fl_audit *a, const struct timespec *now)
{
    if (a->max_backups <= 0 && a->max_age_days <= 0)
        return;
    DIR *d = opendir(a->dir);
    if (!d)
        return;
    char **names = NULL;
    size_t n = 0, cap = 0, plen = strlen(a->prefix), elen = strlen(a->ext);
    struct dirent *de;
    while ((de = readdir(d))) {
        size_t len = strlen(de->d_name);
        /* PREFIX-YYYY-MM-DDTHH-MM-SS.mmmEXT */
        if (len != plen + 1 + 23 + elen || strncmp(de->d_name, a->prefix, plen) || de->d_name[plen] != '-' ||
            strcmp(de->d_name + len - elen, a->ext) || de->d_name[plen + 11] != 'T')
            continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 16;
            names = fl_realloc(names, cap * sizeof *names);
        }
        names[n++] = fl_strdup(de->d_name);
    }
    closedir(d);
    qsort(names, n, sizeof *names, cmp_names_desc);
    char cutoff[40] = "";
    if (a->max_age_days > 0) {
        struct timespec c = {now->tv_sec - (time_t)a->max_age_days * 86400, 0};
        backup_stamp(&c, cutoff, sizeof cutoff);
    }
    for (size_t i = 0; i < n; i++) {
        bool too_many = a->max_backups > 0 && i >= (size_t)a->max_backups;
        bool too_old = cutoff[0] && strncmp(names[i] + plen + 1, cutoff, 23) < 0;
        if (too_many || too_old) {
            char *p = fl_asprintf("%s/%s", a->dir, names[i]);
            unlink(p);
            free(p);
        }
        free(names[i]);
    }
    free(names);
}

/* Rename the current file aside and open a new one. Under a->mu. */
static int rotate(fl_audit *a)
{
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    char *to = NULL;
    /* two rotations within a millisecond must not overwrite a backup: take the next one free */
    for (int i = 0; i < 1000; i++) {
        char stamp[40];
        backup_stamp(&now, stamp, sizeof stamp);
        free(to);
        to = fl_asprintf("%s/%s-%s%s", a->dir, a->prefix, stamp, a->ext);
        if (access(to, F_OK) != 0)
            break;
        now.tv_nsec += 1000000;
        if (now.tv_nsec >= 1000000000L) {
            now.tv_sec++;
            now.tv_nsec -= 1000000000L;
        }
    }
    int rc = rename(a->path, to);
    free(to);
    if (rc != 0)
        return FL_EIO;
    close(a->fd);
    if (open_log(a, NULL))
        return FL_EIO;
    remove_old_backups(a, &now);
    return 0;
}

static void warn_once_a_minute(fl_audit *a, const char *what)
{
    int64_t now = fl_time_mono_ms();
    if (a->warned_ms && now - a->warned_ms < WARN_EVERY_MS)
        return;
    a->warned_ms = now;
    fl_log(FL_LOG_WARN, "audit", "%s %s: %s (events are being lost)", what, a->path ? a->path : "standard output",
           strerror(errno));
}

/* Append one event (a whole line). One write(2): concurrent writers never interleave. */
static void write_line(fl_audit *a, const char *line, size_t len)
{
    pthread_mutex_lock(&a->mu);
    if (a->path && a->size > 0 && a->size + (long long)len > a->max_bytes && rotate(a))
        warn_once_a_minute(a, "cannot rotate the audit log");
    bool ok = false;
    if (a->fd >= 0) {
        size_t off = 0;
        while (off < len) {
            ssize_t w = write(a->fd, line + off, len - off);
            if (w < 0 && errno == EINTR)
                continue;
            if (w <= 0)
                break;
            off += (size_t)w;
        }
        ok = off == len;
        a->size += (long long)off;
    }
    if (!ok)
        warn_once_a_minute(a, "cannot write the audit log");
    pthread_mutex_unlock(&a->mu);
    fl_metric_add(ok ? a->m_events : a->m_errors, 1);
}

/* path split into the directory, the name without its extension and the extension */
static void split_path(fl_audit *a)
{
    const char *slash = strrchr(a->path, '/');
    a->dir = slash ? fl_strndup(a->path, slash == a->path ? 1 : (size_t)(slash - a->path)) : fl_strdup(".");
    const char *base = slash ? slash + 1 : a->path;
    const char *dot = strrchr(base, '.');
    if (!dot || dot == base)
        dot = base + strlen(base);
    a->prefix = fl_strndup(base, (size_t)(dot - base));
    a->ext = fl_strdup(dot);
}

int fl_audit_new(const fl_audit_config *cfg, fl_audit **out, char **err)
{
    *out = NULL;
    if (!cfg->policy_file || !cfg->policy_file[0] || !cfg->log_path || !cfg->log_path[0]) {
        if (cfg->log_path && cfg->log_path[0])
            fl_log(FL_LOG_INFO, "audit", "no audit policy file: no events will be written to %s (as kube-apiserver)",
                   cfg->log_path);
        return 0;
    }
    fl_audit_policy *p = NULL;
    int rc = fl_audit_policy_load(cfg->policy_file, &p, err);
    if (rc)
        return rc;
    fl_audit *a = fl_calloc(1, sizeof *a);
    a->policy = p;
    a->fd = -1;
    pthread_mutex_init(&a->mu, NULL);
    a->max_bytes = (long long)(cfg->max_size_mb > 0 ? cfg->max_size_mb : FL_AUDIT_DEFAULT_MAX_MB) << 20;
    a->max_backups = cfg->max_backups;
    a->max_age_days = cfg->max_age_days;
    fl_metric *events = fl_metric_family(FL_METRIC_COUNTER, "apiserver_audit_event_total",
                                         "Counter of audit events generated and sent to the audit backend.", NULL,
                                         NULL, NULL, 0);
    fl_metric *errors = fl_metric_family(FL_METRIC_COUNTER, "apiserver_audit_error_total",
                                         "Counter of audit events that failed to be audited properly.", "plugin",
                                         NULL, NULL, 0);
    a->m_events = fl_metric_with(events, NULL, NULL);
    a->m_errors = fl_metric_with(errors, "log", NULL);
    if (!strcmp(cfg->log_path, "-")) {
        a->fd = STDOUT_FILENO;
    } else {
        a->path = fl_strdup(cfg->log_path);
        split_path(a);
        rc = open_log(a, err);
        if (rc) {
            fl_audit_free(a);
            return rc;
        }
    }
    fl_log(FL_LOG_INFO, "audit", "audit log: %s, %zu policy rules from %s", a->path ? a->path : "standard output",
           fl_audit_policy_rules(p), cfg->policy_file);
    *out = a;
    return 0;
}

void fl_audit_free(fl_audit *a)
{
    if (!a)
        return;
    if (a->path && a->fd >= 0)
        close(a->fd);
    pthread_mutex_destroy(&a->mu);
    fl_audit_policy_free(a->policy);
    free(a->path);
    free(a->dir);
    free(a->prefix);
    free(a->ext);
    free(a);
}

/* ---- records ---- */

void fl_audit_new_id(char buf[37])
{
    fl_random_uuid4(buf);
}

/* A client's Audit-ID is kept when it is short and plain (it lands in a header and a log). */
static bool usable_id(const char *s)
{
    size_t n = s ? strlen(s) : 0;
    if (!n || n > FL_AUDIT_ID_MAX)
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || strchr("-_.:", c)))
            return false;
    }
    return true;
}

fl_audit_ev *fl_audit_ev_new(fl_audit *a, const char *method, const char *uri, const char *user_agent,
                             const char *audit_id)
{
    if (!a)
        return NULL;
    fl_audit_ev *ev = fl_calloc(1, sizeof *ev);
    ev->a = a;
    clock_gettime(CLOCK_REALTIME, &ev->received);
    if (usable_id(audit_id))
        snprintf(ev->id, sizeof ev->id, "%s", audit_id);
    else
        fl_random_uuid4(ev->id);
    ev->method = fl_strdup(method ? method : "");
    ev->uri = fl_strdup(uri ? uri : "");
    ev->user_agent = user_agent ? fl_strdup(user_agent) : NULL;
    return ev;
}

void fl_audit_add_source_ip(fl_audit_ev *ev, const char *ip)
{
    if (!ev || !ip || !ip[0] || ev->nips == MAX_SOURCE_IPS)
        return;
    for (int i = 0; i < ev->nips; i++)
        if (!strcmp(ev->ips[i], ip))
            return;
    snprintf(ev->ips[ev->nips++], sizeof ev->ips[0], "%s", ip);
}

void fl_audit_set_user(fl_audit_ev *ev, const fl_identity *who)
{
    if (!ev || ev->has_user)
        return;
    ev->has_user = who && who->user[0];
    if (ev->has_user)
        ev->user = *who;
}

void fl_audit_set_impersonated(fl_audit_ev *ev, const fl_identity *as)
{
    if (!ev)
        return;
    free(ev->imp);
    ev->imp = NULL;
    if (as && as->user[0]) {
        ev->imp = fl_malloc(sizeof *ev->imp);
        *ev->imp = *as;
    }
}

const char *fl_audit_ev_id(const fl_audit_ev *ev)
{
    return ev ? ev->id : "";
}

bool fl_audit_authorized(fl_audit_ev *ev, bool allowed, const char *reason)
{
    if (ev) {
        ev->decision = allowed ? "allow" : "forbid";
        free(ev->reason);
        ev->reason = reason && reason[0] ? fl_strdup(reason) : NULL;
    }
    return allowed;
}

/* What no policy may log above Metadata: objects that are credentials. */
static bool credentials(const object_ref *o)
{
    return !strcmp(o->resource, "secrets") ||
           (!o->group[0] && !strcmp(o->resource, "serviceaccounts") && !strcmp(o->sub, "token")) ||
           (!strcmp(o->group, "authentication.k8s.io") && !strcmp(o->resource, "tokenreviews")) ||
           (!strcmp(o->group, "flotilla.io") && !strcmp(o->resource, "register"));
}

static void emit(fl_audit_ev *ev, const char *stage, unsigned bit, const fl_req *r);

static void decide(fl_audit_ev *ev, const fl_auth_attrs *at)
{
    ev->decided = true;
    ev->d = fl_audit_policy_decide(ev->a->policy, at);
    if (ev->resource_request && credentials(&ev->ref) && ev->d.level > FL_AUDIT_METADATA)
        ev->d.level = FL_AUDIT_METADATA;
}

void fl_audit_resource(fl_audit_ev *ev, const char *verb, const struct fl_target *t)
{
    if (!ev || ev->decided)
        return;
    ev->resource_request = true;
    snprintf(ev->verb, sizeof ev->verb, "%s", verb);
    object_ref *o = &ev->ref;
    snprintf(o->resource, sizeof o->resource, "%s", t->resource);
    snprintf(o->sub, sizeof o->sub, "%s", t->sub);
    snprintf(o->ns, sizeof o->ns, "%s", t->ns);
    snprintf(o->name, sizeof o->name, "%s", t->name);
    snprintf(o->group, sizeof o->group, "%s", t->group);
    snprintf(o->version, sizeof o->version, "%s", t->version);
    fl_auth_attrs at = {.who = ev->has_user ? &ev->user : NULL, .verb = ev->verb, .group = o->group,
                        .resource = o->resource, .subresource = o->sub, .ns = o->ns, .name = o->name};
    decide(ev, &at);
    emit(ev, "RequestReceived", FL_AUDIT_STAGE_RECEIVED, NULL);
}

/* The level of a non-resource request (no event yet). */
static void decide_nonresource(fl_audit_ev *ev, const char *method, const char *path)
{
    size_t i = 0;
    for (; method && method[i] && i + 1 < sizeof ev->verb; i++)
        ev->verb[i] = (char)(method[i] >= 'A' && method[i] <= 'Z' ? method[i] + 32 : method[i]);
    ev->verb[i] = 0;
    fl_auth_attrs at = {.who = ev->has_user ? &ev->user : NULL, .verb = ev->verb, .path = path ? path : "/"};
    decide(ev, &at);
}

void fl_audit_nonresource(fl_audit_ev *ev, const char *method, const char *path)
{
    if (!ev || ev->decided)
        return;
    decide_nonresource(ev, method, path);
    emit(ev, "RequestReceived", FL_AUDIT_STAGE_RECEIVED, NULL);
}

/* ---- the event ----
 *
 * Written as text into a string builder, not built as a JSON tree and encoded: an event of
 * a Metadata rule is a dozen short fields, and building it in jansson cost more than the
 * request it described (40,000 instructions an event, most of them hashing keys and
 * allocating). Only the logged bodies are JSON trees, since they are decoded and stripped. */

/* s as a JSON string, quotes included. Bytes that are not UTF-8 (a client's header need not
 * be) become U+FFFD, so the line is JSON whatever came in. */
static void add_str(fl_strbuf *b, const char *s)
{
    static const char hex[] = "0123456789abcdef";
    const unsigned char *p = (const unsigned char *)s;
    fl_strbuf_addc(b, '"');
    while (*p) {
        const unsigned char *run = p; /* plain ASCII goes in one copy */
        while (*p >= 0x20 && *p < 0x80 && *p != '"' && *p != '\\')
            p++;
        if (p > run)
            fl_strbuf_add(b, run, (size_t)(p - run));
        unsigned char c = *p;
        if (!c)
            break;
        if (c == '"' || c == '\\') {
            fl_strbuf_addc(b, '\\');
            fl_strbuf_addc(b, (char)c);
            p++;
        } else if (c < 0x20) {
            char e[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};
            fl_strbuf_add(b, e, 6);
            p++;
        } else if (c < 0x80) {
            fl_strbuf_addc(b, (char)c);
            p++;
        } else {
            int n = (c & 0xe0) == 0xc0 ? 2 : (c & 0xf0) == 0xe0 ? 3 : (c & 0xf8) == 0xf0 ? 4 : 0;
            bool ok = n > 0 && !(n == 2 && c < 0xc2);
            for (int i = 1; ok && i < n; i++)
                ok = (p[i] & 0xc0) == 0x80;
            if (ok) {
                fl_strbuf_add(b, p, (size_t)n);
                p += n;
            } else {
                fl_strbuf_adds(b, "\\ufffd");
                p++;
            }
        }
    }
    fl_strbuf_addc(b, '"');
}

/* ,"key":"value" (key is ours: no escaping needed) */
static void add_field(fl_strbuf *b, const char *key, const char *value)
{
    fl_strbuf_adds(b, ",\"");
    fl_strbuf_adds(b, key);
    fl_strbuf_adds(b, "\":");
    add_str(b, value);
}

/* RFC 3339 with microseconds, UTC: "2026-12-07T11:09:09.123456Z". The date and time of day
 * are formatted once a second per thread (gmtime and strftime cost more than the event). */
static void add_time(fl_strbuf *b, const char *key, const struct timespec *ts)
{
    static __thread time_t sec = -1;
    static __thread char base[32];
    if (ts->tv_sec != sec) {
        struct tm tm;
        time_t t = ts->tv_sec;
        gmtime_r(&t, &tm);
        strftime(base, sizeof base, "%Y-%m-%dT%H:%M:%S", &tm);
        sec = ts->tv_sec;
    }
    char us[8];
    long u = ts->tv_nsec / 1000;
    for (int i = 5; i >= 0; i--, u /= 10)
        us[i] = (char)('0' + u % 10);
    fl_strbuf_adds(b, ",\"");
    fl_strbuf_adds(b, key);
    fl_strbuf_adds(b, "\":\"");
    fl_strbuf_adds(b, base);
    fl_strbuf_addc(b, '.');
    fl_strbuf_add(b, us, 6);
    fl_strbuf_adds(b, "Z\"");
}

static void add_user(fl_strbuf *b, const char *key, const fl_identity *id)
{
    fl_strbuf_printf(b, ",\"%s\":{", key);
    if (id) {
        fl_strbuf_adds(b, "\"username\":");
        add_str(b, id->user);
        if (id->uid[0])
            add_field(b, "uid", id->uid);
        if (id->ngroups) {
            fl_strbuf_adds(b, ",\"groups\":[");
            for (size_t i = 0; i < id->ngroups; i++) {
                if (i)
                    fl_strbuf_addc(b, ',');
                add_str(b, id->groups[i]);
            }
            fl_strbuf_addc(b, ']');
        }
    }
    fl_strbuf_addc(b, '}');
}

static void add_object_ref(fl_strbuf *b, const object_ref *o)
{
    fl_strbuf_adds(b, ",\"objectRef\":{\"resource\":");
    add_str(b, o->resource);
    if (o->ns[0])
        add_field(b, "namespace", o->ns);
    if (o->name[0])
        add_field(b, "name", o->name);
    if (o->group[0])
        add_field(b, "apiGroup", o->group);
    if (o->version[0])
        add_field(b, "apiVersion", o->version);
    if (o->sub[0])
        add_field(b, "subresource", o->sub);
    fl_strbuf_addc(b, '}');
}

/* ,"key":<v encoded>, and v released */
static void add_json(fl_strbuf *b, const char *key, json_t *v)
{
    size_t len = 0;
    char *text = fl_json_dumps(v, &len);
    json_decref(v);
    fl_strbuf_printf(b, ",\"%s\":", key);
    fl_strbuf_add(b, text, len);
    free(text);
}

static void strip_secrets(json_t *v, int depth);

/* kubectl apply keeps the object it applied as text in an annotation: a Work's copy holds
 * its manifests, Secrets included. The text is stripped as the object is. */
static void strip_last_applied(json_t *obj, int depth)
{
    json_t *ann = json_object_get(json_object_get(obj, "metadata"), "annotations");
    const char *key = "kubectl.kubernetes.io/last-applied-configuration";
    const char *text = json_string_value(json_object_get(ann, key));
    if (!text || !strstr(text, "Secret"))
        return;
    json_t *applied = fl_json_load(text, strlen(text));
    if (!applied) { /* not JSON: nothing can say what it holds */
        json_object_del(ann, key);
        return;
    }
    strip_secrets(applied, depth + 1);
    char *again = fl_json_dumps(applied, NULL);
    json_object_set_new(ann, key, json_string(again));
    free(again);
    json_decref(applied);
}

/* A Secret anywhere inside v (a Work's manifests, a List's items, a patch, what kubectl
 * applied) loses its data. */
static void strip_secrets(json_t *v, int depth)
{
    if (depth > 64)
        return;
    if (json_is_object(v)) {
        const char *kind = json_string_value(json_object_get(v, "kind"));
        if (kind && !strcmp(kind, "Secret")) {
            json_object_del(v, "data");
            json_object_del(v, "stringData");
        }
        strip_last_applied(v, depth);
        const char *k;
        json_t *c;
        json_object_foreach(v, k, c) strip_secrets(c, depth + 1);
    } else if (json_is_array(v)) {
        size_t i;
        json_t *c;
        json_array_foreach(v, i, c) strip_secrets(c, depth + 1);
    }
}

static void drop_managed_fields(json_t *obj)
{
    json_object_del(json_object_get(obj, "metadata"), "managedFields");
    size_t i;
    json_t *item;
    json_array_foreach(json_object_get(obj, "items"), i, item) json_object_del(json_object_get(item, "metadata"), "managedFields");
}

/* A body as the event holds it: JSON (or YAML: server-side apply) decoded, what must not be
 * logged taken out; NULL for anything else (protobuf, nothing). */
static json_t *decode_body(const char *body, size_t len, const char *type)
{
    if (!body || !len)
        return NULL;
    json_t *v = NULL;
    char *err = NULL;
    if (type && strstr(type, "protobuf")) {
        if (fl_protobuf_decode((const unsigned char *)body, len, &v, &err))
            v = NULL;
    } else {
        v = fl_json_load(body, len);
        if (!v && type && strstr(type, "yaml") &&
            fl_yaml_parse_limited(body, len, FL_API_MAX_REQUEST_BYTES, &v, &err))
            v = NULL;
    }
    free(err);
    return v;
}

static json_t *body_object(const fl_audit_ev *ev, const char *body, size_t len, const char *type)
{
    json_t *v = decode_body(body, len, type);
    if (!v)
        return NULL;
    strip_secrets(v, 0);
    if (ev->d.omit_managed_fields)
        drop_managed_fields(v);
    return v;
}

/* responseStatus: the code, and for a failure what its Status says */
static void add_response_status(fl_strbuf *b, const fl_req *r, int code)
{
    fl_strbuf_adds(b, ",\"responseStatus\":{\"metadata\":{}");
    if (r && code >= 400 && r->resp && r->resp_len) {
        json_t *body = fl_json_load(r->resp, r->resp_len);
        const char *kind = json_string_value(json_object_get(body, "kind"));
        static const char *const keep[] = {"status", "message", "reason", "details"};
        for (size_t i = 0; kind && !strcmp(kind, "Status") && i < 4; i++) {
            json_t *f = json_object_get(body, keep[i]);
            if (f)
                add_json(b, keep[i], json_incref(f));
        }
        json_decref(body);
    }
    fl_strbuf_printf(b, ",\"code\":%d}", code);
}

/* Write the stage's event, unless the level is None or the policy omits the stage. r: the
 * answer (NULL before there is one). Fields in kube-apiserver's order. */
static void emit(fl_audit_ev *ev, const char *stage, unsigned bit, const fl_req *r)
{
    if (ev->d.level == FL_AUDIT_NONE || (ev->d.omit_stages & bit))
        return;
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    int code = r ? r->code : 0;
    if (bit == FL_AUDIT_STAGE_STARTED || (bit == FL_AUDIT_STAGE_COMPLETE && ev->streaming))
        code = code ? code : 200;
    fl_strbuf b = {0};
    fl_strbuf_reserve(&b, 1024);
    fl_strbuf_printf(&b, "{\"kind\":\"Event\",\"apiVersion\":\"audit.k8s.io/v1\",\"level\":\"%s\"",
                     fl_audit_level_name(ev->d.level));
    add_field(&b, "auditID", ev->id);
    add_field(&b, "stage", stage);
    add_field(&b, "requestURI", ev->uri);
    add_field(&b, "verb", ev->verb);
    add_user(&b, "user", ev->has_user ? &ev->user : NULL);
    if (ev->imp)
        add_user(&b, "impersonatedUser", ev->imp);
    fl_strbuf_adds(&b, ",\"sourceIPs\":[");
    for (int i = 0; i < ev->nips; i++) {
        if (i)
            fl_strbuf_addc(&b, ',');
        add_str(&b, ev->ips[i]);
    }
    fl_strbuf_addc(&b, ']');
    if (ev->user_agent)
        add_field(&b, "userAgent", ev->user_agent);
    if (ev->resource_request)
        add_object_ref(&b, &ev->ref);
    /* a watch's ResponseStarted is its 200; a refused login's is the refusal */
    if (bit != FL_AUDIT_STAGE_RECEIVED)
        add_response_status(&b, bit == FL_AUDIT_STAGE_STARTED && ev->streaming ? NULL : r, code);
    if (r && bit == FL_AUDIT_STAGE_COMPLETE && !ev->streaming) {
        json_t *v;
        if (ev->d.level >= FL_AUDIT_REQUEST && (v = body_object(ev, r->body, r->body_len, r->content_type)))
            add_json(&b, "requestObject", v);
        if (ev->d.level >= FL_AUDIT_REQUEST_RESPONSE && r->resp_type &&
            !strncmp(r->resp_type, "application/json", 16) && (v = body_object(ev, r->resp, r->resp_len, r->resp_type)))
            add_json(&b, "responseObject", v);
    }
    add_time(&b, "requestReceivedTimestamp", &ev->received);
    add_time(&b, "stageTimestamp", &now);
    if (ev->decision && bit != FL_AUDIT_STAGE_RECEIVED) {
        fl_strbuf_printf(&b, ",\"annotations\":{\"authorization.k8s.io/decision\":\"%s\"", ev->decision);
        if (ev->reason) {
            fl_strbuf_adds(&b, ",\"authorization.k8s.io/reason\":");
            add_str(&b, ev->reason);
        }
        fl_strbuf_addc(&b, '}');
    }
    fl_strbuf_adds(&b, "}\n");
    write_line(ev->a, b.p, b.len);
    free(b.p);
}

/* A create names its object in the body, not the path: the completed event names it, as
 * kube-apiserver fills objectRef from the decoded object. */
static void name_from_body(fl_audit_ev *ev, const fl_req *r)
{
    if (!ev->resource_request || ev->ref.name[0] || strcmp(ev->verb, "create"))
        return;
    /* the object created (which has its generated name; found in the text, not decoded),
     * else the one sent */
    size_t at = 0, n = 0;
    if (r->code < 300 && r->resp && r->resp_type && !strncmp(r->resp_type, "application/json", 16) &&
        fl_json_find(r->resp, r->resp_len, "metadata.name", &at, &n) == 0 && n >= 2 && r->resp[at] == '"' &&
        !memchr(r->resp + at, '\\', n)) {
        snprintf(ev->ref.name, sizeof ev->ref.name, "%.*s", (int)(n - 2), r->resp + at + 1);
        return;
    }
    json_t *obj = decode_body(r->body, r->body_len, r->content_type);
    const char *name = json_string_value(json_object_get(json_object_get(obj, "metadata"), "name"));
    if (name)
        snprintf(ev->ref.name, sizeof ev->ref.name, "%s", name);
    json_decref(obj);
}

bool fl_audit_respond(fl_audit_ev *ev, const fl_req *r)
{
    if (!ev)
        return true;
    if (!ev->decided) {
        /* never reached the handler: as a non-resource request on its path */
        char path[512];
        snprintf(path, sizeof path, "%s", ev->uri);
        path[strcspn(path, "?")] = 0;
        if (r->code == 401 && !ev->has_user) {
            /* as kube-apiserver's failed-authentication audit: one ResponseStarted event */
            decide_nonresource(ev, ev->method, path);
            emit(ev, "ResponseStarted", FL_AUDIT_STAGE_STARTED, r);
            ev->d.level = FL_AUDIT_NONE;
            return true;
        }
        fl_audit_nonresource(ev, ev->method, path);
    }
    if (r->stream) {
        ev->streaming = true;
        emit(ev, "ResponseStarted", FL_AUDIT_STAGE_STARTED, r);
        return false;
    }
    if (ev->d.level != FL_AUDIT_NONE)
        name_from_body(ev, r);
    emit(ev, "ResponseComplete", FL_AUDIT_STAGE_COMPLETE, r);
    ev->d.level = FL_AUDIT_NONE; /* written: fl_audit_ev_end adds nothing */
    return true;
}

void fl_audit_ev_end(fl_audit_ev *ev, int code)
{
    if (!ev)
        return;
    if (ev->streaming && ev->d.level != FL_AUDIT_NONE) {
        fl_req r = {.code = code ? code : 200};
        emit(ev, "ResponseComplete", FL_AUDIT_STAGE_COMPLETE, &r);
    }
    free(ev->method);
    free(ev->uri);
    free(ev->user_agent);
    free(ev->reason);
    free(ev->imp);
    free(ev);
}
