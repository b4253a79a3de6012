/* kinds_builtin.c - the static table of built-in kinds: names, scope, subresources,
 * field selectors, field tables, Table columns and row functions.
 *
 * This is data, declared once (STYLE.md "Tables that list things"): discovery,
 * OpenAPI, `kubectl get` columns, type checks and strategic merge patch all read it.
 * Names, short names and categories follow what upstream serves: Kubernetes for the
 * core, apps, batch and coordination kinds, Karmada's CRDs (charts/karmada/_crds/bases)
 * and its aggregated API server (Cluster) for the Karmada kinds, kpt's CRD for its
 * ResourceGroup.
 *
 * The field tables (types, required fields, strategic-merge-patch tags) are generated
 * from the published OpenAPI documents into kinds_schema.c by tools/gen_kind_schemas.py;
 * this file only points each kind at its table.
 *
 * Row functions reproduce the cells of upstream's printers (pkg/printers/internalversion)
 * for the columns after NAME; AGE is added by the table renderer (table.c). Every row
 * function appends exactly one cell per column, in column order. */
#include <ctype.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api/kinds.h"
#include "api/kinds_rows.h"
#include "api/kinds_schema.h"
#include "api/validate.h"
#include "core/json_get.h"
#include "core/mem.h"
#include "core/strbuf.h"

/* Shared with kinds.c (registry) and kinds_crd.c; not part of kinds.h on purpose. */
extern fl_kind fl_kinds__builtin[];
extern const size_t fl_kinds__builtin_count;

/* ------------------------------------------------------------------ */
/* Row helpers                                                         */
/* ------------------------------------------------------------------ */

/* RFC 3339 (with optional fraction and offset) -> epoch seconds; -1 if unparsable. */
static long long parse_time(const char *s)
{
    if (!s || !*s)
        return -1;
    struct tm tm = {0};
    const char *p = strptime(s, "%Y-%m-%dT%H:%M:%S", &tm);
    if (!p)
        return -1;
    long long t = (long long)timegm(&tm);
    if (*p == '.')
        for (p++; isdigit((unsigned char)*p); p++)
            ;
    if (*p == '+' || *p == '-') {
        int hh = 0, mm = 0;
        if (sscanf(p + 1, "%2d:%2d", &hh, &mm) >= 1)
            t += (*p == '+' ? -1 : 1) * (hh * 3600LL + mm * 60LL);
    }
    return t;
}

/* Kubernetes' HumanDuration: "45s", "3m12s", "5h2m", "3d4h", "2y10d". */
static char *human_duration(long long secs)
{
    if (secs < -1)
        return fl_strdup("<invalid>");
    if (secs < 0)
        return fl_strdup("0s");
    if (secs < 120)
        return fl_asprintf("%llds", secs);
    long long minutes = secs / 60;
    if (minutes < 10)
        return secs % 60 ? fl_asprintf("%lldm%llds", minutes, secs % 60) : fl_asprintf("%lldm", minutes);
    if (minutes < 180)
        return fl_asprintf("%lldm", minutes);
    long long hours = secs / 3600;
    if (hours < 8)
        return minutes % 60 ? fl_asprintf("%lldh%lldm", hours, minutes % 60) : fl_asprintf("%lldh", hours);
    if (hours < 48)
        return fl_asprintf("%lldh", hours);
    if (hours < 24 * 8)
        return hours % 24 ? fl_asprintf("%lldd%lldh", hours / 24, hours % 24) : fl_asprintf("%lldd", hours / 24);
    if (hours < 24 * 365 * 2)
        return fl_asprintf("%lldd", hours / 24);
    if (hours < 24 * 365 * 8) {
        long long dy = (hours / 24) % 365;
        return dy ? fl_asprintf("%lldy%lldd", hours / 24 / 365, dy) : fl_asprintf("%lldy", hours / 24 / 365);
    }
    return fl_asprintf("%lldy", hours / 24 / 365);
}

/* "<unknown>" for a missing time, as upstream's translateTimestampSince. */
static char *since(const char *rfc3339)
{
    long long t = parse_time(rfc3339);
    if (t < 0)
        return fl_strdup("<unknown>");
    return human_duration((long long)time(NULL) - t);
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* labels.FormatLabels: "k=v,k2=v2" sorted by key, "<none>" when empty. */
static char *format_labels(const json_t *m)
{
    size_t n = json_is_object(m) ? json_object_size(m) : 0;
    if (!n)
        return fl_strdup("<none>");
    char **kv = fl_calloc(n, sizeof(*kv));
    size_t i = 0;
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)m, k, v) kv[i++] = fl_asprintf("%s=%s", k, json_is_string(v) ? json_string_value(v) : "");
    qsort(kv, n, sizeof(*kv), cmp_str);
    fl_strbuf b = FL_STRBUF_INIT;
    for (i = 0; i < n; i++) {
        fl_row_join(&b, ",", kv[i]);
        free(kv[i]);
    }
    free(kv);
    return fl_row_joined(&b, "<none>");
}

/* metav1.FormatLabelSelector: requirements sorted by key ("k=v", "k in (a,b)",
 * "k notin (a,b)", "k", "!k"); "<none>" for an empty selector. */
static char *format_selector(const json_t *sel)
{
    if (!json_is_object(sel))
        return fl_strdup("<none>");
    const json_t *ml = json_object_get(sel, "matchLabels");
    const json_t *me = json_object_get(sel, "matchExpressions");
    size_t n = (json_is_object(ml) ? json_object_size(ml) : 0) + (json_is_array(me) ? json_array_size(me) : 0);
    if (!n)
        return fl_strdup("<none>");
    char **req = fl_calloc(n, sizeof(*req));
    size_t i = 0, j;
    const char *k;
    json_t *v;
    if (json_is_object(ml))
        json_object_foreach((json_t *)ml, k, v) req[i++] = fl_asprintf("%s=%s", k, json_is_string(v) ? json_string_value(v) : "");
    json_array_foreach(me, j, v) {
        const char *key = fl_row_str_or(v, "key", "");
        const char *op = fl_row_str_or(v, "operator", "");
        const json_t *vals = json_object_get(v, "values");
        size_t nv = json_is_array(vals) ? json_array_size(vals) : 0;
        char **vs = fl_calloc(nv ? nv : 1, sizeof(*vs));
        for (size_t x = 0; x < nv; x++) {
            const char *s = json_string_value(json_array_get(vals, x));
            vs[x] = fl_strdup(s ? s : "");
        }
        qsort(vs, nv, sizeof(*vs), cmp_str);
        fl_strbuf b = FL_STRBUF_INIT;
        for (size_t x = 0; x < nv; x++) {
            fl_row_join(&b, ",", vs[x]);
            free(vs[x]);
        }
        free(vs);
        char *joined = fl_row_joined(&b, "");
        if (!strcmp(op, "In"))
            req[i++] = fl_asprintf("%s in (%s)", key, joined);
        else if (!strcmp(op, "NotIn"))
            req[i++] = fl_asprintf("%s notin (%s)", key, joined);
        else if (!strcmp(op, "Exists"))
            req[i++] = fl_strdup(key);
        else if (!strcmp(op, "DoesNotExist"))
            req[i++] = fl_asprintf("!%s", key);
        else
            req[i++] = fl_asprintf("%s %s (%s)", key, op, joined);
        free(joined);
    }
    qsort(req, i, sizeof(*req), cmp_str);
    fl_strbuf b = FL_STRBUF_INIT;
    for (j = 0; j < i; j++) {
        fl_row_join(&b, ",", req[j]);
        free(req[j]);
    }
    free(req);
    return fl_row_joined(&b, "<none>");
}

/* Containers and images of a pod template, comma-joined (wide columns). */
static void cells_containers_images(json_t *cells, const json_t *podspec)
{
    const json_t *cs = json_object_get(podspec, "containers");
    fl_strbuf names = FL_STRBUF_INIT, images = FL_STRBUF_INIT;
    size_t i;
    json_t *c;
    json_array_foreach(cs, i, c) {
        fl_row_join(&names, ",", fl_row_str_or(c, "name", ""));
        fl_row_join(&images, ",", fl_row_str_or(c, "image", ""));
    }
    fl_row_take(cells, fl_row_joined(&names, ""));
    fl_row_take(cells, fl_row_joined(&images, ""));
}

/* The condition of `type` in a conditions array, or NULL. */
static const json_t *find_condition(const json_t *conds, const char *type)
{
    size_t i;
    json_t *c;
    json_array_foreach(conds, i, c) {
        const char *t = fl_json_path_str(c, "type");
        if (t && !strcmp(t, type))
            return c;
    }
    return NULL;
}

static bool condition_true(const json_t *conds, const char *type)
{
    const char *s = fl_json_path_str(find_condition(conds, type), "status");
    return s && !strcmp(s, "True");
}

/* The formats above, for the row functions of kinds_builtin_ext.c (kinds_rows.h). */
char *fl_row_labels(const json_t *m) { return format_labels(m); }
char *fl_row_selector(const json_t *sel) { return format_selector(sel); }
void fl_row_containers_images(json_t *cells, const json_t *podspec) { cells_containers_images(cells, podspec); }

/* ------------------------------------------------------------------ */
/* Row functions                                                       */
/* ------------------------------------------------------------------ */

static void row_namespace(const fl_kind *k, const json_t *o, json_t *cells)
{
    fl_row_str(cells, fl_row_str_or(o, "status.phase", ""));
}

static void row_configmap(const fl_kind *k, const json_t *o, json_t *cells)
{
    const json_t *d = json_object_get(o, "data"), *b = json_object_get(o, "binaryData");
    fl_row_int(cells, (json_int_t)((json_is_object(d) ? json_object_size(d) : 0) +
                                 (json_is_object(b) ? json_object_size(b) : 0)));
}

static void row_secret(const fl_kind *k, const json_t *o, json_t *cells)
{
    const json_t *d = json_object_get(o, "data");
    fl_row_str(cells, fl_row_str_or(o, "type", "Opaque"));
    fl_row_int(cells, (json_int_t)(json_is_object(d) ? json_object_size(d) : 0));
}

static void row_serviceaccount(const fl_kind *k, const json_t *o, json_t *cells)
{
    const json_t *s = json_object_get(o, "secrets");
    fl_row_int(cells, (json_int_t)(json_is_array(s) ? json_array_size(s) : 0));
}

static char *service_external_ip(const json_t *o)
{
    const char *type = fl_row_str_or(o, "spec.type", "ClusterIP");
    const json_t *ext = fl_json_path(o, "spec.externalIPs");
    size_t i;
    json_t *v;
    fl_strbuf b = FL_STRBUF_INIT;
    if (!strcmp(type, "ClusterIP") || !strcmp(type, "NodePort")) {
        json_array_foreach(ext, i, v) if (json_is_string(v)) fl_row_join(&b, ",", json_string_value(v));
        return fl_row_joined(&b, "<none>");
    }
    if (!strcmp(type, "LoadBalancer")) {
        json_array_foreach(fl_json_path(o, "status.loadBalancer.ingress"), i, v) {
            const char *ip = fl_json_path_str(v, "ip"), *host = fl_json_path_str(v, "hostname");
            if (ip && *ip)
                fl_row_join(&b, ",", ip);
            else if (host && *host)
                fl_row_join(&b, ",", host);
        }
        json_array_foreach(ext, i, v) if (json_is_string(v)) fl_row_join(&b, ",", json_string_value(v));
        return fl_row_joined(&b, "<pending>");
    }
    if (!strcmp(type, "ExternalName"))
        return fl_strdup(fl_row_str_or(o, "spec.externalName", ""));
    return fl_strdup("<unknown>");
}

static void row_service(const fl_kind *k, const json_t *o, json_t *cells)
{
    fl_row_str(cells, fl_row_str_or(o, "spec.type", "ClusterIP"));
    fl_row_str(cells, fl_row_str_or(o, "spec.clusterIP", "<none>"));
    fl_row_take(cells, service_external_ip(o));
    fl_strbuf b = FL_STRBUF_INIT;
    size_t i;
    json_t *p;
    json_array_foreach(fl_json_path(o, "spec.ports"), i, p) {
        char *s;
        json_int_t node_port = fl_json_path_int(p, "nodePort", 0);
        const char *proto = fl_row_str_or(p, "protocol", "TCP");
        if (node_port)
            s = fl_asprintf("%lld:%lld/%s", (long long)fl_json_path_int(p, "port", 0), (long long)node_port, proto);
        else
            s = fl_asprintf("%lld/%s", (long long)fl_json_path_int(p, "port", 0), proto);
        fl_row_join(&b, ",", s);
        free(s);
    }
    fl_row_take(cells, fl_row_joined(&b, "<none>"));
    fl_row_take(cells, format_labels(fl_json_path(o, "spec.selector")));
}

static const char *pvc_mode_abbrev(const char *m)
{
    if (!strcmp(m, "ReadWriteOnce"))
        return "RWO";
    if (!strcmp(m, "ReadOnlyMany"))
        return "ROX";
    if (!strcmp(m, "ReadWriteMany"))
        return "RWX";
    if (!strcmp(m, "ReadWriteOncePod"))
        return "RWOP";
    return NULL;
}

static void row_pvc(const fl_kind *k, const json_t *o, json_t *cells)
{
    const char *volume = fl_row_str_or(o, "spec.volumeName", "");
    fl_row_str(cells, fl_json_path_str(o, "metadata.deletionTimestamp")
                        ? "Terminating"
                        : fl_row_str_or(o, "status.phase", ""));
    fl_row_str(cells, volume);
    if (*volume) {
        const json_t *cap = fl_json_path(o, "status.capacity.storage");
        if (json_is_string(cap))
            fl_row_str(cells, json_string_value(cap));
        else if (json_is_integer(cap))
            fl_row_take(cells, fl_asprintf("%lld", (long long)json_integer_value(cap)));
        else
            fl_row_str(cells, "");
        /* upstream prints the modes in this fixed order */
        static const char *order[] = {"ReadWriteOnce", "ReadOnlyMany", "ReadWriteMany", "ReadWriteOncePod"};
        fl_strbuf b = FL_STRBUF_INIT;
        for (size_t x = 0; x < 4; x++) {
            size_t i;
            json_t *m;
            json_array_foreach(fl_json_path(o, "status.accessModes"), i, m) {
                if (json_is_string(m) && !strcmp(json_string_value(m), order[x])) {
                    fl_row_join(&b, ",", pvc_mode_abbrev(order[x]));
                    break;
                }
            }
        }
        fl_row_take(cells, fl_row_joined(&b, ""));
    } else {
        fl_row_str(cells, "");
        fl_row_str(cells, "");
    }
    const char *sc = fl_json_path_str(o, "spec.storageClassName");
    if (!sc) /* the beta annotation still wins upstream when the field is unset */
        sc = json_string_value(json_object_get(fl_json_path(o, "metadata.annotations"),
                                               "volume.beta.kubernetes.io/storage-class"));
    fl_row_str(cells, sc ? sc : "");
    fl_row_str(cells, fl_row_str_or(o, "spec.volumeAttributesClassName", "<unset>"));
    fl_row_str(cells, fl_row_str_or(o, "spec.volumeMode", "<unset>"));
}

/* upstream printPod: READY, STATUS, RESTARTS (+ IP, NODE wide). */
static void row_pod(const fl_kind *k, const json_t *o, json_t *cells)
{
    const json_t *spec = json_object_get(o, "spec"), *status = json_object_get(o, "status");
    const json_t *inits = json_object_get(spec, "initContainers");
    const json_t *conds = json_object_get(status, "conditions");
    long long restarts = 0, sidecar_restarts = 0, last_restart = -1, sidecar_last_restart = -1;
    size_t total = json_array_size(json_object_get(spec, "containers")), ready = 0, i;
    json_t *c;
    char buf[96];
    char *reason = fl_strdup(fl_row_str_or(status, "phase", ""));
    if (fl_json_path_str(status, "reason") && *fl_json_path_str(status, "reason")) {
        free(reason);
        reason = fl_strdup(fl_json_path_str(status, "reason"));
    }
    json_array_foreach(conds, i, c) {
        const char *t = fl_json_path_str(c, "type"), *r = fl_json_path_str(c, "reason");
        if (t && r && !strcmp(t, "PodScheduled") && !strcmp(r, "SchedulingGated")) {
            free(reason);
            reason = fl_strdup("SchedulingGated");
        }
    }
    /* restartable init containers (sidecars) count as containers */
    json_array_foreach(inits, i, c) {
        const char *rp = fl_json_path_str(c, "restartPolicy");
        if (rp && !strcmp(rp, "Always"))
            total++;
    }
    bool initializing = false;
    const json_t *istat = json_object_get(status, "initContainerStatuses");
    json_array_foreach(istat, i, c) {
        const char *name = fl_row_str_or(c, "name", "");
        bool sidecar = false;
        size_t j;
        json_t *ic;
        json_array_foreach(inits, j, ic) {
            const char *rp = fl_json_path_str(ic, "restartPolicy");
            if (!strcmp(fl_row_str_or(ic, "name", ""), name) && rp && !strcmp(rp, "Always"))
                sidecar = true;
        }
        long long rc = fl_json_path_int(c, "restartCount", 0);
        long long fin = parse_time(fl_json_path_str(c, "lastState.terminated.finishedAt"));
        restarts += rc;
        if (fin > last_restart)
            last_restart = fin;
        if (sidecar) {
            sidecar_restarts += rc;
            if (fin > sidecar_last_restart)
                sidecar_last_restart = fin;
        }
        const json_t *term = fl_json_path(c, "state.terminated");
        const json_t *wait = fl_json_path(c, "state.waiting");
        const json_t *started = json_object_get(c, "started");
        if (term && fl_json_path_int(term, "exitCode", 0) == 0)
            continue;
        if (sidecar && json_is_true(started)) {
            if (json_is_true(json_object_get(c, "ready")))
                ready++;
            continue;
        }
        free(reason);
        if (term) {
            const char *r = fl_json_path_str(term, "reason");
            if (r && *r)
                reason = fl_asprintf("Init:%s", r);
            else if (fl_json_path_int(term, "signal", 0))
                reason = fl_asprintf("Init:Signal:%lld", (long long)fl_json_path_int(term, "signal", 0));
            else
                reason = fl_asprintf("Init:ExitCode:%lld", (long long)fl_json_path_int(term, "exitCode", 0));
        } else if (wait && fl_json_path_str(wait, "reason") && *fl_json_path_str(wait, "reason") &&
                   strcmp(fl_json_path_str(wait, "reason"), "PodInitializing")) {
            reason = fl_asprintf("Init:%s", fl_json_path_str(wait, "reason"));
        } else {
            reason = fl_asprintf("Init:%zu/%zu", i, json_array_size(inits));
        }
        initializing = true;
        break;
    }
    if (!initializing || condition_true(conds, "Initialized")) {
        restarts = sidecar_restarts;
        last_restart = sidecar_last_restart;
        bool running = false;
        const json_t *cstat = json_object_get(status, "containerStatuses");
        for (size_t n = json_array_size(cstat); n-- > 0;) {
            c = json_array_get(cstat, n);
            restarts += fl_json_path_int(c, "restartCount", 0);
            long long fin = parse_time(fl_json_path_str(c, "lastState.terminated.finishedAt"));
            if (fin > last_restart)
                last_restart = fin;
            const char *wr = fl_json_path_str(c, "state.waiting.reason"),
                       *tr = fl_json_path_str(c, "state.terminated.reason");
            if (wr && *wr) {
                free(reason);
                reason = fl_strdup(wr);
            } else if (tr && *tr) {
                free(reason);
                reason = fl_strdup(tr);
            } else if (fl_json_path(c, "state.terminated")) {
                free(reason);
                if (fl_json_path_int(c, "state.terminated.signal", 0))
                    reason = fl_asprintf("Signal:%lld", (long long)fl_json_path_int(c, "state.terminated.signal", 0));
                else
                    reason =
                        fl_asprintf("ExitCode:%lld", (long long)fl_json_path_int(c, "state.terminated.exitCode", 0));
            } else if (json_is_true(json_object_get(c, "ready")) && fl_json_path(c, "state.running")) {
                running = true;
                ready++;
            }
        }
        if (!strcmp(reason, "Completed") && running) {
            free(reason);
            reason = fl_strdup(condition_true(conds, "Ready") ? "Running" : "NotReady");
        }
    }
    if (json_is_string(fl_json_path(o, "metadata.deletionTimestamp"))) {
        const char *sr = fl_json_path_str(status, "reason");
        const char *phase = fl_row_str_or(status, "phase", "");
        if (sr && !strcmp(sr, "NodeLost")) {
            free(reason);
            reason = fl_strdup("Unknown");
        } else if (strcmp(phase, "Succeeded") && strcmp(phase, "Failed")) {
            free(reason);
            reason = fl_strdup("Terminating");
        }
    }
    snprintf(buf, sizeof(buf), "%zu/%zu", ready, total);
    fl_row_str(cells, buf);
    fl_row_take(cells, reason);
    if (restarts && last_restart >= 0) {
        char *ago = human_duration((long long)time(NULL) - last_restart);
        fl_row_take(cells, fl_asprintf("%lld (%s ago)", restarts, ago));
        free(ago);
    } else {
        fl_row_take(cells, fl_asprintf("%lld", restarts));
    }
    fl_row_str(cells, fl_row_str_or(status, "podIP", "<none>"));
    fl_row_str(cells, fl_row_str_or(spec, "nodeName", "<none>"));
}

static void row_event(const fl_kind *k, const json_t *o, json_t *cells)
{
    const char *first_ts = fl_json_path_str(o, "firstTimestamp");
    if (!first_ts || !*first_ts)
        first_ts = fl_json_path_str(o, "eventTime");
    const char *last_ts = fl_json_path_str(o, "lastTimestamp");
    if (!last_ts || !*last_ts)
        last_ts = first_ts;
    if (json_is_object(json_object_get(o, "series"))) {
        last_ts = fl_json_path_str(o, "series.lastObservedTime");
        first_ts = fl_json_path_str(o, "eventTime");
    }
    char *last = since(last_ts);
    json_int_t count = fl_json_path_int(o, "count", 0);
    if (json_is_object(json_object_get(o, "series")))
        count = fl_json_path_int(o, "series.count", 0);
    if (count > 1) {
        char *first = since(first_ts);
        fl_row_take(cells, fl_asprintf("%s (x%lld over %s)", last, (long long)count, first));
        free(first);
        free(last);
    } else {
        fl_row_take(cells, last);
    }
    fl_row_str(cells, fl_row_str_or(o, "type", ""));
    fl_row_str(cells, fl_row_str_or(o, "reason", ""));
    char *kind = fl_strdup(fl_row_str_or(o, "involvedObject.kind", ""));
    for (char *p = kind; *p; p++)
        *p = (char)tolower((unsigned char)*p);
    const char *name = fl_row_str_or(o, "involvedObject.name", "");
    fl_row_take(cells, *name ? fl_asprintf("%s/%s", kind, name) : fl_strdup(kind));
    free(kind);
    /* upstream trims surrounding whitespace from the message */
    const char *msg = fl_row_str_or(o, "message", "");
    while (isspace((unsigned char)*msg))
        msg++;
    size_t n = strlen(msg);
    while (n && isspace((unsigned char)msg[n - 1]))
        n--;
    fl_row_take(cells, fl_strndup(msg, n));
}

static void row_node(const fl_kind *k, const json_t *o, json_t *cells)
{
    const json_t *ready = find_condition(fl_json_path(o, "status.conditions"), "Ready");
    const char *st = fl_json_path_str(ready, "status");
    const char *status = !ready ? "Unknown" : (st && !strcmp(st, "True")) ? "Ready" : "NotReady";
    if (json_is_true(fl_json_path(o, "spec.unschedulable")))
        fl_row_take(cells, fl_asprintf("%s,SchedulingDisabled", status));
    else
        fl_row_str(cells, status);
    /* roles from node-role.kubernetes.io/<role> and kubernetes.io/role labels */
    const json_t *labels = fl_json_path(o, "metadata.labels");
    size_t n = json_is_object(labels) ? json_object_size(labels) : 0, r = 0;
    char **roles = fl_calloc(n ? n : 1, sizeof(*roles));
    const char *key;
    json_t *v;
    if (n)
        json_object_foreach((json_t *)labels, key, v) {
            if (!strncmp(key, "node-role.kubernetes.io/", 24) && key[24])
                roles[r++] = fl_strdup(key + 24);
            else if (!strcmp(key, "kubernetes.io/role") && json_is_string(v) && *json_string_value(v))
                roles[r++] = fl_strdup(json_string_value(v));
        }
    qsort(roles, r, sizeof(*roles), cmp_str);
    fl_strbuf b = FL_STRBUF_INIT;
    for (size_t i = 0; i < r; i++) {
        if (!i || strcmp(roles[i], roles[i - 1]))
            fl_row_join(&b, ",", roles[i]);
    }
    for (size_t i = 0; i < r; i++)
        free(roles[i]);
    free(roles);
    fl_row_take(cells, fl_row_joined(&b, "<none>"));
    fl_row_str(cells, fl_row_str_or(o, "status.nodeInfo.kubeletVersion", ""));
}

static void row_deployment(const fl_kind *k, const json_t *o, json_t *cells)
{
    fl_row_take(cells, fl_asprintf("%lld/%lld", (long long)fl_json_path_int(o, "status.readyReplicas", 0),
                                 (long long)fl_json_path_int(o, "spec.replicas", 1)));
    fl_row_int(cells, fl_json_path_int(o, "status.updatedReplicas", 0));
    fl_row_int(cells, fl_json_path_int(o, "status.availableReplicas", 0));
    cells_containers_images(cells, fl_json_path(o, "spec.template.spec"));
    fl_row_take(cells, format_selector(fl_json_path(o, "spec.selector")));
}

static void row_statefulset(const fl_kind *k, const json_t *o, json_t *cells)
{
    fl_row_take(cells, fl_asprintf("%lld/%lld", (long long)fl_json_path_int(o, "status.readyReplicas", 0),
                                 (long long)fl_json_path_int(o, "spec.replicas", 1)));
    cells_containers_images(cells, fl_json_path(o, "spec.template.spec"));
}

static void row_replicaset(const fl_kind *k, const json_t *o, json_t *cells)
{
    fl_row_int(cells, fl_json_path_int(o, "spec.replicas", 1));
    fl_row_int(cells, fl_json_path_int(o, "status.replicas", 0));
    fl_row_int(cells, fl_json_path_int(o, "status.readyReplicas", 0));
    cells_containers_images(cells, fl_json_path(o, "spec.template.spec"));
    fl_row_take(cells, format_selector(fl_json_path(o, "spec.selector")));
}

/* upstream's printControllerRevision: the controller as "kind.group/name" (formatResourceName
 * of its controller reference), then the number. */
static void row_controller_revision(const fl_kind *k, const json_t *o, json_t *cells)
{
    const json_t *ref = NULL, *r;
    size_t i;
    json_array_foreach(fl_json_path(o, "metadata.ownerReferences"), i, r) if (json_is_true(json_object_get(r, "controller")))
    {
        ref = r;
        break;
    }
    const char *kind = fl_json_path_str(ref, "kind"), *name = fl_json_path_str(ref, "name");
    const char *av = fl_json_path_str(ref, "apiVersion");
    if (!ref || !name) {
        fl_row_str(cells, "<none>");
    } else {
        const char *slash = av ? strchr(av, '/') : NULL;
        char *lower = fl_strdup(kind ? kind : "");
        for (char *c = lower; *c; c++)
            *c = (char)tolower((unsigned char)*c);
        if (!*lower)
            fl_row_take(cells, fl_strdup(name));
        else if (slash)
            fl_row_take(cells, fl_asprintf("%s.%.*s/%s", lower, (int)(slash - av), av, name));
        else
            fl_row_take(cells, fl_asprintf("%s/%s", lower, name));
        free(lower);
    }
    fl_row_int(cells, fl_json_path_int(o, "revision", 0));
}

static void row_daemonset(const fl_kind *k, const json_t *o, json_t *cells)
{
    fl_row_int(cells, fl_json_path_int(o, "status.desiredNumberScheduled", 0));
    fl_row_int(cells, fl_json_path_int(o, "status.currentNumberScheduled", 0));
    fl_row_int(cells, fl_json_path_int(o, "status.numberReady", 0));
    fl_row_int(cells, fl_json_path_int(o, "status.updatedNumberScheduled", 0));
    fl_row_int(cells, fl_json_path_int(o, "status.numberAvailable", 0));
    fl_row_take(cells, format_labels(fl_json_path(o, "spec.template.spec.nodeSelector")));
    cells_containers_images(cells, fl_json_path(o, "spec.template.spec"));
    fl_row_take(cells, format_selector(fl_json_path(o, "spec.selector")));
}

static void row_job(const fl_kind *k, const json_t *o, json_t *cells)
{
    const json_t *conds = fl_json_path(o, "status.conditions");
    const char *status = "Running";
    if (condition_true(conds, "Complete"))
        status = "Complete";
    else if (condition_true(conds, "Failed"))
        status = "Failed";
    else if (json_is_string(fl_json_path(o, "metadata.deletionTimestamp")))
        status = "Terminating";
    else if (condition_true(conds, "Suspended"))
        status = "Suspended";
    else if (condition_true(conds, "FailureTarget"))
        status = "FailureTarget";
    else if (condition_true(conds, "SuccessCriteriaMet"))
        status = "SuccessCriteriaMet";
    fl_row_str(cells, status);

    long long succeeded = fl_json_path_int(o, "status.succeeded", 0);
    const json_t *completions = fl_json_path(o, "spec.completions"), *par = fl_json_path(o, "spec.parallelism");
    if (json_is_integer(completions))
        fl_row_take(cells, fl_asprintf("%lld/%lld", succeeded, (long long)json_integer_value(completions)));
    else if (json_is_integer(par) && json_integer_value(par) > 1)
        fl_row_take(cells, fl_asprintf("%lld/1 of %lld", succeeded, (long long)json_integer_value(par)));
    else
        fl_row_take(cells, fl_asprintf("%lld/1", succeeded));

    long long start = parse_time(fl_json_path_str(o, "status.startTime"));
    long long end = parse_time(fl_json_path_str(o, "status.completionTime"));
    if (start < 0)
        fl_row_str(cells, "");
    else
        fl_row_take(cells, human_duration((end >= 0 ? end : (long long)time(NULL)) - start));
    cells_containers_images(cells, fl_json_path(o, "spec.template.spec"));
    fl_row_take(cells, format_selector(fl_json_path(o, "spec.selector")));
}

static void row_cronjob(const fl_kind *k, const json_t *o, json_t *cells)
{
    fl_row_str(cells, fl_row_str_or(o, "spec.schedule", ""));
    fl_row_str(cells, fl_row_str_or(o, "spec.timeZone", "<none>"));
    json_array_append_new(cells, json_boolean(json_is_true(fl_json_path(o, "spec.suspend"))));
    fl_row_int(cells, (json_int_t)json_array_size(fl_json_path(o, "status.active")));
    const char *last = fl_json_path_str(o, "status.lastScheduleTime");
    fl_row_take(cells, last ? since(last) : fl_strdup("<none>"));
    cells_containers_images(cells, fl_json_path(o, "spec.jobTemplate.spec.template.spec"));
    fl_row_take(cells, format_selector(fl_json_path(o, "spec.jobTemplate.spec.selector")));
}

static void row_lease(const fl_kind *k, const json_t *o, json_t *cells)
{
    const char *h = fl_json_path_str(o, "spec.holderIdentity");
    fl_row_str(cells, h ? h : "<unknown>");
}

/* Karmada's aggregated API server printer for Cluster. */
static void row_cluster(const fl_kind *k, const json_t *o, json_t *cells)
{
    fl_row_str(cells, fl_row_str_or(o, "status.kubernetesVersion", ""));
    fl_row_str(cells, fl_row_str_or(o, "spec.syncMode", ""));
    const char *ready = fl_json_path_str(find_condition(fl_json_path(o, "status.conditions"), "Ready"), "status");
    fl_row_str(cells, ready ? ready : "Unknown");
    fl_strbuf b = FL_STRBUF_INIT;
    size_t i;
    json_t *z;
    json_array_foreach(fl_json_path(o, "spec.zones"), i, z) if (json_is_string(z)) fl_row_join(&b, ",", json_string_value(z));
    fl_row_take(cells, fl_row_joined(&b, "<none>"));
    fl_row_str(cells, fl_row_str_or(o, "spec.region", "<none>"));
    fl_row_str(cells, fl_row_str_or(o, "spec.provider", "<none>"));
    fl_row_str(cells, fl_row_str_or(o, "spec.apiEndpoint", ""));
    fl_row_str(cells, fl_row_str_or(o, "spec.proxyURL", "<none>"));
}

/* ------------------------------------------------------------------ */
/* Columns (after NAME; AGE is appended by the renderer)               */
/* ------------------------------------------------------------------ */

#define COL(n, t, d) { .name = (n), .type = (t), .format = "", .description = (d) }
#define COLW(n, t, d) { .name = (n), .type = (t), .format = "", .description = (d), .priority = 1 }
#define COLJ(n, t, jp, d) { .name = (n), .type = (t), .format = "", .description = (d), .jsonpath = (jp) }
#define CEND { .name = NULL }

#define D_CONTAINERS "Names of each container in the template."
#define D_IMAGES "Images referenced by each container in the template."
#define D_SELECTOR "A label query over pods that should match the replica count."

static const fl_column namespace_columns[] = {
    COL("Status", "string", "The status of the namespace"), CEND,
};
static const fl_column configmap_columns[] = {
    COL("Data", "string", "Data contains the configuration data."), CEND,
};
static const fl_column secret_columns[] = {
    COL("Type", "string", "Used to facilitate programmatic handling of secret data."),
    COL("Data", "string", "Data contains the secret data."), CEND,
};
static const fl_column serviceaccount_columns[] = {
    COL("Secrets", "string", "Secrets is a list of the secrets in the same namespace that pods running using this ServiceAccount are allowed to use."),
    CEND,
};
static const fl_column service_columns[] = {
    COL("Type", "string", "type determines how the Service is exposed."),
    COL("Cluster-IP", "string", "clusterIP is the IP address of the service."),
    COL("External-IP", "string", "externalIPs is a list of IP addresses for which nodes in the cluster will also accept traffic for this service."),
    COL("Port(s)", "string", "The list of ports that are exposed by this service."),
    COLW("Selector", "string", "Route service traffic to pods with label keys and values matching this selector."),
    CEND,
};
static const fl_column pvc_columns[] = {
    COL("Status", "string", "The phase of the claim."),
    COL("Volume", "string", "The binding reference to the PersistentVolume backing this claim."),
    COL("Capacity", "string", "The actual resources of the underlying volume."),
    COL("Access Modes", "string", "The actual access modes the volume backing the PVC has."),
    COL("StorageClass", "string", "The name of the StorageClass required by the claim."),
    COL("VolumeAttributesClass", "string", "The name of the VolumeAttributesClass used by the claim."),
    COLW("VolumeMode", "string", "What type of volume is required by the claim."),
    CEND,
};
static const fl_column pod_columns[] = {
    COL("Ready", "string", "The aggregate readiness state of this pod for accepting traffic."),
    COL("Status", "string", "The aggregate status of the containers in this pod."),
    COL("Restarts", "string", "The number of times the containers in this pod have been restarted and when the last container in this pod has restarted."),
    COLW("IP", "string", "podIP address allocated to the pod."),
    COLW("Node", "string", "NodeName is a request to schedule this pod onto a specific node."),
    CEND,
};
static const fl_column event_columns[] = {
    COL("Last Seen", "string", "The time at which the most recent occurrence of this event was recorded."),
    COL("Type", "string", "Type of this event (Normal, Warning), new types could be added in the future"),
    COL("Reason", "string", "This should be a short, machine understandable string that gives the reason for the transition into the object's current status."),
    COL("Object", "string", "The object that this event is about."),
    COL("Message", "string", "A human-readable description of the status of this operation."),
    CEND,
};
static const fl_column node_columns[] = {
    COL("Status", "string", "The status of the node"),
    COL("Roles", "string", "The roles of the node"),
    COL("Version", "string", "Kubelet Version reported by the node."),
    CEND,
};
static const fl_column deployment_columns[] = {
    COL("Ready", "string", "Number of the pod with ready state"),
    COL("Up-to-date", "integer", "Total number of non-terminating pods targeted by this deployment that have the desired template spec."),
    COL("Available", "integer", "Total number of available non-terminating pods (ready for at least minReadySeconds) targeted by this deployment."),
    COLW("Containers", "string", D_CONTAINERS),
    COLW("Images", "string", D_IMAGES),
    COLW("Selector", "string", "Label selector for pods."),
    CEND,
};
static const fl_column statefulset_columns[] = {
    COL("Ready", "string", "Number of the pod with ready state"),
    COLW("Containers", "string", D_CONTAINERS),
    COLW("Images", "string", D_IMAGES),
    CEND,
};
static const fl_column controller_revision_columns[] = {
    COL("Controller", "string", "Controller of the object"),
    COL("Revision", "string", "Revision indicates the revision of the state represented by Data."),
    CEND,
};
static const fl_column replicaset_columns[] = {
    COL("Desired", "integer", "Replicas is the number of desired pods."),
    COL("Current", "integer", "Replicas is the most recently observed number of non-terminating pods."),
    COL("Ready", "integer", "The number of non-terminating pods targeted by this ReplicaSet with a Ready Condition."),
    COLW("Containers", "string", D_CONTAINERS),
    COLW("Images", "string", D_IMAGES),
    COLW("Selector", "string", D_SELECTOR),
    CEND,
};
static const fl_column daemonset_columns[] = {
    COL("Desired", "integer", "The total number of nodes that should be running the daemon pod."),
    COL("Current", "integer", "The number of nodes that are running at least 1 daemon pod and are supposed to run the daemon pod."),
    COL("Ready", "integer", "numberReady is the number of nodes that should be running the daemon pod and have one or more of the daemon pod running with a Ready Condition."),
    COL("Up-to-date", "integer", "The total number of nodes that are running updated daemon pod"),
    COL("Available", "integer", "The number of nodes that should be running the daemon pod and have one or more of the daemon pod running and available."),
    COL("Node Selector", "string", "NodeSelector is a selector which must be true for the pod to fit on a node."),
    COLW("Containers", "string", D_CONTAINERS),
    COLW("Images", "string", D_IMAGES),
    COLW("Selector", "string", "A label query over pods that are managed by the daemon set."),
    CEND,
};
static const fl_column job_columns[] = {
    COL("Status", "string", "Status of the job."),
    COL("Completions", "string", "The completion status of the job"),
    COL("Duration", "string", "Time required to complete the job."),
    COLW("Containers", "string", D_CONTAINERS),
    COLW("Images", "string", D_IMAGES),
    COLW("Selector", "string", "A label query over pods that should match the pod count."),
    CEND,
};
static const fl_column cronjob_columns[] = {
    COL("Schedule", "string", "The schedule in Cron format, see https://en.wikipedia.org/wiki/Cron."),
    COL("Timezone", "string", "The time zone name for the given schedule."),
    COL("Suspend", "boolean", "This flag tells the controller to suspend subsequent executions."),
    COL("Active", "integer", "A list of pointers to currently running jobs."),
    COL("Last Schedule", "string", "Information when was the last time the job was successfully scheduled."),
    COLW("Containers", "string", D_CONTAINERS),
    COLW("Images", "string", D_IMAGES),
    COLW("Selector", "string", "A label query over pods that should match the pod count."),
    CEND,
};
static const fl_column lease_columns[] = {
    COL("Holder", "string", "holderIdentity contains the identity of the holder of a current lease."),
    CEND,
};
static const fl_column crd_columns[] = {
    COLJ("Created At", "date", ".metadata.creationTimestamp",
         "CreationTimestamp is a timestamp representing the server time when this object was created."),
    CEND,
};
static const fl_column cluster_columns[] = {
    COL("Version", "string", "KubernetesVersion represents version of the member cluster."),
    COL("Mode", "string", "SyncMode describes how a cluster sync resources from karmada control plane."),
    COL("Ready", "string", "The aggregate readiness state of this cluster for accepting workloads."),
    COLW("Zones", "string", "Zones represents the failure zones(also called availability zones) of the member cluster."),
    COLW("Region", "string", "Region represents the region of the member cluster locate in."),
    COLW("Provider", "string", "Provider represents the cloud provider name of the member cluster."),
    COLW("API-Endpoint", "string", "The API endpoint of the member cluster."),
    COLW("Proxy-URL", "string", "ProxyURL is the proxy URL for the cluster."),
    CEND,
};
/* Karmada CRDs' additionalPrinterColumns (AGE dropped: the renderer adds it). */
static const fl_column propagation_policy_columns[] = {
    COLJ("CONFLICT-RESOLUTION", "string", ".spec.conflictResolution", ""),
    COLJ("PRIORITY", "string", ".spec.priority", ""),
    CEND,
};
static const fl_column binding_columns[] = {
    COLJ("SCHEDULED", "string", ".status.conditions[?(@.type==\"Scheduled\")].status", ""),
    COLJ("FULLYAPPLIED", "string", ".status.conditions[?(@.type==\"FullyApplied\")].status", ""),
    CEND,
};
static const fl_column work_columns[] = {
    COLJ("WORKLOAD-KIND", "string", ".spec.workload.manifests[*].kind", ""),
    COLJ("APPLIED", "string", ".status.conditions[?(@.type==\"Applied\")].status", ""),
    CEND,
};
static const fl_column ric_columns[] = {
    COLJ("TARGET-API-VERSION", "string", ".spec.target.apiVersion", ""),
    COLJ("TARGET-KIND", "string", ".spec.target.kind", ""),
    CEND,
};
/* kpt's ResourceGroup CRD prints its Reconciling and Stalled conditions; State, Current and
 * Total are ours (status.summary: the listed resources by fleet-wide state, docs/status.md). */
static const fl_column resource_group_columns[] = {
    COLJ("Reconciling", "string", ".status.conditions[?(@.type==\"Reconciling\")].status", ""),
    COLJ("Stalled", "string", ".status.conditions[?(@.type==\"Stalled\")].status", ""),
    COLJ("State", "string", ".status.summary.state", "The worst fleet-wide state of the listed resources."),
    COLJ("Current", "integer", ".status.summary.current", "Listed resources Current on every cluster."),
    COLJ("Total", "integer", ".status.summary.total", "Listed resources."),
    CEND,
};
static const fl_column no_columns[] = { CEND };

/* ------------------------------------------------------------------ */
/* The table                                                           */
/* ------------------------------------------------------------------ */

#define NS true
#define CLUSTER false

fl_kind fl_kinds__builtin[] = {
    /* core/v1 */
    { .group = "", .version = "v1", .kind = "Namespace", .list_kind = "NamespaceList", .resource = "namespaces",
      .singular = "namespace", .namespaced = CLUSTER, .has_status = true, .short_names = {"ns"},
      .field_selectors = {"status.phase"}, .fields = fl_schema_core_v1_Namespace, .columns = namespace_columns,
      .row = row_namespace, .validate = fl_validate_namespace },
    { .group = "", .version = "v1", .kind = "ConfigMap", .list_kind = "ConfigMapList", .resource = "configmaps",
      .singular = "configmap", .namespaced = NS, .short_names = {"cm"}, .fields = fl_schema_core_v1_ConfigMap,
      .columns = configmap_columns, .row = row_configmap,
      .validate = fl_validate_configmap },
    { .group = "", .version = "v1", .kind = "Secret", .list_kind = "SecretList", .resource = "secrets",
      .singular = "secret", .namespaced = NS, .field_selectors = {"type"}, .fields = fl_schema_core_v1_Secret,
      .columns = secret_columns, .row = row_secret,
      .validate = fl_validate_secret },
    { .group = "", .version = "v1", .kind = "Service", .list_kind = "ServiceList", .resource = "services",
      .singular = "service", .namespaced = NS, .has_status = true, .short_names = {"svc"}, .categories = {"all"},
      .fields = fl_schema_core_v1_Service, .columns = service_columns, .row = row_service,
      .validate = fl_validate_service },
    { .group = "", .version = "v1", .kind = "ServiceAccount", .list_kind = "ServiceAccountList",
      .resource = "serviceaccounts", .singular = "serviceaccount", .namespaced = NS, .short_names = {"sa"},
      .fields = fl_schema_core_v1_ServiceAccount, .columns = serviceaccount_columns, .row = row_serviceaccount },
    { .group = "", .version = "v1", .kind = "PersistentVolumeClaim", .list_kind = "PersistentVolumeClaimList",
      .resource = "persistentvolumeclaims", .singular = "persistentvolumeclaim", .namespaced = NS,
      .has_status = true, .short_names = {"pvc"}, .fields = fl_schema_core_v1_PersistentVolumeClaim, .columns = pvc_columns, .row = row_pvc },
    { .group = "", .version = "v1", .kind = "Pod", .list_kind = "PodList", .resource = "pods", .singular = "pod",
      .namespaced = NS, .has_status = true, .short_names = {"po"}, .categories = {"all"},
      .field_selectors = {"spec.nodeName", "spec.restartPolicy", "spec.schedulerName", "spec.serviceAccountName",
                          "status.phase", "status.podIP", "status.nominatedNodeName"},
      .fields = fl_schema_core_v1_Pod, .columns = pod_columns, .row = row_pod,
      .validate = fl_validate_pod },
    /* Event supports more selectors upstream (involvedObject.apiVersion/resourceVersion/fieldPath,
     * source) than field_selectors[8] can hold with its NULL terminator; these are the ones
     * kubectl describe/events use. */
    { .group = "", .version = "v1", .kind = "Event", .list_kind = "EventList", .resource = "events",
      .singular = "event", .namespaced = NS, .short_names = {"ev"},
      .field_selectors = {"involvedObject.kind", "involvedObject.namespace", "involvedObject.name",
                          "involvedObject.uid", "reason", "reportingComponent", "type"},
      .fields = fl_schema_core_v1_Event, .columns = event_columns, .row = row_event },
    { .group = "", .version = "v1", .kind = "Node", .list_kind = "NodeList", .resource = "nodes", .singular = "node",
      .namespaced = CLUSTER, .has_status = true, .short_names = {"no"}, .field_selectors = {"spec.unschedulable"},
      .fields = fl_schema_core_v1_Node, .columns = node_columns, .row = row_node },
    /* apps/v1 */
    { .group = "apps", .version = "v1", .kind = "Deployment", .list_kind = "DeploymentList",
      .resource = "deployments", .singular = "deployment", .namespaced = NS, .has_status = true, .has_scale = true,
      .short_names = {"deploy"}, .categories = {"all"}, .fields = fl_schema_apps_v1_Deployment,
      .columns = deployment_columns, .row = row_deployment,
      .validate = fl_validate_deployment },
    { .group = "apps", .version = "v1", .kind = "StatefulSet", .list_kind = "StatefulSetList",
      .resource = "statefulsets", .singular = "statefulset", .namespaced = NS, .has_status = true,
      .has_scale = true, .short_names = {"sts"}, .categories = {"all"}, .fields = fl_schema_apps_v1_StatefulSet,
      .columns = statefulset_columns, .row = row_statefulset,
      .validate = fl_validate_statefulset },
    { .group = "apps", .version = "v1", .kind = "DaemonSet", .list_kind = "DaemonSetList", .resource = "daemonsets",
      .singular = "daemonset", .namespaced = NS, .has_status = true, .short_names = {"ds"}, .categories = {"all"},
      .fields = fl_schema_apps_v1_DaemonSet, .columns = daemonset_columns, .row = row_daemonset,
      .validate = fl_validate_daemonset },
    { .group = "apps", .version = "v1", .kind = "ReplicaSet", .list_kind = "ReplicaSetList",
      .resource = "replicasets", .singular = "replicaset", .namespaced = NS, .has_status = true, .has_scale = true,
      .short_names = {"rs"}, .categories = {"all"}, .field_selectors = {"status.replicas"},
      .fields = fl_schema_apps_v1_ReplicaSet, .columns = replicaset_columns, .row = row_replicaset,
      .validate = fl_validate_replicaset },
    { .group = "apps", .version = "v1", .kind = "ControllerRevision", .list_kind = "ControllerRevisionList",
      .resource = "controllerrevisions", .singular = "controllerrevision", .namespaced = NS,
      .fields = fl_schema_apps_v1_ControllerRevision, .columns = controller_revision_columns,
      .row = row_controller_revision, .validate = fl_validate_controller_revision },
    /* batch/v1 */
    { .group = "batch", .version = "v1", .kind = "Job", .list_kind = "JobList", .resource = "jobs", .singular = "job",
      .namespaced = NS, .has_status = true, .categories = {"all"}, .field_selectors = {"status.successful"},
      .fields = fl_schema_batch_v1_Job, .columns = job_columns, .row = row_job,
      .validate = fl_validate_job },
    { .group = "batch", .version = "v1", .kind = "CronJob", .list_kind = "CronJobList", .resource = "cronjobs",
      .singular = "cronjob", .namespaced = NS, .has_status = true, .short_names = {"cj"}, .categories = {"all"},
      .fields = fl_schema_batch_v1_CronJob, .columns = cronjob_columns, .row = row_cronjob,
      .validate = fl_validate_cronjob },
    /* coordination.k8s.io/v1 */
    { .group = "coordination.k8s.io", .version = "v1", .kind = "Lease", .list_kind = "LeaseList",
      .resource = "leases", .singular = "lease", .namespaced = NS, .fields = fl_schema_coordination_v1_Lease,
      .columns = lease_columns, .row = row_lease },
    /* apiextensions.k8s.io/v1 */
    { .group = "apiextensions.k8s.io", .version = "v1", .kind = "CustomResourceDefinition",
      .list_kind = "CustomResourceDefinitionList", .resource = "customresourcedefinitions",
      .singular = "customresourcedefinition", .namespaced = CLUSTER, .has_status = true,
      .short_names = {"crd", "crds"}, .categories = {"api-extensions"}, .fields = fl_schema_apiextensions_v1_CustomResourceDefinition,
      .columns = crd_columns, .validate = fl_validate_crd },
    /* cluster.karmada.io/v1alpha1 (Karmada's aggregated API server) */
    { .group = "cluster.karmada.io", .version = "v1alpha1", .kind = "Cluster", .list_kind = "ClusterList",
      .resource = "clusters", .singular = "cluster", .namespaced = CLUSTER, .has_status = true,
      .fields = fl_schema_karmada_cluster_v1alpha1_Cluster, .columns = cluster_columns, .row = row_cluster,
      .validate = fl_validate_cluster },
    /* policy.karmada.io/v1alpha1 */
    { .group = "policy.karmada.io", .version = "v1alpha1", .kind = "PropagationPolicy",
      .list_kind = "PropagationPolicyList", .resource = "propagationpolicies", .singular = "propagationpolicy",
      .namespaced = NS, .short_names = {"pp"}, .categories = {"karmada-io"}, .fields = fl_schema_karmada_policy_v1alpha1_PropagationPolicy,
      .columns = propagation_policy_columns, .validate = fl_validate_propagation_policy },
    { .group = "policy.karmada.io", .version = "v1alpha1", .kind = "ClusterPropagationPolicy",
      .list_kind = "ClusterPropagationPolicyList", .resource = "clusterpropagationpolicies",
      .singular = "clusterpropagationpolicy", .namespaced = CLUSTER, .short_names = {"cpp"},
      .categories = {"karmada-io"}, .fields = fl_schema_karmada_policy_v1alpha1_ClusterPropagationPolicy, .columns = propagation_policy_columns,
      .validate = fl_validate_propagation_policy },
    { .group = "policy.karmada.io", .version = "v1alpha1", .kind = "OverridePolicy", .list_kind = "OverridePolicyList",
      .resource = "overridepolicies", .singular = "overridepolicy", .namespaced = NS, .short_names = {"op"},
      .categories = {"karmada-io"}, .fields = fl_schema_karmada_policy_v1alpha1_OverridePolicy, .columns = no_columns,
      .validate = fl_validate_override_policy },
    { .group = "policy.karmada.io", .version = "v1alpha1", .kind = "ClusterOverridePolicy",
      .list_kind = "ClusterOverridePolicyList", .resource = "clusteroverridepolicies",
      .singular = "clusteroverridepolicy", .namespaced = CLUSTER, .short_names = {"cop"},
      .categories = {"karmada-io"}, .fields = fl_schema_karmada_policy_v1alpha1_ClusterOverridePolicy, .columns = no_columns,
      .validate = fl_validate_override_policy },
    /* Karmada's CRD declares no short name, category or printer columns for this one */
    { .group = "policy.karmada.io", .version = "v1alpha1", .kind = "ClusterTaintPolicy",
      .list_kind = "ClusterTaintPolicyList", .resource = "clustertaintpolicies", .singular = "clustertaintpolicy",
      .namespaced = CLUSTER, .fields = fl_schema_karmada_policy_v1alpha1_ClusterTaintPolicy, .columns = no_columns,
      .validate = fl_validate_cluster_taint_policy },
    /* work.karmada.io */
    { .group = "work.karmada.io", .version = "v1alpha1", .kind = "Work", .list_kind = "WorkList", .resource = "works",
      .singular = "work", .namespaced = NS, .has_status = true, .short_names = {"wk"},
      .categories = {"karmada-io"}, .field_selectors = {"status.liveState"}, .fields = fl_schema_karmada_work_v1alpha1_Work, .columns = work_columns, .validate = fl_validate_work },
    { .group = "work.karmada.io", .version = "v1alpha2", .kind = "ResourceBinding", .list_kind = "ResourceBindingList",
      .resource = "resourcebindings", .singular = "resourcebinding", .namespaced = NS, .has_status = true,
      .short_names = {"rb"}, .categories = {"karmada-io"}, .fields = fl_schema_karmada_work_v1alpha2_ResourceBinding, .columns = binding_columns,
      .validate = fl_validate_resource_binding },
    { .group = "work.karmada.io", .version = "v1alpha2", .kind = "ClusterResourceBinding",
      .list_kind = "ClusterResourceBindingList", .resource = "clusterresourcebindings",
      .singular = "clusterresourcebinding", .namespaced = CLUSTER, .has_status = true, .short_names = {"crb"},
      .categories = {"karmada-io"}, .fields = fl_schema_karmada_work_v1alpha2_ClusterResourceBinding, .columns = binding_columns,
      .validate = fl_validate_resource_binding },
    /* config.karmada.io/v1alpha1 */
    { .group = "config.karmada.io", .version = "v1alpha1", .kind = "ResourceInterpreterCustomization",
      .list_kind = "ResourceInterpreterCustomizationList", .resource = "resourceinterpretercustomizations",
      .singular = "resourceinterpretercustomization", .namespaced = CLUSTER, .short_names = {"ric"},
      .categories = {"karmada-io"}, .fields = fl_schema_karmada_config_v1alpha1_ResourceInterpreterCustomization, .columns = ric_columns,
      .validate = fl_validate_interpreter_customization },
    { .group = "config.karmada.io", .version = "v1alpha1", .kind = "ResourceInterpreterWebhookConfiguration",
      .list_kind = "ResourceInterpreterWebhookConfigurationList",
      .resource = "resourceinterpreterwebhookconfigurations",
      .singular = "resourceinterpreterwebhookconfiguration", .namespaced = CLUSTER, .categories = {"karmada-io"},
      .fields = fl_schema_karmada_config_v1alpha1_ResourceInterpreterWebhookConfiguration, .columns = no_columns },
    /* kpt.dev/v1alpha1: kpt's inventory kind, which kpt installs as a CRD (no short name or
     * category there); its status here is the listed resources' live fleet state */
    { .group = "kpt.dev", .version = "v1alpha1", .kind = "ResourceGroup", .list_kind = "ResourceGroupList",
      .resource = "resourcegroups", .singular = "resourcegroup", .namespaced = NS, .has_status = true,
      .fields = fl_schema_kpt_v1alpha1_ResourceGroup, .columns = resource_group_columns,
      .validate = fl_validate_resource_group },
};

const size_t fl_kinds__builtin_count = sizeof(fl_kinds__builtin) / sizeof(fl_kinds__builtin[0]);
