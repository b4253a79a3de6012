/* names.c - names of bindings, Works and execution spaces (contract in names.h). */
#include "controllers/names.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/json_get.h"
#include "core/mem.h"

/* Lowercase, and ':' (allowed in RBAC names, not in a CRD object's) as '.'. */
static char *dns_safe(char *s)
{
    for (char *p = s; *p; p++) {
        if (*p == ':')
            *p = '.';
        else if (*p >= 'A' && *p <= 'Z')
            *p = (char)(*p - 'A' + 'a');
    }
    return s;
}

char *fl_names_binding(const char *kind, const char *name)
{
    return dns_safe(fl_asprintf("%s-%s", name, kind));
}

/* FNV-1a: small, stable across versions and platforms. */
static uint32_t fnv1a(const char *s)
{
    uint32_t h = 2166136261u;
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 16777619u;
    }
    return h;
}

char *fl_names_work(const char *kind, const char *ns, const char *name)
{
    char *id = dns_safe(fl_asprintf("%s-%s-%s", ns ? ns : "", name, kind));
    char *out = dns_safe(fl_asprintf("%s-%08x", name, fnv1a(id)));
    free(id);
    return out;
}

char *fl_names_execution_space(const char *cluster)
{
    return fl_cat(FL_EXECUTION_SPACE_PREFIX, cluster, NULL);
}

const char *fl_names_work_key_cluster_span(const char *key, size_t *len)
{
    size_t pl = strlen(FL_EXECUTION_SPACE_PREFIX);
    const char *slash = strchr(key, '/');
    if (strncmp(key, FL_EXECUTION_SPACE_PREFIX, pl) || !slash || slash == key + pl)
        return NULL; /* not an execution space's, or one with no cluster */
    *len = (size_t)(slash - key - pl);
    return key + pl;
}

char *fl_names_work_key_cluster(const char *key, const char **name)
{
    size_t n;
    const char *cluster = fl_names_work_key_cluster_span(key, &n);
    *name = cluster ? cluster + n + 1 : NULL;
    return cluster ? fl_strndup(cluster, n) : NULL;
}

char *fl_names_binding_key(const json_t *binding)
{
    const json_t *md = json_object_get(binding, "metadata");
    const char *name = fl_json_str(md, "name"), *ns = fl_json_str(md, "namespace"),
               *kind = fl_json_str(binding, "kind");
    if (!name)
        return NULL;
    if (kind && !strcmp(kind, "ClusterResourceBinding"))
        return fl_cat("C|", name, NULL);
    return fl_cat("R|", ns ? ns : "", "/", name, NULL);
}

char *fl_names_template_binding_key(const char *kind, bool namespaced, const char *ns, const char *name)
{
    char *b = fl_names_binding(kind, name);
    char *key = namespaced ? fl_cat("R|", ns ? ns : "", "/", b, NULL) : fl_cat("C|", b, NULL);
    free(b);
    return key;
}

char *fl_names_work_binding_key(const json_t *work)
{
    const json_t *anns = json_object_get(json_object_get(work, "metadata"), "annotations");
    const char *ns = fl_json_str(anns, FL_RB_NAMESPACE_ANNOTATION);
    const char *name = fl_json_str(anns, FL_RB_NAME_ANNOTATION);
    if (ns && name)
        return fl_cat("R|", ns, "/", name, NULL);
    if ((name = fl_json_str(anns, FL_CRB_NAME_ANNOTATION)))
        return fl_cat("C|", name, NULL);
    return NULL;
}
