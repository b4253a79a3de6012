/* kind_resolve.c - a kind as kubectl takes it, resolved with aggregated discovery (see
 * kind_resolve.h). Moved here from failover_cmd.c when `ctl status` needed it too. */
#include "cli/kind_resolve.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/err.h"
#include "core/json_get.h"
#include "core/mem.h"

#define AGGREGATED "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"

static bool in_short_names(const json_t *r, const char *k)
{
    size_t i;
    json_t *v;
    json_array_foreach(json_object_get(r, "shortNames"), i, v) if (json_string_value(v) &&
                                                                   !strcasecmp(json_string_value(v), k)) return true;
    return false;
}

/* Look kind (a name as kubectl takes it, group only with the resource: "deployments.apps")
 * up in an aggregated discovery document's preferred versions. */
static bool find_in(const json_t *doc, const char *kind, const char *group, fl_cli_kind *out)
{
    size_t i, k;
    json_t *g, *r;
    json_array_foreach(json_object_get(doc, "items"), i, g) {
        const char *gname = fl_json_meta(g, "name") ? fl_json_meta(g, "name") : "";
        json_t *v = json_array_get(json_object_get(g, "versions"), 0); /* the preferred one */
        const char *version = fl_json_str(v, "version");
        if (!version)
            continue;
        json_array_foreach(json_object_get(v, "resources"), k, r) {
            const char *res = fl_json_str(r, "resource"), *sing = fl_json_str(r, "singularResource"),
                       *rk = fl_json_str(json_object_get(r, "responseKind"), "kind");
            if (!res || !rk || strchr(res, '/'))
                continue;
            bool hit = group ? !strcasecmp(res, kind) && !strcasecmp(gname, group)
                             : !strcasecmp(res, kind) || (sing && !strcasecmp(sing, kind)) ||
                                   !strcasecmp(rk, kind) || in_short_names(r, kind);
            if (!hit)
                continue;
            out->api_version = *gname ? fl_asprintf("%s/%s", gname, version) : fl_strdup(version);
            out->resource = fl_strdup(res);
            out->kind = fl_strdup(rk);
            const char *scope = fl_json_str(r, "scope");
            out->namespaced = !scope || strcmp(scope, "Cluster");
            return true;
        }
    }
    return false;
}

int fl_cli_kind_resolve(fl_client *cp, const char *typed, const char *verb, fl_cli_kind *out)
{
    memset(out, 0, sizeof *out);
    char *kind = fl_strdup(typed), *dot = strchr(kind, '.');
    const char *group = NULL;
    if (dot) {
        *dot = '\0';
        group = dot + 1;
    }
    static const char *const paths[] = {"/api", "/apis"};
    int rc = 1;
    for (size_t p = 0; p < 2 && rc; p++) {
        json_t *doc = NULL;
        fl_client_error ce = {0};
        int e = fl_client_get_as(cp, paths[p], AGGREGATED, NULL, &doc, &ce);
        if (e) {
            fprintf(stderr, "flotilla ctl %s: discovery (%s): %s\n", verb, paths[p], fl_errmsg(ce.message, e));
            free(kind);
            return 1;
        }
        if (find_in(doc, kind, group, out))
            rc = 0;
        json_decref(doc);
    }
    if (rc)
        fprintf(stderr, "flotilla ctl %s: the server has no resource type \"%s\"\n", verb, typed);
    free(kind);
    return rc;
}

void fl_cli_kind_close(fl_cli_kind *k)
{
    if (!k)
        return;
    free(k->api_version);
    free(k->resource);
    free(k->kind);
    memset(k, 0, sizeof *k);
}
