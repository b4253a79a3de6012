/* names.c - names of bindings, Works and execution spaces (contract in names.h). */
#include "controllers/names.h"

#include <stdint.h>
#include <stdlib.h>

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
    return fl_asprintf("%s%s", FL_EXECUTION_SPACE_PREFIX, cluster);
}
