/* test_yaml.c - YAML <-> JSON (src/core/yaml.c): scalar typing as kubectl sees it,
 * block and flow styles, multi-document streams, anchors, aliases and merge keys,
 * errors that carry line and column, kubectl-style dumping, and the round trip
 * parse(dump(v)) == v on values full of strings that look like something else. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/err.h"
#include "core/yaml.h"

/* ---------- helpers ---------- */

static json_t *J(const char *text)
{
    json_error_t e;
    json_t *v = json_loads(text, JSON_DECODE_ANY | JSON_ALLOW_NUL, &e);
    if (!v)
        fail_msg("bad test JSON %s: %s", text, e.text);
    return v;
}

static json_t *Y(const char *yaml)
{
    json_t *v = NULL;
    char *err = NULL;
    if (fl_yaml_parse(yaml, strlen(yaml), &v, &err) != 0)
        fail_msg("parse of <<%s>> failed: %s", yaml, err);
    assert_null(err);
    return v;
}

/* yaml parses to exactly the JSON value written in expect_json. */
static void assert_yaml_is(const char *yaml, const char *expect_json)
{
    json_t *got = Y(yaml);
    json_t *want = J(expect_json);
    if (!json_equal(got, want)) {
        char *g = json_dumps(got, JSON_ENCODE_ANY);
        fail_msg("<<%s>> parsed to %s, expected %s", yaml, g, expect_json);
    }
    json_decref(got);
    json_decref(want);
}

static void assert_yaml_error(const char *yaml, const char *needle)
{
    json_t *v = (json_t *)0x1;
    char *err = NULL;
    int rc = fl_yaml_parse(yaml, strlen(yaml), &v, &err);
    if (rc == 0)
        fail_msg("<<%s>> parsed but should fail with %s", yaml, needle);
    assert_int_equal(rc, FL_EINVAL);
    assert_null(v);
    assert_non_null(err);
    if (!strstr(err, needle))
        fail_msg("error for <<%s>> is \"%s\", expected \"%s\"", yaml, err, needle);
    free(err);
}

static void assert_dump_is(const char *json, const char *expect_yaml)
{
    json_t *v = J(json);
    char *y = fl_yaml_dump(v);
    if (strcmp(y, expect_yaml) != 0)
        fail_msg("dump of %s is\n%s\nexpected\n%s", json, y, expect_yaml);
    free(y);
    json_decref(v);
}

static void assert_round_trip(const json_t *v)
{
    char *y = fl_yaml_dump(v);
    json_t *back = NULL;
    char *err = NULL;
    if (fl_yaml_parse(y, strlen(y), &back, &err) != 0)
        fail_msg("dump does not parse back: %s\n%s", err, y);
    if (!json_equal(back, v)) {
        char *a = json_dumps(v, JSON_ENCODE_ANY);
        char *b = json_dumps(back, JSON_ENCODE_ANY);
        fail_msg("round trip changed the value\n in:  %s\n out: %s\n yaml:\n%s", a, b, y);
    }
    json_decref(back);
    free(y);
}

/* ---------- scalar typing ---------- */

static void test_scalar_typing_table(void **state)
{
    static const struct { const char *yaml, *json; } table[] = {
        /* integers: decimal, signs, hex, octal (0o and leading 0), binary, '_' */
        { "v: 42", "42" }, { "v: -7", "-7" }, { "v: +7", "7" }, { "v: 0", "0" },
        { "v: 0x1F", "31" }, { "v: 0X1f", "31" }, { "v: -0x10", "-16" },
        { "v: 0o17", "15" }, { "v: 017", "15" }, { "v: 0b101", "5" }, { "v: 1_000_000", "1000000" },
        { "v: 9223372036854775807", "9223372036854775807" },
        { "v: -9223372036854775808", "-9223372036854775808" },
        /* floats */
        { "v: 1.5", "1.5" }, { "v: -0.25", "-0.25" }, { "v: .5", "0.5" }, { "v: 1.", "1.0" },
        { "v: 1e3", "1000.0" }, { "v: 2.5E-1", "0.25" }, { "v: 9223372036854775808", "9223372036854775808.0" },
        { "v: 1e400", "\"1e400\"" },
        /* booleans, YAML 1.1 style as kubectl reads them */
        { "v: true", "true" }, { "v: True", "true" }, { "v: TRUE", "true" }, { "v: false", "false" },
        { "v: yes", "true" }, { "v: Yes", "true" }, { "v: no", "false" }, { "v: NO", "false" },
        { "v: on", "true" }, { "v: ON", "true" }, { "v: off", "false" }, { "v: Off", "false" },
        { "v: y", "true" }, { "v: n", "false" },
        /* nulls */
        { "v: null", "null" }, { "v: Null", "null" }, { "v: ~", "null" }, { "v:", "null" }, { "v: ''", "\"\"" },
        /* strings that only look special */
        { "v: tRUE", "\"tRUE\"" }, { "v: yEs", "\"yEs\"" }, { "v: 0x", "\"0x\"" }, { "v: 08", "8.0" },
        { "v: 1.2.3", "\"1.2.3\"" }, { "v: 12:30", "\"12:30\"" }, { "v: 2024-01-02", "\"2024-01-02\"" },
        { "v: 1e", "\"1e\"" }, { "v: +", "\"+\"" }, { "v: .", "\".\"" },
        { "v: v1.2", "\"v1.2\"" }, { "v: nil", "\"nil\"" }, { "v: <<", "\"<<\"" },
        /* quoted and block scalars are strings */
        { "v: \"123\"", "\"123\"" }, { "v: 'true'", "\"true\"" }, { "v: \"\"", "\"\"" }, { "v: 'null'", "\"null\"" },
        { "v: |\n  42\n", "\"42\\n\"" }, { "v: >-\n  yes\n", "\"yes\"" },
        /* explicit tags */
        { "v: !!str 123", "\"123\"" }, { "v: !!str yes", "\"yes\"" }, { "v: !!int \"12\"", "12" },
        { "v: !!float 1", "1.0" }, { "v: !!bool \"on\"", "true" }, { "v: !!null ''", "null" },
        { "v: !custom 12", "\"12\"" }, { "v: ! 12", "\"12\"" },
    };
    for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++) {
        char want[200];
        snprintf(want, sizeof(want), "{\"v\": %s}", table[i].json);
        assert_yaml_is(table[i].yaml, want);
    }
}

static void test_integers_stay_exact_int64(void **state)
{
    json_t *v = Y("big: 9007199254740993\n");
    assert_true(json_is_integer(json_object_get(v, "big")));
    assert_true(json_integer_value(json_object_get(v, "big")) == 9007199254740993LL);
    json_decref(v);
}

static void test_special_floats_are_errors(void **state)
{
    assert_yaml_error("v: .inf", "line 1, column 4: .inf cannot be represented in JSON");
    assert_yaml_error("v: -.Inf", "cannot be represented");
    assert_yaml_error("- .nan", "line 1, column 3");
    assert_yaml_is("v: '.inf'", "{\"v\": \".inf\"}");
}

static void test_tag_mismatch_is_error(void **state)
{
    assert_yaml_error("v: !!int abc", "line 1, column 4: cannot read \"abc\" as !!int");
    assert_yaml_error("v: !!bool 1", "!!bool");
}

static void test_non_string_keys_become_strings(void **state)
{
    assert_yaml_is("on: push\n", "{\"true\": \"push\"}");
    assert_yaml_is("x: 1\ny: 2\n", "{\"x\": 1, \"true\": 2}"); /* kubectl's own surprise */
    assert_yaml_is("1: a\n0x10: b\nno: c\n1.5: d\n\"2\": e\n", "{\"1\": \"a\", \"16\": \"b\", \"false\": \"c\", "
                                                               "\"1.5\": \"d\", \"2\": \"e\"}");
    assert_yaml_error("~: x\n", "line 1, column 1: a mapping key may not be null");
    assert_yaml_error("? [a]\n: x\n", "mapping key must be a scalar");
    assert_yaml_error("{a: 1}: x\n", "mapping key must be a scalar");
}

/* ---------- styles and structure ---------- */

static void test_block_and_flow_styles(void **state)
{
    assert_yaml_is("a:\n  b:\n  - 1\n  - x: w\n    z: [1, {q: r}]\n  c: {d: e, f: [g, h]}\n",
                   "{\"a\": {\"b\": [1, {\"x\": \"w\", \"z\": [1, {\"q\": \"r\"}]}], \"c\": {\"d\": \"e\", \"f\": [\"g\", "
                   "\"h\"]}}}");
    assert_yaml_is("[1, two, \"3\", [], {}]", "[1, \"two\", \"3\", [], {}]");
    assert_yaml_is("- - a\n  - b\n- c\n", "[[\"a\", \"b\"], \"c\"]");
    assert_yaml_is("plain text", "\"plain text\"");
    assert_yaml_is("42", "42");
    assert_yaml_is("# comment\nkey: value # trailing\n", "{\"key\": \"value\"}");
}

static void test_block_scalars(void **state)
{
    assert_yaml_is("a: |\n  one\n  two\n", "{\"a\": \"one\\ntwo\\n\"}");
    assert_yaml_is("a: |-\n  one\n  two\nb: 1\n", "{\"a\": \"one\\ntwo\", \"b\": 1}");
    assert_yaml_is("a: |+\n  one\n\nb: 1\n", "{\"a\": \"one\\n\\n\", \"b\": 1}");
    assert_yaml_is("a: >\n  one\n  two\n", "{\"a\": \"one two\\n\"}");
    assert_yaml_is("a: |2\n    indented\n", "{\"a\": \"  indented\\n\"}");
    assert_yaml_is("a: \"tab\\there \\u00e9 \\\"q\\\"\"\n", "{\"a\": \"tab\\there \\u00e9 \\\"q\\\"\"}");
    assert_yaml_is("a: 'it''s'\n", "{\"a\": \"it's\"}");
    assert_yaml_is("a: 'x''''y'''''\n", "{\"a\": \"x''y''\"}");
    assert_yaml_is("a: 'one\n  two\n\n  three '\n", "{\"a\": \"one two\\nthree \"}");
}

static void test_unicode_passes_through(void **state)
{
    assert_yaml_is("名前: 値 ✓\nemoji: \"😀\"\n", "{\"名前\": \"値 ✓\", \"emoji\": \"😀\"}");
}

/* ---------- documents ---------- */

static void test_multi_document_stream(void **state)
{
    const char *s = "a: 1\n---\nb: 2\n---\n# only a comment\n---\n---\n- c\n...\n";
    json_t *v = NULL;
    char *err = NULL;
    assert_int_equal(fl_yaml_parse_all(s, strlen(s), &v, &err), 0);
    json_t *want = J("[{\"a\": 1}, {\"b\": 2}, [\"c\"]]");
    assert_true(json_equal(v, want));
    json_decref(v);
    json_decref(want);
}

static void test_parse_all_of_empty_stream_is_empty_array(void **state)
{
    json_t *v = NULL;
    char *err = NULL;
    assert_int_equal(fl_yaml_parse_all("", 0, &v, &err), 0);
    assert_true(json_is_array(v));
    assert_int_equal(json_array_size(v), 0);
    json_decref(v);
    assert_int_equal(fl_yaml_parse_all("# nothing\n", 10, &v, &err), 0);
    assert_int_equal(json_array_size(v), 0);
    json_decref(v);
}

static void test_parse_requires_exactly_one_document(void **state)
{
    assert_yaml_error("", "no document");
    assert_yaml_error("# just a comment\n", "no document");
    assert_yaml_error("a: 1\n---\nb: 2\n", "line 2, column 1: expected a single YAML document");
    assert_yaml_is("---\na: 1\n...\n", "{\"a\": 1}");
    assert_yaml_is("--- \n---\na: 1\n", "{\"a\": 1}");
}

static void test_parse_all_error_in_later_document_names_its_line(void **state)
{
    const char *s = "a: 1\n---\nb: [1,\n";
    json_t *v = (json_t *)0x1;
    char *err = NULL;
    assert_int_equal(fl_yaml_parse_all(s, strlen(s), &v, &err), FL_EINVAL);
    assert_null(v);
    assert_non_null(strstr(err, "line 4"));
    free(err);
}

static void test_parse_is_length_bounded(void **state)
{
    const char *s = "a: 1\nb: 2";
    json_t *v = NULL;
    char *err = NULL;
    assert_int_equal(fl_yaml_parse(s, 4, &v, &err), 0);
    json_t *want = J("{\"a\": 1}");
    assert_true(json_equal(v, want));
    json_decref(v);
    json_decref(want);
}

/* ---------- anchors, aliases, merge keys ---------- */

static void test_anchors_and_aliases(void **state)
{
    assert_yaml_is("base: &b {x: 1, z: [a, b]}\ncopy: *b\nscalar: &s hello\nagain: *s\nlist: [*s, *b]\n",
                   "{\"base\": {\"x\": 1, \"z\": [\"a\", \"b\"]}, \"copy\": {\"x\": 1, \"z\": [\"a\", \"b\"]}, "
                   "\"scalar\": \"hello\", \"again\": \"hello\", \"list\": [\"hello\", {\"x\": 1, \"z\": [\"a\", \"b\"]}]}");
}

static void test_alias_is_an_independent_copy(void **state)
{
    json_t *v = Y("a: &x {k: 1}\nb: *x\n");
    json_object_set_new(json_object_get(v, "b"), "k", json_integer(2));
    assert_int_equal(json_integer_value(json_object_get(json_object_get(v, "a"), "k")), 1);
    json_decref(v);
}

static void test_redefined_anchor_uses_latest(void **state)
{
    assert_yaml_is("- &a 1\n- *a\n- &a 2\n- *a\n", "[1, 1, 2, 2]");
}

static void test_alias_errors(void **state)
{
    assert_yaml_error("a: *missing\n", "line 1, column 4: alias *missing refers to no anchor");
    assert_yaml_error("a: &x [1, *x]\n", "alias *x refers to no anchor");
}

static void test_alias_bomb_is_refused(void **state)
{
    const char *bomb = "a: &a [x, x, x, x, x, x, x, x, x, x]\n"
                       "b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\n"
                       "c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\n"
                       "d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]\n"
                       "e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]\n"
                       "f: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e, *e]\n"
                       "g: &g [*f, *f, *f, *f, *f, *f, *f, *f, *f, *f]\n"
                       "h: &h [*g, *g, *g, *g, *g, *g, *g, *g, *g, *g]\n";
    assert_yaml_error(bomb, "alias bomb");
}

/* One long string referenced by many aliases spends few nodes but many bytes. */
static char *string_aliases(size_t string_bytes, int aliases, size_t *len)
{
    size_t cap = string_bytes + 64 + (size_t)aliases * 16;
    char *y = malloc(cap);
    size_t n = (size_t)snprintf(y, cap, "k0: &s \"");
    memset(y + n, 'x', string_bytes);
    n += string_bytes;
    n += (size_t)snprintf(y + n, cap - n, "\"\n");
    for (int i = 1; i <= aliases; i++)
        n += (size_t)snprintf(y + n, cap - n, "k%d: *s\n", i);
    *len = n;
    return y;
}

static void test_alias_bytes_past_the_bound_are_refused_before_expanding(void **state)
{
    size_t len;
    char *y = string_aliases(100000, 200, &len); /* 100 kB that would expand to 20 MB */
    json_t *v = (json_t *)0x1;
    char *err = NULL;
    assert_int_equal(fl_yaml_parse_limited(y, len, 1000000, &v, &err), FL_ETOOBIG);
    assert_null(v);
    assert_non_null(err);
    /* the alias that crosses the bound is named: the 9th of them, on line 10 */
    if (!strstr(err, "line 10, column 5: aliases expand the document past 1000000 bytes"))
        fail_msg("unexpected error: %s", err);
    free(err);
    free(y);
}

static void test_alias_bytes_within_the_bound_parse(void **state)
{
    size_t len;
    char *y = string_aliases(1000, 200, &len);
    json_t *v = NULL;
    char *err = NULL;
    assert_int_equal(fl_yaml_parse_limited(y, len, 3 << 20, &v, &err), 0);
    assert_null(err);
    assert_int_equal(json_object_size(v), 201);
    assert_int_equal(json_string_length(json_object_get(v, "k200")), 1000);
    json_decref(v);
    /* a bound of 0 is none, and plain fl_yaml_parse has none either */
    assert_int_equal(fl_yaml_parse_limited(y, len, 0, &v, &err), 0);
    json_decref(v);
    free(y);
}

static void test_alias_bound_counts_nested_and_merged_copies(void **state)
{
    const char *y = "a: &a {k: \"0123456789012345678901234567890123456789\"}\n"
                    "b: &b [*a, *a, *a, *a]\n"
                    "c: {<<: *a, x: *b}\n"
                    "d: *b\n";
    json_t *v = (json_t *)0x1;
    char *err = NULL;
    /* the input is ~110 bytes; each *b copies ~4 x 50 */
    assert_int_equal(fl_yaml_parse_limited(y, strlen(y), 400, &v, &err), FL_ETOOBIG);
    assert_null(v);
    free(err);
    assert_int_equal(fl_yaml_parse_limited(y, strlen(y), 4000, &v, &err), 0);
    assert_int_equal(json_array_size(json_object_get(v, "d")), 4);
    json_decref(v);
}

static void test_merge_keys(void **state)
{
    assert_yaml_is("base: &b {x: 1, z: 2}\nobj:\n  <<: *b\n  z: 3\n",
                   "{\"base\": {\"x\": 1, \"z\": 2}, \"obj\": {\"x\": 1, \"z\": 3}}");
}

static void test_merge_explicit_key_wins_even_before_merge(void **state)
{
    assert_yaml_is("b: &b {x: 1, z: 2}\no:\n  z: 3\n  <<: *b\n", "{\"b\": {\"x\": 1, \"z\": 2}, \"o\": {\"z\": 3, \"x\": 1}}");
}

static void test_merge_list_earlier_source_wins(void **state)
{
    assert_yaml_is("a: &a {k: a, only_a: 1}\nb: &b {k: b, only_b: 2}\no:\n  <<: [*a, *b]\n",
                   "{\"a\": {\"k\": \"a\", \"only_a\": 1}, \"b\": {\"k\": \"b\", \"only_b\": 2}, "
                   "\"o\": {\"k\": \"a\", \"only_a\": 1, \"only_b\": 2}}");
    assert_yaml_is("o:\n  <<: {inline: true}\n", "{\"o\": {\"inline\": true}}");
}

static void test_merge_errors_and_quoted_merge_key(void **state)
{
    assert_yaml_error("o:\n  <<: 5\n", "line 2, column 3: the value of a merge key");
    assert_yaml_error("o:\n  <<: [1]\n", "merge key");
    assert_yaml_is("o:\n  \"<<\": 5\n", "{\"o\": {\"<<\": 5}}");
}

/* ---------- errors ---------- */

static void test_syntax_errors_carry_line_and_column(void **state)
{
    assert_yaml_error("a: [1,\nb: }\n", "line 2, column 1");
    assert_yaml_error("a:\n  b: 1\n c: 2\n", "line 3, column 2");
    assert_yaml_error("a: \"unterminated\n", "line 1, column");
    assert_yaml_error("\tkey: 1\n", "line 1, column 1");
    assert_yaml_error("a: 1\n- b\n", "line 2");
}

static void test_duplicate_keys_are_errors(void **state)
{
    assert_yaml_error("a: 1\nb: 2\na: 3\n", "line 3, column 1: duplicate key \"a\"");
    assert_yaml_error("on: 1\ntrue: 2\n", "duplicate key \"true\"");
}

static void test_invalid_utf8_is_error(void **state)
{
    json_t *v = NULL;
    char *err = NULL;
    const char bad[] = "a: \xff\xfe\n";
    assert_int_equal(fl_yaml_parse(bad, sizeof(bad) - 1, &v, &err), FL_EINVAL);
    assert_null(v);
    assert_non_null(strstr(err, "line 1"));
    free(err);
}

static void test_deep_nesting_is_refused_not_crashed(void **state)
{
    size_t n = 5000;
    char *s = malloc(2 * n + 1);
    memset(s, '[', n);
    memset(s + n, ']', n);
    s[2 * n] = '\0';
    json_t *v = NULL;
    char *err = NULL;
    assert_int_equal(fl_yaml_parse(s, 2 * n, &v, &err), FL_EINVAL);
    assert_non_null(err);
    assert_non_null(strstr(err, "line 1"));
    free(err);
    free(s);
}

/* ---------- dumping ---------- */

static void test_dump_kubectl_layout(void **state)
{
    assert_dump_is("{\"apiVersion\": \"apps/v1\", \"kind\": \"Deployment\", \"metadata\": {\"name\": \"web\", "
                   "\"labels\": {\"app\": \"web\"}}, \"spec\": {\"replicas\": 3, \"template\": {\"spec\": "
                   "{\"containers\": [{\"name\": \"web\", \"image\": \"nginx:1.25\", \"args\": [\"-v\", \"--port=80\"], "
                   "\"ports\": [{\"containerPort\": 80}]}]}}}}",
                   "apiVersion: apps/v1\n"
                   "kind: Deployment\n"
                   "metadata:\n"
                   "  name: web\n"
                   "  labels:\n"
                   "    app: web\n"
                   "spec:\n"
                   "  replicas: 3\n"
                   "  template:\n"
                   "    spec:\n"
                   "      containers:\n"
                   "      - name: web\n"
                   "        image: nginx:1.25\n"
                   "        args:\n"
                   "        - -v\n"
                   "        - --port=80\n"
                   "        ports:\n"
                   "        - containerPort: 80\n");
}

static void test_dump_empty_collections_and_scalars(void **state)
{
    assert_dump_is("{\"a\": {}, \"b\": [], \"c\": null, \"d\": true, \"e\": false, \"f\": -12, \"g\": 1.5, \"h\": 2.0}",
                   "a: {}\nb: []\nc: null\nd: true\ne: false\nf: -12\ng: 1.5\nh: 2.0\n");
    assert_dump_is("{}", "{}\n");
    assert_dump_is("[]", "[]\n");
    assert_dump_is("null", "null\n");
    assert_dump_is("\"x\"", "x\n");
    assert_dump_is("[[], {}, [1, [2]], {\"k\": [3]}]", "- []\n- {}\n- - 1\n  - - 2\n- k:\n  - 3\n");
}

static void test_dump_quotes_strings_that_look_like_other_types(void **state)
{
    assert_dump_is("{\"a\": \"true\", \"b\": \"123\", \"c\": \"\", \"d\": \"null\", \"e\": \"yes\", \"f\": \"0x10\", "
                   "\"g\": \"1.5\", \"h\": \"~\", \"i\": \"12:30\", \"j\": \"2024-01-02\", \"k\": \"1e3\"}",
                   "a: \"true\"\nb: \"123\"\nc: \"\"\nd: \"null\"\ne: \"yes\"\nf: \"0x10\"\ng: \"1.5\"\nh: \"~\"\n"
                   "i: \"12:30\"\nj: \"2024-01-02\"\nk: \"1e3\"\n");
}

static void test_dump_quotes_strings_with_yaml_punctuation(void **state)
{
    assert_dump_is("[\"a: b\", \"- x\", \"#c\", \" lead\", \"trail \", \"it's: x\", \"*star\", \"&amp\", \"!bang\", "
                   "\"{x}\", \"[y]\", \"a #b\", \"ends:\", \"---\", \"-\", \"@at\", \"`tick\", \"%pct\", \"|pipe\", "
                   "\">gt\", \"?q\", \":colon\", \",comma\", \"a#b\", \"a:b\", \"-x\"]",
                   "- 'a: b'\n- '- x'\n- '#c'\n- ' lead'\n- 'trail '\n- 'it''s: x'\n- '*star'\n- '&amp'\n"
                   "- '!bang'\n- '{x}'\n- '[y]'\n- 'a #b'\n- 'ends:'\n- '---'\n- '-'\n- '@at'\n- '`tick'\n"
                   "- '%pct'\n- '|pipe'\n- '>gt'\n- '?q'\n- ':colon'\n- ',comma'\n- a#b\n- a:b\n- -x\n");
}

static void test_dump_escapes_control_characters(void **state)
{
    assert_dump_is("[\"tab\\there\", \"nul\\u0000\", \"bell\\u0007\", \"cr\\r\", \"nel\\u0085\", \"bom\\ufeff\"]",
                   "- \"tab\\there\"\n- \"nul\\0\"\n- \"bell\\a\"\n- \"cr\\r\"\n- \"nel\\N\"\n- \"bom\\uFEFF\"\n");
}

static void test_dump_multiline_strings_as_literal_blocks(void **state)
{
    assert_dump_is("{\"a\": \"one\\ntwo\\n\", \"b\": \"one\\ntwo\", \"c\": \"one\\n\\n\", \"d\": [\"x\\ny\"]}",
                   "a: |\n  one\n  two\nb: |-\n  one\n  two\nc: |+\n  one\n\nd:\n- |-\n  x\n  y\n");
    /* a leading blank line or indentation cannot start a plain literal block */
    assert_dump_is("{\"a\": \" x\\ny\", \"b\": \"\\n\"}", "a: \" x\\ny\"\nb: \"\\n\"\n");
}

static void test_dump_keys_are_quoted_when_needed(void **state)
{
    assert_dump_is("{\"true\": 1, \"123\": 2, \"\": 3, \"a: b\": 4, \"<<\": 5, \"multi\\nline\": 6, \"app.kubernetes.io/name\": 7}",
                   "\"true\": 1\n\"123\": 2\n\"\": 3\n'a: b': 4\n\"<<\": 5\n\"multi\\nline\": 6\napp.kubernetes.io/name: 7\n");
}

static void test_dump_unicode_is_written_as_is(void **state)
{
    assert_dump_is("{\"名前\": \"値 ✓ 😀\"}", "名前: 値 ✓ 😀\n");
}

/* ---------- round trip ---------- */

static void test_round_trip_tricky_strings(void **state)
{
    static const char *const strings[] = {
        "true", "false", "yes", "No", "on", "OFF", "y", "n", "null", "Null", "~", "", " ", "  ", "123", "-1", "+1",
        "0x1F", "0o17", "017", "0b11", "1_000", "1.5", ".5", "1.", "1e3", "-.inf", ".nan", ".inf", "1e400", "12:30",
        "2024-01-02", "a: b", "a:b", "- x", "-x", "-", "--", "---", "...", "#c", "a #b", "a#b", "<<", "?", ":", "?x",
        " lead", "trail ", "\ttab", "tab\t", "it's", "say \"hi\"", "back\\slash", "{a: 1}", "[1, 2]", "*alias",
        "&anchor", "!tag", "%dir", "@at", "`tick`", "|", ">", "'", "\"", "line1\nline2", "line1\nline2\n",
        "trailing\n\n\n", "\n", "\n\n", "\nleading", " x\ny", "x\n y", "x\n\ty", "x\r\ny", "cr\r", "nul\0mid",
        "\x01\x02\x1f\x7f", "é ü ✓", "名前", "😀", "\xc2\x85", "\xe2\x80\xa8", "\xef\xbb\xbf" "bom", "\xc2\xa0nbsp",
        "x\n \n y", "x \ny ", "a\n---\nb", "a\n...\nb", "very long " "................................"
        "................................................................................................",
    };
    json_t *obj = json_object();
    json_t *arr = json_array();
    for (size_t i = 0; i < sizeof(strings) / sizeof(strings[0]); i++) {
        const char *s = strings[i];
        size_t n = strlen(s);
        if (strcmp(s, "nul") == 0)
            n = 7; /* "nul\0mid" carries a NUL byte */
        json_t *str = json_stringn(s, n);
        assert_non_null(str);
        assert_round_trip(str);
        json_array_append(arr, str);
        /* The same strings as keys; not the NUL one, because jansson's own
         * json_equal() compares keys as C strings. */
        if (n == strlen(s))
            json_object_setn_new(obj, s, n, str);
        else
            json_decref(str);
    }
    assert_round_trip(arr);
    assert_round_trip(obj);
    json_t *nested = json_pack("{s:o, s:[o, {s:o}], s:{s:[[o]]}}", "a", json_incref(obj), "b", json_incref(arr), "c",
                               json_incref(obj), "d", "e", json_incref(arr));
    assert_round_trip(nested);
    json_decref(nested);
    json_decref(obj);
    json_decref(arr);
}

static void test_round_trip_numbers(void **state)
{
    json_t *v = J("[0, -1, 9223372036854775807, -9223372036854775808, 0.1, -0.0, 1e300, 1.7976931348623157e308, "
                  "5e-324, 123456789.123456789, 3.0, 1e21, 1e-7, 2.5e-5]");
    assert_round_trip(v);
    /* reals come back as reals, integers as integers */
    char *y = fl_yaml_dump(v);
    json_t *back = Y(y);
    assert_true(json_is_real(json_array_get(back, 10)));
    assert_true(json_is_integer(json_array_get(back, 2)));
    json_decref(back);
    free(y);
    json_decref(v);
}

static void test_round_trip_nested_structures(void **state)
{
    json_t *v = J("{\"a\": [[[]], [{}], [{\"b\": [1, {\"c\": \"line\\nbreak\\n\"}]}], {\"d\": {\"e\": {}}}], "
                  "\"f\": {\"g\": [\"- x\", \"#c\", {\"h\": \"true\"}]}, \"i\": [null, true, false, \"\"]}");
    assert_round_trip(v);
    json_decref(v);
    v = J("[[\"a\\nb\", [\"c\\nd\\n\"]], {\"k\": [\"e\\n\\nf\"]}]");
    assert_round_trip(v);
    json_decref(v);
}

static void test_round_trip_long_key(void **state)
{
    char key[3000];
    memset(key, 'k', sizeof(key) - 1);
    key[sizeof(key) - 1] = '\0';
    json_t *v = json_pack("{s:[i,i], s:{s:s}}", key, 1, 2, "x", key, "v");
    assert_round_trip(v);
    json_decref(v);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_scalar_typing_table),
        cmocka_unit_test(test_integers_stay_exact_int64),
        cmocka_unit_test(test_special_floats_are_errors),
        cmocka_unit_test(test_tag_mismatch_is_error),
        cmocka_unit_test(test_non_string_keys_become_strings),
        cmocka_unit_test(test_block_and_flow_styles),
        cmocka_unit_test(test_block_scalars),
        cmocka_unit_test(test_unicode_passes_through),
        cmocka_unit_test(test_multi_document_stream),
        cmocka_unit_test(test_parse_all_of_empty_stream_is_empty_array),
        cmocka_unit_test(test_parse_requires_exactly_one_document),
        cmocka_unit_test(test_parse_all_error_in_later_document_names_its_line),
        cmocka_unit_test(test_parse_is_length_bounded),
        cmocka_unit_test(test_anchors_and_aliases),
        cmocka_unit_test(test_alias_is_an_independent_copy),
        cmocka_unit_test(test_redefined_anchor_uses_latest),
        cmocka_unit_test(test_alias_errors),
        cmocka_unit_test(test_alias_bomb_is_refused),
        cmocka_unit_test(test_alias_bytes_past_the_bound_are_refused_before_expanding),
        cmocka_unit_test(test_alias_bytes_within_the_bound_parse),
        cmocka_unit_test(test_alias_bound_counts_nested_and_merged_copies),
        cmocka_unit_test(test_merge_keys),
        cmocka_unit_test(test_merge_explicit_key_wins_even_before_merge),
        cmocka_unit_test(test_merge_list_earlier_source_wins),
        cmocka_unit_test(test_merge_errors_and_quoted_merge_key),
        cmocka_unit_test(test_syntax_errors_carry_line_and_column),
        cmocka_unit_test(test_duplicate_keys_are_errors),
        cmocka_unit_test(test_invalid_utf8_is_error),
        cmocka_unit_test(test_deep_nesting_is_refused_not_crashed),
        cmocka_unit_test(test_dump_kubectl_layout),
        cmocka_unit_test(test_dump_empty_collections_and_scalars),
        cmocka_unit_test(test_dump_quotes_strings_that_look_like_other_types),
        cmocka_unit_test(test_dump_quotes_strings_with_yaml_punctuation),
        cmocka_unit_test(test_dump_escapes_control_characters),
        cmocka_unit_test(test_dump_multiline_strings_as_literal_blocks),
        cmocka_unit_test(test_dump_keys_are_quoted_when_needed),
        cmocka_unit_test(test_dump_unicode_is_written_as_is),
        cmocka_unit_test(test_round_trip_tricky_strings),
        cmocka_unit_test(test_round_trip_numbers),
        cmocka_unit_test(test_round_trip_nested_structures),
        cmocka_unit_test(test_round_trip_long_key),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
