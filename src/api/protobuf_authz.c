/* protobuf_authz.c - message tables for authorization.k8s.io/v1's reviews, which kubectl
 * (`kubectl auth can-i`) sends as protobuf. Written by hand beside the generated
 * protobuf_schema.c: the reviews are no stored kind, and these few messages are all
 * strings, string lists and one map. Field numbers and JSON names as upstream's
 * k8s.io/api/authorization/v1 (generated.proto, types.go). metadata (field 1) and status
 * (field 3) are not listed: a request carries nothing there that the server reads, and
 * unknown fields are skipped. */
#include "api/protobuf.h"

#define OE FL_PBF_OMITEMPTY

static const fl_pb_field F_ExtraValue[] = {{1, "items", FL_PB_STRING, FL_PBF_REPEATED, NULL}};
static const fl_pb_msg M_ExtraValue = {"ExtraValue", FL_PB_SP_NONE, F_ExtraValue, 1};

static const fl_pb_field F_ResourceAttributes[] = {
    {1, "namespace", FL_PB_STRING, OE, NULL},   {2, "verb", FL_PB_STRING, OE, NULL},
    {3, "group", FL_PB_STRING, OE, NULL},       {4, "version", FL_PB_STRING, OE, NULL},
    {5, "resource", FL_PB_STRING, OE, NULL},    {6, "subresource", FL_PB_STRING, OE, NULL},
    {7, "name", FL_PB_STRING, OE, NULL},
};
static const fl_pb_msg M_ResourceAttributes = {"ResourceAttributes", FL_PB_SP_NONE, F_ResourceAttributes, 7};

static const fl_pb_field F_NonResourceAttributes[] = {
    {1, "path", FL_PB_STRING, OE, NULL},
    {2, "verb", FL_PB_STRING, OE, NULL},
};
static const fl_pb_msg M_NonResourceAttributes = {"NonResourceAttributes", FL_PB_SP_NONE, F_NonResourceAttributes, 2};

static const fl_pb_field F_SelfSubjectAccessReviewSpec[] = {
    {1, "resourceAttributes", FL_PB_MESSAGE, OE | FL_PBF_POINTER, &M_ResourceAttributes},
    {2, "nonResourceAttributes", FL_PB_MESSAGE, OE | FL_PBF_POINTER, &M_NonResourceAttributes},
};
static const fl_pb_msg M_SelfSubjectAccessReviewSpec = {"SelfSubjectAccessReviewSpec", FL_PB_SP_NONE,
                                                        F_SelfSubjectAccessReviewSpec, 2};

static const fl_pb_field F_SubjectAccessReviewSpec[] = {
    {1, "resourceAttributes", FL_PB_MESSAGE, OE | FL_PBF_POINTER, &M_ResourceAttributes},
    {2, "nonResourceAttributes", FL_PB_MESSAGE, OE | FL_PBF_POINTER, &M_NonResourceAttributes},
    {3, "user", FL_PB_STRING, OE, NULL},
    {4, "groups", FL_PB_STRING, FL_PBF_REPEATED | OE, NULL},
    {5, "extra", FL_PB_MESSAGE, FL_PBF_MAP | OE, &M_ExtraValue},
    {6, "uid", FL_PB_STRING, OE, NULL},
};
static const fl_pb_msg M_SubjectAccessReviewSpec = {"SubjectAccessReviewSpec", FL_PB_SP_NONE,
                                                    F_SubjectAccessReviewSpec, 6};

static const fl_pb_field F_SelfSubjectRulesReviewSpec[] = {{1, "namespace", FL_PB_STRING, OE, NULL}};
static const fl_pb_msg M_SelfSubjectRulesReviewSpec = {"SelfSubjectRulesReviewSpec", FL_PB_SP_NONE,
                                                       F_SelfSubjectRulesReviewSpec, 1};

static const fl_pb_field F_SelfSubjectAccessReview[] = {{2, "spec", FL_PB_MESSAGE, 0, &M_SelfSubjectAccessReviewSpec}};
static const fl_pb_msg M_SelfSubjectAccessReview = {"SelfSubjectAccessReview", FL_PB_SP_NONE,
                                                    F_SelfSubjectAccessReview, 1};
static const fl_pb_field F_SubjectAccessReview[] = {{2, "spec", FL_PB_MESSAGE, 0, &M_SubjectAccessReviewSpec}};
static const fl_pb_msg M_SubjectAccessReview = {"SubjectAccessReview", FL_PB_SP_NONE, F_SubjectAccessReview, 1};
static const fl_pb_field F_SelfSubjectRulesReview[] = {{2, "spec", FL_PB_MESSAGE, 0, &M_SelfSubjectRulesReviewSpec}};
static const fl_pb_msg M_SelfSubjectRulesReview = {"SelfSubjectRulesReview", FL_PB_SP_NONE, F_SelfSubjectRulesReview,
                                                   1};

#define AUTHZ "authorization.k8s.io/v1"

const fl_pb_kind fl_pb_authz_kinds[] = {
    {AUTHZ, "SelfSubjectAccessReview", &M_SelfSubjectAccessReview},
    {AUTHZ, "SubjectAccessReview", &M_SubjectAccessReview},
    {AUTHZ, "LocalSubjectAccessReview", &M_SubjectAccessReview},
    {AUTHZ, "SelfSubjectRulesReview", &M_SelfSubjectRulesReview},
};
const size_t fl_pb_authz_nkinds = sizeof fl_pb_authz_kinds / sizeof *fl_pb_authz_kinds;
