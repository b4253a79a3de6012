/* test_validate.c - structural type checks, ObjectMeta rules and the Karmada/CRD kind
 * validators (src/api/validate.c, src/api/validate_karmada.c).
 *
 * Kinds are built here rather than taken from the kind table, so these tests pin the
 * validators alone. JSON is written with single quotes for readability; obj() turns
 * them into double quotes before parsing (no test value contains a quote). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "api/validate.h"
#include "core/err.h"

/* ---------------------------------------------------------------------------------
 * Kinds under test.
 */
static const fl_kind configmap_kind = {.group = "", .version = "v1", .kind = "ConfigMap", .namespaced = true};
static const fl_kind namespace_kind = {
    .group = "", .version = "v1", .kind = "Namespace", .validate = fl_validate_namespace};
static const fl_kind service_kind = {.group = "", .version = "v1", .kind = "Service", .namespaced = true};
static const fl_kind pp_kind = {.group = "policy.karmada.io", .version = "v1alpha1", .kind = "PropagationPolicy",
                                .namespaced = true, .validate = fl_validate_propagation_policy};
static const fl_kind cpp_kind = {.group = "policy.karmada.io", .version = "v1alpha1",
                                 .kind = "ClusterPropagationPolicy", .validate = fl_validate_propagation_policy};
static const fl_kind op_kind = {.group = "policy.karmada.io", .version = "v1alpha1", .kind = "OverridePolicy",
                                .namespaced = true, .validate = fl_validate_override_policy};
static const fl_kind cluster_kind = {.group = "cluster.karmada.io", .version = "v1alpha1", .kind = "Cluster",
                                     .validate = fl_validate_cluster};
static const fl_kind rb_kind = {.group = "work.karmada.io", .version = "v1alpha2", .kind = "ResourceBinding",
                                .namespaced = true, .validate = fl_validate_resource_binding};
static const fl_kind work_kind = {.group = "work.karmada.io", .version = "v1alpha1", .kind = "Work",
                                  .namespaced = true, .validate = fl_validate_work};
static const fl_kind crd_kind = {.group = "apiextensions.k8s.io", .version = "v1",
                                 .kind = "CustomResourceDefinition", .validate = fl_validate_crd};
static const fl_kind ric_kind = {.group = "config.karmada.io", .version = "v1alpha1",
                                 .kind = "ResourceInterpreterCustomization", .validate = fl_validate_interpreter_customization};

/* A Deployment-shaped field table with a shared sub-table, as kinds_builtin.c uses them. */
static const fl_field container_fields[] = {
    {"name", FL_F_STRING},
    {"image", FL_F_STRING},
    {"ports", FL_F_ARRAY},
    {"ports.containerPort", FL_F_INT},
    {"resources.limits", FL_F_OBJECT},
    {NULL},
};
static const fl_field deploy_fields[] = {
    {"spec", FL_F_OBJECT},
    {"spec.replicas", FL_F_INT},
    {"spec.paused", FL_F_BOOL},
    {"spec.selector.matchLabels", FL_F_MAPSTR},
    {"spec.strategy.rollingUpdate.maxSurge", FL_F_INTORSTR},
    {"spec.template.spec.containers", FL_F_ARRAY, "name", "merge", container_fields},
    {"spec.template.spec.overhead.cpu", FL_F_QUANTITY},
    {"status.replicas", FL_F_INT},
    {NULL},
};
static const fl_kind deploy_kind = {.group = "apps", .version = "v1", .kind = "Deployment", .namespaced = true,
                                    .fields = deploy_fields};

/* ---------------------------------------------------------------------------------
 * Helpers.
 */
static json_t *obj(const char *fmt, ...)
{
    char buf[8192];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    for (char *p = buf; *p; p++)
        if (*p == '\'')
            *p = '"';
    json_error_t err;
    json_t *v = json_loads(buf, 0, &err);
    if (!v)
        fail_msg("bad test JSON: %s (line %d col %d): %s", err.text, err.line, err.column, buf);
    return v;
}

/* Validate for create (old_text NULL) or update; returns the causes (new reference). */
static json_t *run(const fl_kind *k, json_t *o, const char *old_text)
{
    json_t *causes = json_array();
    json_t *old = old_text ? obj("%s", old_text) : NULL;
    int n = fl_validate_object(k, o, old, causes);
    assert_int_equal(n, (int)json_array_size(causes));
    json_decref(old);
    json_decref(o);
    return causes;
}

static const json_t *find_cause(const json_t *causes, const char *field, const char *reason)
{
    size_t i;
    json_t *c;
    json_array_foreach(causes, i, c) {
        if (!strcmp(json_string_value(json_object_get(c, "field")), field) &&
            (!reason || !strcmp(json_string_value(json_object_get(c, "reason")), reason)))
            return c;
    }
    return NULL;
}

static void dump(const json_t *causes)
{
    char *s = json_dumps(causes, JSON_INDENT(2));
    fprintf(stderr, "causes: %s\n", s);
    free(s);
}

#define assert_cause(causes, field, reason)                                                                   \
    do {                                                                                                      \
        if (!find_cause((causes), (field), (reason))) {                                                       \
            dump(causes);                                                                                     \
            fail_msg("no %s cause for %s", (reason), (field));                                                \
        }                                                                                                     \
    } while (0)

#define assert_message(causes, field, reason, text)                                                           \
    do {                                                                                                      \
        const json_t *c_ = find_cause((causes), (field), (reason));                                           \
        if (!c_) {                                                                                            \
            dump(causes);                                                                                     \
            fail_msg("no %s cause for %s", (reason), (field));                                                \
        }                                                                                                     \
        assert_string_equal(json_string_value(json_object_get(c_, "message")), (text));                       \
    } while (0)

#define assert_no_causes(causes)                                                                              \
    do {                                                                                                      \
        if (json_array_size(causes)) {                                                                        \
            dump(causes);                                                                                     \
            fail_msg("expected no causes");                                                                   \
        }                                                                                                     \
    } while (0)

static json_t *cm(const char *name)
{
    return obj("{'apiVersion':'v1','kind':'ConfigMap','metadata':{'name':'%s','namespace':'default'}}", name);
}

#define PP_META "'apiVersion':'policy.karmada.io/v1alpha1','kind':'PropagationPolicy','metadata':{'name':'p','namespace':'default'}"
#define SELS "'resourceSelectors':[{'apiVersion':'apps/v1','kind':'Deployment','name':'nginx'}]"

/* A PropagationPolicy with the given spec members after a valid resourceSelectors. */
static json_t *pp(const char *spec_rest)
{
    return obj("{" PP_META ",'spec':{" SELS "%s%s}}", *spec_rest ? "," : "", spec_rest);
}

static json_t *pp_placement(const char *placement)
{
    return obj("{" PP_META ",'spec':{" SELS ",'placement':%s}}", placement);
}

static json_t *pp_failover(const char *failover)
{
    return obj("{" PP_META ",'spec':{" SELS ",'propagateDeps':true,'failover':%s}}", failover);
}

#define OP_META "'apiVersion':'policy.karmada.io/v1alpha1','kind':'OverridePolicy','metadata':{'name':'o','namespace':'default'}"

static json_t *op_rule(const char *overriders)
{
    return obj("{" OP_META ",'spec':{" SELS ",'overrideRules':[{'targetCluster':{'clusterNames':['m1']},"
               "'overriders':%s}]}}",
               overriders);
}

static json_t *cluster(const char *spec)
{
    return obj("{'apiVersion':'cluster.karmada.io/v1alpha1','kind':'Cluster','metadata':{'name':'member1'},"
               "'spec':%s}",
               spec);
}

static json_t *crd(const char *name, const char *spec)
{
    return obj("{'apiVersion':'apiextensions.k8s.io/v1','kind':'CustomResourceDefinition','metadata':{'name':'%s'},"
               "'spec':%s}",
               name, spec);
}

#define CRD_SPEC_OK                                                                                            \
    "{'group':'example.com','scope':'Namespaced','names':{'plural':'widgets','singular':'widget','kind':'Widget'," \
    "'listKind':'WidgetList'},'versions':[{'name':'v1','served':true,'storage':true}]}"

/* ---------------------------------------------------------------------------------
 * Name, namespace, labels, annotations, finalizers, owner references.
 */
static void valid_name_accepted(void **state)
{
    json_t *c = run(&configmap_kind, cm("my.config-1"), NULL);
    assert_no_causes(c);
    json_decref(c);
}

static void invalid_name_rejected(void **state)
{
    json_t *c = run(&configmap_kind, cm("Foo_bar"), NULL);
    assert_message(c, "metadata.name", "FieldValueInvalid",
                   "Invalid value: \"Foo_bar\": a lowercase RFC 1123 subdomain must consist of lower case "
                   "alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character "
                   "(e.g. 'example.com', regex used for validation is "
                   "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')");
    json_decref(c);
}

static void missing_name_required(void **state)
{
    json_t *c = run(&configmap_kind, obj("{'metadata':{'namespace':'default'}}"), NULL);
    assert_message(c, "metadata.name", "FieldValueRequired", "Required value: name or generateName is required");
    json_decref(c);
}

static void name_longer_than_subdomain_rejected(void **state)
{
    char name[300];
    memset(name, 'a', 254);
    name[254] = '\0';
    json_t *c = run(&configmap_kind, cm(name), NULL);
    const json_t *cause = find_cause(c, "metadata.name", "FieldValueInvalid");
    assert_non_null(cause);
    assert_non_null(strstr(json_string_value(json_object_get(cause, "message")), "must be no more than 253 bytes"));
    json_decref(c);
}

static void namespace_name_must_be_dns_label(void **state)
{
    json_t *c = run(&namespace_kind, obj("{'metadata':{'name':'team.a'}}"), NULL);
    assert_message(c, "metadata.name", "FieldValueInvalid", "Invalid value: \"team.a\": must not contain dots");
    json_decref(c);
    c = run(&namespace_kind, obj("{'metadata':{'name':'team-a'}}"), NULL);
    assert_no_causes(c);
    json_decref(c);
}

static void service_name_must_be_dns_label(void **state)
{
    json_t *c = run(&service_kind, obj("{'metadata':{'name':'Web','namespace':'default'}}"), NULL);
    assert_cause(c, "metadata.name", "FieldValueInvalid");
    json_decref(c);
}

static void generate_name_prefix_validated(void **state)
{
    json_t *c = run(&configmap_kind,
                    obj("{'metadata':{'name':'web-x1z','generateName':'web-','namespace':'default'}}"), NULL);
    assert_no_causes(c);
    json_decref(c);
    c = run(&configmap_kind, obj("{'metadata':{'name':'web-x1z','generateName':'Web-','namespace':'default'}}"),
            NULL);
    assert_cause(c, "metadata.generateName", "FieldValueInvalid");
    json_decref(c);
}

static void namespaced_kind_requires_namespace(void **state)
{
    json_t *c = run(&configmap_kind, obj("{'metadata':{'name':'a'}}"), NULL);
    assert_message(c, "metadata.namespace", "FieldValueRequired", "Required value");
    json_decref(c);
    c = run(&configmap_kind, obj("{'metadata':{'name':'a','namespace':'Bad_NS'}}"), NULL);
    assert_cause(c, "metadata.namespace", "FieldValueInvalid");
    json_decref(c);
}

static void cluster_scoped_kind_forbids_namespace(void **state)
{
    json_t *c = run(&namespace_kind, obj("{'metadata':{'name':'a','namespace':'default'}}"), NULL);
    assert_message(c, "metadata.namespace", "FieldValueForbidden", "Forbidden: not allowed on this type");
    json_decref(c);
}

static void label_keys_and_values_validated(void **state)
{
    json_t *c = run(&configmap_kind,
                    obj("{'metadata':{'name':'a','namespace':'d','labels':{'app.kubernetes.io/name':'web',"
                        "'empty':'','a/b/c':'x','Foo.com/x':'y','ok':'-bad-'}}}"),
                    NULL);
    assert_int_equal(json_array_size(c), 3);
    const json_t *first = json_array_get(c, 0);
    assert_string_equal(json_string_value(json_object_get(first, "field")), "metadata.labels");
    json_decref(c);
}

static void label_key_helper_messages(void **state)
{
    assert_null(fl_validate_label_key("app"));
    assert_null(fl_validate_label_key("example.com/My_Name.1"));
    assert_string_equal(fl_validate_label_key("/x"), "prefix part must be non-empty");
    assert_string_equal(fl_validate_label_key("x/"), "name part must be non-empty");
    assert_string_equal(fl_validate_label_key("-x"),
                        "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end "
                        "with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "
                        "validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')");
    char longname[80];
    memset(longname, 'a', 64);
    longname[64] = '\0';
    assert_string_equal(fl_validate_label_key(longname), "name part must be no more than 63 bytes");
    assert_non_null(strstr(fl_validate_label_key("UPPER.com/x"), "prefix part a lowercase RFC 1123 subdomain"));
    assert_null(fl_validate_label_value(""));
    assert_null(fl_validate_label_value("v1.2_3-a"));
    assert_non_null(fl_validate_label_value("a b"));
    assert_string_equal(fl_validate_label_value(longname), "must be no more than 63 bytes");
}

static void dns_helpers(void **state)
{
    assert_null(fl_validate_dns1123_label("a-1"));
    assert_string_equal(fl_validate_dns1123_label("a.b"), "must not contain dots");
    assert_non_null(fl_validate_dns1123_label("-a"));
    assert_non_null(fl_validate_dns1123_label(""));
    assert_null(fl_validate_dns1123_subdomain("a.b-c.d"));
    assert_non_null(fl_validate_dns1123_subdomain("a..b"));
    assert_non_null(fl_validate_dns1123_subdomain("a."));
    assert_non_null(fl_validate_dns1123_subdomain("A"));
}

static void annotation_keys_and_size_validated(void **state)
{
    json_t *c = run(&configmap_kind,
                    obj("{'metadata':{'name':'a','namespace':'d','annotations':{'Example.COM/Key':'x','bad key':'y'}}}"),
                    NULL);
    assert_int_equal(json_array_size(c), 1);
    assert_cause(c, "metadata.annotations", "FieldValueInvalid");
    json_decref(c);

    json_t *o = cm("big");
    json_t *ann = json_object();
    char *big = malloc(256 * 1024 + 1);
    memset(big, 'x', 256 * 1024);
    big[256 * 1024] = '\0';
    json_object_set_new(ann, "k", json_string(big));
    free(big);
    json_object_set_new(json_object_get(o, "metadata"), "annotations", ann);
    c = run(&configmap_kind, o, NULL);
    assert_message(c, "metadata.annotations", "FieldValueTooLong", "Too long: may not be more than 262144 bytes");
    json_decref(c);
}

static void finalizer_name_validated(void **state)
{
    json_t *c = run(&configmap_kind,
                    obj("{'metadata':{'name':'a','namespace':'d','finalizers':['karmada.io/binding','bad/name/x']}}"),
                    NULL);
    assert_int_equal(json_array_size(c), 1);
    assert_cause(c, "metadata.finalizers[1]", "FieldValueInvalid");
    json_decref(c);
}

static void owner_reference_requires_uid(void **state)
{
    json_t *c = run(&configmap_kind,
                    obj("{'metadata':{'name':'a','namespace':'d','ownerReferences':[{'apiVersion':'apps/v1',"
                        "'kind':'Deployment','name':'web'}]}}"),
                    NULL);
    assert_message(c, "metadata.ownerReferences[0].uid", "FieldValueInvalid",
                   "Invalid value: \"\": uid must not be empty");
    json_decref(c);
}

/* ---------------------------------------------------------------------------------
 * Update rules.
 */
#define OLD_CM "{'metadata':{'name':'a','namespace':'d','uid':'u1','creationTimestamp':'2024-01-01T00:00:00Z'}}"

static void immutable_name_on_update(void **state)
{
    json_t *c = run(&configmap_kind, obj("{'metadata':{'name':'b','namespace':'d'}}"), OLD_CM);
    assert_message(c, "metadata.name", "FieldValueInvalid", "Invalid value: \"b\": field is immutable");
    json_decref(c);
}

static void immutable_namespace_on_update(void **state)
{
    json_t *c = run(&configmap_kind, obj("{'metadata':{'name':'a','namespace':'e'}}"), OLD_CM);
    assert_cause(c, "metadata.namespace", "FieldValueInvalid");
    json_decref(c);
}

static void immutable_uid_and_creation_timestamp_on_update(void **state)
{
    json_t *c = run(&configmap_kind,
                    obj("{'metadata':{'name':'a','namespace':'d','uid':'u2','creationTimestamp':'2025-01-01T00:00:00Z'}}"),
                    OLD_CM);
    assert_cause(c, "metadata.uid", "FieldValueInvalid");
    assert_cause(c, "metadata.creationTimestamp", "FieldValueInvalid");
    json_decref(c);
}

static void omitted_system_fields_allowed_on_update(void **state)
{
    json_t *c = run(&configmap_kind, obj("{'metadata':{'name':'a','namespace':'d','labels':{'x':'y'}}}"), OLD_CM);
    assert_no_causes(c);
    json_decref(c);
}

static void cause_add_shape(void **state)
{
    json_t *causes = json_array();
    fl_cause_add(causes, "FieldValueInvalid", "spec.x", "Invalid value: %d: %s", 3, "bad");
    const json_t *c = json_array_get(causes, 0);
    assert_string_equal(json_string_value(json_object_get(c, "reason")), "FieldValueInvalid");
    assert_string_equal(json_string_value(json_object_get(c, "field")), "spec.x");
    assert_string_equal(json_string_value(json_object_get(c, "message")), "Invalid value: 3: bad");
    json_decref(causes);
}

/* ---------------------------------------------------------------------------------
 * Types.
 */
/* fl_validate_types_under(k, o, top) fails with want, or passes when want is NULL. */
static void check_types_under(const fl_kind *k, const char *top, json_t *o, const char *want)
{
    char *msg = NULL;
    int rc = fl_validate_types_under(k, o, top, &msg);
    if (!want) {
        if (rc)
            fail_msg("unexpected type error: %s", msg);
        assert_null(msg);
    } else {
        assert_int_equal(rc, FL_EINVAL);
        assert_non_null(msg);
        assert_string_equal(msg, want);
    }
    free(msg);
    json_decref(o);
}

/* fl_validate_types and fl_validate_types_under with no member both give want. */
static void check_types(const fl_kind *k, json_t *o, const char *want)
{
    char *msg = NULL;
    int rc = fl_validate_types(k, o, &msg);
    if (!want && rc)
        fail_msg("unexpected type error: %s", msg);
    assert_int_equal(rc, want ? FL_EINVAL : 0);
    if (want)
        assert_string_equal(msg, want);
    free(msg);
    check_types_under(k, NULL, o, want);
}

static void types_reports_field_path(void **state)
{
    check_types(&deploy_kind, obj("{'metadata':{'name':'a'},'spec':{'replicas':'3'}}"),
                "spec.replicas: expected integer, got string");
    check_types(&deploy_kind, obj("{'metadata':{'name':'a'},'spec':'x'}"), "spec: expected object, got string");
    check_types(&deploy_kind, obj("{'metadata':{'name':'a'},'spec':{'replicas':3,'paused':false}}"), NULL);
}

static void types_reports_list_indices_through_sub_tables(void **state)
{
    check_types(&deploy_kind,
                obj("{'spec':{'template':{'spec':{'containers':[{'name':'a'},{'name':5}]}}}}"),
                "spec.template.spec.containers[1].name: expected string, got integer");
    check_types(&deploy_kind,
                obj("{'spec':{'template':{'spec':{'containers':[{'name':'a','ports':[{'containerPort':80},"
                    "{'containerPort':true}]}]}}}}"),
                "spec.template.spec.containers[0].ports[1].containerPort: expected integer, got boolean");
    check_types(&deploy_kind, obj("{'spec':{'template':{'spec':{'containers':{'name':'a'}}}}}"),
                "spec.template.spec.containers: expected array, got object");
}

static void types_metadata_checked(void **state)
{
    check_types(&configmap_kind, obj("{'metadata':{'name':'a','labels':{'app':1}}}"),
                "metadata.labels[app]: expected string, got integer");
    check_types(&configmap_kind, obj("{'metadata':{'name':7}}"), "metadata.name: expected string, got integer");
    check_types(&configmap_kind, obj("{'metadata':{'finalizers':['a',2]}}"),
                "metadata.finalizers[1]: expected string, got integer");
    check_types(&configmap_kind, obj("{'metadata':{'ownerReferences':[{'controller':'yes'}]}}"),
                "metadata.ownerReferences[0].controller: expected boolean, got string");
    check_types(&configmap_kind, obj("{'metadata':[]}"), "metadata: expected object, got array");
}

static void types_special_types(void **state)
{
    check_types(&deploy_kind, obj("{'spec':{'strategy':{'rollingUpdate':{'maxSurge':'25%%'}}}}"), NULL);
    check_types(&deploy_kind, obj("{'spec':{'strategy':{'rollingUpdate':{'maxSurge':1}}}}"), NULL);
    check_types(&deploy_kind, obj("{'spec':{'strategy':{'rollingUpdate':{'maxSurge':true}}}}"),
                "spec.strategy.rollingUpdate.maxSurge: expected integer or string, got boolean");
    check_types(&deploy_kind, obj("{'spec':{'template':{'spec':{'overhead':{'cpu':0.5}}}}}"), NULL);
    check_types(&deploy_kind, obj("{'spec':{'replicas':2.0}}"), NULL);
    check_types(&deploy_kind, obj("{'spec':{'replicas':2.5}}"), "spec.replicas: expected integer, got number");
    check_types(&deploy_kind, obj("{'spec':{'replicas':null,'selector':{'matchLabels':{'a':'b'}}}}"), NULL);
}

static void types_body_must_be_object(void **state)
{
    check_types(&deploy_kind, obj("[1]"), "expected an object, got array");
}

static void types_follow_crd_schema(void **state)
{
    fl_kind k = {.group = "example.com", .version = "v1", .kind = "Widget", .namespaced = true, .dynamic = true};
    k.crd_version = obj(
        "{'name':'v1','schema':{'openAPIV3Schema':{'type':'object','properties':{"
        "'spec':{'type':'object','properties':{"
        "'size':{'type':'integer'},'ratio':{'type':'number'},'on':{'type':'boolean'},"
        "'port':{'x-kubernetes-int-or-string':true},"
        "'tags':{'type':'array','items':{'type':'string'}},"
        "'env':{'type':'object','additionalProperties':{'type':'string'}},"
        "'raw':{'type':'object','x-kubernetes-preserve-unknown-fields':true},"
        "'items':{'type':'array','items':{'type':'object','properties':{'name':{'type':'string'}}}}}}}}}}");
    check_types(&k,
                obj("{'metadata':{'name':'w'},'spec':{'size':3,'ratio':1,'on':true,'port':'http','tags':['a'],"
                    "'env':{'A':'1'},'raw':{'anything':[1,{'x':2}]},'unknown':5,'items':[{'name':'a'}]}}"),
                NULL);
    check_types(&k, obj("{'spec':{'size':'3'}}"), "spec.size: expected integer, got string");
    check_types(&k, obj("{'spec':{'tags':['a',1]}}"), "spec.tags[1]: expected string, got integer");
    check_types(&k, obj("{'spec':{'env':{'A':1}}}"), "spec.env[A]: expected string, got integer");
    check_types(&k, obj("{'spec':{'port':1.5}}"), "spec.port: expected integer or string, got number");
    check_types(&k, obj("{'spec':{'items':[{'name':'a'},{'name':false}]}}"),
                "spec.items[1].name: expected string, got boolean");
    check_types(&k, obj("{'metadata':{'labels':{'a':[]}}}"), "metadata.labels[a]: expected string, got array");
    json_decref(k.crd_version);
}

/* A /status write takes only the status (and metadata) from its body: only those are checked. */
static void types_under_a_member_check_it_and_metadata_only(void **state)
{
    (void)state;
    check_types_under(&deploy_kind, "status", obj("{'spec':{'replicas':'x'},'status':{'replicas':2}}"), NULL);
    check_types_under(&deploy_kind, "status", obj("{'spec':{'replicas':1},'status':{'replicas':'2'}}"),
                      "status.replicas: expected integer, got string");
    check_types_under(&deploy_kind, "status", obj("{'metadata':{'labels':{'a':1}},'status':{}}"),
                      "metadata.labels[a]: expected string, got integer");
    check_types_under(&deploy_kind, NULL, obj("{'spec':{'replicas':'x'},'status':{'replicas':2}}"),
                      "spec.replicas: expected integer, got string");
    fl_kind k = {.group = "example.com", .version = "v1", .kind = "Widget", .namespaced = true, .dynamic = true};
    k.crd_version = obj("{'name':'v1','schema':{'openAPIV3Schema':{'type':'object','properties':{"
                        "'spec':{'type':'object','properties':{'size':{'type':'integer'}}},"
                        "'status':{'type':'object','properties':{'ready':{'type':'boolean'}}}}}}}");
    check_types_under(&k, "status", obj("{'spec':{'size':'3'},'status':{'ready':true}}"), NULL);
    check_types_under(&k, "status", obj("{'spec':{'size':3},'status':{'ready':'yes'}}"),
                      "status.ready: expected boolean, got string");
    check_types_under(&k, "status", obj("{'spec':{'size':3},'status':7}"), "status: expected object, got integer");
    check_types_under(&k, "status", obj("{'spec':{'size':3}}"), NULL);
    json_decref(k.crd_version);
}

/* ---------------------------------------------------------------------------------
 * PropagationPolicy.
 */
static void valid_propagation_policy_passes(void **state)
{
    json_t *c = run(&pp_kind,
                    pp("'placement':{'clusterAffinity':{'clusterNames':['m1','m2'],'labelSelector':{'matchExpressions':"
                       "[{'key':'env','operator':'In','values':['prod']}]},'fieldSelector':{'matchExpressions':"
                       "[{'key':'region','operator':'In','values':['eu']}]}},"
                       "'spreadConstraints':[{'spreadByField':'cluster','maxGroups':2,'minGroups':1},"
                       "{'spreadByField':'region','maxGroups':1}],"
                       "'replicaScheduling':{'replicaSchedulingType':'Divided','replicaDivisionPreference':'Weighted',"
                       "'weightPreference':{'staticWeightList':[{'targetCluster':{'clusterNames':['m1']},'weight':1},"
                       "{'targetCluster':{'clusterNames':['m2']},'weight':2}]}},"
                       "'clusterTolerations':[{'key':'k','operator':'Exists','effect':'NoExecute'}]},"
                       "'propagateDeps':true,'failover':{'application':{'decisionConditions':{'tolerationSeconds':60},"
                       "'purgeMode':'Gracefully','gracePeriodSeconds':600,'statePreservation':{'rules':"
                       "[{'aliasLabelName':'app.example.com/offset','jsonPath':'{.offset}'}]}},"
                       "'cluster':{'purgeMode':'Directly'}},"
                       "'conflictResolution':'Overwrite','activationPreference':'Lazy','preemption':'Never',"
                       "'priority':5,'schedulerName':'default-scheduler','suspension':{'dispatching':false}"),
                    NULL);
    assert_no_causes(c);
    json_decref(c);
}

static void propagation_policy_requires_resource_selectors(void **state)
{
    json_t *c = run(&pp_kind, obj("{" PP_META ",'spec':{}}"), NULL);
    assert_message(c, "spec.resourceSelectors", "FieldValueRequired", "Required value");
    json_decref(c);
    c = run(&pp_kind, obj("{" PP_META ",'spec':{'resourceSelectors':[]}}"), NULL);
    assert_cause(c, "spec.resourceSelectors", "FieldValueInvalid");
    json_decref(c);
    c = run(&pp_kind, obj("{" PP_META "}"), NULL);
    assert_cause(c, "spec", "FieldValueRequired");
    json_decref(c);
}

static void resource_selector_requires_api_version_and_kind(void **state)
{
    json_t *c = run(&pp_kind, obj("{" PP_META ",'spec':{'resourceSelectors':[{'apiVersion':'v1','kind':'ConfigMap'},"
                                  "{'name':'x'}]}}"),
                    NULL);
    assert_int_equal(json_array_size(c), 2);
    assert_cause(c, "spec.resourceSelectors[1].apiVersion", "FieldValueRequired");
    assert_cause(c, "spec.resourceSelectors[1].kind", "FieldValueRequired");
    json_decref(c);
}

static void resource_selector_namespace_must_match_policy(void **state)
{
    json_t *c = run(&pp_kind, obj("{" PP_META ",'spec':{'resourceSelectors':[{'apiVersion':'v1','kind':'ConfigMap',"
                                  "'namespace':'other'}]}}"),
                    NULL);
    assert_cause(c, "spec.resourceSelectors[0].namespace", "FieldValueInvalid");
    json_decref(c);
}

static void preemption_always_requires_selector_names(void **state)
{
    json_t *c = run(&pp_kind, obj("{" PP_META ",'spec':{'preemption':'Always','resourceSelectors':[{'apiVersion':'v1',"
                                  "'kind':'ConfigMap'}]}}"),
                    NULL);
    assert_cause(c, "spec.resourceSelectors[0].name", "FieldValueInvalid");
    json_decref(c);
}

static void propagation_policy_rejects_affinity_with_affinities(void **state)
{
    json_t *c = run(&pp_kind,
                    pp_placement("{'clusterAffinity':{'clusterNames':['m1']},"
                                 "'clusterAffinities':[{'affinityName':'a','clusterNames':['m1']}]}"),
                    NULL);
    const json_t *cause = find_cause(c, "spec.placement.clusterAffinities", "FieldValueInvalid");
    assert_non_null(cause);
    assert_non_null(strstr(json_string_value(json_object_get(cause, "message")),
                           "clusterAffinities cannot co-exist with clusterAffinity"));
    json_decref(c);
}

static void affinity_name_required_and_unique(void **state)
{
    json_t *c = run(&pp_kind,
                    pp_placement("{'clusterAffinities':[{'affinityName':'a','clusterNames':['m1']},"
                                 "{'clusterNames':['m2']},{'affinityName':'a','clusterNames':['m3']}]}"),
                    NULL);
    assert_cause(c, "spec.placement.clusterAffinities[1].affinityName", "FieldValueRequired");
    assert_cause(c, "spec.placement.clusterAffinities[2].affinityName", "FieldValueDuplicate");
    json_decref(c);
}

static void overflow_affinities_need_aggregated_or_dynamic_weight(void **state)
{
    json_t *c = run(&pp_kind,
                    pp_placement("{'clusterAffinities':[{'affinityName':'a','clusterNames':['m1'],"
                                 "'overflowAffinities':[{'affinityName':'b','clusterNames':['m2']}]}]}"),
                    NULL);
    assert_cause(c, "spec.placement.clusterAffinities[0].overflowAffinities", "FieldValueInvalid");
    json_decref(c);
    c = run(&pp_kind,
            pp_placement("{'replicaScheduling':{'replicaSchedulingType':'Divided','replicaDivisionPreference':"
                         "'Aggregated'},'clusterAffinities':[{'affinityName':'a','clusterNames':['m1'],"
                         "'overflowAffinities':[{'affinityName':'a','clusterNames':['m2']}]}]}"),
            NULL);
    assert_int_equal(json_array_size(c), 1);
    assert_cause(c, "spec.placement.clusterAffinities[0].overflowAffinities[0].affinityName", "FieldValueDuplicate");
    json_decref(c);
}

static void field_selector_key_and_operator_checked(void **state)
{
    json_t *c = run(&pp_kind,
                    pp_placement("{'clusterAffinity':{'fieldSelector':{'matchExpressions':"
                                 "[{'key':'planet','operator':'In','values':['x']}]}}}"),
                    NULL);
    const json_t *cause = find_cause(c, "spec.placement.clusterAffinity.fieldSelector", "FieldValueInvalid");
    assert_non_null(cause);
    assert_non_null(strstr(json_string_value(json_object_get(cause, "message")),
                           "unsupported key \"planet\", must be provider, region, or zone"));
    json_decref(c);
    c = run(&pp_kind,
            pp_placement("{'clusterAffinity':{'fieldSelector':{'matchExpressions':"
                         "[{'key':'zone','operator':'Exists'}]}}}"),
            NULL);
    assert_cause(c, "spec.placement.clusterAffinity.fieldSelector", "FieldValueInvalid");
    json_decref(c);
}

static void label_selector_expressions_checked(void **state)
{
    json_t *c = run(&pp_kind,
                    pp_placement("{'clusterAffinity':{'labelSelector':{'matchLabels':{'bad key':'x'},"
                                 "'matchExpressions':[{'key':'a','operator':'In'},"
                                 "{'key':'b','operator':'Exists','values':['x']},{'key':'c','operator':'Near'}]}}}"),
                    NULL);
    assert_cause(c, "spec.placement.clusterAffinity.labelSelector.matchLabels", "FieldValueInvalid");
    assert_cause(c, "spec.placement.clusterAffinity.labelSelector.matchExpressions[0].values", "FieldValueRequired");
    assert_cause(c, "spec.placement.clusterAffinity.labelSelector.matchExpressions[1].values", "FieldValueForbidden");
    assert_cause(c, "spec.placement.clusterAffinity.labelSelector.matchExpressions[2].operator",
                 "FieldValueNotSupported");
    json_decref(c);
}

static void spread_by_field_and_label_exclusive(void **state)
{
    json_t *c = run(&pp_kind,
                    pp_placement("{'spreadConstraints':[{'spreadByField':'cluster','spreadByLabel':'team'}]}"), NULL);
    assert_cause(c, "spec.placement.spreadConstraints[0]", "FieldValueInvalid");
    json_decref(c);
}

static void max_groups_below_min_groups_rejected(void **state)
{
    json_t *c = run(&pp_kind,
                    pp_placement("{'spreadConstraints':[{'spreadByField':'cluster','maxGroups':1,'minGroups':3}]}"),
                    NULL);
    const json_t *cause = find_cause(c, "spec.placement.spreadConstraints[0]", "FieldValueInvalid");
    assert_non_null(cause);
    assert_non_null(strstr(json_string_value(json_object_get(cause, "message")),
                           "maxGroups lower than minGroups is not allowed"));
    json_decref(c);
}

static void spread_by_field_value_not_supported(void **state)
{
    json_t *c = run(&pp_kind, pp_placement("{'spreadConstraints':[{'spreadByField':'planet'}]}"), NULL);
    assert_message(c, "spec.placement.spreadConstraints[0].spreadByField", "FieldValueNotSupported",
                   "Unsupported value: \"planet\": supported values: \"cluster\", \"region\", \"zone\", \"provider\"");
    json_decref(c);
}

static void spread_by_field_requires_cluster_constraint(void **state)
{
    json_t *c = run(&pp_kind, pp_placement("{'spreadConstraints':[{'spreadByField':'region','maxGroups':2}]}"),
                    NULL);
    assert_cause(c, "spec.placement.spreadConstraints", "FieldValueInvalid");
    json_decref(c);
    c = run(&pp_kind,
            pp_placement("{'spreadConstraints':[{'spreadByField':'cluster'},{'spreadByField':'cluster'}]}"), NULL);
    assert_cause(c, "spec.placement.spreadConstraints", "FieldValueInvalid");
    json_decref(c);
}

static void replica_scheduling_enums_checked(void **state)
{
    json_t *c = run(&pp_kind,
                    pp_placement("{'replicaScheduling':{'replicaSchedulingType':'Split',"
                                 "'replicaDivisionPreference':'Even','weightPreference':{'dynamicWeight':'CPU'}}}"),
                    NULL);
    assert_message(c, "spec.placement.replicaScheduling.replicaSchedulingType", "FieldValueNotSupported",
                   "Unsupported value: \"Split\": supported values: \"Duplicated\", \"Divided\"");
    assert_cause(c, "spec.placement.replicaScheduling.replicaDivisionPreference", "FieldValueNotSupported");
    assert_message(c, "spec.placement.replicaScheduling.weightPreference.dynamicWeight", "FieldValueNotSupported",
                   "Unsupported value: \"CPU\": supported values: \"AvailableReplicas\"");
    json_decref(c);
}

static void weight_below_one_rejected(void **state)
{
    json_t *c = run(&pp_kind,
                    pp_placement("{'replicaScheduling':{'replicaSchedulingType':'Divided',"
                                 "'replicaDivisionPreference':'Weighted','weightPreference':{'staticWeightList':["
                                 "{'targetCluster':{'clusterNames':['m1']},'weight':1},"
                                 "{'targetCluster':{'clusterNames':['m2']},'weight':0}]}}}"),
                    NULL);
    assert_int_equal(json_array_size(c), 1);
    assert_message(c, "spec.placement.replicaScheduling.weightPreference.staticWeightList[1].weight",
                   "FieldValueInvalid", "Invalid value: 0: must be greater than or equal to 1");
    json_decref(c);
}

static void static_weight_target_cluster_required(void **state)
{
    json_t *c = run(&pp_kind,
                    pp_placement("{'replicaScheduling':{'weightPreference':{'staticWeightList':[{'weight':2}]}}}"),
                    NULL);
    assert_cause(c, "spec.placement.replicaScheduling.weightPreference.staticWeightList[0].targetCluster",
                 "FieldValueRequired");
    json_decref(c);
}

static void cluster_toleration_operator_checked(void **state)
{
    json_t *c = run(&pp_kind, pp_placement("{'clusterTolerations':[{'key':'k','operator':'Lt','value':'3'}]}"), NULL);
    assert_message(c, "spec.placement.clusterTolerations[0].operator", "FieldValueNotSupported",
                   "Unsupported value: \"Lt\": supported values: \"\", \"Exists\", \"Equal\"");
    json_decref(c);
}

static void suspension_dispatching_with_clusters_rejected(void **state)
{
    json_t *c = run(&pp_kind, pp("'suspension':{'dispatching':true,'dispatchingOnClusters':{'clusterNames':['m1']}}"),
                    NULL);
    assert_cause(c, "spec.suspension", "FieldValueInvalid");
    json_decref(c);
    c = run(&pp_kind, pp("'suspension':{'dispatchingOnClusters':{'clusterNames':['m1']}}"), NULL);
    assert_no_causes(c);
    json_decref(c);
}

static void application_failover_requires_propagate_deps(void **state)
{
    json_t *c = run(&pp_kind, pp("'failover':{'application':{'decisionConditions':{}}}"), NULL);
    assert_message(c, "spec.propagateDeps", "FieldValueInvalid",
                   "Invalid value: false: application failover is set, propagateDeps must be true");
    json_decref(c);
}

static void toleration_seconds_negative_rejected(void **state)
{
    json_t *c = run(&pp_kind, pp_failover("{'application':{'decisionConditions':{'tolerationSeconds':-1}}}"), NULL);
    assert_message(c, "spec.failover.application.decisionConditions.tolerationSeconds", "FieldValueInvalid",
                   "Invalid value: -1: must be greater than or equal to 0");
    json_decref(c);
    c = run(&pp_kind, pp_failover("{'application':{'decisionConditions':{'tolerationSeconds':0}}}"), NULL);
    assert_no_causes(c);
    json_decref(c);
}

static void purge_mode_not_supported(void **state)
{
    json_t *c = run(&pp_kind, pp_failover("{'application':{'decisionConditions':{},'purgeMode':'Foo'}}"), NULL);
    assert_message(c, "spec.failover.application.purgeMode", "FieldValueNotSupported",
                   "Unsupported value: \"Foo\": supported values: \"Directly\", \"Gracefully\", \"Never\"");
    json_decref(c);
}

static void purge_mode_accepts_deprecated_spellings(void **state)
{
    json_t *c = run(&pp_kind, pp_failover("{'application':{'decisionConditions':{},'purgeMode':'Immediately'},"
                                          "'cluster':{'purgeMode':'Graciously'}}"),
                    NULL);
    assert_no_causes(c);
    json_decref(c);
    /* Graciously means Gracefully, so a grace period goes with it. */
    c = run(&pp_kind, pp_failover("{'application':{'decisionConditions':{},'purgeMode':'Graciously',"
                                  "'gracePeriodSeconds':30}}"),
            NULL);
    assert_no_causes(c);
    json_decref(c);
}

static void grace_period_only_with_gracefully(void **state)
{
    json_t *c = run(&pp_kind, pp_failover("{'application':{'decisionConditions':{},'purgeMode':'Directly',"
                                          "'gracePeriodSeconds':30}}"),
                    NULL);
    assert_message(c, "spec.failover.application.gracePeriodSeconds", "FieldValueInvalid",
                   "Invalid value: 30: only takes effect when purgeMode is gracefully");
    json_decref(c);
    c = run(&pp_kind, pp_failover("{'application':{'decisionConditions':{},'purgeMode':'Immediately',"
                                  "'gracePeriodSeconds':30}}"),
            NULL);
    assert_cause(c, "spec.failover.application.gracePeriodSeconds", "FieldValueInvalid");
    json_decref(c);
    /* Unset purgeMode defaults to Gracefully. */
    c = run(&pp_kind, pp_failover("{'application':{'decisionConditions':{},'gracePeriodSeconds':30}}"), NULL);
    assert_no_causes(c);
    json_decref(c);
}

static void grace_period_must_be_positive(void **state)
{
    json_t *c = run(&pp_kind, pp_failover("{'application':{'decisionConditions':{},'purgeMode':'Gracefully',"
                                          "'gracePeriodSeconds':0}}"),
                    NULL);
    assert_message(c, "spec.failover.application.gracePeriodSeconds", "FieldValueInvalid",
                   "Invalid value: 0: must be greater than 0");
    json_decref(c);
}

static void state_preservation_rule_fields_required(void **state)
{
    json_t *c = run(&pp_kind, pp_failover("{'application':{'decisionConditions':{},'statePreservation':{'rules':["
                                          "{'jsonPath':'{.a}'},{'aliasLabelName':'bad/label/x'},"
                                          "{'aliasLabelName':'ok'}]}}}"),
                    NULL);
    assert_cause(c, "spec.failover.application.statePreservation.rules[0].aliasLabelName", "FieldValueRequired");
    assert_cause(c, "spec.failover.application.statePreservation.rules[1].aliasLabelName", "FieldValueInvalid");
    assert_cause(c, "spec.failover.application.statePreservation.rules[1].jsonPath", "FieldValueRequired");
    assert_cause(c, "spec.failover.application.statePreservation.rules[2].jsonPath", "FieldValueRequired");
    assert_int_equal(json_array_size(c), 4);
    json_decref(c);
}

static void cluster_failover_purge_mode_never_not_supported(void **state)
{
    json_t *c = run(&pp_kind, pp_failover("{'cluster':{'purgeMode':'Never'}}"), NULL);
    assert_message(c, "spec.failover.cluster.purgeMode", "FieldValueNotSupported",
                   "Unsupported value: \"Never\": supported values: \"Directly\", \"Gracefully\"");
    json_decref(c);
}

static void policy_enums_checked(void **state)
{
    json_t *c = run(&pp_kind, pp("'conflictResolution':'Merge','activationPreference':'Eager',"
                                 "'preemption':'Sometimes','priority':'high','schedulerName':5"),
                    NULL);
    assert_message(c, "spec.conflictResolution", "FieldValueNotSupported",
                   "Unsupported value: \"Merge\": supported values: \"Abort\", \"Overwrite\"");
    assert_cause(c, "spec.activationPreference", "FieldValueNotSupported");
    assert_cause(c, "spec.preemption", "FieldValueNotSupported");
    assert_cause(c, "spec.priority", "FieldValueInvalid");
    assert_cause(c, "spec.schedulerName", "FieldValueInvalid");
    json_decref(c);
    c = run(&pp_kind, pp("'activationPreference':''"), NULL);
    assert_no_causes(c);
    json_decref(c);
}

static void cluster_propagation_policy_same_rules(void **state)
{
    json_t *c = run(&cpp_kind,
                    obj("{'metadata':{'name':'c'},'spec':{" SELS ",'placement':{'clusterAffinity':{},"
                        "'clusterAffinities':[]}}}"),
                    NULL);
    assert_int_equal(json_array_size(c), 1);
    assert_cause(c, "spec.placement.clusterAffinities", "FieldValueInvalid");
    json_decref(c);
}

/* ---------------------------------------------------------------------------------
 * OverridePolicy.
 */
static void valid_override_policy_passes(void **state)
{
    json_t *c = run(&op_kind,
                    op_rule("{'plaintext':[{'path':'/spec/replicas','operator':'replace','value':3},"
                            "{'path':'/metadata/labels/x','operator':'remove'}],"
                            "'imageOverrider':[{'component':'Registry','operator':'replace','value':'r.example.com',"
                            "'predicate':{'path':'/spec/template/spec/containers/0/image'}}],"
                            "'commandOverrider':[{'containerName':'c','operator':'add','value':['--v=2']}],"
                            "'argsOverrider':[{'containerName':'c','operator':'remove','value':['--x']}],"
                            "'labelsOverrider':[{'operator':'add','value':{'team':'a'}}],"
                            "'annotationsOverrider':[{'operator':'remove','value':{'note':''}}],"
                            "'fieldOverrider':[{'fieldPath':'/data/config','json':[{'subPath':'/a','operator':'add',"
                            "'value':1},{'subPath':'/b','operator':'remove'}]}]}"),
                    NULL);
    assert_no_causes(c);
    json_decref(c);
}

static void plaintext_path_required_and_operator_checked(void **state)
{
    json_t *c = run(&op_kind, op_rule("{'plaintext':[{'path':'/a','operator':'add','value':1},"
                                      "{'operator':'upsert','value':1}]}"),
                    NULL);
    assert_cause(c, "spec.overrideRules[0].overriders.plaintext[1].path", "FieldValueRequired");
    assert_message(c, "spec.overrideRules[0].overriders.plaintext[1].operator", "FieldValueNotSupported",
                   "Unsupported value: \"upsert\": supported values: \"add\", \"remove\", \"replace\"");
    assert_int_equal(json_array_size(c), 2);
    json_decref(c);
}

static void plaintext_remove_with_value_rejected(void **state)
{
    json_t *c = run(&op_kind, op_rule("{'plaintext':[{'path':'/a','operator':'remove','value':{'x':1}}]}"), NULL);
    assert_message(c, "spec.overrideRules[0].overriders.plaintext[0].value", "FieldValueInvalid",
                   "Invalid value: {\"x\":1}: value is not allowed for remove operation");
    json_decref(c);
}

static void image_overrider_component_checked(void **state)
{
    json_t *c = run(&op_kind, op_rule("{'imageOverrider':[{'component':'Digest','operator':'replace'},"
                                      "{'component':'Tag','operator':'add','predicate':{'path':'spec/x'}}]}"),
                    NULL);
    assert_message(c, "spec.overrideRules[0].overriders.imageOverrider[0].component", "FieldValueNotSupported",
                   "Unsupported value: \"Digest\": supported values: \"Registry\", \"Repository\", \"Tag\"");
    assert_message(c, "spec.overrideRules[0].overriders.imageOverrider[1].predicate.path", "FieldValueInvalid",
                   "Invalid value: \"spec/x\": JSON pointer must be empty or start with a \"/\"");
    json_decref(c);
}

static void command_overrider_container_name_required(void **state)
{
    json_t *c = run(&op_kind, op_rule("{'commandOverrider':[{'operator':'add'}],"
                                      "'argsOverrider':[{'containerName':'c','operator':'replace'}]}"),
                    NULL);
    assert_cause(c, "spec.overrideRules[0].overriders.commandOverrider[0].containerName", "FieldValueRequired");
    assert_message(c, "spec.overrideRules[0].overriders.argsOverrider[0].operator", "FieldValueNotSupported",
                   "Unsupported value: \"replace\": supported values: \"add\", \"remove\"");
    json_decref(c);
}

static void labels_overrider_operator_and_keys_checked(void **state)
{
    json_t *c = run(&op_kind, op_rule("{'labelsOverrider':[{'operator':'merge','value':{'a':'b'}},"
                                      "{'operator':'add','value':{'bad key':'b'}}],"
                                      "'annotationsOverrider':[{'value':{'a':'b'}}]}"),
                    NULL);
    assert_cause(c, "spec.overrideRules[0].overriders.labelsOverrider[0].operator", "FieldValueNotSupported");
    assert_cause(c, "spec.overrideRules[0].overriders.labelsOverrider[1].value", "FieldValueInvalid");
    assert_cause(c, "spec.overrideRules[0].overriders.annotationsOverrider[0].operator", "FieldValueRequired");
    json_decref(c);
}

static void field_overrider_rules(void **state)
{
    json_t *c = run(&op_kind,
                    op_rule("{'fieldOverrider':[{'json':[{'subPath':'/a','operator':'add'}]},"
                            "{'fieldPath':'data','json':[{'subPath':'/a','operator':'remove','value':1}],"
                            "'yaml':[{'subPath':'b','operator':'replace','value':2}]},"
                            "{'fieldPath':'/data/x'}]}"),
                    NULL);
    const char *b = "spec.overrideRules[0].overriders.fieldOverrider";
    char f[256];
    snprintf(f, sizeof f, "%s[0].fieldPath", b);
    assert_cause(c, f, "FieldValueRequired");
    snprintf(f, sizeof f, "%s[0].json[0].value", b);
    assert_message(c, f, "FieldValueInvalid", "Invalid value: null: value is required for add or replace operation");
    snprintf(f, sizeof f, "%s[1].fieldPath", b);
    assert_cause(c, f, "FieldValueInvalid");
    snprintf(f, sizeof f, "%s[1]", b);
    assert_cause(c, f, "FieldValueInvalid");
    snprintf(f, sizeof f, "%s[1].json[0].value", b);
    assert_cause(c, f, "FieldValueInvalid");
    snprintf(f, sizeof f, "%s[1].yaml[0].subPath", b);
    assert_cause(c, f, "FieldValueInvalid");
    snprintf(f, sizeof f, "%s[2]", b);
    assert_message(c, f, "FieldValueRequired", "Required value: FieldOverrider must have either JSON or YAML set");
    json_decref(c);
}

static void deprecated_target_cluster_with_override_rules_rejected(void **state)
{
    json_t *c = run(&op_kind,
                    obj("{" OP_META ",'spec':{'targetCluster':{'clusterNames':['m1']},'overriders':{'plaintext':"
                        "[{'path':'/a','operator':'remove'}]},'overrideRules':[{'overriders':{}}]}}"),
                    NULL);
    assert_cause(c, "spec.targetCluster", "FieldValueInvalid");
    assert_cause(c, "spec.overriders", "FieldValueInvalid");
    json_decref(c);
    c = run(&op_kind,
            obj("{" OP_META ",'spec':{'targetCluster':{'clusterNames':['m1']},'overriders':{'plaintext':"
                "[{'path':'/a','operator':'remove'}]}}}"),
            NULL);
    assert_no_causes(c);
    json_decref(c);
}

/* ---------------------------------------------------------------------------------
 * Cluster.
 */
static void cluster_sync_mode_required(void **state)
{
    json_t *c = run(&cluster_kind, cluster("{}"), NULL);
    assert_message(c, "spec.syncMode", "FieldValueRequired", "Required value");
    json_decref(c);
    c = run(&cluster_kind, cluster("{'syncMode':'Poll'}"), NULL);
    assert_message(c, "spec.syncMode", "FieldValueNotSupported",
                   "Unsupported value: \"Poll\": supported values: \"Pull\", \"Push\"");
    json_decref(c);
    c = run(&cluster_kind, cluster("{'syncMode':'Push','apiEndpoint':'https://10.0.0.1:6443'}"), NULL);
    assert_no_causes(c);
    json_decref(c);
}

static void cluster_api_endpoint_must_be_url(void **state)
{
    json_t *c = run(&cluster_kind, cluster("{'syncMode':'Push','apiEndpoint':'10.0.0.1:6443'}"), NULL);
    assert_cause(c, "spec.apiEndpoint", "FieldValueInvalid");
    json_decref(c);
    c = run(&cluster_kind, cluster("{'syncMode':'Push','apiEndpoint':'https://u:p@h:6443/?a=b'}"), NULL);
    assert_int_equal(json_array_size(c), 2);
    json_decref(c);
}

static void cluster_taint_effect_not_supported(void **state)
{
    json_t *c = run(&cluster_kind, cluster("{'syncMode':'Pull','taints':[{'key':'a','effect':'Sometimes'},"
                                           "{'key':'b'},{'key':'c','effect':'NoExecute'}]}"),
                    NULL);
    assert_message(c, "spec.taints[0].effect", "FieldValueNotSupported",
                   "Unsupported value: \"Sometimes\": supported values: \"NoSchedule\", \"NoExecute\"");
    assert_cause(c, "spec.taints[1].effect", "FieldValueRequired");
    assert_int_equal(json_array_size(c), 2);
    json_decref(c);
}

static void cluster_duplicate_taints_rejected(void **state)
{
    json_t *c = run(&cluster_kind, cluster("{'syncMode':'Pull','taints':[{'key':'a','effect':'NoSchedule'},"
                                           "{'key':'a','effect':'NoSchedule'},{'key':'a','effect':'NoExecute'}]}"),
                    NULL);
    assert_int_equal(json_array_size(c), 1);
    assert_cause(c, "spec.taints[1]", "FieldValueDuplicate");
    json_decref(c);
}

static void cluster_name_is_short_dns_label(void **state)
{
    json_t *c = run(&cluster_kind,
                    obj("{'metadata':{'name':'a-very-long-cluster-name-that-exceeds-forty-eight-chars'},"
                        "'spec':{'syncMode':'Push'}}"),
                    NULL);
    assert_message(c, "metadata.name", "FieldValueInvalid",
                   "Invalid value: \"a-very-long-cluster-name-that-exceeds-forty-eight-chars\": must be no more than "
                   "48 characters");
    json_decref(c);
}

/* ---------------------------------------------------------------------------------
 * ResourceBinding, Work, CRD, ResourceInterpreterCustomization, Namespace.
 */
static void binding_resource_fields_required(void **state)
{
    json_t *c = run(&rb_kind, obj("{'metadata':{'name':'b','namespace':'d'},'spec':{'resource':{'kind':'Deployment'}}}"),
                    NULL);
    assert_cause(c, "spec.resource.apiVersion", "FieldValueRequired");
    assert_cause(c, "spec.resource.name", "FieldValueRequired");
    assert_int_equal(json_array_size(c), 2);
    json_decref(c);
}

static void binding_cluster_name_required_and_replicas_non_negative(void **state)
{
    json_t *c = run(&rb_kind,
                    obj("{'metadata':{'name':'b','namespace':'d'},'spec':{'resource':{'apiVersion':'apps/v1',"
                        "'kind':'Deployment','name':'web'},'clusters':[{'name':'m1','replicas':2},{'replicas':-1}]}}"),
                    NULL);
    assert_cause(c, "spec.clusters[1].name", "FieldValueRequired");
    assert_message(c, "spec.clusters[1].replicas", "FieldValueInvalid",
                   "Invalid value: -1: must be greater than or equal to 0");
    assert_int_equal(json_array_size(c), 2);
    json_decref(c);
}

static void work_manifest_requires_api_version_and_kind(void **state)
{
    json_t *c = run(&work_kind,
                    obj("{'metadata':{'name':'w','namespace':'karmada-es-m1'},'spec':{'workload':{'manifests':["
                        "{'apiVersion':'v1','kind':'ConfigMap'},{'kind':'Secret'},'x']}}}"),
                    NULL);
    assert_cause(c, "spec.workload.manifests[1].apiVersion", "FieldValueRequired");
    assert_cause(c, "spec.workload.manifests[2]", "FieldValueInvalid");
    assert_int_equal(json_array_size(c), 2);
    json_decref(c);
}

static void crd_valid_passes(void **state)
{
    json_t *c = run(&crd_kind, crd("widgets.example.com", CRD_SPEC_OK), NULL);
    assert_no_causes(c);
    json_decref(c);
}

static void crd_name_must_match_plural_group(void **state)
{
    json_t *c = run(&crd_kind, crd("widget.example.com", CRD_SPEC_OK), NULL);
    assert_message(c, "metadata.name", "FieldValueInvalid",
                   "Invalid value: \"widget.example.com\": must be spec.names.plural+\".\"+spec.group");
    json_decref(c);
}

static void crd_requires_group_names_scope_versions(void **state)
{
    json_t *c = run(&crd_kind, crd("x.y", "{'names':{}}"), NULL);
    assert_cause(c, "spec.group", "FieldValueRequired");
    assert_cause(c, "spec.names.plural", "FieldValueRequired");
    assert_cause(c, "spec.names.kind", "FieldValueRequired");
    assert_cause(c, "spec.scope", "FieldValueRequired");
    assert_cause(c, "spec.versions", "FieldValueRequired");
    json_decref(c);
    c = run(&crd_kind, crd("widgets.example.com",
                           "{'group':'example.com','scope':'Global','names':{'plural':'widgets','kind':'Widget'},"
                           "'versions':[{'name':'v1','storage':true}]}"),
            NULL);
    assert_message(c, "spec.scope", "FieldValueNotSupported",
                   "Unsupported value: \"Global\": supported values: \"Cluster\", \"Namespaced\"");
    json_decref(c);
}

static void crd_exactly_one_storage_version(void **state)
{
    json_t *c = run(&crd_kind, crd("widgets.example.com",
                                   "{'group':'example.com','scope':'Cluster','names':{'plural':'widgets',"
                                   "'kind':'Widget'},'versions':[{'name':'v1','storage':true},"
                                   "{'name':'v2','storage':true}]}"),
                    NULL);
    const json_t *cause = find_cause(c, "spec.versions", "FieldValueInvalid");
    assert_non_null(cause);
    assert_non_null(strstr(json_string_value(json_object_get(cause, "message")),
                           "must have exactly one version marked as storage version"));
    json_decref(c);
    c = run(&crd_kind, crd("widgets.example.com",
                           "{'group':'example.com','scope':'Cluster','names':{'plural':'widgets','kind':'Widget'},"
                           "'versions':[{'name':'v1'}]}"),
            NULL);
    assert_cause(c, "spec.versions", "FieldValueInvalid");
    json_decref(c);
}

static void crd_plural_must_be_lowercase_label(void **state)
{
    json_t *c = run(&crd_kind, crd("Widgets.example.com",
                                   "{'group':'example.com','scope':'Cluster','names':{'plural':'Widgets',"
                                   "'kind':'Widget'},'versions':[{'name':'v1','storage':true}]}"),
                    NULL);
    assert_cause(c, "spec.names.plural", "FieldValueInvalid");
    json_decref(c);
    c = run(&crd_kind, crd("widgets.example", "{'group':'example','scope':'Cluster','names':{'plural':'widgets',"
                                              "'kind':'Widget'},'versions':[{'name':'v1','storage':true}]}"),
            NULL);
    assert_message(c, "spec.group", "FieldValueInvalid",
                   "Invalid value: \"example\": should be a domain with at least one dot");
    json_decref(c);
}

static void interpreter_customization_target_required(void **state)
{
    json_t *c = run(&ric_kind, obj("{'metadata':{'name':'r'},'spec':{'target':{'kind':'Widget'}}}"), NULL);
    assert_cause(c, "spec.target.apiVersion", "FieldValueRequired");
    assert_cause(c, "spec.customizations", "FieldValueRequired");
    json_decref(c);
}

static void interpreter_customization_lua_script_must_be_string(void **state)
{
    json_t *c = run(&ric_kind,
                    obj("{'metadata':{'name':'r'},'spec':{'target':{'apiVersion':'example.com/v1','kind':'Widget'},"
                        "'customizations':{'replicaResource':{'luaScript':'function GetReplicas(o) return 1 end'},"
                        "'healthInterpretation':{'luaScript':42},'statusReflection':{}}}}"),
                    NULL);
    assert_cause(c, "spec.customizations.healthInterpretation.luaScript", "FieldValueInvalid");
    assert_cause(c, "spec.customizations.statusReflection.luaScript", "FieldValueRequired");
    assert_int_equal(json_array_size(c), 2);
    json_decref(c);
}

static void kind_validator_runs_after_metadata(void **state)
{
    /* Both the metadata problem and the kind's own problem are reported together. */
    json_t *c = run(&cluster_kind, obj("{'metadata':{'name':'Bad'},'spec':{}}"), NULL);
    assert_cause(c, "metadata.name", "FieldValueInvalid");
    assert_cause(c, "spec.syncMode", "FieldValueRequired");
    json_decref(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(types_under_a_member_check_it_and_metadata_only),
        cmocka_unit_test(valid_name_accepted),
        cmocka_unit_test(invalid_name_rejected),
        cmocka_unit_test(missing_name_required),
        cmocka_unit_test(name_longer_than_subdomain_rejected),
        cmocka_unit_test(namespace_name_must_be_dns_label),
        cmocka_unit_test(service_name_must_be_dns_label),
        cmocka_unit_test(generate_name_prefix_validated),
        cmocka_unit_test(namespaced_kind_requires_namespace),
        cmocka_unit_test(cluster_scoped_kind_forbids_namespace),
        cmocka_unit_test(label_keys_and_values_validated),
        cmocka_unit_test(label_key_helper_messages),
        cmocka_unit_test(dns_helpers),
        cmocka_unit_test(annotation_keys_and_size_validated),
        cmocka_unit_test(finalizer_name_validated),
        cmocka_unit_test(owner_reference_requires_uid),
        cmocka_unit_test(immutable_name_on_update),
        cmocka_unit_test(immutable_namespace_on_update),
        cmocka_unit_test(immutable_uid_and_creation_timestamp_on_update),
        cmocka_unit_test(omitted_system_fields_allowed_on_update),
        cmocka_unit_test(cause_add_shape),
        cmocka_unit_test(types_reports_field_path),
        cmocka_unit_test(types_reports_list_indices_through_sub_tables),
        cmocka_unit_test(types_metadata_checked),
        cmocka_unit_test(types_special_types),
        cmocka_unit_test(types_body_must_be_object),
        cmocka_unit_test(types_follow_crd_schema),
        cmocka_unit_test(valid_propagation_policy_passes),
        cmocka_unit_test(propagation_policy_requires_resource_selectors),
        cmocka_unit_test(resource_selector_requires_api_version_and_kind),
        cmocka_unit_test(resource_selector_namespace_must_match_policy),
        cmocka_unit_test(preemption_always_requires_selector_names),
        cmocka_unit_test(propagation_policy_rejects_affinity_with_affinities),
        cmocka_unit_test(affinity_name_required_and_unique),
        cmocka_unit_test(overflow_affinities_need_aggregated_or_dynamic_weight),
        cmocka_unit_test(field_selector_key_and_operator_checked),
        cmocka_unit_test(label_selector_expressions_checked),
        cmocka_unit_test(spread_by_field_and_label_exclusive),
        cmocka_unit_test(max_groups_below_min_groups_rejected),
        cmocka_unit_test(spread_by_field_value_not_supported),
        cmocka_unit_test(spread_by_field_requires_cluster_constraint),
        cmocka_unit_test(replica_scheduling_enums_checked),
        cmocka_unit_test(weight_below_one_rejected),
        cmocka_unit_test(static_weight_target_cluster_required),
        cmocka_unit_test(cluster_toleration_operator_checked),
        cmocka_unit_test(suspension_dispatching_with_clusters_rejected),
        cmocka_unit_test(application_failover_requires_propagate_deps),
        cmocka_unit_test(toleration_seconds_negative_rejected),
        cmocka_unit_test(purge_mode_not_supported),
        cmocka_unit_test(purge_mode_accepts_deprecated_spellings),
        cmocka_unit_test(grace_period_only_with_gracefully),
        cmocka_unit_test(grace_period_must_be_positive),
        cmocka_unit_test(state_preservation_rule_fields_required),
        cmocka_unit_test(cluster_failover_purge_mode_never_not_supported),
        cmocka_unit_test(policy_enums_checked),
        cmocka_unit_test(cluster_propagation_policy_same_rules),
        cmocka_unit_test(valid_override_policy_passes),
        cmocka_unit_test(plaintext_path_required_and_operator_checked),
        cmocka_unit_test(plaintext_remove_with_value_rejected),
        cmocka_unit_test(image_overrider_component_checked),
        cmocka_unit_test(command_overrider_container_name_required),
        cmocka_unit_test(labels_overrider_operator_and_keys_checked),
        cmocka_unit_test(field_overrider_rules),
        cmocka_unit_test(deprecated_target_cluster_with_override_rules_rejected),
        cmocka_unit_test(cluster_sync_mode_required),
        cmocka_unit_test(cluster_api_endpoint_must_be_url),
        cmocka_unit_test(cluster_taint_effect_not_supported),
        cmocka_unit_test(cluster_duplicate_taints_rejected),
        cmocka_unit_test(cluster_name_is_short_dns_label),
        cmocka_unit_test(binding_resource_fields_required),
        cmocka_unit_test(binding_cluster_name_required_and_replicas_non_negative),
        cmocka_unit_test(work_manifest_requires_api_version_and_kind),
        cmocka_unit_test(crd_valid_passes),
        cmocka_unit_test(crd_name_must_match_plural_group),
        cmocka_unit_test(crd_requires_group_names_scope_versions),
        cmocka_unit_test(crd_exactly_one_storage_version),
        cmocka_unit_test(crd_plural_must_be_lowercase_label),
        cmocka_unit_test(interpreter_customization_target_required),
        cmocka_unit_test(interpreter_customization_lua_script_must_be_string),
        cmocka_unit_test(kind_validator_runs_after_metadata),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
