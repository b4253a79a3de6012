/* fuzz_audit_policy.c - libFuzzer target for the audit Policy parser (src/api/audit_policy.c),
 * which reads a file the operator hands the server (--audit-policy-file).
 *
 * What the parser promises, checked here:
 *   - it returns 0 with a policy of at least one rule, or FL_EINVAL with no policy and a
 *     non-empty message; nothing else;
 *   - a policy that parses can be asked about requests of every shape (resource requests with
 *     and without subresources and names, cluster-scoped ones, non-resource paths, no user)
 *     and answers a level and stages within their ranges;
 *   - parsing the same bytes again gives the same answers (no state kept between parses).
 * The seeds (corpus/audit_policy) are kube-apiserver's documented example policy, a JSON one,
 * and policies with each kind of field error. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "api/audit_policy.h"
#include "core/err.h"

static const fl_auth_attrs *requests(const fl_identity *who, size_t *n)
{
    static fl_auth_attrs at[6];
    at[0] = (fl_auth_attrs){.who = who, .verb = "get", .group = "", .resource = "pods", .subresource = "log",
                            .ns = "default", .name = "p"};
    at[1] = (fl_auth_attrs){.who = who, .verb = "list", .group = "apps", .resource = "deployments",
                            .subresource = "", .ns = "kube-system", .name = ""};
    at[2] = (fl_auth_attrs){.who = who, .verb = "create", .group = "", .resource = "namespaces", .subresource = "",
                            .ns = "", .name = "x"};
    at[3] = (fl_auth_attrs){.who = who, .verb = "get", .path = "/apis/apps/v1"};
    at[4] = (fl_auth_attrs){.who = NULL, .verb = "post", .path = "/"};
    at[5] = (fl_auth_attrs){.who = who, .verb = "update", .group = "apps", .resource = "deployments",
                            .subresource = "scale", .ns = "a", .name = "d"};
    *n = 6;
    return at;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fl_audit_policy *p = NULL;
    char *err = NULL;
    int rc = fl_audit_policy_parse((const char *)data, size, &p, &err);
    if (rc != 0) {
        if (rc != FL_EINVAL || p || !err || !err[0])
            abort();
        free(err);
        return 0;
    }
    if (!p || err || fl_audit_policy_rules(p) == 0)
        abort();
    fl_identity who;
    fl_identity_set(&who, "alice", "u1");
    fl_identity_add_group(&who, "system:authenticated");
    fl_identity_add_group(&who, "ops");
    fl_audit_policy *again = NULL;
    if (fl_audit_policy_parse((const char *)data, size, &again, &err) != 0)
        abort();
    size_t n;
    const fl_auth_attrs *at = requests(&who, &n);
    for (size_t i = 0; i < n; i++) {
        fl_audit_decision a = fl_audit_policy_decide(p, &at[i]), b = fl_audit_policy_decide(again, &at[i]);
        if (a.level > FL_AUDIT_REQUEST_RESPONSE || a.omit_stages > 0xf)
            abort();
        if (a.level != b.level || a.omit_stages != b.omit_stages || a.omit_managed_fields != b.omit_managed_fields)
            abort();
    }
    fl_audit_policy_free(again);
    fl_audit_policy_free(p);
    return 0;
}
