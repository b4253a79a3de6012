/* test_log.c - the logger's two formats and what it shows: JSON lines that any parser takes
 * whatever the message and the key/value pairs hold, text lines as they always were with the
 * pairs after the message, and -v against FLOTILLA_LOG. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "core/log.h"

/* fd 2 pointed at a temporary file between cap_begin and cap_end. */
typedef struct {
    FILE *tmp;
    int saved;
} cap;

static cap cap_begin(void)
{
    cap c = {tmpfile(), dup(2)};
    assert_non_null(c.tmp);
    assert_true(c.saved >= 0);
    assert_int_equal(dup2(fileno(c.tmp), 2), 2);
    return c;
}

/* What was written since cap_begin (heap, NUL-ended). */
static char *cap_end(cap c)
{
    dup2(c.saved, 2);
    close(c.saved);
    long n = lseek(fileno(c.tmp), 0, SEEK_END);
    char *out = calloc(1, (size_t)n + 1);
    assert_int_equal(pread(fileno(c.tmp), out, (size_t)n, 0), n);
    fclose(c.tmp);
    return out;
}

/* fl_log once; what it wrote. */
static char *capture(int level, const char *module, const char *msg)
{
    cap c = cap_begin();
    fl_log(level, module, "%s", msg);
    return cap_end(c);
}

/* Start from a given FLOTILLA_LOG (NULL: unset) and flags, as a process would. */
static void setup_log(const char *env, const char *format, const char *v)
{
    if (env)
        setenv("FLOTILLA_LOG", env, 1);
    else
        unsetenv("FLOTILLA_LOG");
    fl_log_init();
    char why[256];
    assert_int_equal(fl_log_configure(format, v, why, sizeof why), 0);
}

/* One line exactly (one newline, at the end), parsed as a JSON object. */
static json_t *one_json_line(const char *out)
{
    size_t n = strlen(out);
    assert_true(n > 0 && n <= FL_LOG_LINE_MAX);
    assert_int_equal(out[n - 1], '\n');
    assert_ptr_equal(strchr(out, '\n'), out + n - 1);
    json_error_t err;
    json_t *j = json_loads(out, 0, &err);
    if (!j)
        fail_msg("not JSON (%s): %s", err.text, out);
    assert_true(json_is_object(j));
    return j;
}

static const char *field(json_t *j, const char *k)
{
    const char *s = json_string_value(json_object_get(j, k));
    assert_non_null(s);
    return s;
}

static void json_line_has_rfc3339_utc_millis_level_v_component_and_msg(void **state)
{
    setup_log(NULL, "json", "2");
    char *out = capture(FL_LOG_DEBUG, "informer", "watch closed");
    json_t *j = one_json_line(out);
    const char *ts = field(j, "ts");
    /* 2026-12-07T05:07:20.284Z */
    assert_int_equal(strlen(ts), 24);
    int y, mo, d, h, mi, s, ms;
    char z = 0;
    assert_int_equal(sscanf(ts, "%4d-%2d-%2dT%2d:%2d:%2d.%3d%c", &y, &mo, &d, &h, &mi, &s, &ms, &z), 8);
    assert_int_equal(z, 'Z');
    assert_true(y >= 2024 && mo >= 1 && mo <= 12 && d >= 1 && h < 24 && mi < 60 && s < 61 && ms < 1000);
    assert_string_equal(field(j, "level"), "debug");
    assert_int_equal(json_integer_value(json_object_get(j, "v")), FL_LOG_DEBUG_V);
    assert_string_equal(field(j, "component"), "informer");
    assert_string_equal(field(j, "msg"), "watch closed");
    assert_int_equal(json_object_size(j), 5);
    json_decref(j);
    free(out);

    out = capture(FL_LOG_WARN, "server", "w");
    j = one_json_line(out);
    assert_string_equal(field(j, "level"), "warn");
    assert_int_equal(json_integer_value(json_object_get(j, "v")), 0);
    json_decref(j);
    free(out);
}

static void json_escapes_quotes_backslashes_and_control_characters(void **state)
{
    setup_log(NULL, "json", NULL);
    static const char nasty[] = "say \"hi\"} {\"msg\":\"x\\\" C:\\dir\\ \n second line\r\t\b\f \x01\x1b[31m \x1f \x7f end";
    char *out = capture(FL_LOG_ERROR, "mod\"ule\\\n", nasty);
    json_t *j = one_json_line(out);
    assert_string_equal(field(j, "msg"), nasty);
    assert_string_equal(field(j, "component"), "mod\"ule\\\n");
    assert_string_equal(field(j, "level"), "error");
    json_decref(j);
    free(out);
}

static void json_turns_invalid_utf8_into_replacement_characters(void **state)
{
    setup_log(NULL, "json", NULL);
    /* valid 2-, 3- and 4-byte characters kept; a stray byte, an overlong '/', a surrogate, a
     * code point past U+10FFFF and a cut sequence each become one U+FFFD per byte */
    char *out = capture(FL_LOG_INFO, "m", "é€😀 a\xff b\xc0\xaf c\xed\xa0\x80 d\xf4\x90\x80\x80 e\xe2\x82");
    json_t *j = one_json_line(out);
#define R "\xEF\xBF\xBD"
    assert_string_equal(field(j, "msg"), "é€😀 a" R " b" R R " c" R R R " d" R R R R " e" R R);
#undef R
    json_decref(j);
    free(out);
}

static void json_cuts_a_long_message_whole_characters_first(void **state)
{
    setup_log(NULL, "json", NULL);
    /* escaped, these grow 2, 6 and 3 times (U+FFFD for each byte 0xff): past the line each */
    static const char fill[] = {'"', 1, (char)0xff};
    static const char *const one[] = {"\"", "\x01", "\xEF\xBF\xBD"};
    for (size_t f = 0; f < sizeof fill; f++) {
        char msg[2000];
        memset(msg, fill[f], sizeof msg - 1);
        msg[sizeof msg - 1] = 0;
        char *out = capture(FL_LOG_INFO, "m", msg);
        json_t *j = one_json_line(out);
        const char *got = field(j, "msg");
        size_t n = strlen(got), w = strlen(one[f]);
        assert_true(n / w > 500);
        assert_int_equal(n % w, 0); /* whole characters only */
        for (size_t i = 0; i < n; i += w)
            assert_memory_equal(got + i, one[f], w);
        json_decref(j);
        free(out);
    }
}

static void text_lines_keep_their_shape(void **state)
{
    setup_log(NULL, NULL, NULL);
    char *out = capture(FL_LOG_INFO, "server", "serving on https://127.0.0.1:6443");
    char lv = 0, mod[32] = "";
    int h, m, s, ms, used = 0;
    assert_int_equal(sscanf(out, "%c %2d:%2d:%2d.%3d %31[^:]: %n", &lv, &h, &m, &s, &ms, mod, &used), 6);
    assert_int_equal(lv, 'I');
    assert_int_equal(out[1], ' ');
    assert_int_equal(out[14], ' '); /* "I 05:07:20.284 " */
    assert_string_equal(mod, "server");
    assert_string_equal(out + used, "serving on https://127.0.0.1:6443\n");
    free(out);
    setup_log(NULL, "text", "3");
    out = capture(FL_LOG_DEBUG, "http", "d");
    assert_int_equal(out[0], 'D');
    free(out);
    /* a line break in a message does not start a line that is no entry */
    out = capture(FL_LOG_WARN, "execution", "no Work uses apps/v1\nDeployment\r here");
    assert_ptr_equal(strchr(out, '\n'), out + strlen(out) - 1);
    assert_non_null(strstr(out, " execution: no Work uses apps/v1\\nDeployment\\r here\n"));
    free(out);
}

/* Is a line of this level written under these settings? */
static bool shown(const char *env, const char *v, int level)
{
    setup_log(env, "json", v);
    char *out = capture(level, "m", "x");
    bool any = out[0] != 0;
    free(out);
    assert_int_equal(any, fl_log_enabled(level) != 0);
    return any;
}

static void verbosity_two_shows_debug_and_wins_over_flotilla_log(void **state)
{
    /* defaults: error, warn, info; no debug */
    assert_true(shown(NULL, NULL, FL_LOG_ERROR));
    assert_true(shown(NULL, NULL, FL_LOG_INFO));
    assert_false(shown(NULL, NULL, FL_LOG_DEBUG));
    /* -v: 0 and 1 are today's info; 2 and more add debug */
    assert_false(shown(NULL, "0", FL_LOG_DEBUG));
    assert_false(shown(NULL, "1", FL_LOG_DEBUG));
    assert_true(shown(NULL, "2", FL_LOG_DEBUG));
    assert_true(shown(NULL, "3", FL_LOG_DEBUG));
    /* FLOTILLA_LOG alone still works */
    assert_true(shown("debug", NULL, FL_LOG_DEBUG));
    assert_false(shown("warn", NULL, FL_LOG_INFO));
    assert_true(shown("warn", NULL, FL_LOG_WARN));
    assert_false(shown("error", NULL, FL_LOG_WARN));
    /* both given: the flag wins, either way */
    assert_false(shown("debug", "0", FL_LOG_DEBUG));
    assert_true(shown("debug", "0", FL_LOG_INFO));
    assert_true(shown("error", "0", FL_LOG_INFO));
    assert_true(shown("error", "2", FL_LOG_DEBUG));
    /* a level outside the four is never written */
    assert_false(shown(NULL, "9", FL_LOG_DEBUG + 1));
}

static void bad_flags_are_refused_naming_the_flag_and_change_nothing(void **state)
{
    setup_log(NULL, "json", "2");
    char why[256];
    assert_int_equal(fl_log_configure("xml", NULL, why, sizeof why), -1);
    assert_non_null(strstr(why, "--logging-format"));
    assert_non_null(strstr(why, "\"xml\""));
    static const char *bad_v[] = {"", "-1", "+1", "two", "2x", "99999999999999999999"};
    for (size_t i = 0; i < sizeof bad_v / sizeof *bad_v; i++) {
        why[0] = 0;
        assert_int_equal(fl_log_configure(NULL, bad_v[i], why, sizeof why), -1);
        assert_non_null(strstr(why, "-v"));
    }
    assert_int_equal(fl_log_configure("JSON", "0", why, sizeof why), -1); /* the names are lower case */
    /* still JSON at -v 2 */
    assert_true(fl_log_enabled(FL_LOG_DEBUG));
    char *out = capture(FL_LOG_INFO, "m", "still json");
    json_decref(one_json_line(out));
    free(out);
}

/* The line of a manifest applied to a member: what the pair tests log. */
static char *capture_applied(void)
{
    cap c = cap_begin();
    fl_log_kv(FL_LOG_INFO, "execution", "applied manifest", "object", FL_LOG_OBJ("Deployment", "default", "nginx"),
              "cluster", "member1", NULL);
    return cap_end(c);
}

static void json_pairs_are_string_members_after_msg(void **state)
{
    setup_log(NULL, "json", NULL);
    char *out = capture_applied();
    json_t *j = one_json_line(out);
    assert_string_equal(field(j, "msg"), "applied manifest");
    assert_string_equal(field(j, "component"), "execution");
    assert_string_equal(field(j, "object"), "Deployment/default/nginx");
    assert_string_equal(field(j, "cluster"), "member1");
    assert_int_equal(json_object_size(j), 7);
    /* in the order given, after the five fixed members */
    assert_non_null(strstr(out, "\"msg\":\"applied manifest\",\"object\":\"Deployment/default/nginx\","
                                "\"cluster\":\"member1\"}\n"));
    json_decref(j);
    free(out);
}

static void text_pairs_follow_the_message_as_key_equals_quoted_value(void **state)
{
    setup_log(NULL, "text", NULL);
    char *out = capture_applied();
    assert_int_equal(out[0], 'I');
    assert_non_null(strstr(out, " execution: applied manifest object=\"Deployment/default/nginx\" cluster=\"member1\"\n"));
    assert_ptr_equal(strchr(out, '\n'), out + strlen(out) - 1);
    free(out);
    /* a value with spaces, quotes, backslashes and line breaks stays one quoted value */
    cap c = cap_begin();
    fl_log_kv(FL_LOG_WARN, "agent", "renewing the lease failed", "object", FL_LOG_OBJ("Lease", "ns", "m1"), "err",
              "say \"hi\" C:\\dir\n next\tline", "cluster", NULL, NULL);
    out = cap_end(c);
    assert_non_null(strstr(out, " agent: renewing the lease failed object=\"Lease/ns/m1\" "
                                "err=\"say \\\"hi\\\" C:\\\\dir\\n next\\tline\" cluster=\"\"\n"));
    assert_ptr_equal(strchr(out, '\n'), out + strlen(out) - 1);
    free(out);
}

static void an_object_is_kind_namespace_name_or_kind_name_when_cluster_scoped(void **state)
{
    assert_string_equal(FL_LOG_OBJ("Work", "karmada-es-member1", "nginx-687f7fb96f"),
                        "Work/karmada-es-member1/nginx-687f7fb96f");
    assert_string_equal(FL_LOG_OBJ("Cluster", NULL, "member1"), "Cluster/member1");
    assert_string_equal(FL_LOG_OBJ("ClusterResourceBinding", "", "crb"), "ClusterResourceBinding/crb");
    char small[12];
    assert_string_equal(fl_log_obj(small, sizeof small, "Deployment", "default", "nginx"), "Deployment/");
}

static void json_pair_keys_and_values_are_escaped(void **state)
{
    setup_log(NULL, "json", NULL);
    static const char nasty[] = "x\",\"level\":\"error\"} \\ \n\r\t\x01 \xff é";
    cap c = cap_begin();
    fl_log_kv(FL_LOG_INFO, "m", "escaped", "err", nasty, "we\"ird key\n", "v", NULL);
    char *out = cap_end(c);
    json_t *j = one_json_line(out);
    assert_string_equal(field(j, "err"), "x\",\"level\":\"error\"} \\ \n\r\t\x01 \xEF\xBF\xBD é");
    assert_string_equal(field(j, "we_ird_key_"), "v"); /* a key is never quoted or escaped: made safe */
    assert_string_equal(field(j, "level"), "info");
    assert_int_equal(json_object_size(j), 7);
    json_decref(j);
    free(out);
}

static void a_pair_never_overwrites_a_fixed_member_nor_repeats_a_key(void **state)
{
    setup_log(NULL, "json", NULL);
    cap c = cap_begin();
    fl_log_kv(FL_LOG_WARN, "mod", "clash", "ts", "1", "level", "error", "v", "9", "component", "other", "msg", "m2",
              "object", "Work/a/b", "object", "Work/c/d", "x_level", "again", NULL);
    char *out = cap_end(c);
    json_t *j = one_json_line(out);
    assert_string_equal(field(j, "level"), "warn");
    assert_int_equal(json_integer_value(json_object_get(j, "v")), 0);
    assert_string_equal(field(j, "component"), "mod");
    assert_string_equal(field(j, "msg"), "clash");
    assert_true(json_is_string(json_object_get(j, "ts")) && strlen(field(j, "ts")) == 24);
    assert_string_equal(field(j, "x_ts"), "1");
    assert_string_equal(field(j, "x_level"), "error");
    assert_string_equal(field(j, "x_v"), "9");
    assert_string_equal(field(j, "x_component"), "other");
    assert_string_equal(field(j, "x_msg"), "m2");
    assert_string_equal(field(j, "object"), "Work/a/b");
    assert_int_equal(json_object_size(j), 11);
    /* no member twice in the text either, which a parser would take the last of */
    const char *first = strstr(out, "\"object\"");
    assert_null(strstr(first + 1, "\"object\""));
    first = strstr(out, "\"x_level\"");
    assert_null(strstr(first + 1, "\"x_level\""));
    json_decref(j);
    free(out);
}

static void kvf_formats_the_message_and_takes_its_pairs_as_an_array(void **state)
{
    setup_log(NULL, "json", NULL);
    const char *ns = NULL;
    cap c = cap_begin();
    fl_log_kvf(FL_LOG_ERROR, "cluster", FL_LOG_KV("object", FL_LOG_OBJ("Cluster", ns, "m2"), "cluster", "m2"),
               "probed in %d ms, %s", 42, "failing");
    char *out = cap_end(c);
    json_t *j = one_json_line(out);
    assert_string_equal(field(j, "msg"), "probed in 42 ms, failing");
    assert_string_equal(field(j, "object"), "Cluster/m2");
    assert_string_equal(field(j, "cluster"), "m2");
    assert_int_equal(json_object_size(j), 7);
    json_decref(j);
    free(out);
    /* a line of a level not shown is not written, pairs or not */
    setup_log(NULL, "json", "0");
    c = cap_begin();
    fl_log_kv(FL_LOG_DEBUG, "m", "hidden", "object", "Work/a/b", NULL);
    fl_log_kvf(FL_LOG_DEBUG, "m", FL_LOG_KV("object", "Work/a/b"), "hidden %d", 1);
    out = cap_end(c);
    assert_string_equal(out, "");
    free(out);
}

/* A message that fills the line still leaves the pairs their room; a value past the line is
 * cut at a character boundary and the line stays one valid JSON object or one text line. */
static void a_long_line_is_cut_keeping_the_pairs_whole_and_the_line_valid(void **state)
{
    char msg[2000], big[5000];
    memset(msg, '"', sizeof msg - 1); /* 2 bytes each escaped in JSON: past the line alone */
    msg[sizeof msg - 1] = 0;
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = 0;
    for (int json = 0; json < 2; json++) {
        setup_log(NULL, json ? "json" : "text", NULL);
        cap c = cap_begin();
        fl_log_kv(FL_LOG_INFO, "m", msg, "object", "Deployment/default/nginx", "cluster", "member1", NULL);
        char *out = cap_end(c);
        size_t n = strlen(out);
        assert_true(n <= FL_LOG_LINE_MAX);
        assert_ptr_equal(strchr(out, '\n'), out + n - 1);
        if (json) {
            assert_true(n > FL_LOG_LINE_MAX - 64); /* the message took the rest */
            json_t *j = one_json_line(out);
            assert_string_equal(field(j, "object"), "Deployment/default/nginx");
            assert_string_equal(field(j, "cluster"), "member1");
            assert_true(strlen(field(j, "msg")) > 1000);
            json_decref(j);
        } else {
            assert_non_null(strstr(out, "\" object=\"Deployment/default/nginx\" cluster=\"member1\"\n"));
        }
        free(out);
        /* a value longer than the line: cut, the pairs after it left out, the line valid */
        c = cap_begin();
        fl_log_kv(FL_LOG_INFO, "m", "short", "object", "Work/a/b", "err", big, "after", "gone", NULL);
        out = cap_end(c);
        n = strlen(out);
        assert_true(n <= FL_LOG_LINE_MAX && n > FL_LOG_LINE_MAX - 8);
        assert_ptr_equal(strchr(out, '\n'), out + n - 1);
        assert_null(strstr(out, "after"));
        if (json) {
            json_t *j = one_json_line(out);
            assert_string_equal(field(j, "msg"), "short");
            assert_string_equal(field(j, "object"), "Work/a/b");
            assert_true(strlen(field(j, "err")) > 3000);
            json_decref(j);
        } else {
            assert_non_null(strstr(out, " m: short object=\"Work/a/b\" err=\"xxx"));
            assert_int_equal(out[n - 2], '"');
        }
        free(out);
    }
    /* escaped values are cut between characters: never half of \" or of U+FFFD */
    setup_log(NULL, "json", NULL);
    char q[3000];
    memset(q, '"', sizeof q - 1);
    q[sizeof q - 1] = 0;
    for (int k = 0; k < 2; k++) {
        if (k)
            memset(q, 0xff, sizeof q - 1);
        cap c = cap_begin();
        fl_log_kv(FL_LOG_INFO, "m", "q", "err", q, NULL);
        char *out = cap_end(c);
        json_t *j = one_json_line(out);
        const char *got = field(j, "err");
        size_t w = k ? 3 : 1;
        assert_true(strlen(got) / w > 1000 && strlen(got) % w == 0);
        json_decref(j);
        free(out);
    }
}

static void pairs_past_the_most_a_line_carries_are_left_out(void **state)
{
    setup_log(NULL, "json", NULL);
    const char *kv[2 * (FL_LOG_KV_MAX + 2)];
    char keys[FL_LOG_KV_MAX + 2][8];
    for (int i = 0; i < FL_LOG_KV_MAX + 2; i++) {
        snprintf(keys[i], sizeof keys[i], "k%d", i);
        kv[2 * i] = keys[i];
        kv[2 * i + 1] = "v";
    }
    cap c = cap_begin();
    fl_log_kvf(FL_LOG_INFO, "m", kv, sizeof kv / sizeof *kv, "many");
    char *out = cap_end(c);
    json_t *j = one_json_line(out);
    assert_int_equal(json_object_size(j), 5 + FL_LOG_KV_MAX);
    assert_string_equal(field(j, "k0"), "v");
    assert_null(json_object_get(j, "k16"));
    json_decref(j);
    free(out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(json_line_has_rfc3339_utc_millis_level_v_component_and_msg),
        cmocka_unit_test(json_escapes_quotes_backslashes_and_control_characters),
        cmocka_unit_test(json_turns_invalid_utf8_into_replacement_characters),
        cmocka_unit_test(json_cuts_a_long_message_whole_characters_first),
        cmocka_unit_test(text_lines_keep_their_shape),
        cmocka_unit_test(verbosity_two_shows_debug_and_wins_over_flotilla_log),
        cmocka_unit_test(bad_flags_are_refused_naming_the_flag_and_change_nothing),
        cmocka_unit_test(json_pairs_are_string_members_after_msg),
        cmocka_unit_test(text_pairs_follow_the_message_as_key_equals_quoted_value),
        cmocka_unit_test(an_object_is_kind_namespace_name_or_kind_name_when_cluster_scoped),
        cmocka_unit_test(json_pair_keys_and_values_are_escaped),
        cmocka_unit_test(a_pair_never_overwrites_a_fixed_member_nor_repeats_a_key),
        cmocka_unit_test(kvf_formats_the_message_and_takes_its_pairs_as_an_array),
        cmocka_unit_test(a_long_line_is_cut_keeping_the_pairs_whole_and_the_line_valid),
        cmocka_unit_test(pairs_past_the_most_a_line_carries_are_left_out),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
