/* audit_policy.h - kube-apiserver's audit Policy (audit.k8s.io/v1): read, checked, and asked
 * which level a request is logged at.
 *
 * A policy is an ordered list of rules; the first rule that matches a request decides its
 * level (None, Metadata, Request, RequestResponse) and the stages left out; no match means
 * None, as kube-apiserver. A rule matches when every list it sets matches (an empty list
 * matches anything): users (the user name), userGroups (any of the user's groups), verbs,
 * and then either namespaces and resources (resource requests only; "" is the namespace of
 * cluster-scoped objects; "pods/log" names a subresource, "*" any resource, "*\/scale" a
 * subresource of any resource, "deployments/\*" a resource and all its subresources;
 * resourceNames narrows to names) or nonResourceURLs (other requests only; "*" anything, a
 * trailing "*" a prefix). audit.c decides what each level writes; this file only decides.
 *
 * Pure functions over the policy, which is read-only once parsed: any thread. */
#ifndef FL_AUDIT_POLICY_H
#define FL_AUDIT_POLICY_H

#include <stdbool.h>
#include <stddef.h>

#include "api/auth.h"

/* Levels in increasing order of what they write. */
typedef enum fl_audit_level {
    FL_AUDIT_NONE = 0,        /* nothing */
    FL_AUDIT_METADATA,        /* who, what, when, the outcome; no bodies */
    FL_AUDIT_REQUEST,         /* and the request's body */
    FL_AUDIT_REQUEST_RESPONSE /* and the response's body */
} fl_audit_level;

/* Stages, as bits (omitStages). */
enum {
    FL_AUDIT_STAGE_RECEIVED = 1 << 0, /* RequestReceived */
    FL_AUDIT_STAGE_STARTED = 1 << 1,  /* ResponseStarted: long-running requests (watches) */
    FL_AUDIT_STAGE_COMPLETE = 1 << 2, /* ResponseComplete */
    FL_AUDIT_STAGE_PANIC = 1 << 3     /* Panic: accepted in a policy, never written */
};

typedef struct fl_audit_policy fl_audit_policy;

/* What the policy decided for one request. */
typedef struct fl_audit_decision {
    fl_audit_level level;
    unsigned omit_stages;    /* FL_AUDIT_STAGE_* bits: the rule's and the policy's */
    bool omit_managed_fields; /* the rule's omitManagedFields, else the policy's */
} fl_audit_decision;

/* Parse a Policy from YAML or JSON (buf, len bytes). apiVersion audit.k8s.io/v1 (v1beta1 and
 * v1alpha1 are accepted too, as kube-apiserver still does), kind Policy, at least one rule.
 * Unknown fields are ignored, as kube-apiserver's decoder does. On success *out is the policy
 * (free with fl_audit_policy_free) and 0 is returned; otherwise *out is NULL, *err a heap
 * message naming the line and column (YAML that does not parse) or the field ("rules[2].level:
 * Unsupported value: ...") and FL_EINVAL is returned. */
int fl_audit_policy_parse(const char *buf, size_t len, fl_audit_policy **out, char **err);
/* fl_audit_policy_parse of a file; *err then begins with the file's name. */
int fl_audit_policy_load(const char *path, fl_audit_policy **out, char **err);
/* NULL-safe. */
void fl_audit_policy_free(fl_audit_policy *p);
/* How many rules p holds. */
size_t fl_audit_policy_rules(const fl_audit_policy *p);

/* The level for a request, from the first rule that matches at (see fl_auth_attrs: path NULL
 * for a resource request; who NULL matches no rule that names users or groups). */
fl_audit_decision fl_audit_policy_decide(const fl_audit_policy *p, const fl_auth_attrs *at);

/* "None", "Metadata", "Request", "RequestResponse". */
const char *fl_audit_level_name(fl_audit_level l);

#endif
