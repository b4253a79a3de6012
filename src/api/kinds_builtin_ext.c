/* kinds_builtin_ext.c - the built-in Kubernetes 1.32 kinds that charts carry besides
 * workloads: RBAC, networking, autoscaling, policy, scheduling, storage, discovery,
 * admission webhook configurations and the remaining core kinds (issue 41).
 *
 * A second static table of the same shape as kinds_builtin.c's (kinds.c serves both):
 * discovery names, scope, subresources and Table columns as kube-apiserver 1.32 serves
 * them, field tables generated into kinds_schema.c. These kinds are stored, served and
 * propagated like any other; nothing in Flotilla acts on them yet. In particular Roles
 * and bindings do not authorize anything (the API server's own identities still decide),
 * webhook configurations are never called, and HorizontalPodAutoscalers scale nothing.
 *
 * autoscaling/v1 HorizontalPodAutoscaler is served from the v2 objects, converted both ways
 * (convert_hpa.c, api_convert.c), as kube-apiserver serves it: kubectl autoscale posts v1.
 *
 * Row functions reproduce upstream's printers (pkg/printers/internalversion) for the
 * columns after NAME, one cell per non-Age column, in order; kinds upstream has no
 * printer for (Role, ClusterRole, LimitRange) get its default "Created At" column. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/convert.h"
#include "api/kinds.h"
#include "api/kinds_rollout.h"
#include "api/kinds_rows.h"
#include "api/kinds_schema.h"
#include "api/validate.h"
#include "core/json_get.h"
#include "core/mem.h"
#include "core/strbuf.h"

/* Shared with kinds.c; not part of kinds.h on purpose. */
extern fl_kind fl_kinds__builtin_ext[];
extern const size_t fl_kinds__builtin_ext_count;

/* A Quantity or IntOrString as upstream's String() shows it: the string, or the number. */
static char *scalar_text(const json_t *v, const char *def)
{
    if (json_is_string(v))
        return fl_strdup(json_string_value(v));
    if (json_is_integer(v))
        return fl_asprintf("%lld", (long long)json_integer_value(v));
    if (json_is_real(v))
        return fl_asprintf("%g", json_real_value(v));
    return fl_strdup(def);
}

/* Bool at path, or def when absent (upstream's *bool defaults). */
static bool bool_or(const json_t *o, const char *path, bool def)
{
    const json_t *v = fl_json_path(o, path);
    return json_is_boolean(v) ? json_is_true(v) : def;
}

/* "a,b,c + N more..." over at most max items (upstream's listWithMoreString). */
static char *list_more(char **items, size_t n, size_t max, const char *sep, const char *empty)
{
    fl_strbuf b = FL_STRBUF_INIT;
    for (size_t i = 0; i < n && i < max; i++)
        fl_row_join(&b, sep, items[i]);
    if (n > max) {
        fl_strbuf_printf(&b, " + %zu more...", n - max);
    }
    return fl_row_joined(&b, empty);
}

static void free_items(char **items, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(items[i]);
    free(items);
}

/* ------------------------------------------------------------------ */
/* Row functions                                                       */
/* ------------------------------------------------------------------ */

/* RoleBinding, ClusterRoleBinding: ROLE (+ USERS, GROUPS, SERVICEACCOUNTS wide). */
static void row_binding(const fl_kind *k, const json_t *o, json_t *cells)
{
    fl_row_take(cells,
              fl_asprintf("%s/%s", fl_row_str_or(o, "roleRef.kind", ""), fl_row_str_or(o, "roleRef.name", "")));
    fl_strbuf users = FL_STRBUF_INIT, groups = FL_STRBUF_INIT, sas = FL_STRBUF_INIT;
    size_t i;
    json_t *s;
    json_array_foreach(json_object_get(o, "subjects"), i, s) {
        const char *kind = fl_row_str_or(s, "kind", ""), *name = fl_row_str_or(s, "name", "");
        if (!strcmp(kind, "User"))
            fl_row_join(&users, ", ", name);
        else if (!strcmp(kind, "Group"))
            fl_row_join(&groups, ", ", name);
        else if (!strcmp(kind, "ServiceAccount")) {
            char *sa = fl_asprintf("%s/%s", fl_row_str_or(s, "namespace", ""), name);
            fl_row_join(&sas, ", ", sa);
            free(sa);
        }
    }
    fl_row_take(cells, fl_row_joined(&users, ""));
    fl_row_take(cells, fl_row_joined(&groups, ""));
    fl_row_take(cells, fl_row_joined(&sas, ""));
}

/* Load-balancer ingress points: distinct IPs or hostnames, sorted, clipped to 16 bytes. */
static char *lb_status(const json_t *ingress)
{
    size_t n = json_array_size(ingress), m = 0, i;
    char **v = fl_calloc(n ? n : 1, sizeof(*v));
    json_t *e;
    json_array_foreach(ingress, i, e) {
        const char *ip = fl_json_path_str(e, "ip"), *host = fl_json_path_str(e, "hostname");
        const char *s = ip && *ip ? ip : host && *host ? host : NULL;
        bool dup = false;
        for (size_t j = 0; s && j < m; j++)
            dup = dup || !strcmp(v[j], s);
        if (s && !dup)
            v[m++] = fl_strdup(s);
    }
    for (size_t a = 1; a < m; a++) /* insertion sort: a handful of entries */
        for (size_t b = a; b > 0 && strcmp(v[b - 1], v[b]) > 0; b--) {
            char *t = v[b];
            v[b] = v[b - 1];
            v[b - 1] = t;
        }
    fl_strbuf b = FL_STRBUF_INIT;
    for (i = 0; i < m; i++)
        fl_row_join(&b, ",", v[i]);
    free_items(v, m);
    char *r = fl_row_joined(&b, "");
    if (strlen(r) > 16)
        strcpy(r + 13, "...");
    return r;
}

static void row_ingress(const fl_kind *k, const json_t *o, json_t *cells)
{
    fl_row_str(cells, fl_row_str_or(o, "spec.ingressClassName", "<none>"));
    /* upstream formatHosts: the first 3 non-empty hosts; "+ N more..." counts rules */
    const json_t *rules = fl_json_path(o, "spec.rules");
    fl_strbuf b = FL_STRBUF_INIT;
    size_t i, m = 0;
    bool more = false;
    json_t *r;
    json_array_foreach(rules, i, r) {
        const char *h = fl_json_path_str(r, "host");
        if (m == 3)
            more = true;
        if (!more && h && *h) {
            fl_row_join(&b, ",", h);
            m++;
        }
    }
    if (m && more)
        fl_strbuf_printf(&b, " + %zu more...", json_array_size(rules) - 3);
    fl_row_take(cells, fl_row_joined(&b, "*"));
    fl_row_take(cells, lb_status(fl_json_path(o, "status.loadBalancer.ingress")));
    fl_row_str(cells, json_array_size(fl_json_path(o, "spec.tls")) ? "80, 443" : "80");
}

static void row_ingressclass(const fl_kind *k, const json_t *o, json_t *cells)
{
    fl_row_str(cells, fl_row_str_or(o, "spec.controller", ""));
    const json_t *p = fl_json_path(o, "spec.parameters");
    if (!json_is_object(p)) {
        fl_row_str(cells, "<none>");
        return;
    }
    const char *group = fl_json_path_str(p, "apiGroup");
    if (group)
        fl_row_take(cells,
                  fl_asprintf("%s.%s/%s", fl_row_str_or(p, "kind", ""), group, fl_row_str_or(p, "name", "")));
    else
        fl_row_take(cells, fl_asprintf("%s/%s", fl_row_str_or(p, "kind", ""), fl_row_str_or(p, "name", "")));
}

static void row_networkpolicy(const fl_kind *k, const json_t *o, json_t *cells)
{
    fl_row_take(cells, fl_row_selector(fl_json_path(o, "spec.podSelector")));
}

/* One HPA metric as upstream's formatHPAMetrics shows it; st is the status entry or NULL. */
static char *hpa_metric(const json_t *spec, const json_t *st)
{
    const char *type = fl_row_str_or(spec, "type", "");
    const char *src = !strcmp(type, "External")            ? "external"
                      : !strcmp(type, "Pods")              ? "pods"
                      : !strcmp(type, "Object")            ? "object"
                      : !strcmp(type, "Resource")          ? "resource"
                      : !strcmp(type, "ContainerResource") ? "containerResource"
                                                           : NULL;
    if (!src)
        return fl_strdup("<unknown type>");
    const json_t *s = json_object_get(spec, src), *target = json_object_get(s, "target");
    const json_t *cur = json_object_get(json_object_get(st, src), "current");
    bool have_status = json_is_object(json_object_get(st, src));
    const json_t *tavg = json_object_get(target, "averageValue");
    char *t, *c, *out;
    bool resource = !strcmp(type, "Resource") || !strcmp(type, "ContainerResource");
    if (resource && !tavg) {
        const json_t *cu = json_object_get(cur, "averageUtilization");
        const json_t *tu = json_object_get(target, "averageUtilization");
        c = json_is_integer(cu) ? fl_asprintf("%lld%%", (long long)json_integer_value(cu)) : fl_strdup("<unknown>");
        t = json_is_integer(tu) ? fl_asprintf("%lld%%", (long long)json_integer_value(tu)) : fl_strdup("<auto>");
    } else if (!strcmp(type, "Pods") || tavg) {
        const json_t *ca = json_object_get(cur, "averageValue");
        c = have_status && ca ? scalar_text(ca, "0") : fl_strdup("<unknown>");
        t = scalar_text(tavg, "0");
    } else {
        c = have_status ? scalar_text(json_object_get(cur, "value"), "0") : fl_strdup("<unknown>");
        t = scalar_text(json_object_get(target, "value"), "0");
    }
    if (resource)
        out = fl_asprintf("%s: %s/%s", fl_row_str_or(s, "name", ""), c, t);
    else
        out = fl_asprintf("%s/%s%s", c, t, tavg && strcmp(type, "Pods") ? " (avg)" : "");
    free(c);
    free(t);
    return out;
}

static void row_hpa(const fl_kind *k, const json_t *o, json_t *cells)
{
    fl_row_take(cells, fl_asprintf("%s/%s", fl_row_str_or(o, "spec.scaleTargetRef.kind", ""),
                                 fl_row_str_or(o, "spec.scaleTargetRef.name", "")));
    const json_t *metrics = fl_json_path(o, "spec.metrics"), *cur = fl_json_path(o, "status.currentMetrics");
    size_t n = json_array_size(metrics), i;
    char **items = fl_calloc(n ? n : 1, sizeof(*items));
    json_t *m;
    json_array_foreach(metrics, i, m) items[i] = hpa_metric(m, json_array_get(cur, i));
    fl_row_take(cells, list_more(items, n, 2, ", ", "<none>"));
    free_items(items, n);
    const json_t *min = fl_json_path(o, "spec.minReplicas");
    fl_row_take(cells, json_is_integer(min) ? fl_asprintf("%lld", (long long)json_integer_value(min))
                                          : fl_strdup("<unset>"));
    fl_row_int(cells, fl_json_path_int(o, "spec.maxReplicas", 0));
    fl_row_int(cells, fl_json_path_int(o, "status.currentReplicas", 0));
}

static void row_pdb(const fl_kind *k, const json_t *o, json_t *cells)
{
    fl_row_take(cells, scalar_text(fl_json_path(o, "spec.minAvailable"), "N/A"));
    fl_row_take(cells, scalar_text(fl_json_path(o, "spec.maxUnavailable"), "N/A"));
    fl_row_int(cells, fl_json_path_int(o, "status.disruptionsAllowed", 0));
}

static void row_priorityclass(const fl_kind *k, const json_t *o, json_t *cells)
{
    fl_row_int(cells, fl_json_path_int(o, "value", 0));
    fl_row_bool(cells, bool_or(o, "globalDefault", false));
    fl_row_str(cells, fl_row_str_or(o, "preemptionPolicy", ""));
}

static void row_storageclass(const fl_kind *k, const json_t *o, json_t *cells)
{
    fl_row_str(cells, fl_row_str_or(o, "provisioner", ""));
    fl_row_str(cells, fl_row_str_or(o, "reclaimPolicy", "Delete"));
    fl_row_str(cells, fl_row_str_or(o, "volumeBindingMode", "Immediate"));
    fl_row_bool(cells, bool_or(o, "allowVolumeExpansion", false));
}

static void row_csidriver(const fl_kind *k, const json_t *o, json_t *cells)
{
    fl_row_bool(cells, bool_or(o, "spec.attachRequired", true));
    fl_row_bool(cells, bool_or(o, "spec.podInfoOnMount", false));
    fl_row_bool(cells, bool_or(o, "spec.storageCapacity", false));
    const json_t *tr = fl_json_path(o, "spec.tokenRequests");
    if (!json_is_array(tr)) {
        fl_row_str(cells, "<unset>");
    } else {
        fl_strbuf b = FL_STRBUF_INIT;
        size_t i;
        json_t *t;
        json_array_foreach(tr, i, t) fl_row_join(&b, ",", fl_row_str_or(t, "audience", ""));
        fl_row_take(cells, fl_row_joined(&b, ""));
    }
    fl_row_bool(cells, bool_or(o, "spec.requiresRepublish", false));
    fl_strbuf b = FL_STRBUF_INIT;
    size_t i;
    json_t *m;
    json_array_foreach(fl_json_path(o, "spec.volumeLifecycleModes"), i, m) {
        if (json_is_string(m))
            fl_row_join(&b, ",", json_string_value(m));
    }
    fl_row_take(cells, fl_row_joined(&b, "<none>"));
}

static void row_pv(const fl_kind *k, const json_t *o, json_t *cells)
{
    fl_row_take(cells, scalar_text(fl_json_path(o, "spec.capacity.storage"), "0"));
    /* upstream's GetAccessModesAsString: this fixed order, abbreviated */
    static const char *const modes[][2] = {
        {"ReadWriteOnce", "RWO"}, {"ReadOnlyMany", "ROX"}, {"ReadWriteMany", "RWX"}, {"ReadWriteOncePod", "RWOP"}};
    fl_strbuf b = FL_STRBUF_INIT;
    for (size_t x = 0; x < 4; x++) {
        size_t i;
        json_t *m;
        json_array_foreach(fl_json_path(o, "spec.accessModes"), i, m) {
            if (json_is_string(m) && !strcmp(json_string_value(m), modes[x][0])) {
                fl_row_join(&b, ",", modes[x][1]);
                break;
            }
        }
    }
    fl_row_take(cells, fl_row_joined(&b, ""));
    fl_row_str(cells, fl_row_str_or(o, "spec.persistentVolumeReclaimPolicy", ""));
    fl_row_str(cells, fl_json_path_str(o, "metadata.deletionTimestamp") ? "Terminating"
                                                                      : fl_row_str_or(o, "status.phase", ""));
    if (json_is_object(fl_json_path(o, "spec.claimRef")))
        fl_row_take(cells, fl_asprintf("%s/%s", fl_row_str_or(o, "spec.claimRef.namespace", ""),
                                     fl_row_str_or(o, "spec.claimRef.name", "")));
    else
        fl_row_str(cells, "");
    const char *sc = fl_json_path_str(o, "spec.storageClassName");
    if (!sc) /* the beta annotation still wins upstream when the field is unset */
        sc = json_string_value(json_object_get(fl_json_path(o, "metadata.annotations"),
                                               "volume.beta.kubernetes.io/storage-class"));
    fl_row_str(cells, sc ? sc : "");
    fl_row_str(cells, fl_row_str_or(o, "spec.volumeAttributesClassName", "<unset>"));
    fl_row_str(cells, fl_row_str_or(o, "status.reason", ""));
    fl_row_str(cells, fl_row_str_or(o, "spec.volumeMode", "<unset>"));
}

/* upstream formatEndpoints: "ip:port" per address and port, at most 3, then "+ N more...". */
static void row_endpoints(const fl_kind *k, const json_t *o, json_t *cells)
{
    const json_t *subsets = json_object_get(o, "subsets");
    if (!json_array_size(subsets)) {
        fl_row_str(cells, "<none>");
        return;
    }
    char *list[3];
    size_t n = 0, count = 0, i, j, a;
    json_t *ss, *p, *addr;
    json_array_foreach(subsets, i, ss) {
        const json_t *addrs = json_object_get(ss, "addresses"), *ports = json_object_get(ss, "ports");
        if (!json_array_size(ports)) {
            count += json_array_size(addrs);
            json_array_foreach(addrs, a, addr) if (n < 3) list[n++] = fl_strdup(fl_row_str_or(addr, "ip", ""));
            continue;
        }
        json_array_foreach(ports, j, p) {
            count += json_array_size(addrs);
            json_array_foreach(addrs, a, addr) {
                if (n == 3)
                    break;
                const char *ip = fl_row_str_or(addr, "ip", "");
                long long port = (long long)fl_json_path_int(p, "port", 0);
                list[n++] = strchr(ip, ':') ? fl_asprintf("[%s]:%lld", ip, port) : fl_asprintf("%s:%lld", ip, port);
            }
        }
    }
    fl_strbuf b = FL_STRBUF_INIT;
    for (i = 0; i < n; i++) {
        fl_row_join(&b, ",", list[i]);
        free(list[i]);
    }
    if (count > 3)
        fl_strbuf_printf(&b, " + %zu more...", count - 3);
    fl_row_take(cells, fl_strbuf_take(&b));
}

static void row_resourcequota(const fl_kind *k, const json_t *o, json_t *cells)
{
    const json_t *hard = fl_json_path(o, "status.hard"), *used = fl_json_path(o, "status.used");
    size_t n = json_is_object(hard) ? json_object_size(hard) : 0, m = 0;
    const char **names = fl_calloc(n ? n : 1, sizeof(*names));
    const char *key;
    json_t *v;
    if (n)
        json_object_foreach((json_t *)hard, key, v) names[m++] = key;
    for (size_t a = 1; a < m; a++)
        for (size_t b = a; b > 0 && strcmp(names[b - 1], names[b]) > 0; b--) {
            const char *t = names[b];
            names[b] = names[b - 1];
            names[b - 1] = t;
        }
    fl_strbuf req = FL_STRBUF_INIT, lim = FL_STRBUF_INIT;
    for (size_t i = 0; i < m; i++) {
        char *u = scalar_text(json_object_get(used, names[i]), "0");
        char *h = scalar_text(json_object_get(hard, names[i]), "0");
        char *s = fl_asprintf("%s: %s/%s", names[i], u, h);
        fl_row_join(!strncmp(names[i], "limits.", 7) ? &lim : &req, ", ", s);
        free(s);
        free(u);
        free(h);
    }
    free(names);
    fl_row_take(cells, fl_row_joined(&req, ""));
    fl_row_take(cells, fl_row_joined(&lim, ""));
}

static void row_rc(const fl_kind *k, const json_t *o, json_t *cells)
{
    fl_row_int(cells, fl_json_path_int(o, "spec.replicas", 1));
    fl_row_int(cells, fl_json_path_int(o, "status.replicas", 0));
    fl_row_int(cells, fl_json_path_int(o, "status.readyReplicas", 0));
    fl_row_containers_images(cells, fl_json_path(o, "spec.template.spec"));
    fl_row_take(cells, fl_row_labels(fl_json_path(o, "spec.selector")));
}

static void row_endpointslice(const fl_kind *k, const json_t *o, json_t *cells)
{
    fl_row_str(cells, fl_row_str_or(o, "addressType", ""));
    const json_t *ports = json_object_get(o, "ports");
    size_t n = json_array_size(ports), i, m = 0;
    char **items = fl_calloc(n ? n : 1, sizeof(*items));
    json_t *p;
    json_array_foreach(ports, i, p) {
        const json_t *num = json_object_get(p, "port");
        const char *name = fl_json_path_str(p, "name");
        items[m++] = json_is_integer(num) ? fl_asprintf("%lld", (long long)json_integer_value(num))
                                          : fl_strdup(name ? name : "*");
    }
    fl_row_take(cells, list_more(items, m, 3, ",", "<unset>"));
    free_items(items, m);
    size_t total = 0;
    json_t *e, *a;
    json_array_foreach(json_object_get(o, "endpoints"), i, e) total += json_array_size(json_object_get(e, "addresses"));
    items = fl_calloc(total ? total : 1, sizeof(*items));
    m = 0;
    json_array_foreach(json_object_get(o, "endpoints"), i, e) {
        size_t j;
        json_array_foreach(json_object_get(e, "addresses"), j, a) {
            items[m++] = fl_strdup(json_is_string(a) ? json_string_value(a) : "");
        }
    }
    fl_row_take(cells, list_more(items, m, 3, ",", "<unset>"));
    free_items(items, m);
}

static void row_webhooks(const fl_kind *k, const json_t *o, json_t *cells)
{
    fl_row_int(cells, (json_int_t)json_array_size(json_object_get(o, "webhooks")));
}

/* events.k8s.io/v1 Event: its objects are core Events (storage_group), printed as upstream
 * prints both, with the core Event's row. */
static void row_events_v1(const fl_kind *k, const json_t *o, json_t *cells)
{
    const fl_kind *ck = fl_kind_by_gvk("v1", "Event");
    if (ck && ck->row)
        ck->row(ck, o, cells);
}

static void row_vap(const fl_kind *k, const json_t *o, json_t *cells)
{
    fl_row_int(cells, (json_int_t)json_array_size(fl_json_path(o, "spec.validations")));
    const json_t *pk = fl_json_path(o, "spec.paramKind");
    if (json_is_object(pk))
        fl_row_take(cells, fl_asprintf("%s/%s", fl_row_str_or(pk, "apiVersion", ""), fl_row_str_or(pk, "kind", "")));
    else
        fl_row_str(cells, "<unset>");
}

static void row_vapb(const fl_kind *k, const json_t *o, json_t *cells)
{
    fl_row_str(cells, fl_row_str_or(o, "spec.policyName", ""));
    const json_t *pr = fl_json_path(o, "spec.paramRef");
    if (!json_is_object(pr)) {
        fl_row_str(cells, "<unset>");
        return;
    }
    const char *name = fl_json_path_str(pr, "name"), *ns = fl_json_path_str(pr, "namespace");
    if (name && *name)
        fl_row_take(cells, ns && *ns ? fl_asprintf("%s/%s", ns, name) : fl_strdup(name));
    else if (json_is_object(json_object_get(pr, "selector")))
        fl_row_take(cells, fl_row_selector(json_object_get(pr, "selector")));
    else
        fl_row_str(cells, "*");
}

static void row_apiservice(const fl_kind *k, const json_t *o, json_t *cells)
{
    const json_t *svc = fl_json_path(o, "spec.service");
    if (json_is_object(svc))
        fl_row_take(cells, fl_asprintf("%s/%s", fl_row_str_or(svc, "namespace", ""), fl_row_str_or(svc, "name", "")));
    else
        fl_row_str(cells, "Local");
    const json_t *c = NULL, *e;
    size_t i;
    json_array_foreach(fl_json_path(o, "status.conditions"), i, e) {
        const char *t = fl_json_path_str(e, "type");
        if (t && !strcmp(t, "Available"))
            c = e;
    }
    const char *st = c ? fl_row_str_or(c, "status", "Unknown") : "Unknown";
    if (c && strcmp(st, "True"))
        fl_row_take(cells, fl_asprintf("%s (%s)", st, fl_row_str_or(c, "reason", "")));
    else
        fl_row_str(cells, st);
}

/* CertificateSigningRequest: SIGNERNAME, REQUESTOR, REQUESTEDDURATION, CONDITION (after AGE). */
static void row_csr(const fl_kind *k, const json_t *o, json_t *cells)
{
    fl_row_str(cells, fl_row_str_or(o, "spec.signerName", "<none>"));
    fl_row_str(cells, fl_row_str_or(o, "spec.username", ""));
    const json_t *exp = fl_json_path(o, "spec.expirationSeconds");
    if (json_is_integer(exp)) {
        long long s = (long long)json_integer_value(exp);
        fl_row_take(cells, s % 3600 == 0 ? fl_asprintf("%lldh", s / 3600)
                         : s % 60 == 0   ? fl_asprintf("%lldm", s / 60)
                                         : fl_asprintf("%llds", s));
    } else {
        fl_row_str(cells, "<none>");
    }
    /* upstream: Approved/Denied/Failed conditions in order, then Issued once a certificate is there */
    fl_strbuf b = FL_STRBUF_INIT;
    size_t i;
    json_t *c;
    json_array_foreach(fl_json_path(o, "status.conditions"), i, c) {
        const char *t = fl_json_path_str(c, "type");
        if (t && (!strcmp(t, "Approved") || !strcmp(t, "Denied") || !strcmp(t, "Failed")))
            fl_row_join(&b, ",", t);
    }
    if (fl_json_path_str(o, "status.certificate") && *fl_json_path_str(o, "status.certificate"))
        fl_row_join(&b, ",", "Issued");
    fl_row_take(cells, fl_row_joined(&b, "Pending"));
}

/* ------------------------------------------------------------------ */
/* Columns (after NAME; AGE is placed by the renderer unless listed)   */
/* ------------------------------------------------------------------ */

#define COL(n, t, d) { .name = (n), .type = (t), .format = "", .description = (d) }
#define COLW(n, t, d) { .name = (n), .type = (t), .format = "", .description = (d), .priority = 1 }
#define CEND { .name = NULL }
#define COLJ(n, t, jp, d) { .name = (n), .type = (t), .format = "", .description = (d), .jsonpath = (jp) }
#define D_AGE "CreationTimestamp is a timestamp representing the server time when this object was created."

static const fl_column created_at_columns[] = {
    COLJ("Created At", "date", ".metadata.creationTimestamp", D_AGE), CEND,
};
static const fl_column rolebinding_columns[] = {
    COL("Role", "string", "RoleRef can reference a Role in the current namespace or a ClusterRole in the global namespace."),
    COLW("Users", "string", "Users in the roleBinding"),
    COLW("Groups", "string", "Groups in the roleBinding"),
    COLW("ServiceAccounts", "string", "ServiceAccounts in the roleBinding"),
    CEND,
};
static const fl_column clusterrolebinding_columns[] = {
    COL("Role", "string", "RoleRef can only reference a ClusterRole in the global namespace."),
    COLW("Users", "string", "Users in the clusterRoleBinding"),
    COLW("Groups", "string", "Groups in the clusterRoleBinding"),
    COLW("ServiceAccounts", "string", "ServiceAccounts in the clusterRoleBinding"),
    CEND,
};
static const fl_column ingress_columns[] = {
    COL("Class", "string", "The name of the IngressClass resource that should be used for additional configuration"),
    COL("Hosts", "string", "Hosts that incoming requests are matched against before the ingress rule"),
    COL("Address", "string", "Address is a list containing ingress points for the load-balancer"),
    COL("Ports", "string", "Ports of TLS configurations that open"),
    CEND,
};
static const fl_column ingressclass_columns[] = {
    COL("Controller", "string", "Controller that is responsible for handling this class"),
    COL("Parameters", "string", "A reference to a resource with additional parameters"),
    CEND,
};
static const fl_column networkpolicy_columns[] = {
    COL("Pod-Selector", "string", "podSelector selects the pods to which this NetworkPolicy object applies."),
    CEND,
};
static const fl_column hpa_columns[] = {
    COL("Reference", "string", "scaleTargetRef points to the target resource to scale."),
    COL("Targets", "string", "metrics contains the specifications for which to use to calculate the desired replica count."),
    COL("MinPods", "string", "minReplicas is the lower limit for the number of replicas to which the autoscaler can scale down."),
    COL("MaxPods", "string", "maxReplicas is the upper limit for the number of replicas to which the autoscaler can scale up."),
    COL("Replicas", "string", "currentReplicas is current number of replicas of pods managed by this autoscaler."),
    CEND,
};
static const fl_column pdb_columns[] = {
    COL("Min Available", "string", "The minimum number of pods that must be available."),
    COL("Max Unavailable", "string", "The maximum number of pods that may be unavailable."),
    COL("Allowed Disruptions", "integer", "Calculated number of pods that may be disrupted at this time."),
    CEND,
};
static const fl_column priorityclass_columns[] = {
    COL("Value", "integer", "value represents the integer value of this priority class."),
    COL("Global-Default", "boolean", "globalDefault specifies whether this PriorityClass should be considered as the default priority for pods that do not have any priority class."),
    COL("Age", "string", D_AGE),
    COL("PreemptionPolicy", "string", "preemptionPolicy is the Policy for preempting pods with lower priority."),
    CEND,
};
static const fl_column storageclass_columns[] = {
    COL("Provisioner", "string", "provisioner indicates the type of the provisioner."),
    COL("ReclaimPolicy", "string", "reclaimPolicy controls the reclaimPolicy for dynamically provisioned PersistentVolumes of this storage class."),
    COL("VolumeBindingMode", "string", "volumeBindingMode indicates how PersistentVolumeClaims should be provisioned and bound."),
    COL("AllowVolumeExpansion", "string", "allowVolumeExpansion shows whether the storage class allow volume expand."),
    CEND,
};
static const fl_column csidriver_columns[] = {
    COL("AttachRequired", "boolean", "attachRequired indicates this CSI volume driver requires an attach operation."),
    COL("PodInfoOnMount", "boolean", "podInfoOnMount indicates this CSI volume driver requires additional pod information during mount operations."),
    COL("StorageCapacity", "boolean", "storageCapacity indicates that the CSI volume driver wants pod scheduling to consider the storage capacity."),
    COL("TokenRequests", "string", "tokenRequests indicates the CSI driver needs pods' service account tokens it is mounting volume for to do necessary authentication."),
    COL("RequiresRepublish", "boolean", "requiresRepublish indicates the CSI driver wants `NodePublishVolume` being periodically called to reflect any possible change in the mounted volume."),
    COL("Modes", "string", "volumeLifecycleModes defines what kind of volumes this CSI volume driver supports."),
    CEND,
};
static const fl_column pv_columns[] = {
    COL("Capacity", "string", "capacity is the description of the persistent volume's resources and capacity."),
    COL("Access Modes", "string", "accessModes contains all ways the volume can be mounted."),
    COL("Reclaim Policy", "string", "persistentVolumeReclaimPolicy defines what happens to a persistent volume when released from its claim."),
    COL("Status", "string", "phase indicates if a volume is available, bound to a claim, or released by a claim."),
    COL("Claim", "string", "claimRef is part of a bi-directional binding between PersistentVolume and PersistentVolumeClaim."),
    COL("StorageClass", "string", "StorageClass of the pv"),
    COL("VolumeAttributesClass", "string", "VolumeAttributesClass of the pv"),
    COL("Reason", "string", "reason is a brief CamelCase string that describes any failure and is meant for machine parsing and tidy display in the CLI."),
    COLW("VolumeMode", "string", "volumeMode defines if a volume is intended to be used with a formatted filesystem or to remain in raw block state."),
    CEND,
};
static const fl_column endpoints_columns[] = {
    COL("Endpoints", "string", "The set of all endpoints is the union of all subsets."),
    CEND,
};
static const fl_column resourcequota_columns[] = {
    COL("Request", "string", "Request represents a minimum amount of cpu/memory that a container may consume."),
    COL("Limit", "string", "Limits control the maximum amount of cpu/memory that a container may use independent of contention on the node."),
    CEND,
};
static const fl_column rc_columns[] = {
    COL("Desired", "integer", "Replicas is the number of desired replicas."),
    COL("Current", "integer", "Replicas is the most recently observed number of replicas."),
    COL("Ready", "integer", "The number of ready replicas for this replication controller."),
    COLW("Containers", "string", "Names of each container in the template."),
    COLW("Images", "string", "Images referenced by each container in the template."),
    COLW("Selector", "string", "Selector is a label query over pods that should match the Replicas count."),
    CEND,
};
static const fl_column endpointslice_columns[] = {
    COL("AddressType", "string", "addressType specifies the type of address carried by this EndpointSlice."),
    COL("Ports", "string", "ports specifies the list of network ports exposed by each endpoint in this slice."),
    COL("Endpoints", "string", "endpoints is a list of unique endpoints in this slice."),
    CEND,
};
static const fl_column events_v1_columns[] = {
    COL("Last Seen", "string", "The time at which the most recent occurrence of this event was recorded."),
    COL("Type", "string", "Type of this event (Normal, Warning), new types could be added in the future"),
    COL("Reason", "string", "This should be a short, machine understandable string that gives the reason for the transition into the object's current status."),
    COL("Object", "string", "The object that this event is about."),
    COL("Message", "string", "A human-readable description of the status of this operation."),
    CEND,
};
static const fl_column vap_columns[] = {
    COL("Validations", "integer", "Validations indicates the number of validation rules"),
    COL("ParamKind", "string", "ParamKind specifies the kind of resources used to parameterize this policy"),
    CEND,
};
static const fl_column vapb_columns[] = {
    COL("PolicyName", "string", "PolicyName indicates the policy definition which the policy binding binded to"),
    COL("ParamRef", "string", "ParamRef indicates the param resource which sets the configration param"),
    CEND,
};
static const fl_column apiservice_columns[] = {
    COL("Service", "string", "The reference to the service that hosts this API endpoint."),
    COL("Available", "string", "Whether this service is available."),
    CEND,
};
static const fl_column csr_columns[] = {
    COL("Age", "string", D_AGE),
    COL("SignerName", "string", "Name of the requested signer"),
    COL("Requestor", "string", "Name of the user requesting the certificate"),
    COL("RequestedDuration", "string", "Requested duration of the certificate"),
    COL("Condition", "string", "The condition of the certificate"),
    CEND,
};
static const fl_column webhook_columns[] = {
    COL("Webhooks", "integer", "Webhooks indicates the number of webhooks registered in this configuration"),
    CEND,
};

/* authorization.k8s.io/v1's reviews: written here by hand, as they are no stored kind (the
 * generated tables cover those), with upstream's field names; status is free-form. */
#define F_STR(p) {.path = p, .type = FL_F_STRING}
static const fl_field authz_resource_attributes[] = {
    F_STR("namespace"), F_STR("verb"), F_STR("group"), F_STR("version"), F_STR("resource"), F_STR("subresource"),
    F_STR("name"), {.path = "fieldSelector", .type = FL_F_OBJECT}, {.path = "labelSelector", .type = FL_F_OBJECT},
    {NULL}};
static const fl_field authz_nonresource_attributes[] = {F_STR("path"), F_STR("verb"), {NULL}};
static const fl_field authz_access_spec[] = {
    {.path = "resourceAttributes", .type = FL_F_OBJECT, .sub = authz_resource_attributes},
    {.path = "nonResourceAttributes", .type = FL_F_OBJECT, .sub = authz_nonresource_attributes},
    F_STR("user"), {.path = "groups", .type = FL_F_ARRAY, .elem = FL_F_STRING},
    {.path = "extra", .type = FL_F_OBJECT}, F_STR("uid"), {NULL}};
static const fl_field authz_rules_spec[] = {F_STR("namespace"), {NULL}};
static const fl_field authz_access_review[] = {
    F_STR("apiVersion"), F_STR("kind"), {.path = "metadata", .type = FL_F_OBJECT, .sub = fl_schema_meta_v1_ObjectMeta},
    {.path = "spec", .type = FL_F_OBJECT, .sub = authz_access_spec, .required = true},
    {.path = "status", .type = FL_F_OBJECT}, {NULL}};
static const fl_field authz_rules_review[] = {
    F_STR("apiVersion"), F_STR("kind"), {.path = "metadata", .type = FL_F_OBJECT, .sub = fl_schema_meta_v1_ObjectMeta},
    {.path = "spec", .type = FL_F_OBJECT, .sub = authz_rules_spec, .required = true},
    {.path = "status", .type = FL_F_OBJECT}, {NULL}};
#undef F_STR

/* ------------------------------------------------------------------ */
/* The table                                                           */
/* ------------------------------------------------------------------ */

#define NS true
#define CLUSTER false
#define RBAC "rbac.authorization.k8s.io"
#define AUTHZ "authorization.k8s.io"
#define NET "networking.k8s.io"
#define ADM "admissionregistration.k8s.io"

fl_kind fl_kinds__builtin_ext[] = {
    /* rbac.authorization.k8s.io/v1: stored, propagated, and enforced by rbac.c */
    { .group = RBAC, .version = "v1", .kind = "Role", .list_kind = "RoleList", .resource = "roles", .singular = "role",
      .namespaced = NS, .fields = fl_schema_rbac_v1_Role, .columns = created_at_columns,
      .validate = fl_validate_role },
    { .group = RBAC, .version = "v1", .kind = "ClusterRole", .list_kind = "ClusterRoleList", .resource = "clusterroles",
      .singular = "clusterrole", .namespaced = CLUSTER, .fields = fl_schema_rbac_v1_ClusterRole,
      .columns = created_at_columns, .validate = fl_validate_role },
    { .group = RBAC, .version = "v1", .kind = "RoleBinding", .list_kind = "RoleBindingList", .resource = "rolebindings",
      .singular = "rolebinding", .namespaced = NS, .fields = fl_schema_rbac_v1_RoleBinding,
      .columns = rolebinding_columns, .row = row_binding, .validate = fl_validate_role_binding },
    { .group = RBAC, .version = "v1", .kind = "ClusterRoleBinding", .list_kind = "ClusterRoleBindingList",
      .resource = "clusterrolebindings", .singular = "clusterrolebinding", .namespaced = CLUSTER,
      .fields = fl_schema_rbac_v1_ClusterRoleBinding, .columns = clusterrolebinding_columns, .row = row_binding,
      .validate = fl_validate_role_binding },
    /* authorization.k8s.io/v1: reviews, answered and never stored (rbac_review.c) */
    { .group = AUTHZ, .version = "v1", .kind = "SelfSubjectAccessReview", .list_kind = "SelfSubjectAccessReviewList",
      .resource = "selfsubjectaccessreviews", .singular = "selfsubjectaccessreview", .namespaced = CLUSTER,
      .fields = authz_access_review, .columns = created_at_columns, .create_only = true },
    { .group = AUTHZ, .version = "v1", .kind = "SelfSubjectRulesReview", .list_kind = "SelfSubjectRulesReviewList",
      .resource = "selfsubjectrulesreviews", .singular = "selfsubjectrulesreview", .namespaced = CLUSTER,
      .fields = authz_rules_review, .columns = created_at_columns, .create_only = true },
    { .group = AUTHZ, .version = "v1", .kind = "SubjectAccessReview", .list_kind = "SubjectAccessReviewList",
      .resource = "subjectaccessreviews", .singular = "subjectaccessreview", .namespaced = CLUSTER,
      .fields = authz_access_review, .columns = created_at_columns, .create_only = true },
    { .group = AUTHZ, .version = "v1", .kind = "LocalSubjectAccessReview", .list_kind = "LocalSubjectAccessReviewList",
      .resource = "localsubjectaccessreviews", .singular = "localsubjectaccessreview", .namespaced = NS,
      .fields = authz_access_review, .columns = created_at_columns, .create_only = true },
    /* networking.k8s.io/v1 */
    { .group = NET, .version = "v1", .kind = "Ingress", .list_kind = "IngressList", .resource = "ingresses",
      .singular = "ingress", .namespaced = NS, .has_status = true, .short_names = {"ing"},
      .fields = fl_schema_networking_v1_Ingress, .columns = ingress_columns, .row = row_ingress,
      .validate = fl_validate_ingress },
    { .group = NET, .version = "v1", .kind = "IngressClass", .list_kind = "IngressClassList", .resource = "ingressclasses",
      .singular = "ingressclass", .namespaced = CLUSTER, .fields = fl_schema_networking_v1_IngressClass,
      .columns = ingressclass_columns, .row = row_ingressclass, .validate = fl_validate_ingress_class },
    { .group = NET, .version = "v1", .kind = "NetworkPolicy", .list_kind = "NetworkPolicyList",
      .resource = "networkpolicies", .singular = "networkpolicy", .namespaced = NS, .short_names = {"netpol"},
      .fields = fl_schema_networking_v1_NetworkPolicy, .columns = networkpolicy_columns, .row = row_networkpolicy,
      .validate = fl_validate_network_policy },
    /* autoscaling/v2 */
    { .group = "autoscaling", .version = "v2", .kind = "HorizontalPodAutoscaler",
      .list_kind = "HorizontalPodAutoscalerList", .resource = "horizontalpodautoscalers",
      .singular = "horizontalpodautoscaler", .namespaced = NS, .has_status = true, .short_names = {"hpa"},
      .categories = {"all"}, .fields = fl_schema_autoscaling_v2_HorizontalPodAutoscaler, .columns = hpa_columns,
      .row = row_hpa, .validate = fl_validate_hpa },
    /* autoscaling/v1: the same objects, stored as v2 and converted (api_convert.c); rows are
     * computed from the stored object, so both versions print alike, as upstream */
    { .group = "autoscaling", .version = "v1", .kind = "HorizontalPodAutoscaler",
      .list_kind = "HorizontalPodAutoscalerList", .resource = "horizontalpodautoscalers",
      .singular = "horizontalpodautoscaler", .namespaced = NS, .has_status = true, .short_names = {"hpa"},
      .categories = {"all"}, .fields = fl_schema_autoscaling_v1_HorizontalPodAutoscaler, .columns = hpa_columns,
      .row = row_hpa, .storage_version = "v2", .to_storage = fl_convert_hpa_to_v2,
      .from_storage = fl_convert_hpa_to_v1 },
    /* policy/v1 */
    { .group = "policy", .version = "v1", .kind = "PodDisruptionBudget", .list_kind = "PodDisruptionBudgetList",
      .resource = "poddisruptionbudgets", .singular = "poddisruptionbudget", .namespaced = NS, .has_status = true,
      .short_names = {"pdb"}, .fields = fl_schema_policy_v1_PodDisruptionBudget, .columns = pdb_columns,
      .row = row_pdb, .validate = fl_validate_pdb },
    /* scheduling.k8s.io/v1 */
    { .group = "scheduling.k8s.io", .version = "v1", .kind = "PriorityClass", .list_kind = "PriorityClassList",
      .resource = "priorityclasses", .singular = "priorityclass", .namespaced = CLUSTER, .short_names = {"pc"},
      .fields = fl_schema_scheduling_v1_PriorityClass, .columns = priorityclass_columns, .row = row_priorityclass,
      .validate = fl_validate_priority_class },
    /* storage.k8s.io/v1 */
    { .group = "storage.k8s.io", .version = "v1", .kind = "StorageClass", .list_kind = "StorageClassList",
      .resource = "storageclasses", .singular = "storageclass", .namespaced = CLUSTER, .short_names = {"sc"},
      .fields = fl_schema_storage_v1_StorageClass, .columns = storageclass_columns, .row = row_storageclass,
      .validate = fl_validate_storage_class },
    { .group = "storage.k8s.io", .version = "v1", .kind = "CSIDriver", .list_kind = "CSIDriverList",
      .resource = "csidrivers", .singular = "csidriver", .namespaced = CLUSTER, .fields = fl_schema_storage_v1_CSIDriver,
      .columns = csidriver_columns, .row = row_csidriver },
    /* core/v1 */
    { .group = "", .version = "v1", .kind = "PersistentVolume", .list_kind = "PersistentVolumeList",
      .resource = "persistentvolumes", .singular = "persistentvolume", .namespaced = CLUSTER, .has_status = true,
      .short_names = {"pv"}, .fields = fl_schema_core_v1_PersistentVolume, .columns = pv_columns, .row = row_pv },
    { .group = "", .version = "v1", .kind = "Endpoints", .list_kind = "EndpointsList", .resource = "endpoints",
      .singular = "endpoints", .namespaced = NS, .short_names = {"ep"}, .fields = fl_schema_core_v1_Endpoints,
      .columns = endpoints_columns, .row = row_endpoints },
    { .group = "", .version = "v1", .kind = "LimitRange", .list_kind = "LimitRangeList", .resource = "limitranges",
      .singular = "limitrange", .namespaced = NS, .short_names = {"limits"}, .fields = fl_schema_core_v1_LimitRange,
      .columns = created_at_columns },
    { .group = "", .version = "v1", .kind = "ResourceQuota", .list_kind = "ResourceQuotaList",
      .resource = "resourcequotas", .singular = "resourcequota", .namespaced = NS, .has_status = true,
      .short_names = {"quota"}, .fields = fl_schema_core_v1_ResourceQuota, .columns = resourcequota_columns,
      .row = row_resourcequota },
    { .group = "", .version = "v1", .kind = "ReplicationController", .list_kind = "ReplicationControllerList",
      .resource = "replicationcontrollers", .singular = "replicationcontroller", .namespaced = NS,
      .has_status = true, .has_scale = true, .short_names = {"rc"}, .categories = {"all"},
      .field_selectors = {"status.replicas"},
      .fields = fl_schema_core_v1_ReplicationController, .columns = rc_columns, .row = row_rc },
    /* discovery.k8s.io/v1 */
    { .group = "discovery.k8s.io", .version = "v1", .kind = "EndpointSlice", .list_kind = "EndpointSliceList",
      .resource = "endpointslices", .singular = "endpointslice", .namespaced = NS,
      .fields = fl_schema_discovery_v1_EndpointSlice, .columns = endpointslice_columns, .row = row_endpointslice },
    /* admissionregistration.k8s.io/v1: stored and propagated, never called */
    { .group = ADM, .version = "v1", .kind = "ValidatingWebhookConfiguration",
      .list_kind = "ValidatingWebhookConfigurationList", .resource = "validatingwebhookconfigurations",
      .singular = "validatingwebhookconfiguration", .namespaced = CLUSTER, .categories = {"api-extensions"},
      .fields = fl_schema_admissionregistration_v1_ValidatingWebhookConfiguration, .columns = webhook_columns,
      .row = row_webhooks, .validate = fl_validate_webhook_configuration },
    { .group = ADM, .version = "v1", .kind = "MutatingWebhookConfiguration",
      .list_kind = "MutatingWebhookConfigurationList", .resource = "mutatingwebhookconfigurations",
      .singular = "mutatingwebhookconfiguration", .namespaced = CLUSTER, .categories = {"api-extensions"},
      .fields = fl_schema_admissionregistration_v1_MutatingWebhookConfiguration, .columns = webhook_columns,
      .row = row_webhooks, .validate = fl_validate_webhook_configuration },
    { .group = ADM, .version = "v1", .kind = "ValidatingAdmissionPolicy", .list_kind = "ValidatingAdmissionPolicyList",
      .resource = "validatingadmissionpolicies", .singular = "validatingadmissionpolicy", .namespaced = CLUSTER,
      .has_status = true, .categories = {"api-extensions"},
      .fields = fl_schema_admissionregistration_v1_ValidatingAdmissionPolicy, .columns = vap_columns, .row = row_vap,
      .validate = fl_validate_admission_policy },
    { .group = ADM, .version = "v1", .kind = "ValidatingAdmissionPolicyBinding",
      .list_kind = "ValidatingAdmissionPolicyBindingList", .resource = "validatingadmissionpolicybindings",
      .singular = "validatingadmissionpolicybinding", .namespaced = CLUSTER, .categories = {"api-extensions"},
      .fields = fl_schema_admissionregistration_v1_ValidatingAdmissionPolicyBinding, .columns = vapb_columns,
      .row = row_vapb, .validate = fl_validate_admission_policy_binding },
    /* events.k8s.io/v1: the core/v1 Events, converted (as upstream, one collection) */
    { .group = "events.k8s.io", .version = "v1", .kind = "Event", .list_kind = "EventList", .resource = "events",
      .singular = "event", .namespaced = NS, .short_names = {"ev"}, .fields = fl_schema_events_v1_Event,
      .columns = events_v1_columns, .row = row_events_v1, .validate = fl_validate_events_v1,
      .storage_version = "v1", .storage_group = "", .to_storage = fl_convert_event_to_core,
      .from_storage = fl_convert_event_from_core },
    /* apiregistration.k8s.io/v1: stored; nothing is proxied to the service it names */
    { .group = "apiregistration.k8s.io", .version = "v1", .kind = "APIService", .list_kind = "APIServiceList",
      .resource = "apiservices", .singular = "apiservice", .namespaced = CLUSTER, .has_status = true,
      .categories = {"api-extensions"}, .fields = fl_schema_apiregistration_v1_APIService,
      .columns = apiservice_columns, .row = row_apiservice, .validate = fl_validate_apiservice },
    /* certificates.k8s.io/v1: stored; approval and status are data (nothing here signs) */
    { .group = "certificates.k8s.io", .version = "v1", .kind = "CertificateSigningRequest",
      .list_kind = "CertificateSigningRequestList", .resource = "certificatesigningrequests",
      .singular = "certificatesigningrequest", .namespaced = CLUSTER, .has_status = true, .short_names = {"csr"},
      .fields = fl_schema_certificates_v1_CertificateSigningRequest, .columns = csr_columns, .row = row_csr,
      .validate = fl_validate_csr },
    /* apps.flotilla.io/v1alpha1: ours, staged rollouts of a policy's templates (kinds_rollout.c,
     * docs/rollouts.md) */
    { .group = "apps.flotilla.io", .version = "v1alpha1", .kind = "RolloutStrategy",
      .list_kind = "RolloutStrategyList", .resource = "rolloutstrategies", .singular = "rolloutstrategy",
      .namespaced = NS, .has_status = true,
      .fields = fl_schema_rollout_strategy, .columns = fl_columns_rollout_strategy,
      .validate = fl_validate_rollout_strategy },
};

const size_t fl_kinds__builtin_ext_count = sizeof(fl_kinds__builtin_ext) / sizeof(fl_kinds__builtin_ext[0]);
