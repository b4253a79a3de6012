/* test_log.c - the logger's two formats and what it shows: JSON lines that any parser takes
 * whatever the message holds, text lines as they always were, and -v against FLOTILLA_LOG. */
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

/* fl_log once, with fd 2 pointed at a temporary file; what it wrote (heap, NUL-ended). */
static char *capture(int level, const char *module, const char *msg)
{
    FILE *tmp = tmpfile();
    assert_non_null(tmp);
    int saved = dup(2);
    assert_true(saved >= 0);
    assert_int_equal(dup2(fileno(tmp), 2), 2);
    fl_log(level, module, "%s", msg);
    dup2(saved, 2);
    close(saved);
    long n = lseek(fileno(tmp), 0, SEEK_END);
    char *out = calloc(1, (size_t)n + 1);
    assert_int_equal(pread(fileno(tmp), out, (size_t)n, 0), n);
    fclose(tmp);
    return out;
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
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
