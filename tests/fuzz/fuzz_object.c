/* fuzz_object.c - libFuzzer target for decoding bytes into objects: JSON parse, then
 * type checks and validation against every kind in the table (built-ins, Karmada). */
#include <jansson.h>
#include <stdlib.h>

#include "api/kinds.h"
#include "api/validate.h"
#include "core/mem.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    static int ready;
    if (!ready) {
        fl_mem_init();
        fl_kinds_init();
        ready = 1;
    }
    json_t *obj = json_loadb((const char *)data, size, 0, NULL);
    if (!obj)
        return 0;
    const fl_kind **kinds;
    size_t n = fl_kinds_list(&kinds);
    for (size_t i = 0; i < n; i++) {
        char *msg = NULL;
        if (fl_validate_types(kinds[i], obj, &msg) == 0) {
            json_t *causes = json_array();
            fl_validate_object(kinds[i], obj, NULL, causes);
            fl_validate_object(kinds[i], obj, obj, causes);
            json_decref(causes);
        }
        free(msg);
    }
    free(kinds);
    json_decref(obj);
    return 0;
}
