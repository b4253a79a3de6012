/* fuzz_selector.c - libFuzzer target for src/core/selector.c.
 *
 * The same bytes go to all three parsers: as label selector text, as field
 * selector text, and (through json_loadb) as a structured metav1.LabelSelector.
 * Whatever parses is matched against fixed objects; a failed parse must leave
 * *out NULL and an error message, a successful one no message. */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/err.h"
#include "core/mem.h"
#include "core/selector.h"

static json_t *labels, *object;

static void setup(void)
{
    labels = json_pack("{s:s, s:s, s:s, s:s, s:i}", "app", "web", "tier", "frontend", "app.kubernetes.io/name",
                       "shop", "version", "3", "bad", 7);
    object = json_pack("{s:{s:s, s:s, s:o}, s:{s:s, s:i}}", "metadata", "name", "web-1", "namespace", "prod", "labels",
                       json_incref(labels), "status", "phase", "Running", "replicas", 3);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!labels)
        setup();
    char *text = fl_strndup((const char *)data, size);
    char *err = NULL;

    fl_labelsel *ls = NULL;
    int rc = fl_labelsel_parse(text, &ls, &err);
    if ((rc == 0) != (ls != NULL) || (rc == 0) == (err != NULL))
        abort();
    if (ls) {
        (void)fl_labelsel_match(ls, labels);
        (void)fl_labelsel_match(ls, NULL);
        (void)fl_labelsel_empty(ls);
    }
    fl_labelsel_free(ls);
    free(err);

    fl_fieldsel *fs = NULL;
    err = NULL;
    rc = fl_fieldsel_parse(text, &fs, &err);
    if ((rc == 0) != (fs != NULL) || (rc == 0) == (err != NULL))
        abort();
    if (fs) {
        (void)fl_fieldsel_match(fs, object);
        for (size_t i = 0; i < fl_fieldsel_count(fs); i++)
            (void)fl_fieldsel_exact(fs, fl_fieldsel_field(fs, i));
    }
    fl_fieldsel_free(fs);
    free(err);

    json_t *js = json_loadb((const char *)data, size, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
    if (js) {
        ls = NULL;
        err = NULL;
        rc = fl_labelsel_from_json(js, &ls, &err);
        if ((rc == 0) != (ls != NULL) || (rc == 0) == (err != NULL))
            abort();
        if (ls)
            (void)fl_labelsel_match(ls, labels);
        fl_labelsel_free(ls);
        free(err);
        json_decref(js);
    }
    free(text);
    return 0;
}
