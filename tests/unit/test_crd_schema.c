/* test_crd_schema.c - pruning, defaulting and fieldValidation for custom resources
 * (src/api/crd_schema.c). Kinds are built here from JSON literals, not registered. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "api/crd_schema.h"
#include "core/err.h"

/* JSON with ' for " so literals stay readable. */
static json_t *js(const char *fmt, ...)
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
        fail_msg("bad test JSON: %s: %s", err.text, buf);
    return v;
}

/* A dynamic kind whose version carries `schema` as its openAPIV3Schema. */
static fl_kind mkkind(const char *schema)
{
    fl_kind k = {.group = "example.com", .version = "v1", .kind = "Widget", .dynamic = true, .served = true};
    json_t *s = js("%s", schema);
    k.crd_version = json_pack("{s:s, s:b, s:b, s:{s:o}}", "name", "v1", "served", 1, "storage", 1, "schema",
                              "openAPIV3Schema", s);
    return k;
}

static void freekind(fl_kind *k)
{
    json_decref(k->crd_version);
}

static void assert_json(const json_t *got, const char *want_lit)
{
    json_t *want = js("%s", want_lit);
    if (!json_equal(got, want)) {
        char *g = json_dumps(got, JSON_SORT_KEYS | JSON_COMPACT);
        char *w = json_dumps(want, JSON_SORT_KEYS | JSON_COMPACT);
        print_error("got  %s\nwant %s\n", g, w);
        free(g);
        free(w);
        json_decref(want);
        fail();
    }
    json_decref(want);
}

#define ROOT_OPEN "{'type':'object','properties':{"
#define ROOT_CLOSE "}}"

static const char *spec_schema = ROOT_OPEN
    "'spec':{'type':'object','properties':{"
    "  'replicas':{'type':'integer'},"
    "  'template':{'type':'object','properties':{'image':{'type':'string'}}}}},"
    "'status':{'type':'object','properties':{'ready':{'type':'boolean'}}}" ROOT_CLOSE;

/* ------------------------------------------------------------------------------ */

static void unknown_nested_fields_are_pruned_and_reported(void **state)
{
    fl_kind k = mkkind(spec_schema);
    json_t *o = js("{'apiVersion':'example.com/v1','kind':'Widget','metadata':{'name':'a','bogus':1},"
                   "'spec':{'replicas':2,'zeta':1,'template':{'image':'x','pull':'Always'},'alpha':{'x':1}},"
                   "'extra':true}");
    json_t *unknown = json_array();
    fl_crd_prune(&k, o, unknown);
    assert_json(o, "{'apiVersion':'example.com/v1','kind':'Widget','metadata':{'name':'a','bogus':1},"
                   "'spec':{'replicas':2,'template':{'image':'x'}}}");
    /* sorted bytewise, as upstream sorts; root metadata is not ours to judge */
    assert_json(unknown, "['.extra','.spec.alpha','.spec.template.pull','.spec.zeta']");
    json_decref(unknown);
    json_decref(o);
    freekind(&k);
}

static void prune_without_unknown_array_still_prunes(void **state)
{
    fl_kind k = mkkind(spec_schema);
    json_t *o = js("{'spec':{'replicas':1,'x':2}}");
    fl_crd_prune(&k, o, NULL);
    assert_json(o, "{'spec':{'replicas':1}}");
    json_decref(o);
    freekind(&k);
}

static void root_key_order_is_kept(void **state)
{
    fl_kind k = mkkind(spec_schema);
    json_t *o = js("{'apiVersion':'example.com/v1','kind':'Widget','metadata':{},'spec':{'replicas':1}}");
    fl_crd_prune(&k, o, NULL);
    char *s = json_dumps(o, JSON_COMPACT);
    assert_string_equal(s, "{\"apiVersion\":\"example.com/v1\",\"kind\":\"Widget\",\"metadata\":{},\"spec\":{"
                           "\"replicas\":1}}");
    free(s);
    json_decref(o);
    freekind(&k);
}

static void preserve_unknown_at_root_keeps_undeclared_but_prunes_declared(void **state)
{
    fl_kind k = mkkind("{'type':'object','x-kubernetes-preserve-unknown-fields':true,'properties':{"
                       "'spec':{'type':'object','properties':{'a':{'type':'string'}}}}}");
    json_t *o = js("{'kind':'Widget','anything':{'deep':[1,{'x':1}]},'spec':{'a':'x','b':'y'}}");
    json_t *unknown = json_array();
    fl_crd_prune(&k, o, unknown);
    /* upstream skipPrune: the declared spec is still pruned */
    assert_json(o, "{'kind':'Widget','anything':{'deep':[1,{'x':1}]},'spec':{'a':'x'}}");
    assert_json(unknown, "['.spec.b']");
    json_decref(unknown);
    json_decref(o);
    freekind(&k);
}

static void preserve_unknown_at_subtree_keeps_only_that_subtree(void **state)
{
    fl_kind k = mkkind(ROOT_OPEN "'spec':{'type':'object','properties':{"
                       "  'config':{'type':'object','x-kubernetes-preserve-unknown-fields':true,"
                       "            'properties':{'typed':{'type':'object','properties':{'n':{'type':'integer'}}}}},"
                       "  'name':{'type':'string'}}}" ROOT_CLOSE);
    json_t *o = js("{'spec':{'name':'n','junk':1,'config':{'free':{'form':[1,2]},'typed':{'n':1,'m':2}}}}");
    json_t *unknown = json_array();
    fl_crd_prune(&k, o, unknown);
    assert_json(o, "{'spec':{'name':'n','config':{'free':{'form':[1,2]},'typed':{'n':1}}}}");
    assert_json(unknown, "['.spec.config.typed.m','.spec.junk']");
    json_decref(unknown);
    json_decref(o);
    freekind(&k);
}

static void additional_properties_schema_prunes_inside_each_value(void **state)
{
    fl_kind k = mkkind(ROOT_OPEN "'spec':{'type':'object','properties':{'ports':{'type':'object',"
                       "'additionalProperties':{'type':'object','properties':{'port':{'type':'integer'}}}}}}"
                       ROOT_CLOSE);
    json_t *o = js("{'spec':{'ports':{'http':{'port':80,'proto':'TCP'},'dns':{'port':53,'udp':true}}}}");
    json_t *unknown = json_array();
    fl_crd_prune(&k, o, unknown);
    assert_json(o, "{'spec':{'ports':{'http':{'port':80},'dns':{'port':53}}}}");
    assert_json(unknown, "['.spec.ports.dns.udp','.spec.ports.http.proto']");
    json_decref(unknown);
    json_decref(o);
    freekind(&k);
}

static void additional_properties_true_keeps_keys_and_scalar_values(void **state)
{
    fl_kind k = mkkind(ROOT_OPEN "'spec':{'type':'object','properties':{'labels':{'type':'object',"
                       "'additionalProperties':true}}}" ROOT_CLOSE);
    json_t *o = js("{'spec':{'labels':{'a':'1','b':2,'c':[1,'x'],'d':{'inner':1}}}}");
    json_t *unknown = json_array();
    fl_crd_prune(&k, o, unknown);
    /* Every key stays; an object value has no schema, so upstream empties it. */
    assert_json(o, "{'spec':{'labels':{'a':'1','b':2,'c':[1,'x'],'d':{}}}}");
    assert_json(unknown, "['.spec.labels.d.inner']");
    json_decref(unknown);
    json_decref(o);
    freekind(&k);
}

static void arrays_of_objects_are_pruned_per_element_with_indices(void **state)
{
    fl_kind k = mkkind(ROOT_OPEN "'spec':{'type':'object','properties':{'items':{'type':'array','items':{"
                       "'type':'object','properties':{'name':{'type':'string'},"
                       "'tags':{'type':'array','items':{'type':'object','properties':{'k':{'type':'string'}}}}}}}}}"
                       ROOT_CLOSE);
    json_t *o = js("{'spec':{'items':[{'name':'a'},{'name':'b','x':1},{'name':'c','bar':2,"
                   "'tags':[{'k':'1','v':'2'}]}]}}");
    json_t *unknown = json_array();
    fl_crd_prune(&k, o, unknown);
    assert_json(o, "{'spec':{'items':[{'name':'a'},{'name':'b'},{'name':'c','tags':[{'k':'1'}]}]}}");
    assert_json(unknown, "['.spec.items[1].x','.spec.items[2].bar','.spec.items[2].tags[0].v']");
    json_decref(unknown);
    json_decref(o);
    freekind(&k);
}

static void embedded_resources_keep_apiversion_kind_metadata(void **state)
{
    fl_kind k = mkkind(ROOT_OPEN "'spec':{'type':'object','properties':{'template':{'type':'object',"
                       "'x-kubernetes-embedded-resource':true,'properties':{'spec':{'type':'object',"
                       "'properties':{'image':{'type':'string'}}}}}}}" ROOT_CLOSE);
    json_t *o = js("{'spec':{'template':{'apiVersion':'v1','kind':'Pod',"
                   "'metadata':{'name':'p','labels':{'a':'b'},'color':'red',"
                   "'ownerReferences':[{'name':'o','uid':'u','extra':1}]},"
                   "'spec':{'image':'nginx','cpu':1},'status':{}}}}");
    json_t *unknown = json_array();
    fl_crd_prune(&k, o, unknown);
    assert_json(o, "{'spec':{'template':{'apiVersion':'v1','kind':'Pod',"
                   "'metadata':{'name':'p','labels':{'a':'b'},'ownerReferences':[{'name':'o','uid':'u'}]},"
                   "'spec':{'image':'nginx'}}}}");
    /* pruned paths sorted first, then the embedded ObjectMeta ones */
    assert_json(unknown, "['.spec.template.spec.cpu','.spec.template.status',"
                         "'.spec.template.metadata.color','.spec.template.metadata.ownerReferences[0].extra']");
    json_decref(unknown);
    json_decref(o);
    freekind(&k);
}

static void metadata_key_inside_a_plain_object_is_pruned(void **state)
{
    fl_kind k = mkkind(ROOT_OPEN "'spec':{'type':'object','properties':{'a':{'type':'string'}}}" ROOT_CLOSE);
    json_t *o = js("{'spec':{'a':'x','kind':'K','metadata':{}}}");
    json_t *unknown = json_array();
    fl_crd_prune(&k, o, unknown);
    assert_json(o, "{'spec':{'a':'x'}}");
    assert_json(unknown, "['.spec.kind','.spec.metadata']");
    json_decref(unknown);
    json_decref(o);
    freekind(&k);
}

static void int_or_string_values_are_kept(void **state)
{
    fl_kind k = mkkind(ROOT_OPEN "'spec':{'type':'object','properties':{"
                       "'port':{'x-kubernetes-int-or-string':true},"
                       "'maxSurge':{'x-kubernetes-int-or-string':true,'anyOf':[{'type':'integer'},{'type':'string'}]}}}"
                       ROOT_CLOSE);
    json_t *o = js("{'spec':{'port':8080,'maxSurge':'25%%'}}");
    json_t *unknown = json_array();
    fl_crd_prune(&k, o, unknown);
    assert_json(o, "{'spec':{'port':8080,'maxSurge':'25%'}}");
    assert_int_equal(json_array_size(unknown), 0);
    json_decref(unknown);
    json_decref(o);
    freekind(&k);
}

static void non_nullable_nulls_without_default_are_dropped(void **state)
{
    fl_kind k = mkkind(ROOT_OPEN "'spec':{'type':'object','properties':{"
                       "'a':{'type':'string'},'b':{'type':'string','nullable':true},"
                       "'c':{'type':'string','default':'dc'}}}" ROOT_CLOSE);
    json_t *o = js("{'spec':{'a':null,'b':null,'c':null}}");
    json_t *unknown = json_array();
    fl_crd_prune(&k, o, unknown);
    assert_json(o, "{'spec':{'b':null,'c':null}}"); /* c is left for defaulting */
    assert_int_equal(json_array_size(unknown), 0);
    fl_crd_default(&k, o);
    assert_json(o, "{'spec':{'b':null,'c':'dc'}}");
    json_decref(unknown);
    json_decref(o);
    freekind(&k);
}

static void non_dynamic_kind_is_untouched(void **state)
{
    fl_kind k = mkkind(spec_schema);
    k.dynamic = false;
    json_t *o = js("{'spec':{'replicas':1,'x':2}}");
    json_t *unknown = json_array();
    fl_crd_prune(&k, o, unknown);
    fl_crd_default(&k, o);
    assert_json(o, "{'spec':{'replicas':1,'x':2}}");
    assert_int_equal(json_array_size(unknown), 0);

    fl_kind none = {.kind = "NoSchema", .dynamic = true, .crd_version = js("{'name':'v1'}")};
    fl_crd_prune(&none, o, unknown);
    fl_crd_prune(NULL, o, unknown);
    fl_crd_default(NULL, o);
    assert_json(o, "{'spec':{'replicas':1,'x':2}}");
    assert_int_equal(json_array_size(unknown), 0);
    json_decref(none.crd_version);
    json_decref(unknown);
    json_decref(o);
    freekind(&k);
}

/* ------------------------------------------------------------------------------ */

static const char *default_schema = ROOT_OPEN
    "'spec':{'type':'object','properties':{"
    "  'replicas':{'type':'integer','default':1},"
    "  'mode':{'type':'string','default':'fast'},"
    "  'opts':{'type':'object','properties':{'level':{'type':'integer','default':3}}},"
    "  'resources':{'type':'object','default':{},'properties':{'cpu':{'type':'string','default':'100m'}}},"
    "  'ports':{'type':'array','items':{'type':'object','properties':{"
    "     'port':{'type':'integer'},'protocol':{'type':'string','default':'TCP'}}}},"
    "  'env':{'type':'object','additionalProperties':{'type':'object','properties':{"
    "     'value':{'type':'string'},'secret':{'type':'boolean','default':false}}}}}}" ROOT_CLOSE;

static void defaults_fill_absent_scalars(void **state)
{
    fl_kind k = mkkind(default_schema);
    json_t *o = js("{'apiVersion':'example.com/v1','kind':'Widget','spec':{}}");
    fl_crd_default(&k, o);
    /* opts has no default: its level default waits until opts exists. resources is
     * defaulted to {} and then defaulted inside. */
    assert_json(o, "{'apiVersion':'example.com/v1','kind':'Widget',"
                   "'spec':{'replicas':1,'mode':'fast','resources':{'cpu':'100m'}}}");
    json_decref(o);
    freekind(&k);
}

static void defaults_apply_inside_objects_only_when_the_parent_exists(void **state)
{
    fl_kind k = mkkind(default_schema);
    json_t *absent = js("{'kind':'Widget'}");
    fl_crd_default(&k, absent);
    assert_json(absent, "{'kind':'Widget'}"); /* spec has no default: nothing created */

    json_t *o = js("{'spec':{'opts':{}}}");
    fl_crd_default(&k, o);
    assert_json(o, "{'spec':{'replicas':1,'mode':'fast','opts':{'level':3},'resources':{'cpu':'100m'}}}");
    json_decref(absent);
    json_decref(o);
    freekind(&k);
}

static void defaults_apply_to_each_array_item(void **state)
{
    fl_kind k = mkkind(default_schema);
    json_t *o = js("{'spec':{'ports':[{'port':80},{'port':53,'protocol':'UDP'}]}}");
    fl_crd_default(&k, o);
    assert_json(o, "{'spec':{'replicas':1,'mode':'fast','resources':{'cpu':'100m'},"
                   "'ports':[{'port':80,'protocol':'TCP'},{'port':53,'protocol':'UDP'}]}}");
    json_decref(o);
    freekind(&k);
}

static void defaults_apply_to_each_additional_properties_value(void **state)
{
    fl_kind k = mkkind(default_schema);
    json_t *o = js("{'spec':{'env':{'A':{'value':'1'},'B':{'secret':true}}}}");
    fl_crd_default(&k, o);
    assert_json(o, "{'spec':{'replicas':1,'mode':'fast','resources':{'cpu':'100m'},"
                   "'env':{'A':{'value':'1','secret':false},'B':{'secret':true}}}}");
    json_decref(o);
    freekind(&k);
}

static void defaults_do_not_override_present_values(void **state)
{
    fl_kind k = mkkind(default_schema);
    json_t *o = js("{'spec':{'replicas':0,'mode':'','resources':{'cpu':'2'}}}");
    fl_crd_default(&k, o);
    assert_json(o, "{'spec':{'replicas':0,'mode':'','resources':{'cpu':'2'}}}");
    json_decref(o);
    freekind(&k);
}

static void defaults_are_copies(void **state)
{
    fl_kind k = mkkind(default_schema);
    json_t *o = js("{'spec':{}}");
    fl_crd_default(&k, o);
    /* mutating the defaulted value must not change the schema's default */
    json_object_set_new(json_object_get(json_object_get(o, "spec"), "resources"), "cpu", json_string("9"));
    json_t *o2 = js("{'spec':{}}");
    fl_crd_default(&k, o2);
    assert_string_equal(json_string_value(json_object_get(
                            json_object_get(json_object_get(o2, "spec"), "resources"), "cpu")),
                        "100m");
    json_decref(o);
    json_decref(o2);
    freekind(&k);
}

/* ------------------------------------------------------------------------------ */

static void strict_message_uses_upstream_wording(void **state)
{
    json_t *unknown = js("['.spec.bar','.spec.items[2].foo']");
    char *warning = (char *)1, *err = NULL;
    assert_int_equal(fl_crd_field_validation("Strict", unknown, &warning, &err), FL_EINVAL);
    assert_null(warning);
    assert_string_equal(err, "strict decoding error: unknown field \"spec.bar\", unknown field "
                             "\"spec.items[2].foo\"");
    free(err);
    json_decref(unknown);
}

static void strict_lists_caller_duplicate_messages_verbatim(void **state)
{
    json_t *unknown = js("['duplicate field \\'spec.a\\'','.spec.x']");
    char *warning, *err;
    assert_int_equal(fl_crd_field_validation("Strict", unknown, &warning, &err), FL_EINVAL);
    assert_string_equal(err, "strict decoding error: duplicate field \"spec.a\", unknown field \"spec.x\"");
    free(err);
    json_decref(unknown);
}

static void strict_without_unknown_fields_proceeds(void **state)
{
    json_t *unknown = json_array();
    char *warning, *err;
    assert_int_equal(fl_crd_field_validation("Strict", unknown, &warning, &err), 0);
    assert_null(warning);
    assert_null(err);
    assert_int_equal(fl_crd_field_validation("Strict", NULL, &warning, &err), 0);
    json_decref(unknown);
}

static void warn_gives_one_warning_line_per_field(void **state)
{
    json_t *unknown = js("['.spec.bar','.spec.foo']");
    char *warning, *err;
    assert_int_equal(fl_crd_field_validation("Warn", unknown, &warning, &err), 0);
    assert_null(err);
    assert_string_equal(warning, "unknown field \"spec.bar\"\nunknown field \"spec.foo\"");
    free(warning);
    json_decref(unknown);
}

static void missing_mode_defaults_to_warn(void **state)
{
    json_t *unknown = js("['.spec.foo']");
    char *warning, *err;
    assert_int_equal(fl_crd_field_validation(NULL, unknown, &warning, &err), 0);
    assert_string_equal(warning, "unknown field \"spec.foo\"");
    free(warning);
    assert_int_equal(fl_crd_field_validation("", unknown, &warning, &err), 0);
    assert_string_equal(warning, "unknown field \"spec.foo\"");
    free(warning);
    json_decref(unknown);
}

static void ignore_proceeds_silently(void **state)
{
    json_t *unknown = js("['.spec.foo']");
    char *warning, *err;
    assert_int_equal(fl_crd_field_validation("Ignore", unknown, &warning, &err), 0);
    assert_null(warning);
    assert_null(err);
    json_decref(unknown);
}

static void invalid_mode_names_the_allowed_values(void **state)
{
    char *warning, *err;
    assert_int_equal(fl_crd_field_validation("strict", NULL, &warning, &err), FL_EINVAL);
    assert_null(warning);
    assert_string_equal(err, "fieldValidation: Unsupported value: \"strict\": supported values: \"\", "
                             "\"Ignore\", \"Strict\", \"Warn\"");
    free(err);
    assert_int_equal(fl_crd_field_validation("a\"b", NULL, &warning, &err), FL_EINVAL);
    assert_string_equal(err, "fieldValidation: Unsupported value: \"a\\\"b\": supported values: \"\", "
                             "\"Ignore\", \"Strict\", \"Warn\"");
    free(err);
}

static void prune_then_strict_end_to_end(void **state)
{
    fl_kind k = mkkind(spec_schema);
    json_t *o = js("{'spec':{'replicas':1,'foo':1,'bar':2}}");
    json_t *unknown = json_array();
    fl_crd_prune(&k, o, unknown);
    char *warning, *err;
    assert_int_equal(fl_crd_field_validation("Strict", unknown, &warning, &err), FL_EINVAL);
    assert_string_equal(err, "strict decoding error: unknown field \"spec.bar\", unknown field \"spec.foo\"");
    free(err);
    json_decref(unknown);
    json_decref(o);
    freekind(&k);
}


/* ---- built-in kinds: pruning against a field table, duplicates ---- */

static const fl_field t_port[] = {
    {.path = "name", .type = FL_F_STRING},
    {.path = "port", .type = FL_F_INT},
    {.path = NULL},
};
static const fl_field t_spec[] = {
    {.path = "labels", .type = FL_F_MAPSTR},
    {.path = "later", .type = FL_F_STRING, .unsupported = true},
    {.path = "ports", .type = FL_F_ARRAY, .elem = FL_F_OBJECT, .sub = t_port},
    {.path = "raw", .type = FL_F_OBJECT},
    {.path = "named", .type = FL_F_MAP, .elem = FL_F_OBJECT, .sub = t_port},
    {.path = NULL},
};
static const fl_field t_root[] = {
    {.path = "apiVersion", .type = FL_F_STRING},
    {.path = "kind", .type = FL_F_STRING},
    {.path = "metadata", .type = FL_F_OBJECT},
    {.path = "spec", .type = FL_F_OBJECT, .sub = t_spec},
    {.path = NULL},
};

static void builtin_kind_is_pruned_against_its_table_in_document_order(void **state)
{
    (void)state;
    fl_kind k = {.group = "", .version = "v1", .kind = "Thing", .fields = t_root};
    json_t *o = js("{'kind':'Thing','spek':1,'spec':{'ports':[{'name':'a'},{'name':'b','prot':1}],"
                   "'raw':{'anything':1},'named':{'x':{'port':1,'bad':2}},'labels':{'k':'v'}}}");
    json_t *unknown = json_array();
    fl_crd_prune(&k, o, unknown);
    assert_json(o, "{'kind':'Thing','spec':{'ports':[{'name':'a'},{'name':'b'}],'raw':{'anything':1},"
                   "'named':{'x':{'port':1}},'labels':{'k':'v'}}}");
    assert_json(unknown, "['.spek','.spec.ports[1].prot','.spec.named.x.bad']");
    json_decref(unknown);
    json_decref(o);
}

static void unsupported_fields_are_reported_only_when_set(void **state)
{
    (void)state;
    fl_kind k = {.group = "", .version = "v1", .kind = "Thing", .fields = t_root};
    json_t *out = json_array();
    json_t *o = js("{'spec':{'later':''}}");
    fl_crd_unsupported_fields(&k, o, out);
    assert_int_equal(json_array_size(out), 0);
    json_decref(o);
    o = js("{'spec':{'later':'soon'}}");
    fl_crd_unsupported_fields(&k, o, out);
    assert_json(out, "['.spec.later']");
    json_decref(o);
    json_decref(out);
}

static void duplicate_keys_are_named_with_their_paths(void **state)
{
    (void)state;
    const char *body = "{\"a\":1,\"s\":{\"x\":[{\"k\":1,\"k\":2}],\"y\":\"}\\\"\",\"y\":3},\"a\":2}";
    json_t *out = json_array();
    fl_crd_duplicate_fields(body, strlen(body), out);
    assert_json(out, "['duplicate field \\'s.x[0].k\\'','duplicate field \\'s.y\\'','duplicate field \\'a\\'']");
    json_decref(out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(unknown_nested_fields_are_pruned_and_reported),
        cmocka_unit_test(prune_without_unknown_array_still_prunes),
        cmocka_unit_test(root_key_order_is_kept),
        cmocka_unit_test(preserve_unknown_at_root_keeps_undeclared_but_prunes_declared),
        cmocka_unit_test(preserve_unknown_at_subtree_keeps_only_that_subtree),
        cmocka_unit_test(additional_properties_schema_prunes_inside_each_value),
        cmocka_unit_test(additional_properties_true_keeps_keys_and_scalar_values),
        cmocka_unit_test(arrays_of_objects_are_pruned_per_element_with_indices),
        cmocka_unit_test(embedded_resources_keep_apiversion_kind_metadata),
        cmocka_unit_test(metadata_key_inside_a_plain_object_is_pruned),
        cmocka_unit_test(int_or_string_values_are_kept),
        cmocka_unit_test(non_nullable_nulls_without_default_are_dropped),
        cmocka_unit_test(non_dynamic_kind_is_untouched),
        cmocka_unit_test(defaults_fill_absent_scalars),
        cmocka_unit_test(defaults_apply_inside_objects_only_when_the_parent_exists),
        cmocka_unit_test(defaults_apply_to_each_array_item),
        cmocka_unit_test(defaults_apply_to_each_additional_properties_value),
        cmocka_unit_test(defaults_do_not_override_present_values),
        cmocka_unit_test(defaults_are_copies),
        cmocka_unit_test(strict_message_uses_upstream_wording),
        cmocka_unit_test(strict_lists_caller_duplicate_messages_verbatim),
        cmocka_unit_test(strict_without_unknown_fields_proceeds),
        cmocka_unit_test(warn_gives_one_warning_line_per_field),
        cmocka_unit_test(missing_mode_defaults_to_warn),
        cmocka_unit_test(ignore_proceeds_silently),
        cmocka_unit_test(invalid_mode_names_the_allowed_values),
        cmocka_unit_test(prune_then_strict_end_to_end),
        cmocka_unit_test(builtin_kind_is_pruned_against_its_table_in_document_order),
        cmocka_unit_test(unsupported_fields_are_reported_only_when_set),
        cmocka_unit_test(duplicate_keys_are_named_with_their_paths),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
