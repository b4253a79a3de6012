/* overriders.c - validate and apply one rule's Overriders (contract in overriders.h).
 *
 * Each overrider follows the behaviour of Karmada's pkg/util/overridemanager, which
 * is what users' existing policies were written against:
 *   image    parse the reference with the distribution grammar (registry with port,
 *            IPv6 registries, digests; no "docker.io/library" normalisation), change
 *            one component, render it back. Without a predicate it touches the
 *            containers (not initContainers) of Pod, ReplicaSet, Deployment,
 *            DaemonSet, StatefulSet and Job only - upstream does not cover CronJob.
 *   command  per named container of the same kinds: add appends, remove drops every
 *   / args   listed value; a missing list is created.
 *   labels / annotations  add sets (creating the map), remove/replace touch only
 *            keys that exist.
 *   field    a string field holding JSON or YAML is parsed, JSON-patched, rendered
 *            back (JSON compact; YAML with sorted keys, as Go's yaml round trip does).
 *   plaintext  RFC 6902 add/remove/replace, all of a rule's entries as one patch.
 * Karmada applies every overrider through a JSON patch on the whole object; we edit
 * the working copy directly where that is equivalent, and use core/patch.h's RFC 6902
 * engine where pointer semantics matter (image predicate, field sub-paths, plaintext).
 *
 * Validation mirrors the CRD schema and Karmada's admission (enums, required fields,
 * JSON pointers, value required for add/replace and forbidden for remove in field
 * sub-operations), so a policy that admission would refuse fails here with the field
 * named instead of doing something half-defined. */
#include "policy/overriders.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/err.h"
#include "core/json.h"
#include "core/mem.h"
#include "core/patch.h"
#include "core/yaml.h"

static int errf(char **err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int errf(char **err, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    char *s = fl_malloc((size_t)n + 1);
    va_start(ap, fmt);
    vsnprintf(s, (size_t)n + 1, fmt, ap);
    va_end(ap);
    free(*err);
    *err = s;
    return FL_EINVAL;
}

/* ================================================================ image references
 *
 * Grammar (distribution/reference):
 *   reference  := name [ ":" tag ] [ "@" digest ]
 *   name       := [ domain "/" ] path-component ( "/" path-component )*
 *   domain     := ( domain-name | "[" ipv6 "]" ) [ ":" port ]
 *   path-comp  := [a-z0-9]+ ( separator [a-z0-9]+ )*,  separator := "." | "_" | "__" | "-"+
 *   tag        := [A-Za-z0-9_][A-Za-z0-9_.-]{0,127}
 *   digest     := algorithm ":" hex{32,}, and it must verify: sha256/sha384/sha512 with
 *                 exactly 64/96/128 lowercase hex digits.
 * A ':' after the last '/' can only start a tag (a domain's port needs a '/' after it),
 * and '@' appears nowhere but before the digest, so the split is deterministic. */

static bool is_lower_alnum(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

static bool is_alpha(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static bool is_alnum(char c)
{
    return is_alpha(c) || (c >= '0' && c <= '9');
}

static bool is_word(char c)
{
    return is_alnum(c) || c == '_';
}

static bool is_hex(char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

static bool path_component_ok(const char *s, size_t n)
{
    size_t i = 0;
    for (;;) {
        size_t start = i;
        while (i < n && is_lower_alnum(s[i]))
            i++;
        if (i == start)
            return false;
        if (i == n)
            return true;
        if (s[i] == '.') {
            i++;
        } else if (s[i] == '_') {
            i++;
            if (i < n && s[i] == '_')
                i++;
        } else if (s[i] == '-') {
            while (i < n && s[i] == '-')
                i++;
        } else {
            return false;
        }
    }
}

static bool remote_name_ok(const char *s, size_t n)
{
    size_t start = 0;
    for (size_t i = 0; i <= n; i++) {
        if (i == n || s[i] == '/') {
            if (!path_component_ok(s + start, i - start))
                return false;
            start = i + 1;
        }
    }
    return true;
}

static bool domain_component_ok(const char *s, size_t n)
{
    if (n == 0 || s[0] == '-' || s[n - 1] == '-')
        return false;
    for (size_t i = 0; i < n; i++)
        if (!is_alnum(s[i]) && s[i] != '-')
            return false;
    return true;
}

static bool port_ok(const char *s, size_t n)
{
    if (n < 2 || s[0] != ':')
        return false;
    for (size_t i = 1; i < n; i++)
        if (s[i] < '0' || s[i] > '9')
            return false;
    return true;
}

static bool domain_ok(const char *s, size_t n)
{
    if (n == 0)
        return false;
    size_t host_end;
    if (s[0] == '[') {
        const char *close = memchr(s, ']', n);
        if (!close || close == s + 1)
            return false;
        for (const char *p = s + 1; p < close; p++)
            if (!is_hex(*p) && *p != ':')
                return false;
        host_end = (size_t)(close - s) + 1;
    } else {
        const char *colon = memchr(s, ':', n);
        host_end = colon ? (size_t)(colon - s) : n;
        size_t start = 0;
        for (size_t i = 0; i <= host_end; i++) {
            if (i == host_end || s[i] == '.') {
                if (!domain_component_ok(s + start, i - start))
                    return false;
                start = i + 1;
            }
        }
    }
    return host_end == n || port_ok(s + host_end, n - host_end);
}

static bool name_ok(const char *s, size_t n)
{
    if (remote_name_ok(s, n))
        return true;
    const char *slash = memchr(s, '/', n);
    if (!slash)
        return false;
    size_t d = (size_t)(slash - s);
    return domain_ok(s, d) && remote_name_ok(slash + 1, n - d - 1);
}

static bool tag_ok(const char *s, size_t n)
{
    if (n == 0 || n > 128 || !is_word(s[0]))
        return false;
    for (size_t i = 1; i < n; i++)
        if (!is_word(s[i]) && s[i] != '.' && s[i] != '-')
            return false;
    return true;
}

/* The digest pattern alone (what Karmada's SetTagOrDigest tests); returns the length
 * of the algorithm part through its ':' in *alg_len. */
static bool digest_pattern_ok(const char *s, size_t n, size_t *alg_len)
{
    size_t i = 0;
    for (;;) {
        if (i >= n || !is_alpha(s[i]))
            return false;
        i++;
        while (i < n && is_alnum(s[i]))
            i++;
        if (i < n && (s[i] == '-' || s[i] == '_' || s[i] == '+' || s[i] == '.')) {
            i++;
            continue;
        }
        break;
    }
    if (i >= n || s[i] != ':')
        return false;
    *alg_len = i;
    size_t hex = n - i - 1;
    if (hex < 32)
        return false;
    for (size_t j = i + 1; j < n; j++)
        if (!is_hex(s[j]))
            return false;
    return true;
}

/* A digest that verifies: a known algorithm and its exact lowercase hex length. */
static const char *digest_verify(const char *s, size_t n)
{
    size_t alg;
    if (!digest_pattern_ok(s, n, &alg))
        return "invalid reference format";
    static const struct {
        const char *name;
        size_t hex;
    } algs[] = {{"sha256", 64}, {"sha384", 96}, {"sha512", 128}};
    for (size_t k = 0; k < sizeof algs / sizeof algs[0]; k++) {
        if (strlen(algs[k].name) != alg || memcmp(s, algs[k].name, alg) != 0)
            continue;
        if (n - alg - 1 != algs[k].hex)
            return "invalid checksum digest length";
        for (size_t j = alg + 1; j < n; j++)
            if (!is_lower_alnum(s[j]) || (s[j] > 'f'))
                return "invalid checksum digest format";
        return NULL;
    }
    return "unsupported digest algorithm";
}

/* Split s (n bytes) into name, tag and digest spans; true when each part matches
 * the grammar (the digest only by pattern). */
struct ref_spans {
    size_t name_n;
    const char *tag;
    size_t tag_n;
    const char *digest;
    size_t digest_n;
};

static bool split_ref(const char *s, size_t n, struct ref_spans *sp)
{
    memset(sp, 0, sizeof(*sp));
    const char *at = memchr(s, '@', n);
    size_t left = at ? (size_t)(at - s) : n;
    if (at) {
        sp->digest = at + 1;
        sp->digest_n = n - left - 1;
    }
    sp->name_n = left;
    for (size_t i = left; i > 0; i--) {
        if (s[i - 1] == '/')
            break;
        if (s[i - 1] == ':') {
            sp->name_n = i - 1;
            sp->tag = s + i;
            sp->tag_n = left - i;
            break;
        }
    }
    size_t alg;
    return sp->name_n > 0 && name_ok(s, sp->name_n) && (!sp->tag || tag_ok(sp->tag, sp->tag_n)) &&
           (!sp->digest || digest_pattern_ok(sp->digest, sp->digest_n, &alg));
}

void fl_image_ref_close(fl_image_ref *ref)
{
    free(ref->host);
    free(ref->repo);
    free(ref->tag);
    free(ref->digest);
    memset(ref, 0, sizeof(*ref));
}

int fl_image_ref_parse(const char *image, fl_image_ref *ref, const char **why)
{
    memset(ref, 0, sizeof(*ref));
    *why = NULL;
    size_t n = strlen(image);
    if (n == 0) {
        *why = "repository name must have at least one component";
        return FL_EINVAL;
    }
    struct ref_spans sp;
    if (!split_ref(image, n, &sp)) {
        /* the reference parser's hint: would it parse if it were lowercase? */
        char *low = fl_strdup(image);
        for (char *p = low; *p; p++)
            if (*p >= 'A' && *p <= 'Z')
                *p = (char)(*p - 'A' + 'a');
        struct ref_spans lsp;
        *why = split_ref(low, n, &lsp) ? "repository name must be lowercase" : "invalid reference format";
        free(low);
        return FL_EINVAL;
    }
    if (sp.name_n > 255) {
        *why = "repository name must not be more than 255 characters";
        return FL_EINVAL;
    }
    if (sp.digest && (*why = digest_verify(sp.digest, sp.digest_n)) != NULL)
        return FL_EINVAL;
    /* Karmada's own host split: the first component is a registry only when it looks
     * like one (has '.' or ':', or is "localhost"); "team/app" stays a path. */
    const char *slash = memchr(image, '/', sp.name_n);
    size_t first = slash ? (size_t)(slash - image) : 0;
    bool has_host = slash && (memchr(image, '.', first) || memchr(image, ':', first) ||
                              (first == 9 && memcmp(image, "localhost", 9) == 0));
    if (has_host) {
        ref->host = fl_strndup(image, first);
        ref->repo = fl_strndup(slash + 1, sp.name_n - first - 1);
    } else {
        ref->host = fl_strdup("");
        ref->repo = fl_strndup(image, sp.name_n);
    }
    ref->tag = sp.tag ? fl_strndup(sp.tag, sp.tag_n) : fl_strdup("");
    /* with both a tag and a digest, the parsed reference reports the tag only */
    ref->digest = sp.digest && !sp.tag ? fl_strndup(sp.digest, sp.digest_n) : fl_strdup("");
    return 0;
}

char *fl_image_ref_string(const fl_image_ref *ref)
{
    const char *sep = *ref->host ? "/" : "";
    if (*ref->tag)
        return fl_asprintf("%s%s%s:%s", ref->host, sep, ref->repo, ref->tag);
    if (*ref->digest)
        return fl_asprintf("%s%s%s@%s", ref->host, sep, ref->repo, ref->digest);
    return fl_asprintf("%s%s%s", ref->host, sep, ref->repo);
}

static void set_str(char **dst, char *v)
{
    free(*dst);
    *dst = v;
}

/* Karmada's SetTagOrDigest: a tag-shaped value becomes the tag, a digest-shaped one
 * the digest; anything else leaves the reference unchanged. */
static void set_tag_or_digest(fl_image_ref *r, const char *v)
{
    size_t n = strlen(v), alg;
    if (tag_ok(v, n)) {
        set_str(&r->tag, fl_strdup(v));
        set_str(&r->digest, fl_strdup(""));
    } else if (digest_pattern_ok(v, n, &alg)) {
        set_str(&r->digest, fl_strdup(v));
        set_str(&r->tag, fl_strdup(""));
    }
}

/* ================================================================== validation */

static const char OPS_ALL[] = "\"add\", \"remove\", \"replace\"";

static bool one_of(const char *s, const char *const *allowed)
{
    for (; *allowed; allowed++)
        if (strcmp(s, *allowed) == 0)
            return true;
    return false;
}

static int req_string(const json_t *item, const char *where, const char *field, const char **out, char **err)
{
    json_t *v = json_object_get(item, field);
    if (!v || json_is_null(v))
        return errf(err, "%s.%s: Required value", where, field);
    if (!json_is_string(v))
        return errf(err, "%s.%s: Invalid value: must be a string", where, field);
    if (strlen(json_string_value(v)) != json_string_length(v))
        return errf(err, "%s.%s: Invalid value: must not contain NUL", where, field);
    *out = json_string_value(v);
    return 0;
}

static int req_enum(const json_t *item, const char *where, const char *field, const char *const *allowed,
                    const char *allowed_text, char **err)
{
    const char *s = NULL;
    int rc = req_string(item, where, field, &s, err);
    if (rc == 0 && !one_of(s, allowed))
        rc = errf(err, "%s.%s: Unsupported value: \"%s\": supported values: %s", where, field, s, allowed_text);
    return rc;
}

static int req_pointer(const json_t *item, const char *where, const char *field, char **err)
{
    const char *s = NULL;
    int rc = req_string(item, where, field, &s, err);
    if (rc == 0 && *s && *s != '/')
        rc = errf(err, "%s.%s: Invalid value: \"%s\": JSON pointer must be empty or start with a \"/\"", where, field,
                  s);
    return rc;
}

static const char *const OPS3[] = {"add", "remove", "replace", NULL};
static const char *const OPS2[] = {"add", "remove", NULL};

static bool has_value(const json_t *item)
{
    json_t *v = json_object_get(item, "value");
    return v && !json_is_null(v);
}

static int check_plaintext(const json_t *it, const char *where, char **err)
{
    const char *s;
    int rc = req_string(it, where, "path", &s, err);
    if (rc == 0)
        rc = req_enum(it, where, "operator", OPS3, OPS_ALL, err);
    return rc;
}

static int check_image(const json_t *it, const char *where, char **err)
{
    static const char *const comps[] = {"Registry", "Repository", "Tag", NULL};
    json_t *pred = json_object_get(it, "predicate");
    int rc = 0;
    if (pred && !json_is_null(pred)) {
        if (!json_is_object(pred))
            return errf(err, "%s.predicate: Invalid value: must be an object with a path", where);
        char w[160];
        snprintf(w, sizeof w, "%s.predicate", where);
        rc = req_pointer(pred, w, "path", err);
    }
    if (rc == 0)
        rc = req_enum(it, where, "component", comps, "\"Registry\", \"Repository\", \"Tag\"", err);
    if (rc == 0)
        rc = req_enum(it, where, "operator", OPS3, OPS_ALL, err);
    json_t *v = json_object_get(it, "value");
    if (rc == 0 && v && !json_is_null(v) && !json_is_string(v))
        rc = errf(err, "%s.value: Invalid value: must be a string", where);
    return rc;
}

static int check_string_list(const json_t *v, const char *where, const char *field, char **err)
{
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_array(v))
        return errf(err, "%s.%s: Invalid value: must be a list of strings", where, field);
    for (size_t i = 0; i < json_array_size(v); i++)
        if (!json_is_string(json_array_get(v, i)))
            return errf(err, "%s.%s[%zu]: Invalid value: must be a string", where, field, i);
    return 0;
}

static int check_cmdargs(const json_t *it, const char *where, char **err)
{
    const char *s;
    int rc = req_string(it, where, "containerName", &s, err);
    if (rc == 0)
        rc = req_enum(it, where, "operator", OPS2, "\"add\", \"remove\"", err);
    if (rc == 0)
        rc = check_string_list(json_object_get(it, "value"), where, "value", err);
    return rc;
}

static int check_labels(const json_t *it, const char *where, char **err)
{
    int rc = req_enum(it, where, "operator", OPS3, OPS_ALL, err);
    if (rc)
        return rc;
    json_t *v = json_object_get(it, "value");
    if (!v || json_is_null(v))
        return errf(err, "%s.value: Required value", where);
    if (!json_is_object(v))
        return errf(err, "%s.value: Invalid value: must be an object of key: value strings", where);
    const char *k;
    json_t *x;
    json_object_foreach((json_t *)v, k, x) {
        if (!json_is_string(x))
            return errf(err, "%s.value[%s]: Invalid value: must be a string", where, k);
    }
    return 0;
}

static int check_subops(const json_t *list, const char *where, const char *field, char **err)
{
    if (!list || json_is_null(list))
        return 0;
    if (!json_is_array(list))
        return errf(err, "%s.%s: Invalid value: must be a list", where, field);
    for (size_t i = 0; i < json_array_size(list); i++) {
        json_t *op = json_array_get(list, i);
        char w[200];
        snprintf(w, sizeof w, "%s.%s[%zu]", where, field, i);
        if (!json_is_object(op))
            return errf(err, "%s: Invalid value: must be an object", w);
        int rc = req_pointer(op, w, "subPath", err);
        if (rc == 0)
            rc = req_enum(op, w, "operator", OPS3, OPS_ALL, err);
        if (rc)
            return rc;
        const char *o = json_string_value(json_object_get(op, "operator"));
        if (strcmp(o, "remove") != 0 && !has_value(op))
            return errf(err, "%s.value: Invalid value: value is required for add or replace operation", w);
        if (strcmp(o, "remove") == 0 && has_value(op))
            return errf(err, "%s.value: Invalid value: value is not allowed for remove operation", w);
    }
    return 0;
}

static size_t list_len(const json_t *v)
{
    return json_is_array(v) ? json_array_size(v) : 0;
}

static int check_field(const json_t *it, const char *where, char **err)
{
    int rc = req_pointer(it, where, "fieldPath", err);
    if (rc == 0)
        rc = check_subops(json_object_get(it, "json"), where, "json", err);
    if (rc == 0)
        rc = check_subops(json_object_get(it, "yaml"), where, "yaml", err);
    if (rc)
        return rc;
    size_t nj = list_len(json_object_get(it, "json")), ny = list_len(json_object_get(it, "yaml"));
    if (nj > 0 && ny > 0)
        return errf(err, "%s: Invalid value: FieldOverrider has both YAML and JSON set. Only one is allowed", where);
    if (nj == 0 && ny == 0)
        return errf(err, "%s: Required value: FieldOverrider must have either JSON or YAML set", where);
    return 0;
}

typedef int (*item_check_fn)(const json_t *item, const char *where, char **err);

static int check_list(const json_t *ovr, const char *name, item_check_fn fn, char **err)
{
    json_t *l = json_object_get(ovr, name);
    if (!l || json_is_null(l))
        return 0;
    if (!json_is_array(l))
        return errf(err, "%s: Invalid value: must be a list", name);
    for (size_t i = 0; i < json_array_size(l); i++) {
        char where[64];
        snprintf(where, sizeof where, "%s[%zu]", name, i);
        json_t *it = json_array_get(l, i);
        if (!json_is_object(it))
            return errf(err, "%s: Invalid value: must be an object", where);
        int rc = fn(it, where, err);
        if (rc)
            return rc;
    }
    return 0;
}

/* Karmada's application order; canonical (Go struct) order differs: see below. */
static const struct {
    const char *name;
    item_check_fn check;
} LISTS[] = {
    {"imageOverrider", check_image},     {"commandOverrider", check_cmdargs},
    {"argsOverrider", check_cmdargs},    {"labelsOverrider", check_labels},
    {"annotationsOverrider", check_labels}, {"fieldOverrider", check_field},
    {"plaintext", check_plaintext},
};

int fl_overriders_validate(const json_t *ovr, char **err)
{
    *err = NULL;
    if (!ovr || json_is_null(ovr))
        return 0;
    if (!json_is_object(ovr))
        return errf(err, "Invalid value: must be an object");
    for (size_t i = 0; i < sizeof LISTS / sizeof LISTS[0]; i++) {
        int rc = check_list(ovr, LISTS[i].name, LISTS[i].check, err);
        if (rc)
            return rc;
    }
    return 0;
}

/* =================================================================== canonical */

/* Copy of a JSON "value" the way Go renders apiextensionsv1.JSON: absent = null. */
static json_t *raw_value(const json_t *it)
{
    json_t *v = json_object_get(it, "value");
    return v ? fl_json_deep_copy(v) : json_null();
}

static json_t *sorted_copy(const json_t *v);

static json_t *canon_item(const char *list, const json_t *it)
{
    json_t *o = json_object();
    if (strcmp(list, "plaintext") == 0) {
        json_object_set(o, "path", json_object_get(it, "path"));
        json_object_set(o, "operator", json_object_get(it, "operator"));
        json_object_set_new(o, "value", raw_value(it));
    } else if (strcmp(list, "imageOverrider") == 0) {
        json_t *pred = json_object_get(it, "predicate");
        if (json_is_object(pred))
            json_object_set_new(o, "predicate", json_pack("{s:O}", "path", json_object_get(pred, "path")));
        json_object_set(o, "component", json_object_get(it, "component"));
        json_object_set(o, "operator", json_object_get(it, "operator"));
        json_t *v = json_object_get(it, "value");
        if (json_is_string(v) && json_string_length(v) > 0)
            json_object_set(o, "value", v);
    } else if (strcmp(list, "commandOverrider") == 0 || strcmp(list, "argsOverrider") == 0) {
        json_object_set(o, "containerName", json_object_get(it, "containerName"));
        json_object_set(o, "operator", json_object_get(it, "operator"));
        json_t *v = json_object_get(it, "value");
        if (list_len(v) > 0)
            json_object_set_new(o, "value", fl_json_deep_copy(v));
    } else if (strcmp(list, "labelsOverrider") == 0 || strcmp(list, "annotationsOverrider") == 0) {
        json_object_set(o, "operator", json_object_get(it, "operator"));
        json_object_set_new(o, "value", sorted_copy(json_object_get(it, "value"))); /* Go sorts map keys */
    } else { /* fieldOverrider */
        json_object_set(o, "fieldPath", json_object_get(it, "fieldPath"));
        static const char *const subs[] = {"json", "yaml"};
        for (size_t k = 0; k < 2; k++) {
            json_t *l = json_object_get(it, subs[k]);
            if (list_len(l) == 0)
                continue;
            json_t *arr = json_array();
            for (size_t i = 0; i < json_array_size(l); i++) {
                json_t *op = json_array_get(l, i);
                json_array_append_new(arr, json_pack("{s:O,s:O,s:o}", "subPath", json_object_get(op, "subPath"),
                                                     "operator", json_object_get(op, "operator"), "value",
                                                     raw_value(op)));
            }
            json_object_set_new(o, subs[k], arr);
        }
    }
    return o;
}

json_t *fl_overriders_canonical(const json_t *ovr)
{
    /* Go's field order for policyv1alpha1.Overriders; empty lists are omitted. */
    static const char *const order[] = {"plaintext",       "imageOverrider",       "commandOverrider",
                                        "argsOverrider",   "labelsOverrider",      "annotationsOverrider",
                                        "fieldOverrider"};
    json_t *out = json_object();
    for (size_t k = 0; k < sizeof order / sizeof order[0]; k++) {
        json_t *l = json_is_object(ovr) ? json_object_get(ovr, order[k]) : NULL;
        if (list_len(l) == 0)
            continue;
        json_t *arr = json_array();
        for (size_t i = 0; i < json_array_size(l); i++)
            json_array_append_new(arr, canon_item(order[k], json_array_get(l, i)));
        json_object_set_new(out, order[k], arr);
    }
    return out;
}

/* =================================================================== applying */

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Deep copy with every object's keys in byte order (Go's map encoding order). */
static json_t *sorted_copy(const json_t *v)
{
    if (json_is_array(v)) {
        json_t *a = json_array();
        for (size_t i = 0; i < json_array_size(v); i++)
            json_array_append_new(a, sorted_copy(json_array_get(v, i)));
        return a;
    }
    if (!json_is_object(v))
        return v ? fl_json_deep_copy(v) : json_null();
    size_t n = json_object_size(v), i = 0;
    const char **keys = fl_calloc(n ? n : 1, sizeof(*keys));
    const char *k;
    json_t *x;
    json_object_foreach((json_t *)v, k, x) keys[i++] = k;
    qsort(keys, n, sizeof(*keys), cmp_str);
    json_t *o = json_object();
    for (i = 0; i < n; i++)
        json_object_set_new(o, keys[i], sorted_copy(json_object_get(v, keys[i])));
    free(keys);
    return o;
}

/* The patch engine names the failing operation "op <i> (verb): ..."; our operations
 * are list[i] of the policy, so say that instead. */
static void patch_err(char **err, const char *list, const char *perr)
{
    const char *m = perr ? perr : "patch failed";
    size_t idx;
    int used = 0;
    if (sscanf(m, "op %zu%n", &idx, &used) == 1 && used > 0)
        errf(err, "%s[%zu]%s", list, idx, m + used);
    else
        errf(err, "%s: %s", list, m);
}

/* Where the pod spec lives for the workload kinds upstream's image, command and args
 * overriders know; NULL for any other kind (those overriders then do nothing). */
static const char *const *pod_spec_path(const json_t *doc)
{
    static const char *const pod[] = {"spec", NULL};
    static const char *const tmpl[] = {"spec", "template", "spec", NULL};
    const char *kind = json_string_value(json_object_get(doc, "kind"));
    if (!kind)
        return NULL;
    if (strcmp(kind, "Pod") == 0)
        return pod;
    if (strcmp(kind, "ReplicaSet") == 0 || strcmp(kind, "Deployment") == 0 || strcmp(kind, "DaemonSet") == 0 ||
        strcmp(kind, "StatefulSet") == 0 || strcmp(kind, "Job") == 0)
        return tmpl;
    return NULL;
}

/* The containers array of a workload: *out NULL when absent (nothing to do).
 * *dotted receives the path for messages, e.g. "spec.template.spec.containers". */
static int find_containers(json_t *doc, const char *const *path, json_t **out, char dotted[64], char **err)
{
    *out = NULL;
    dotted[0] = '\0';
    json_t *cur = doc;
    for (size_t i = 0; path[i]; i++) {
        if (i)
            strcat(dotted, ".");
        strcat(dotted, path[i]);
        json_t *next = json_object_get(cur, path[i]);
        if (!next || json_is_null(next))
            return 0;
        if (!json_is_object(next))
            return errf(err, "%s: Invalid value: must be an object", dotted);
        cur = next;
    }
    strcat(dotted, ".containers");
    json_t *c = json_object_get(cur, "containers");
    if (!c || json_is_null(c))
        return 0;
    if (!json_is_array(c))
        return errf(err, "%s: Invalid value: must be a list", dotted);
    for (size_t i = 0; i < json_array_size(c); i++)
        if (!json_is_object(json_array_get(c, i)))
            return errf(err, "%s[%zu]: Invalid value: must be an object", dotted, i);
    *out = c;
    return 0;
}

/* New image text for cur under one imageOverrider; FL_EINVAL with *why on a bad image. */
static int override_image(const char *cur, const json_t *it, char **out, const char **why)
{
    *out = NULL;
    fl_image_ref r;
    int rc = fl_image_ref_parse(cur, &r, why);
    if (rc)
        return rc;
    const char *comp = json_string_value(json_object_get(it, "component"));
    const char *op = json_string_value(json_object_get(it, "operator"));
    const char *val = json_string_value(json_object_get(it, "value"));
    if (!val)
        val = "";
    bool add = strcmp(op, "add") == 0, rep = strcmp(op, "replace") == 0;
    if (strcmp(comp, "Registry") == 0) {
        set_str(&r.host, add ? fl_asprintf("%s%s", r.host, val) : fl_strdup(rep ? val : ""));
    } else if (strcmp(comp, "Repository") == 0) {
        set_str(&r.repo, add ? fl_asprintf("%s%s", r.repo, val) : fl_strdup(rep ? val : ""));
    } else { /* Tag: tag and digest are one component */
        if (add) {
            char *v = fl_asprintf("%s%s", *r.tag ? r.tag : r.digest, val);
            set_tag_or_digest(&r, v);
            free(v);
        } else if (rep) {
            set_tag_or_digest(&r, val);
        } else if (*r.tag) {
            set_str(&r.tag, fl_strdup(""));
        } else {
            set_str(&r.digest, fl_strdup(""));
        }
    }
    *out = fl_image_ref_string(&r);
    fl_image_ref_close(&r);
    return 0;
}

/* Upstream's predicate walk: segments of the path trimmed of '/', objects by key, an
 * array consumes the next segment as its index; the last segment names a string. */
static int predicate_image(const json_t *doc, const char *path, const char **out, char **err)
{
    *out = NULL;
    size_t n = strlen(path);
    size_t b = 0, e = n;
    while (b < e && path[b] == '/')
        b++;
    while (e > b && path[e - 1] == '/')
        e--;
    /* split [b, e) on '/' */
    size_t nseg = 1;
    for (size_t i = b; i < e; i++)
        nseg += path[i] == '/';
    char **seg = fl_calloc(nseg, sizeof(*seg));
    size_t k = 0, start = b;
    for (size_t i = b; i <= e; i++)
        if (i == e || path[i] == '/') {
            seg[k++] = fl_strndup(path + start, i - start);
            start = i + 1;
        }
    int rc = 0;
    const json_t *cur = doc;
    for (size_t i = 0; i + 1 < nseg && rc == 0; i++) {
        json_t *v = json_object_get(cur, seg[i]);
        if (json_is_object(v)) {
            cur = v;
        } else if (json_is_array(v)) {
            char *end = NULL;
            long idx = strtol(seg[i + 1], &end, 10);
            if (!*seg[i + 1] || *end)
                rc = errf(err, "predicate.path: segment \"%s\" after list \"%s\" is not a number", seg[i + 1], seg[i]);
            else if (idx < 0 || (size_t)idx >= json_array_size(v) || !json_is_object(json_array_get(v, (size_t)idx)))
                rc = errf(err, "predicate.path: %s[%ld] is not an object in the manifest", seg[i], idx);
            else
                cur = json_array_get(v, (size_t)idx);
            i++;
        } else {
            rc = errf(err, "predicate.path: \"%s\" is not an object or list in the manifest", seg[i]);
        }
    }
    if (rc == 0) {
        json_t *v = json_object_get(cur, seg[nseg - 1]);
        if (!json_is_string(v))
            rc = errf(err, "predicate.path: %s does not name a string in the manifest", path);
        else
            *out = json_string_value(v);
    }
    for (k = 0; k < nseg; k++)
        free(seg[k]);
    free(seg);
    return rc;
}

static int apply_image(json_t **doc, const json_t *it, char **err)
{
    json_t *pred = json_object_get(it, "predicate");
    if (json_is_object(pred)) {
        const char *path = json_string_value(json_object_get(pred, "path"));
        const char *cur;
        int rc = predicate_image(*doc, path, &cur, err);
        if (rc)
            return rc;
        if (path[0] != '/')
            return errf(err, "predicate.path: Invalid value: \"%s\": must start with '/'", path);
        char *img;
        const char *why;
        if (override_image(cur, it, &img, &why))
            return errf(err, "predicate.path: invalid image \"%s\" at %s: %s", cur, path, why);
        json_t *ops = json_pack("[{s:s,s:s,s:s}]", "op", "replace", "path", path, "value", img);
        free(img);
        json_t *out = NULL;
        char *perr = NULL;
        rc = fl_patch_json(*doc, ops, &out, &perr);
        json_decref(ops);
        if (rc) {
            errf(err, "predicate.path: %s", perr ? perr : "patch failed");
            free(perr);
            return FL_EINVAL;
        }
        json_decref(*doc);
        *doc = out;
        return 0;
    }
    const char *const *path = pod_spec_path(*doc);
    if (!path)
        return 0;
    json_t *cs;
    char dotted[64];
    int rc = find_containers(*doc, path, &cs, dotted, err);
    for (size_t i = 0; rc == 0 && cs && i < json_array_size(cs); i++) {
        json_t *c = json_array_get(cs, i);
        json_t *iv = json_object_get(c, "image");
        if (iv && !json_is_null(iv) && !json_is_string(iv))
            return errf(err, "%s[%zu].image: Invalid value: must be a string", dotted, i);
        const char *cur = json_is_string(iv) ? json_string_value(iv) : "";
        char *img;
        const char *why;
        if (override_image(cur, it, &img, &why))
            return errf(err, "%s[%zu].image: invalid image \"%s\": %s", dotted, i, cur, why);
        json_object_set_new(c, "image", json_string(img));
        free(img);
    }
    return rc;
}

static bool list_has(const json_t *l, const char *s)
{
    for (size_t i = 0; i < list_len(l); i++)
        if (strcmp(json_string_value(json_array_get(l, i)), s) == 0)
            return true;
    return false;
}

static int apply_cmdargs(json_t **doc, const char *target, const json_t *it, char **err)
{
    const char *const *path = pod_spec_path(*doc);
    if (!path)
        return 0;
    json_t *cs;
    char dotted[64];
    int rc = find_containers(*doc, path, &cs, dotted, err);
    if (rc || !cs)
        return rc;
    const char *name = json_string_value(json_object_get(it, "containerName"));
    bool add = strcmp(json_string_value(json_object_get(it, "operator")), "add") == 0;
    json_t *vals = json_object_get(it, "value");
    for (size_t i = 0; i < json_array_size(cs); i++) {
        json_t *c = json_array_get(cs, i);
        json_t *cn = json_object_get(c, "name");
        if (!json_is_string(cn) || strcmp(json_string_value(cn), name) != 0)
            continue; /* every container of that name, as upstream */
        json_t *cur = json_object_get(c, target);
        if (cur && !json_is_null(cur)) {
            if (!json_is_array(cur))
                return errf(err, "%s[%zu].%s: Invalid value: must be a list of strings", dotted, i, target);
            for (size_t j = 0; j < json_array_size(cur); j++)
                if (!json_is_string(json_array_get(cur, j)))
                    return errf(err, "%s[%zu].%s[%zu]: Invalid value: must be a string", dotted, i, target, j);
        }
        json_t *next = json_array();
        for (size_t j = 0; j < list_len(cur); j++) {
            json_t *v = json_array_get(cur, j);
            if (add || !list_has(vals, json_string_value(v)))
                json_array_append(next, v);
        }
        for (size_t j = 0; add && j < list_len(vals); j++)
            json_array_append_new(next, json_string(json_string_value(json_array_get(vals, j))));
        /* a missing list is created even by remove (empty), as upstream's add of [] does */
        json_object_set_new(c, target, next);
    }
    return 0;
}

static int apply_labels(json_t **doc, const char *field, const json_t *it, char **err)
{
    const char *op = json_string_value(json_object_get(it, "operator"));
    json_t *vals = json_object_get(it, "value");
    bool add = strcmp(op, "add") == 0, rep = strcmp(op, "replace") == 0;
    json_t *md = json_object_get(*doc, "metadata");
    if (md && !json_is_null(md) && !json_is_object(md))
        return errf(err, "metadata: Invalid value: must be an object");
    json_t *m = json_is_object(md) ? json_object_get(md, field) : NULL;
    if (m && !json_is_null(m)) {
        bool ok = json_is_object(m);
        const char *k;
        json_t *x;
        json_object_foreach(m, k, x) ok = ok && json_is_string(x);
        if (!ok)
            return errf(err, "metadata.%s: Invalid value: must be an object of key: value strings", field);
    } else {
        m = NULL;
    }
    if (json_object_size(vals) == 0)
        return 0;
    if (add && !m) {
        if (!json_is_object(md)) {
            md = json_object();
            json_object_set_new(*doc, "metadata", md);
        }
        m = json_object();
        json_object_set_new(md, field, m);
    }
    if (!m)
        return 0;
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)vals, k, v) {
        bool exists = json_object_get(m, k) != NULL;
        if (add || (rep && exists))
            json_object_set_new(m, k, json_string(json_string_value(v)));
        else if (!add && !rep && exists)
            json_object_del(m, k);
    }
    return 0;
}

/* RFC 6901 lookup of fieldPath: the parent container and the token to set. */
static int field_locate(json_t *doc, const char *ptr, json_t **parent, char **token, json_t **value, char **err)
{
    *parent = NULL;
    *token = NULL;
    *value = NULL;
    if (!*ptr) {
        *value = doc;
        return 0;
    }
    json_t *cur = doc;
    const char *p = ptr + 1;
    for (;;) {
        const char *slash = strchr(p, '/');
        size_t n = slash ? (size_t)(slash - p) : strlen(p);
        /* unescape ~1 then ~0, as the pointer library does */
        char *tok = fl_malloc(n + 1);
        size_t o = 0;
        for (size_t i = 0; i < n; i++) {
            if (p[i] == '~' && i + 1 < n && (p[i + 1] == '1' || p[i + 1] == '0')) {
                tok[o++] = p[i + 1] == '1' ? '/' : '~';
                i++;
            } else {
                tok[o++] = p[i];
            }
        }
        tok[o] = '\0';
        json_t *next = NULL;
        if (json_is_object(cur)) {
            next = json_object_get(cur, tok);
        } else if (json_is_array(cur)) {
            char *end = NULL;
            long idx = strtol(tok, &end, 10);
            if (*tok && !*end && idx >= 0 && (size_t)idx < json_array_size(cur))
                next = json_array_get(cur, (size_t)idx);
        }
        if (!next) {
            free(tok);
            return errf(err, "fieldPath: %s not found in the manifest", ptr);
        }
        if (!slash) {
            *parent = cur;
            *token = tok;
            *value = next;
            return 0;
        }
        free(tok);
        cur = next;
        p = slash + 1;
    }
}

static int apply_field(json_t **doc, const json_t *it, char **err)
{
    const char *ptr = json_string_value(json_object_get(it, "fieldPath"));
    json_t *parent, *value;
    char *token;
    int rc = field_locate(*doc, ptr, &parent, &token, &value, err);
    if (rc)
        return rc;
    json_t *data = NULL, *ops = NULL, *out = NULL;
    char *text = NULL, *perr = NULL;
    if (!json_is_string(value)) {
        rc = errf(err, "fieldPath: the value at %s is not a string", ptr);
        goto done;
    }
    bool yaml = list_len(json_object_get(it, "yaml")) > 0;
    const json_t *list = json_object_get(it, yaml ? "yaml" : "json");
    if (yaml) {
        rc = fl_yaml_parse(json_string_value(value), json_string_length(value), &data, &perr);
    } else {
        json_error_t je;
        data = json_loadb(json_string_value(value), json_string_length(value), JSON_DECODE_ANY, &je);
        if (!data) {
            perr = fl_asprintf("line %d, column %d: %s", je.line, je.column, je.text);
            rc = FL_EINVAL;
        }
    }
    if (rc) {
        rc = errf(err, "fieldPath: the %s at %s does not parse: %s", yaml ? "YAML" : "JSON", ptr,
                  perr ? perr : "invalid");
        goto done;
    }
    ops = json_array();
    for (size_t i = 0; i < json_array_size(list); i++) {
        json_t *op = json_array_get(list, i);
        json_array_append_new(ops, json_pack("{s:O,s:O,s:o}", "op", json_object_get(op, "operator"), "path",
                                             json_object_get(op, "subPath"), "value", raw_value(op)));
    }
    rc = fl_patch_json(data, ops, &out, &perr);
    if (rc) {
        patch_err(err, yaml ? "yaml" : "json", perr);
        goto done;
    }
    if (yaml) {
        json_t *sorted = sorted_copy(out);
        text = fl_yaml_dump(sorted);
        json_decref(sorted);
    } else {
        text = fl_json_dumps(out, NULL);
    }
    if (!parent) {
        rc = errf(err, "fieldPath: the manifest itself is not a string");
        goto done;
    }
    if (json_is_object(parent)) {
        json_object_set_new(parent, token, json_string(text));
    } else {
        json_array_set_new(parent, (size_t)strtol(token, NULL, 10), json_string(text));
    }
done:
    free(token);
    free(perr);
    free(text);
    json_decref(data);
    json_decref(ops);
    json_decref(out);
    return rc;
}

static int apply_plaintext(json_t **doc, const json_t *list, char **err)
{
    if (list_len(list) == 0)
        return 0;
    json_t *ops = json_array();
    for (size_t i = 0; i < json_array_size(list); i++) {
        json_t *it = json_array_get(list, i);
        json_array_append_new(ops, json_pack("{s:O,s:O,s:o}", "op", json_object_get(it, "operator"), "path",
                                             json_object_get(it, "path"), "value", raw_value(it)));
    }
    json_t *out = NULL;
    char *perr = NULL;
    int rc = fl_patch_json(*doc, ops, &out, &perr);
    json_decref(ops);
    if (rc) {
        patch_err(err, "plaintext", perr);
        free(perr);
        return FL_EINVAL;
    }
    json_decref(*doc);
    *doc = out;
    return 0;
}

int fl_overriders_apply(json_t **doc, const json_t *ovr, char **err)
{
    *err = NULL;
    if (!json_is_object(ovr))
        return 0;
    for (size_t k = 0; k < sizeof LISTS / sizeof LISTS[0]; k++) {
        const char *name = LISTS[k].name;
        json_t *l = json_object_get(ovr, name);
        if (strcmp(name, "plaintext") == 0) {
            int rc = apply_plaintext(doc, l, err);
            if (rc)
                return rc;
            continue;
        }
        for (size_t i = 0; i < list_len(l); i++) {
            json_t *it = json_array_get(l, i);
            int rc;
            if (strcmp(name, "imageOverrider") == 0)
                rc = apply_image(doc, it, err);
            else if (strcmp(name, "commandOverrider") == 0)
                rc = apply_cmdargs(doc, "command", it, err);
            else if (strcmp(name, "argsOverrider") == 0)
                rc = apply_cmdargs(doc, "args", it, err);
            else if (strcmp(name, "labelsOverrider") == 0)
                rc = apply_labels(doc, "labels", it, err);
            else if (strcmp(name, "annotationsOverrider") == 0)
                rc = apply_labels(doc, "annotations", it, err);
            else
                rc = apply_field(doc, it, err);
            if (rc) {
                char *inner = *err;
                *err = fl_asprintf("%s[%zu]: %s", name, i, inner ? inner : "failed");
                free(inner);
                return rc;
            }
        }
    }
    return 0;
}
