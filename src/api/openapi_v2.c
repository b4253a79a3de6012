/* openapi_v2.c - the swagger 2.0 document (openapi.c builds it as JSON) in the protobuf
 * encoding of gnostic's openapi_v2.Document, which client-go requests from /openapi/v2.
 *
 * Field numbers are those of gnostic's OpenAPIv2.proto (package openapi.v2). Only the
 * parts Flotilla's documents use are encoded: the document's swagger/info/paths/
 * definitions, path items with their operations (parameters in body, query or path;
 * responses with a schema), and schemas with their JSON Schema keywords and x-*
 * vendor extensions. Each nested message is encoded into its own buffer and then
 * appended with its length, which is simple and fast enough for a document built
 * once per kind-set generation. */
#include "api/openapi_v2.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/strbuf.h"

enum { WT_VARINT = 0, WT_FIXED64 = 1, WT_LEN = 2 };

static void pb_varint(fl_strbuf *b, uint64_t v)
{
    unsigned char tmp[10];
    size_t n = 0;
    do {
        tmp[n] = (unsigned char)(v & 0x7f);
        v >>= 7;
        if (v)
            tmp[n] |= 0x80;
        n++;
    } while (v);
    fl_strbuf_add(b, tmp, n);
}

static void pb_tag(fl_strbuf *b, unsigned field, unsigned wt) { pb_varint(b, ((uint64_t)field << 3) | wt); }

static void pb_bytes(fl_strbuf *b, unsigned field, const void *p, size_t n)
{
    pb_tag(b, field, WT_LEN);
    pb_varint(b, n);
    fl_strbuf_add(b, p, n);
}

static void pb_str(fl_strbuf *b, unsigned field, const char *s)
{
    if (s && *s)
        pb_bytes(b, field, s, strlen(s));
}

/* Append sub as message field `field` and empty sub for reuse. */
static void pb_msg(fl_strbuf *b, unsigned field, fl_strbuf *sub)
{
    pb_bytes(b, field, sub->p ? sub->p : "", sub->len);
    fl_strbuf_truncate(sub, 0);
}

static void pb_bool(fl_strbuf *b, unsigned field, const json_t *v)
{
    if (json_is_true(v)) {
        pb_tag(b, field, WT_VARINT);
        pb_varint(b, 1);
    }
}

static void pb_int(fl_strbuf *b, unsigned field, const json_t *v)
{
    if (json_is_integer(v) && json_integer_value(v)) {
        pb_tag(b, field, WT_VARINT);
        pb_varint(b, (uint64_t)json_integer_value(v));
    }
}

static void pb_double(fl_strbuf *b, unsigned field, const json_t *v)
{
    if (!json_is_number(v))
        return;
    double d = json_number_value(v);
    uint64_t bits;
    memcpy(&bits, &d, sizeof bits);
    unsigned char le[8];
    for (int i = 0; i < 8; i++)
        le[i] = (unsigned char)(bits >> (8 * i));
    pb_tag(b, field, WT_FIXED64);
    fl_strbuf_add(b, le, sizeof le);
}

/* openapi.v2.Any {yaml = 2}: the value as JSON text, which YAML readers accept. */
static void pb_any(fl_strbuf *b, unsigned field, const json_t *v)
{
    char *text = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
    fl_strbuf any = FL_STRBUF_INIT;
    pb_str(&any, 2, text ? text : "null");
    pb_msg(b, field, &any);
    fl_strbuf_close(&any);
    free(text);
}

/* repeated NamedAny {name = 1, value = 2} for every x-* key of o. */
static void pb_vendor(fl_strbuf *b, unsigned field, const json_t *o)
{
    const char *key;
    json_t *v;
    fl_strbuf named = FL_STRBUF_INIT;
    json_object_foreach((json_t *)o, key, v) {
        if (strncmp(key, "x-", 2))
            continue;
        pb_str(&named, 1, key);
        pb_any(&named, 2, v);
        pb_msg(b, field, &named);
    }
    fl_strbuf_close(&named);
}

static void pb_strings(fl_strbuf *b, unsigned field, const json_t *a)
{
    size_t i;
    json_t *e;
    json_array_foreach(a, i, e) pb_str(b, field, json_string_value(e));
}

/* openapi.v2.Schema */
static void enc_schema(fl_strbuf *out, const json_t *s)
{
    fl_strbuf sub = FL_STRBUF_INIT, inner = FL_STRBUF_INIT;
    pb_str(out, 1, json_string_value(json_object_get(s, "$ref")));
    pb_str(out, 2, json_string_value(json_object_get(s, "format")));
    pb_str(out, 3, json_string_value(json_object_get(s, "title")));
    pb_str(out, 4, json_string_value(json_object_get(s, "description")));
    if (json_object_get(s, "default"))
        pb_any(out, 5, json_object_get(s, "default"));
    pb_double(out, 6, json_object_get(s, "multipleOf"));
    pb_double(out, 7, json_object_get(s, "maximum"));
    pb_bool(out, 8, json_object_get(s, "exclusiveMaximum"));
    pb_double(out, 9, json_object_get(s, "minimum"));
    pb_bool(out, 10, json_object_get(s, "exclusiveMinimum"));
    pb_int(out, 11, json_object_get(s, "maxLength"));
    pb_int(out, 12, json_object_get(s, "minLength"));
    pb_str(out, 13, json_string_value(json_object_get(s, "pattern")));
    pb_int(out, 14, json_object_get(s, "maxItems"));
    pb_int(out, 15, json_object_get(s, "minItems"));
    pb_bool(out, 16, json_object_get(s, "uniqueItems"));
    pb_int(out, 17, json_object_get(s, "maxProperties"));
    pb_int(out, 18, json_object_get(s, "minProperties"));
    pb_strings(out, 19, json_object_get(s, "required"));
    size_t i;
    json_t *e;
    json_array_foreach(json_object_get(s, "enum"), i, e) pb_any(out, 20, e);
    const json_t *ap = json_object_get(s, "additionalProperties");
    if (json_is_object(ap)) {
        enc_schema(&inner, ap);
        pb_msg(&sub, 1, &inner);
        pb_msg(out, 21, &sub);
    } else if (json_is_boolean(ap)) {
        pb_tag(&sub, 2, WT_VARINT);
        pb_varint(&sub, json_is_true(ap));
        pb_msg(out, 21, &sub);
    }
    const json_t *type = json_object_get(s, "type");
    if (json_is_string(type)) {
        pb_str(&sub, 1, json_string_value(type));
        pb_msg(out, 22, &sub);
    } else if (json_is_array(type)) {
        pb_strings(&sub, 1, type);
        pb_msg(out, 22, &sub);
    }
    const json_t *items = json_object_get(s, "items");
    if (json_is_object(items)) {
        enc_schema(&inner, items);
        pb_msg(&sub, 1, &inner);
        pb_msg(out, 23, &sub);
    } else if (json_is_array(items)) {
        json_array_foreach(items, i, e) {
            enc_schema(&inner, e);
            pb_msg(&sub, 1, &inner);
        }
        pb_msg(out, 23, &sub);
    }
    json_array_foreach(json_object_get(s, "allOf"), i, e) {
        enc_schema(&inner, e);
        pb_msg(out, 24, &inner);
    }
    const json_t *props = json_object_get(s, "properties");
    if (json_is_object(props)) {
        const char *key;
        json_t *p;
        fl_strbuf named = FL_STRBUF_INIT;
        json_object_foreach((json_t *)props, key, p) {
            pb_str(&named, 1, key);
            enc_schema(&inner, p);
            pb_msg(&named, 2, &inner);
            pb_msg(&sub, 1, &named);
        }
        fl_strbuf_close(&named);
        pb_msg(out, 25, &sub);
    }
    pb_bool(out, 27, json_object_get(s, "readOnly"));
    if (json_object_get(s, "example"))
        pb_any(out, 30, json_object_get(s, "example"));
    pb_vendor(out, 31, s);
    fl_strbuf_close(&sub);
    fl_strbuf_close(&inner);
}

/* openapi.v2.ParametersItem {parameter = 1: Parameter} */
static void enc_parameter(fl_strbuf *out, const json_t *p)
{
    fl_strbuf sub = FL_STRBUF_INIT, param = FL_STRBUF_INIT, inner = FL_STRBUF_INIT;
    const char *in = json_string_value(json_object_get(p, "in"));
    if (in && !strcmp(in, "body")) {
        /* BodyParameter {description 1, name 2, in 3, required 4, schema 5} */
        pb_str(&sub, 2, json_string_value(json_object_get(p, "name")));
        pb_str(&sub, 3, in);
        pb_bool(&sub, 4, json_object_get(p, "required"));
        if (json_is_object(json_object_get(p, "schema"))) {
            enc_schema(&inner, json_object_get(p, "schema"));
            pb_msg(&sub, 5, &inner);
        }
        pb_msg(&param, 1, &sub);
    } else {
        /* NonBodyParameter {query 3 | path 4}; both sub-schemas start required 1,
         * in 2, description 3, name 4; the type is 6 in a query, 5 in a path, and
         * uniqueItems 20 and 19. */
        bool path = in && !strcmp(in, "path");
        pb_bool(&inner, 1, json_object_get(p, "required"));
        pb_str(&inner, 2, in);
        pb_str(&inner, 3, json_string_value(json_object_get(p, "description")));
        pb_str(&inner, 4, json_string_value(json_object_get(p, "name")));
        pb_str(&inner, path ? 5 : 6, json_string_value(json_object_get(p, "type")));
        pb_bool(&inner, path ? 19 : 20, json_object_get(p, "uniqueItems"));
        pb_msg(&sub, path ? 4 : 3, &inner);
        pb_msg(&param, 2, &sub);
    }
    pb_msg(out, 1, &param);
    fl_strbuf_close(&sub);
    fl_strbuf_close(&param);
    fl_strbuf_close(&inner);
}

static void enc_parameters(fl_strbuf *out, unsigned field, const json_t *params)
{
    fl_strbuf item = FL_STRBUF_INIT;
    size_t i;
    json_t *p;
    json_array_foreach(params, i, p) {
        enc_parameter(&item, p);
        pb_msg(out, field, &item);
    }
    fl_strbuf_close(&item);
}

/* openapi.v2.Operation */
static void enc_operation(fl_strbuf *out, const json_t *op)
{
    pb_strings(out, 1, json_object_get(op, "tags"));
    pb_str(out, 3, json_string_value(json_object_get(op, "description")));
    pb_str(out, 5, json_string_value(json_object_get(op, "operationId")));
    pb_strings(out, 6, json_object_get(op, "produces"));
    pb_strings(out, 7, json_object_get(op, "consumes"));
    enc_parameters(out, 8, json_object_get(op, "parameters"));
    /* Responses {response_code 1: NamedResponseValue {name 1, value 2: ResponseValue
     * {response 1: Response {description 1, schema 2: SchemaItem {schema 1}}}}} */
    fl_strbuf resps = FL_STRBUF_INIT, named = FL_STRBUF_INIT, val = FL_STRBUF_INIT, resp = FL_STRBUF_INIT,
              item = FL_STRBUF_INIT, schema = FL_STRBUF_INIT;
    const char *code;
    json_t *r;
    json_object_foreach(json_object_get(op, "responses"), code, r) {
        pb_str(&resp, 1, json_string_value(json_object_get(r, "description")));
        if (json_is_object(json_object_get(r, "schema"))) {
            enc_schema(&schema, json_object_get(r, "schema"));
            pb_msg(&item, 1, &schema);
            pb_msg(&resp, 2, &item);
        }
        pb_msg(&val, 1, &resp);
        pb_str(&named, 1, code);
        pb_msg(&named, 2, &val);
        pb_msg(&resps, 1, &named);
    }
    pb_msg(out, 9, &resps);
    pb_strings(out, 10, json_object_get(op, "schemes"));
    pb_vendor(out, 13, op);
    fl_strbuf_close(&resps);
    fl_strbuf_close(&named);
    fl_strbuf_close(&val);
    fl_strbuf_close(&resp);
    fl_strbuf_close(&item);
    fl_strbuf_close(&schema);
}

/* openapi.v2.PathItem */
static void enc_path_item(fl_strbuf *out, const json_t *pi)
{
    static const struct {
        const char *verb;
        unsigned field;
    } verbs[] = {{"get", 2}, {"put", 3}, {"post", 4}, {"delete", 5}, {"options", 6}, {"head", 7}, {"patch", 8}};
    fl_strbuf op = FL_STRBUF_INIT;
    for (size_t i = 0; i < sizeof verbs / sizeof verbs[0]; i++) {
        const json_t *o = json_object_get(pi, verbs[i].verb);
        if (!json_is_object(o))
            continue;
        enc_operation(&op, o);
        pb_msg(out, verbs[i].field, &op);
    }
    enc_parameters(out, 9, json_object_get(pi, "parameters"));
    pb_vendor(out, 10, pi);
    fl_strbuf_close(&op);
}

unsigned char *fl_openapi_v2_encode(const json_t *doc, size_t *len)
{
    fl_strbuf out = FL_STRBUF_INIT, sub = FL_STRBUF_INIT, named = FL_STRBUF_INIT, inner = FL_STRBUF_INIT;
    pb_str(&out, 1, json_string_value(json_object_get(doc, "swagger")));
    const json_t *info = json_object_get(doc, "info");
    pb_str(&sub, 1, json_string_value(json_object_get(info, "title")));
    pb_str(&sub, 2, json_string_value(json_object_get(info, "version")));
    pb_msg(&out, 2, &sub);
    /* Paths {path 2: NamedPathItem {name 1, value 2}} */
    const char *key;
    json_t *v;
    json_object_foreach(json_object_get(doc, "paths"), key, v) {
        enc_path_item(&inner, v);
        pb_str(&named, 1, key);
        pb_msg(&named, 2, &inner);
        pb_msg(&sub, 2, &named);
    }
    pb_msg(&out, 8, &sub);
    /* Definitions {additional_properties 1: NamedSchema {name 1, value 2}} */
    json_object_foreach(json_object_get(doc, "definitions"), key, v) {
        enc_schema(&inner, v);
        pb_str(&named, 1, key);
        pb_msg(&named, 2, &inner);
        pb_msg(&sub, 1, &named);
    }
    pb_msg(&out, 9, &sub);
    fl_strbuf_close(&sub);
    fl_strbuf_close(&named);
    fl_strbuf_close(&inner);
    *len = out.len;
    return (unsigned char *)fl_strbuf_take(&out);
}
