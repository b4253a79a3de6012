/* bundled.c - the customizations compiled into the binary (see bundled.h).
 *
 * The YAML text comes from the generated table in bundled_files.h; each call parses it
 * again (a few small files, read at server start and by the tests), which keeps no
 * parsed state, and so no lock, here. */
#include "interp/bundled.h"

#include <stdlib.h>
#include <string.h>

#include "core/err.h"
#include "core/log.h"
#include "core/mem.h"
#include "core/yaml.h"
#include "interp/bundled_files.h"

size_t fl_bundled_count(void)
{
    return fl_bundled_nfiles;
}

int fl_bundled_get(size_t i, json_t **ric, const char **file, char **err)
{
    *ric = NULL;
    if (file)
        *file = NULL;
    if (err)
        *err = NULL;
    if (i >= fl_bundled_nfiles)
        return FL_ENOTFOUND;
    const struct fl_bundled_file *f = &fl_bundled_files[i];
    char *perr = NULL;
    json_t *docs = NULL;
    int rc = fl_yaml_parse_all(f->text, f->len, &docs, &perr);
    if (rc == 0 && (json_array_size(docs) != 1 || !json_is_object(json_array_get(docs, 0)))) {
        rc = FL_EINVAL;
        perr = fl_strdup("must hold exactly one ResourceInterpreterCustomization object");
    }
    if (rc) {
        if (err)
            *err = fl_asprintf("bundled customization %s: %s", f->name, perr ? perr : fl_strerror(rc));
        free(perr);
        json_decref(docs);
        return rc;
    }
    *ric = json_incref(json_array_get(docs, 0));
    json_decref(docs);
    if (file)
        *file = f->stem;
    return 0;
}

int fl_bundled_list(json_t **list, char **err)
{
    *list = NULL;
    json_t *out = json_array();
    for (size_t i = 0; i < fl_bundled_count(); i++) {
        json_t *ric;
        const char *file;
        int rc = fl_bundled_get(i, &ric, &file, err);
        if (rc) {
            json_decref(out);
            return rc;
        }
        json_t *spec = json_object_get(ric, "spec");
        json_t *target = json_object_get(spec, "target");
        json_t *custom = json_object_get(spec, "customizations");
        json_t *rules = json_array();
        for (int op = 0; op < FL_INTERP_OP_COUNT; op++) {
            const char *rule = fl_lua_rule_name((enum fl_interp_op)op);
            const char *script = json_string_value(json_object_get(json_object_get(custom, rule), "luaScript"));
            if (script && *script)
                json_array_append_new(rules, json_string(rule));
        }
        json_t *e = json_object();
        json_object_set_new(e, "file", json_string(file));
        json_object_set(e, "name", json_object_get(json_object_get(ric, "metadata"), "name"));
        json_object_set_new(e, "target", json_pack("{s:O?, s:O?}", "apiVersion", json_object_get(target, "apiVersion"),
                                                   "kind", json_object_get(target, "kind")));
        json_object_set_new(e, "rules", rules);
        json_array_append_new(out, e);
        json_decref(ric);
    }
    *list = out;
    return 0;
}

int fl_bundled_load(fl_lua_backend *b, char **err)
{
    if (err)
        *err = NULL;
    for (size_t i = 0; i < fl_bundled_count(); i++) {
        json_t *ric;
        const char *file;
        int rc = fl_bundled_get(i, &ric, &file, err);
        if (rc)
            return rc;
        char *serr = NULL;
        rc = fl_lua_backend_set(b, ric, &serr);
        json_decref(ric);
        if (rc) {
            if (err)
                *err = fl_asprintf("bundled customization %s.yaml: %s", file, serr ? serr : fl_strerror(rc));
            free(serr);
            return rc;
        }
    }
    return 0;
}

fl_lua_backend *fl_bundled_attach(fl_interp *ip, const char *component)
{
    fl_lua_backend *b = fl_lua_backend_new("bundled", NULL);
    char *err = NULL;
    if (fl_bundled_load(b, &err))
        fl_log(FL_LOG_ERROR, component, "bundled customizations: %s (the others are in force)", err ? err : "?");
    free(err);
    fl_lua_backend_attach(b, ip);
    fl_log(FL_LOG_INFO, component, "%zu bundled customizations in force", fl_lua_backend_count(b));
    return b;
}
