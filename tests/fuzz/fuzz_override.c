/* fuzz_override.c - libFuzzer target for the policy library (src/policy/): override
 * application, cluster affinity and resource selectors.
 *
 * The input is up to three JSON documents separated by NUL bytes or "\n---\n":
 *   1. the policies: an array of policy objects; or one object with a "kind"; or,
 *      so that short inputs reach the overriders, a bare Overriders object that is
 *      wrapped into a ClusterOverridePolicy with one rule;
 *   2. the manifest (object; apiVersion, kind and metadata are filled in when
 *      missing so selectors and workload kinds can be reached);
 *   3. optionally the Cluster (default: one with labels, provider, region, zones).
 * Checked: no crash, no leak (ASan), and the contracts:
 *   - failure returns FL_EINVAL with a message and no applied list, and leaves the
 *     manifest exactly as it was; success returns an array and no message;
 *   - the applied list always renders into the two annotations;
 *   - the policies, cluster and manifest documents are never modified except the
 *     manifest on success;
 *   - each policy's targetCluster/affinity and selectors are also run through the
 *     matchers directly, and a failing matcher always says why. */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/err.h"
#include "policy/cluster_affinity.h"
#include "policy/override.h"
#include "policy/resource_selector.h"

static const char DEFAULT_CLUSTER[] =
    "{\"apiVersion\":\"cluster.karmada.io/v1alpha1\",\"kind\":\"Cluster\",\"metadata\":{\"name\":\"m1\","
    "\"labels\":{\"env\":\"prod\"}},\"spec\":{\"provider\":\"aws\",\"region\":\"r1\",\"zones\":[\"z1\",\"z2\"]}}";

/* Split data into up to 3 parts on NUL or "\n---\n". */
static size_t split(const char *s, size_t n, const char *part[3], size_t len[3])
{
    size_t k = 0;
    while (k < 3) {
        part[k] = s;
        if (k == 2) {
            len[k++] = n;
            break;
        }
        const char *nul = memchr(s, '\0', n);
        const char *sep = memmem(s, n, "\n---\n", 5);
        const char *cut = nul && (!sep || nul < sep) ? nul : sep;
        if (!cut) {
            len[k++] = n;
            break;
        }
        len[k++] = (size_t)(cut - s);
        size_t skip = cut == nul ? 1 : 5;
        n -= (size_t)(cut - s) + skip;
        s = cut + skip;
    }
    return k;
}

static void check(int rc, const char *err)
{
    if (rc == 0 ? err != NULL : (rc != FL_EINVAL || err == NULL))
        abort();
}

static json_t *as_policies(json_t *doc)
{
    if (json_is_array(doc))
        return json_incref(doc);
    if (json_is_object(doc) && json_object_get(doc, "kind"))
        return json_pack("[O]", doc);
    return json_pack("[{s:s,s:{s:s},s:{s:[{s:O}]}}]", "kind", "ClusterOverridePolicy", "metadata", "name", "f", "spec",
                     "overrideRules", "overriders", doc ? doc : json_null());
}

static void fill_manifest(json_t *m)
{
    if (!json_is_object(m))
        return;
    if (!json_object_get(m, "apiVersion"))
        json_object_set_new(m, "apiVersion", json_string("apps/v1"));
    if (!json_object_get(m, "kind"))
        json_object_set_new(m, "kind", json_string("Deployment"));
    if (!json_object_get(m, "metadata"))
        json_object_set_new(m, "metadata", json_pack("{s:s,s:s}", "name", "f", "namespace", "default"));
}

static void run_matchers(const json_t *policies, const json_t *manifest, const json_t *cluster)
{
    for (size_t i = 0; i < json_array_size(policies); i++) {
        const json_t *p = json_array_get(policies, i);
        const json_t *spec = json_object_get(p, "spec");
        bool m = false;
        char *err = NULL;
        int rc = fl_policy_cluster_affinity_match(json_object_get(spec, "targetCluster"), cluster, &m, &err);
        check(rc, err);
        free(err);
        const json_t *rules = json_object_get(spec, "overrideRules");
        for (size_t r = 0; r < json_array_size(rules); r++) {
            err = NULL;
            rc = fl_policy_cluster_affinity_match(json_object_get(json_array_get(rules, r), "targetCluster"), cluster,
                                                  &m, &err);
            check(rc, err);
            free(err);
        }
        fl_policy_match_level level;
        err = NULL;
        rc = fl_policy_match_level_of(p, manifest, &level, &err);
        check(rc, err);
        if (rc && level != FL_POLICY_MATCH_NONE)
            abort();
        free(err);
        bool may;
        err = NULL;
        rc = fl_policy_may_preempt(p, json_array_get(policies, 0), manifest, &may, &err);
        check(rc, err);
        free(err);
    }
    const json_t *w = NULL;
    char *err = NULL;
    int rc = fl_policy_select(manifest, policies, &w, NULL, &err);
    check(rc, err);
    if (rc && w)
        abort();
    free(err);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *part[3] = {0};
    size_t len[3] = {0};
    size_t k = split((const char *)data, size, part, len);
    if (k < 2)
        return 0;
    json_t *pdoc = json_loadb(part[0], len[0], JSON_DECODE_ANY, NULL);
    json_t *manifest = json_loadb(part[1], len[1], JSON_DECODE_ANY, NULL);
    json_t *cluster = k == 3 ? json_loadb(part[2], len[2], JSON_DECODE_ANY, NULL)
                             : json_loads(DEFAULT_CLUSTER, 0, NULL);
    if (!pdoc || !manifest || !cluster)
        goto out;
    json_t *policies = as_policies(pdoc);
    fill_manifest(manifest);
    json_t *pol_copy = json_deep_copy(policies), *cl_copy = json_deep_copy(cluster);
    json_t *before = json_deep_copy(manifest);

    run_matchers(policies, manifest, cluster);

    json_t *applied = NULL;
    char *err = NULL;
    int rc = json_is_object(manifest) ? fl_override_apply(manifest, cluster, policies, &applied, &err) : -100;
    if (rc != -100) {
        check(rc, err);
        if (rc == 0) {
            if (!json_is_array(applied) || !json_is_object(manifest))
                abort();
            char *cops = NULL, *ops = NULL, *aerr = NULL;
            if (fl_override_annotations(applied, &cops, &ops, &aerr) != 0 || aerr)
                abort();
            free(cops);
            free(ops);
        } else if (applied || !json_equal(before, manifest)) {
            abort(); /* a failure must not touch the manifest */
        }
    }
    if (!json_equal(policies, pol_copy) || !json_equal(cluster, cl_copy))
        abort();
    free(err);
    json_decref(applied);
    json_decref(before);
    json_decref(pol_copy);
    json_decref(cl_copy);
    json_decref(policies);
out:
    json_decref(pdoc);
    json_decref(manifest);
    json_decref(cluster);
    return 0;
}
