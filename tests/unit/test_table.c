/* test_table.c - server-side Table rendering, the JSONPath subset and AGE formatting
 * (src/api/table.c). Kinds are built here, not taken from the kind table. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "api/table.h"
#include "core/jsonpath.h"

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
        fail_msg("bad test JSON: %s: %s", err.text, buf);
    return v;
}

/* RFC 3339 timestamp `ago` seconds before now. */
static void stamp(long ago, char *buf, size_t len)
{
    time_t t = time(NULL) - ago;
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* A Deployment-like kind whose cells all come from JSONPath. */
static const fl_column deploy_columns[] = {
    {"Ready-Replicas", "integer", "", "Ready replicas", "{.status.readyReplicas}", 0},
    {"Available", "string", "", "Available condition", ".status.conditions[?(@.type==\"Available\")].status", 0},
    {"Images", "string", "", "Container images", "{.spec.template.spec.containers[*].image}", 1},
    {NULL},
};
static const fl_kind deploy_kind = {.group = "apps", .version = "v1", .kind = "Deployment", .namespaced = true,
                                    .columns = deploy_columns};

static json_t *deployment(const char *name, long age, const char *status)
{
    char ts[40];
    stamp(age, ts, sizeof ts);
    return obj("{'apiVersion':'apps/v1','kind':'Deployment','metadata':{'name':'%s','namespace':'default',"
               "'creationTimestamp':'%s','labels':{'app':'web'}},'spec':{'replicas':3,'template':{'spec':"
               "{'containers':[{'name':'a','image':'nginx:1'},{'name':'b','image':'sidecar:2'}]}}},'status':%s}",
               name, ts, status);
}

static json_t *items_of(json_t *a, json_t *b)
{
    json_t *items = json_array();
    json_array_append_new(items, a);
    if (b)
        json_array_append_new(items, b);
    return items;
}

static const json_t *col(const json_t *table, size_t i)
{
    return json_array_get(json_object_get(table, "columnDefinitions"), i);
}

static const char *col_str(const json_t *table, size_t i, const char *key)
{
    return json_string_value(json_object_get(col(table, i), key));
}

static const json_t *cell(const json_t *table, size_t row, size_t i)
{
    return json_array_get(json_object_get(json_array_get(json_object_get(table, "rows"), row), "cells"), i);
}

/* ---------------------------------------------------------------------------------
 * Table shape.
 */
static void table_shape_and_column_definitions(void **state)
{
    json_t *items = items_of(deployment("web", 30, "{}"), NULL);
    json_t *t = fl_table_render(&deploy_kind, items, NULL, "42", "tok");
    assert_string_equal(json_string_value(json_object_get(t, "kind")), "Table");
    assert_string_equal(json_string_value(json_object_get(t, "apiVersion")), "meta.k8s.io/v1");
    json_t *meta = json_object_get(t, "metadata");
    assert_string_equal(json_string_value(json_object_get(meta, "resourceVersion")), "42");
    assert_string_equal(json_string_value(json_object_get(meta, "continue")), "tok");

    assert_int_equal(json_array_size(json_object_get(t, "columnDefinitions")), 5);
    assert_string_equal(col_str(t, 0, "name"), "Name");
    assert_string_equal(col_str(t, 0, "type"), "string");
    assert_string_equal(col_str(t, 0, "format"), "name");
    assert_true(strncmp(col_str(t, 0, "description"), "Name must be unique within a namespace.", 39) == 0);
    assert_string_equal(col_str(t, 1, "name"), "Ready-Replicas");
    assert_string_equal(col_str(t, 1, "type"), "integer");
    assert_string_equal(col_str(t, 1, "description"), "Ready replicas");
    /* Age closes the default columns; the -o wide (priority 1) ones follow it, as upstream prints */
    assert_string_equal(col_str(t, 3, "name"), "Age");
    assert_string_equal(col_str(t, 3, "type"), "string");
    assert_true(strncmp(col_str(t, 3, "description"), "CreationTimestamp is a timestamp", 32) == 0);
    assert_int_equal(json_integer_value(json_object_get(col(t, 4), "priority")), 1);

    json_t *rows = json_object_get(t, "rows");
    assert_int_equal(json_array_size(rows), 1);
    assert_int_equal(json_array_size(json_object_get(json_array_get(rows, 0), "cells")), 5);
    json_decref(t);

    /* No list metadata: an empty metadata object, as ListMeta's omitempty fields give. */
    t = fl_table_render(&deploy_kind, items, "None", NULL, NULL);
    assert_int_equal(json_object_size(json_object_get(t, "metadata")), 0);
    json_decref(t);
    json_decref(items);
}

static void table_cells_from_jsonpath(void **state)
{
    json_t *items = items_of(
        deployment("web", 45, "{'readyReplicas':2,'conditions':[{'type':'Progressing','status':'True'},"
                              "{'type':'Available','status':'False'}]}"),
        deployment("new", 10, "{}"));
    json_t *t = fl_table_render(&deploy_kind, items, "None", NULL, NULL);
    assert_string_equal(json_string_value(cell(t, 0, 0)), "web");
    assert_int_equal(json_integer_value(cell(t, 0, 1)), 2);
    assert_string_equal(json_string_value(cell(t, 0, 2)), "False");
    assert_string_equal(json_string_value(cell(t, 0, 4)), "nginx:1,sidecar:2");
    const char *age = json_string_value(cell(t, 0, 3));
    assert_true(!strcmp(age, "45s") || !strcmp(age, "46s"));
    /* Missing values in a built-in kind: 0 for counts, <none> for text. */
    assert_true(json_is_integer(cell(t, 1, 1)));
    assert_int_equal(json_integer_value(cell(t, 1, 1)), 0);
    assert_string_equal(json_string_value(cell(t, 1, 2)), "<none>");
    json_decref(t);
    json_decref(items);
}

static void deploy_row(const fl_kind *k, const json_t *o, json_t *cells)
{
    json_t *st = json_object_get(o, "status");
    char ready[32];
    snprintf(ready, sizeof ready, "%lld/%lld", (long long)json_integer_value(json_object_get(st, "readyReplicas")),
             (long long)json_integer_value(json_object_get(json_object_get(o, "spec"), "replicas")));
    json_array_append_new(cells, json_string(ready));
    json_array_append_new(cells, json_string("after-age"));
}

static void table_row_function_fills_columns_around_age(void **state)
{
    /* The kind lists Age itself, in the middle: the renderer fills it, the row
     * function fills the rest in order, and no second Age is appended. */
    static const fl_column cols[] = {
        {"Ready", "string", "", "", NULL, 0},
        {"Age", "string", "", "", NULL, 0},
        {"Extra", "string", "", "", NULL, 1},
        {NULL},
    };
    fl_kind k = deploy_kind;
    k.columns = cols;
    k.row = deploy_row;
    json_t *items = items_of(deployment("web", 3 * 86400 + 4000, "{'readyReplicas':1}"), NULL);
    json_t *t = fl_table_render(&k, items, "None", NULL, NULL);
    assert_int_equal(json_array_size(json_object_get(t, "columnDefinitions")), 4);
    assert_string_equal(json_string_value(cell(t, 0, 1)), "1/3");
    assert_string_equal(json_string_value(cell(t, 0, 2)), "3d1h");
    assert_string_equal(json_string_value(cell(t, 0, 3)), "after-age");
    json_decref(t);
    json_decref(items);
}

static void table_include_object_policies(void **state)
{
    json_t *items = items_of(deployment("web", 5, "{}"), NULL);
    json_t *t = fl_table_render(&deploy_kind, items, "Metadata", NULL, NULL);
    json_t *o = json_object_get(json_array_get(json_object_get(t, "rows"), 0), "object");
    assert_string_equal(json_string_value(json_object_get(o, "kind")), "PartialObjectMetadata");
    assert_string_equal(json_string_value(json_object_get(o, "apiVersion")), "meta.k8s.io/v1");
    assert_string_equal(json_string_value(json_object_get(json_object_get(o, "metadata"), "name")), "web");
    assert_null(json_object_get(o, "spec"));
    json_decref(t);

    t = fl_table_render(&deploy_kind, items, NULL, NULL, NULL); /* default is Metadata */
    o = json_object_get(json_array_get(json_object_get(t, "rows"), 0), "object");
    assert_string_equal(json_string_value(json_object_get(o, "kind")), "PartialObjectMetadata");
    json_decref(t);

    t = fl_table_render(&deploy_kind, items, "Object", NULL, NULL);
    o = json_object_get(json_array_get(json_object_get(t, "rows"), 0), "object");
    assert_true(json_equal(o, json_array_get(items, 0)));
    json_decref(t);

    t = fl_table_render(&deploy_kind, items, "None", NULL, NULL);
    assert_null(json_object_get(json_array_get(json_object_get(t, "rows"), 0), "object"));
    json_decref(t);
    json_decref(items);
}

static void table_empty_items(void **state)
{
    json_t *items = json_array();
    json_t *t = fl_table_render(&deploy_kind, items, NULL, "7", NULL);
    assert_int_equal(json_array_size(json_object_get(t, "rows")), 0);
    assert_int_equal(json_array_size(json_object_get(t, "columnDefinitions")), 5);
    json_decref(t);
    json_decref(items);
}

static void builtin_created_at_column_shows_timestamp_without_age(void **state)
{
    /* The apiserver's default convertor (used for CRDs themselves): Name, Created At. */
    static const fl_column cols[] = {
        {"Created At", "date", "", "", ".metadata.creationTimestamp", 0},
        {NULL},
    };
    fl_kind k = {.group = "apiextensions.k8s.io", .version = "v1", .kind = "CustomResourceDefinition",
                 .columns = cols};
    json_t *items = items_of(obj("{'metadata':{'name':'widgets.example.com',"
                                 "'creationTimestamp':'2024-05-01T10:00:00Z'}}"),
                             NULL);
    json_t *t = fl_table_render(&k, items, "None", NULL, NULL);
    assert_int_equal(json_array_size(json_object_get(t, "columnDefinitions")), 2);
    assert_string_equal(col_str(t, 1, "name"), "Created At");
    assert_string_equal(json_string_value(cell(t, 0, 1)), "2024-05-01T10:00:00Z");
    json_decref(t);
    json_decref(items);
}

/* ---------------------------------------------------------------------------------
 * CRD kinds.
 */
static void crd_columns_render_like_apiextensions(void **state)
{
    static const fl_column cols[] = {
        {"Replicas", "integer", "", "", ".spec.replicas", 0},
        {"Phase", "string", "", "", ".status.phase", 0},
        {"Started", "date", "", "", ".status.startTime", 0},
        {"Ratio", "number", "", "", ".spec.ratio", 1},
        {NULL},
    };
    fl_kind k = {.group = "example.com", .version = "v1", .kind = "Widget", .namespaced = true, .dynamic = true,
                 .columns = cols};
    char ts[40];
    stamp(600, ts, sizeof ts);
    json_t *items = items_of(obj("{'metadata':{'name':'w1'},'spec':{'replicas':2,'ratio':1},"
                                 "'status':{'startTime':'%s'}}",
                                 ts),
                             NULL);
    json_t *t = fl_table_render(&k, items, "None", NULL, NULL);
    /* No Age appended: the CRD has printer columns. */
    assert_int_equal(json_array_size(json_object_get(t, "columnDefinitions")), 5);
    assert_string_equal(col_str(t, 1, "description"), "Custom resource definition column (in JSONPath format): .spec.replicas");
    assert_string_equal(col_str(t, 3, "type"), "date");
    assert_int_equal(json_integer_value(cell(t, 0, 1)), 2);
    assert_true(json_is_null(cell(t, 0, 2))); /* missing -> null, as the apiserver renders CRDs */
    const char *started = json_string_value(cell(t, 0, 3));
    assert_true(!strcmp(started, "10m") || !strcmp(started, "10m0s"));
    assert_true(json_is_real(cell(t, 0, 4)));
    json_decref(t);
    json_decref(items);
}

static void crd_without_printer_columns_gets_age_date_column(void **state)
{
    fl_kind k = {.group = "example.com", .version = "v1", .kind = "Widget", .namespaced = true, .dynamic = true};
    k.crd_version = obj("{'name':'v1','served':true,'storage':true}");
    json_t *items = items_of(obj("{'metadata':{'name':'w1'}}"), NULL);
    json_t *t = fl_table_render(&k, items, "None", NULL, NULL);
    assert_int_equal(json_array_size(json_object_get(t, "columnDefinitions")), 2);
    assert_string_equal(col_str(t, 1, "name"), "Age");
    assert_string_equal(col_str(t, 1, "type"), "date");
    assert_true(json_is_null(cell(t, 0, 1))); /* no creationTimestamp */
    json_decref(t);
    json_decref(items);
    json_decref(k.crd_version);
}

static void crd_columns_read_from_crd_version(void **state)
{
    fl_kind k = {.group = "example.com", .version = "v1", .kind = "Widget", .dynamic = true};
    k.crd_version = obj("{'name':'v1','additionalPrinterColumns':[{'name':'Size','type':'integer',"
                        "'jsonPath':'.spec.size','description':'How big','priority':1},"
                        "{'name':'Ready','type':'boolean','jsonPath':'.status.ready'}]}");
    json_t *items = items_of(obj("{'metadata':{'name':'w1'},'spec':{'size':9},'status':{'ready':true}}"), NULL);
    json_t *t = fl_table_render(&k, items, "None", NULL, NULL);
    assert_int_equal(json_array_size(json_object_get(t, "columnDefinitions")), 3);
    assert_string_equal(col_str(t, 1, "description"), "How big");
    assert_int_equal(json_integer_value(json_object_get(col(t, 1), "priority")), 1);
    assert_int_equal(json_integer_value(cell(t, 0, 1)), 9);
    assert_true(json_is_true(cell(t, 0, 2)));
    json_decref(t);
    json_decref(items);
    json_decref(k.crd_version);
}

/* ---------------------------------------------------------------------------------
 * JSONPath.
 */
static void assert_path_str(const json_t *o, const char *path, const char *want)
{
    json_t *v = fl_jsonpath_eval(o, path);
    if (!want) {
        if (v)
            fail_msg("%s: expected no match", path);
        return;
    }
    if (!v)
        fail_msg("%s: no match", path);
    if (!json_is_string(v))
        fail_msg("%s: not a string", path);
    assert_string_equal(json_string_value(v), want);
    json_decref(v);
}

static void jsonpath_fields_and_indices(void **state)
{
    json_t *o = obj("{'metadata':{'name':'a','labels':{'app.kubernetes.io/name':'web'}},'spec':{'items':"
                    "[{'name':'x','n':1},{'name':'y','n':2}],'m':{'k':'v'}}}");
    assert_path_str(o, ".metadata.name", "a");
    assert_path_str(o, "{.metadata.name}", "a");
    assert_path_str(o, "metadata.name", "a");
    assert_path_str(o, ".spec.items[0].name", "x");
    assert_path_str(o, ".spec.items[-1].name", "y");
    assert_path_str(o, ".spec.items[*].name", "x,y");
    assert_path_str(o, "{.spec.items[*].n}", "1,2");
    assert_path_str(o, ".spec.m['k']", "v");
    assert_path_str(o, ".metadata.labels.app\\.kubernetes\\.io/name", "web");
    assert_path_str(o, ".spec.items[5].name", NULL);
    assert_path_str(o, ".spec.missing", NULL);
    assert_path_str(o, ".spec.items[x]", NULL);
    json_t *v = fl_jsonpath_eval(o, ".spec.items[1].n");
    assert_true(json_is_integer(v));
    assert_int_equal(json_integer_value(v), 2);
    json_decref(v);
    v = fl_jsonpath_eval(o, ".spec.m");
    assert_true(json_is_object(v));
    json_decref(v);
    json_decref(o);
}

static void jsonpath_condition_filters(void **state)
{
    json_t *o = obj("{'status':{'conditions':[{'type':'Ready','status':'True','reason':'Up'},"
                    "{'type':'Applied','status':'False'},{'type':'Scheduled','status':'True','n':3}]}}");
    assert_path_str(o, ".status.conditions[?(@.type==\"Ready\")].status", "True");
    assert_path_str(o, "{.status.conditions[?(@.type=='Applied')].status}", "False");
    assert_path_str(o, ".status.conditions[?(@.type == \"Missing\")].status", NULL);
    assert_path_str(o, ".status.conditions[?(@.status!=\"True\")].type", "Applied");
    assert_path_str(o, ".status.conditions[?(@.reason)].type", "Ready");
    assert_path_str(o, ".status.conditions[?(@.n==3)].type", "Scheduled");
    assert_path_str(o, ".status.conditions[?(@.status==\"True\")].type", "Ready,Scheduled");
    json_decref(o);
}

/* ---------------------------------------------------------------------------------
 * Ages (duration.HumanDuration).
 */
static void assert_age(long ago, const char *want, const char *or_want)
{
    char ts[40], buf[32];
    stamp(ago, ts, sizeof ts);
    fl_table_age(ts, buf, sizeof buf);
    if (strcmp(buf, want) && (!or_want || strcmp(buf, or_want)))
        fail_msg("age of %lds: got %s, want %s", ago, buf, want);
}

static void age_follows_human_duration(void **state)
{
    /* Second-resolution cases accept the next second, in case the clock ticks. */
    assert_age(0, "0s", "1s");
    assert_age(45, "45s", "46s");
    assert_age(119, "119s", "2m");
    assert_age(190, "3m10s", "3m11s");
    assert_age(9 * 60 + 58, "9m58s", "9m59s");
    assert_age(15 * 60 + 30, "15m", NULL);
    assert_age(3 * 3600 + 20 * 60 + 5, "3h20m", NULL);
    assert_age(5 * 3600 + 5, "5h", NULL);
    assert_age(20 * 3600, "20h", NULL);
    assert_age(47 * 3600 + 50 * 60, "47h", NULL);
    assert_age(2 * 86400 + 3 * 3600 + 60, "2d3h", NULL);
    assert_age(4 * 86400 + 60, "4d", NULL);
    assert_age(10 * 86400, "10d", NULL);
    assert_age(400L * 86400, "400d", NULL);
    assert_age(3L * 365 * 86400 + 45 * 86400 + 60, "3y45d", NULL);
    assert_age(9L * 365 * 86400 + 60, "9y", NULL);
}

static void age_edge_cases(void **state)
{
    char buf[32];
    fl_table_age(NULL, buf, sizeof buf);
    assert_string_equal(buf, "<unknown>");
    fl_table_age("", buf, sizeof buf);
    assert_string_equal(buf, "<unknown>");
    fl_table_age("yesterday", buf, sizeof buf);
    assert_string_equal(buf, "<invalid>");
    assert_age(-60, "<invalid>", NULL); /* well in the future */
    fl_table_age("2000-01-01T00:00:00.123456Z", buf, sizeof buf);
    assert_true(buf[strlen(buf) - 1] == 'y');
    /* An offset is honoured: the same instant written two ways ages the same. */
    char a[32], b[32];
    fl_table_age("2020-06-01T12:00:00+02:00", a, sizeof a);
    fl_table_age("2020-06-01T10:00:00Z", b, sizeof b);
    assert_string_equal(a, b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(table_shape_and_column_definitions),
        cmocka_unit_test(table_cells_from_jsonpath),
        cmocka_unit_test(table_row_function_fills_columns_around_age),
        cmocka_unit_test(table_include_object_policies),
        cmocka_unit_test(table_empty_items),
        cmocka_unit_test(builtin_created_at_column_shows_timestamp_without_age),
        cmocka_unit_test(crd_columns_render_like_apiextensions),
        cmocka_unit_test(crd_without_printer_columns_gets_age_date_column),
        cmocka_unit_test(crd_columns_read_from_crd_version),
        cmocka_unit_test(jsonpath_fields_and_indices),
        cmocka_unit_test(jsonpath_condition_filters),
        cmocka_unit_test(age_follows_human_duration),
        cmocka_unit_test(age_edge_cases),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
