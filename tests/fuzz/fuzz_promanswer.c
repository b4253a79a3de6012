/* fuzz_promanswer.c - libFuzzer target for src/controllers/metricsseries.c: the answers a
 * Prometheus query API gives the metrics way in of live status are bytes from another
 * process (controllers/metricsstatus.c reads them), so any bytes must fold into objects or be
 * refused with a message, never crash; and every object folded must be one the live-state rules
 * can judge.
 *
 * The first byte picks the kind; the rest is the answer, read as each reader reads it: the
 * series of that kind, and the clusters' heartbeats. */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "controllers/metricsseries.h"
#include "core/err.h"
#include "core/json_get.h"
#include "interp/livestate.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    size_t k = data[0] % fl_mseries_nkinds;
    const char *text = (const char *)data + 1;
    size -= 1;
    json_t *objs = json_object();
    char *err = NULL;
    int rc = fl_mseries_fold_text(text, size, k, objs, &err);
    if ((rc == 0) == (err != NULL) || (rc != 0 && rc != FL_EINVAL))
        abort();
    const char *cluster, *key;
    json_t *per, *obj;
    json_object_foreach(objs, cluster, per) {
        json_object_foreach(per, key, obj) {
            fl_live live;
            fl_live_judge(obj, fl_json_str(obj, "apiVersion"), fl_json_str(obj, "kind"), NULL, 1767225600000LL,
                          &live);
            if (strlen(live.message) >= FL_LIVE_MESSAGE_MAX || strlen(live.reason) >= FL_LIVE_REASON_MAX)
                abort();
        }
    }
    free(err);
    err = NULL;
    json_t *answer = json_loadb(text, size, 0, NULL), *heard = json_object();
    if (answer) {
        rc = fl_mseries_heartbeats(answer, heard, &err);
        if ((rc == 0) == (err != NULL))
            abort();
    }
    free(err);
    json_decref(heard);
    json_decref(answer);
    json_decref(objs);
    return 0;
}
