/* interpret_cmd.c - `flotilla ctl interpret`: a ResourceInterpreterCustomization checked
 * or run offline, as `karmadactl interpret` does, on the server's own Lua engine.
 *
 *   flotilla ctl interpret -f CUSTOMIZATION --check
 *   flotilla ctl interpret -f CUSTOMIZATION --operation OP [--desired-file F]
 *       [--observed-file F] [--status-file F] [--desired-replica N] [-o yaml|json]
 *
 * aggregateStatus without --status-file passes statusItems nil, with one its items (an
 * empty list is an empty table), as karmadactl does.
 *
 * Nothing talks to a server: the customization and the objects come from files (YAML or
 * JSON, "-" for stdin), and fl_lua_run() runs the script in a sandboxed state with the
 * server's limits. --check compiles every script (fl_lua_backend_check) and prints one
 * line per rule. --operation prints the named results karmadactl prints ("---", a
 * "# [i/n] name:" comment, the value as YAML), or with -o json one JSON object.
 *
 * Every failure is one line on stderr, "flotilla ctl interpret: <what>: <why>", naming
 * the file and line for unreadable input, the flag for missing input, and the rule and
 * script line for a script error. */
#include "cli/interpret_cmd.h"

#include <ctype.h>
#include <stddef.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/err.h"
#include "core/file.h"
#include "core/json.h"
#include "core/mem.h"
#include "core/yaml.h"
#include "interp/lua.h"

#define RIC_KIND "ResourceInterpreterCustomization"
/* Customizations and manifests are small; this only stops a wrong file (a log, an
 * image) from being read whole. */
#define MAX_INPUT ((size_t)64 << 20)

/* ---- operations ---- */

static const char *const op_flags[FL_INTERP_OP_COUNT] = {
    [FL_INTERP_REPLICA] = "interpretReplica",
    [FL_INTERP_REVISE_REPLICA] = "reviseReplica",
    [FL_INTERP_RETAIN] = "retain",
    [FL_INTERP_REFLECT_STATUS] = "interpretStatus",
    [FL_INTERP_AGGREGATE_STATUS] = "aggregateStatus",
    [FL_INTERP_HEALTH] = "interpretHealth",
    [FL_INTERP_DEPENDENCY] = "interpretDependency",
    [FL_INTERP_COMPONENT] = "interpretComponent",
};

int fl_interpret_op_parse(const char *name, enum fl_interp_op *op)
{
    for (int i = 0; i < FL_INTERP_OP_COUNT; i++)
        if (name && !strcasecmp(name, op_flags[i])) {
            *op = (enum fl_interp_op)i;
            return 0;
        }
    return FL_EINVAL;
}

const char *fl_interpret_op_flag(enum fl_interp_op op)
{
    return (unsigned)op < FL_INTERP_OP_COUNT ? op_flags[op] : "";
}

static int input_error(char **err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int input_error(char **err, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        *err = fl_vasprintf(fmt, ap);
        va_end(ap);
    }
    return FL_EINVAL;
}

/* The one object every operation but retain takes: karmadactl accepts either file. */
static int the_object(enum fl_interp_op op, const fl_interpret_inputs *in, const json_t **obj, char **err)
{
    *obj = NULL;
    if (in->desired && in->observed)
        return input_error(err, "%s takes one object: give --desired-file or --observed-file, not both",
                           op_flags[op]);
    *obj = in->desired ? in->desired : in->observed;
    if (!*obj)
        return input_error(err, "%s needs the object: --%s-file FILE", op_flags[op],
                           op == FL_INTERP_REFLECT_STATUS || op == FL_INTERP_HEALTH ? "observed" : "desired");
    return 0;
}

int fl_interpret_execute(const json_t *ric, enum fl_interp_op op, const fl_interpret_inputs *in, json_t **results,
                         char **err)
{
    *results = NULL;
    if (err)
        *err = NULL;
    if ((unsigned)op >= FL_INTERP_OP_COUNT)
        return input_error(err, "unknown operation %d", (int)op);

    fl_lua_args args = {0};
    int rc = 0;
    switch (op) {
    case FL_INTERP_RETAIN:
        if (!in->desired)
            return input_error(err, "retain needs the template's manifest: --desired-file FILE");
        if (!in->observed)
            return input_error(err, "retain needs the member's object: --observed-file FILE");
        args.obj = in->desired;
        args.observed = in->observed;
        break;
    case FL_INTERP_REVISE_REPLICA:
        if (!in->has_replica)
            return input_error(err, "reviseReplica needs the replica count: --desired-replica N");
        args.replicas = in->desired_replica;
        rc = the_object(op, in, &args.obj, err);
        break;
    case FL_INTERP_AGGREGATE_STATUS:
        /* as karmadactl: no --status-file is statusItems nil, a file its items (even none) */
        args.items = in->status_items;
        args.items_as_given = in->status_items != NULL;
        rc = the_object(op, in, &args.obj, err);
        break;
    default:
        rc = the_object(op, in, &args.obj, err);
        break;
    }
    if (rc)
        return rc;

    fl_lua_result res = {0};
    rc = fl_lua_run(ric, op, &args, NULL, &res, err);
    if (rc == FL_EUNSUPPORTED) {
        if (err) {
            free(*err);
            *err = fl_asprintf("the customization has no %s rule (the script %s needs for %s)",
                               fl_lua_rule_name(op), fl_lua_function_name(op), op_flags[op]);
        }
        return rc;
    }
    if (rc) {
        /* the engine names the function; a failure outside the script's text (a bad
         * return value, the budget) does not name the rule the user edits */
        char chunk[64];
        snprintf(chunk, sizeof chunk, "[string \"%s\"]", fl_lua_rule_name(op));
        if (err && *err && !strstr(*err, chunk)) {
            char *m = fl_asprintf("%s rule: %s", fl_lua_rule_name(op), *err);
            free(*err);
            *err = m;
        }
        return rc;
    }

    json_t *out = json_object();
    switch (op) {
    case FL_INTERP_REPLICA:
        json_object_set_new(out, "replica", json_integer(res.replicas));
        json_object_set(out, "requires", res.requirements ? res.requirements : json_null());
        break;
    case FL_INTERP_REVISE_REPLICA: json_object_set(out, "revised", res.obj); break;
    case FL_INTERP_RETAIN: json_object_set(out, "retained", res.obj); break;
    case FL_INTERP_REFLECT_STATUS: json_object_set(out, "status", res.obj ? res.obj : json_null()); break;
    case FL_INTERP_AGGREGATE_STATUS: json_object_set(out, "aggregatedStatus", res.obj); break;
    case FL_INTERP_HEALTH: json_object_set_new(out, "healthy", json_boolean(res.health == FL_HEALTH_HEALTHY)); break;
    case FL_INTERP_DEPENDENCY: json_object_set(out, "dependencies", res.obj ? res.obj : json_array()); break;
    /* a script answering nil prints null, as karmadactl prints its nil list */
    case FL_INTERP_COMPONENT: json_object_set(out, "components", res.obj ? res.obj : json_null()); break;
    default: break;
    }
    fl_lua_result_clear(&res);
    *results = out;
    return 0;
}

/* ---- reading input files ---- */

/* The file's documents as a JSON array: YAML (one or more documents) or JSON (one
 * value). Lists (kind FooList / List with items) are opened into their items, as kubectl
 * does with -f. On failure *err says "<path>: line L, column C: problem". */
static int read_docs(const char *path, json_t **docs, char **err)
{
    char *buf = NULL, *perr = NULL;
    size_t len = 0;
    int rc;
    *docs = NULL;
    if (!strcmp(path, "-")) {
        size_t cap = 0, n;
        char chunk[65536];
        while ((n = fread(chunk, 1, sizeof chunk, stdin)) > 0) {
            if (len + n > MAX_INPUT) {
                free(buf);
                return input_error(err, "stdin: larger than %zu MiB", MAX_INPUT >> 20);
            }
            if (len + n + 1 > cap) {
                cap = (len + n + 1) * 2;
                buf = fl_realloc(buf, cap);
            }
            memcpy(buf + len, chunk, n);
            len += n;
        }
        buf = fl_realloc(buf, len + 1);
        buf[len] = 0;
    } else if ((rc = fl_read_file(path, MAX_INPUT, &buf, &len))) {
        return input_error(err, "%s: %s", path,
                           rc == FL_ENOTFOUND ? "no such file" : "cannot read it (not a readable file, or too large)");
    }

    /* JSON gets the JSON parser, whose messages are about JSON; anything else is YAML. */
    const char *p = buf;
    while (*p && isspace((unsigned char)*p))
        p++;
    json_t *parsed = NULL;
    if (*p == '{' || *p == '[') {
        json_t *v = NULL;
        rc = fl_json_loadb(buf, len, JSON_REJECT_DUPLICATES, &v, &perr);
        if (rc == 0) {
            parsed = json_array();
            json_array_append_new(parsed, v);
        }
    } else {
        rc = fl_yaml_parse_all(buf, len, &parsed, &perr);
    }
    free(buf);
    if (rc) {
        input_error(err, "%s: %s", strcmp(path, "-") ? path : "stdin", perr ? perr : "cannot parse it");
        free(perr);
        return FL_EINVAL;
    }

    json_t *out = json_array();
    size_t i;
    json_t *d;
    json_array_foreach(parsed, i, d) {
        const char *kind = json_string_value(json_object_get(d, "kind"));
        json_t *items = json_object_get(d, "items");
        size_t kl = kind ? strlen(kind) : 0;
        if (kl >= 4 && !strcmp(kind + kl - 4, "List") && json_is_array(items))
            json_array_extend(out, items);
        else
            json_array_append(out, d);
    }
    json_decref(parsed);
    *docs = out;
    return 0;
}

/* The one ResourceInterpreterCustomization in path (other documents are skipped). */
static int read_customization(const char *path, json_t **ric, char **err)
{
    json_t *docs;
    *ric = NULL;
    int rc = read_docs(path, &docs, err);
    if (rc)
        return rc;
    size_t i, found = 0;
    json_t *d;
    json_array_foreach(docs, i, d) {
        const char *kind = json_string_value(json_object_get(d, "kind"));
        if (!kind || strcmp(kind, RIC_KIND))
            continue;
        if (found++ == 0)
            *ric = json_incref(d);
    }
    json_decref(docs);
    if (found == 0)
        return input_error(err, "%s: no %s in it (want kind: %s, apiVersion: config.karmada.io/v1alpha1)", path,
                           RIC_KIND, RIC_KIND);
    if (found > 1) {
        json_decref(*ric);
        *ric = NULL;
        return input_error(err, "%s: %zu %ss in it; give one per file", path, found, RIC_KIND);
    }
    return 0;
}

/* The one object in path (--desired-file, --observed-file). */
static int read_object(const char *path, const char *flag, json_t **obj, char **err)
{
    json_t *docs;
    *obj = NULL;
    int rc = read_docs(path, &docs, err);
    if (rc)
        return rc;
    if (json_array_size(docs) != 1 || !json_is_object(json_array_get(docs, 0))) {
        size_t n = json_array_size(docs);
        json_decref(docs);
        if (n == 1)
            return input_error(err, "%s %s: not an object", flag, path);
        return input_error(err, "%s %s: holds %zu documents; give one object", flag, path, n);
    }
    *obj = json_incref(json_array_get(docs, 0));
    json_decref(docs);
    return 0;
}

/* --status-file: AggregatedStatusItems, one per document, or one array (or List) of them.
 * A null item is kept (the script sees nil at its index); an empty array is no items. */
static int read_items(const char *path, json_t **items, char **err)
{
    json_t *docs;
    *items = NULL;
    int rc = read_docs(path, &docs, err);
    if (rc)
        return rc;
    if (json_array_size(docs) == 1 && json_is_array(json_array_get(docs, 0))) {
        json_t *inner = json_incref(json_array_get(docs, 0));
        json_decref(docs);
        docs = inner;
    }
    size_t i;
    json_t *d;
    json_array_foreach(docs, i, d) {
        if (!json_is_object(d) && !json_is_null(d)) {
            json_decref(docs);
            return input_error(err, "--status-file %s: item %zu is not an object or null (want clusterName, "
                                    "status, applied, health)", path, i + 1);
        }
    }
    *items = docs;
    return 0;
}

/* ---- the command ---- */

typedef struct opts {
    const char *file, *operation, *desired, *observed, *status, *replica, *output;
    bool check;
} opts;

static void usage(FILE *f)
{
    fprintf(f,
            "Usage: flotilla ctl interpret -f FILE --check\n"
            "       flotilla ctl interpret -f FILE --operation OP [--desired-file F] [--observed-file F]\n"
            "                              [--status-file F] [--desired-replica N] [-o yaml|json]\n"
            "\n"
            "Check or run a ResourceInterpreterCustomization offline, with the Lua engine the server uses.\n"
            "Files may be YAML or JSON; \"-\" reads stdin.\n"
            "\n"
            "Options:\n"
            "  -f, --filename FILE    the customization (other documents in FILE are skipped)\n"
            "  --check                compile every script; one line per rule: PASS, UNSET or ERROR\n"
            "                         (exit 1 if any ERROR)\n"
            "  --operation OP         run one operation and print its result:\n"
            "                           interpretReplica     --desired-file     -> replica, requires\n"
            "                           interpretComponent   --desired-file     -> components\n"
            "                           reviseReplica        --desired-file --desired-replica N -> revised\n"
            "                           retain               --desired-file --observed-file -> retained\n"
            "                           interpretStatus      --observed-file    -> status\n"
            "                           aggregateStatus      --desired-file [--status-file] -> aggregatedStatus\n"
            "                           interpretHealth      --observed-file    -> healthy\n"
            "                           interpretDependency  --desired-file     -> dependencies\n"
            "                         (operations other than retain take either object file)\n"
            "  --desired-file FILE    the template (retain: the manifest to write)\n"
            "  --observed-file FILE   the object as a member cluster has it\n"
            "  --status-file FILE     AggregatedStatusItems {clusterName, status, applied, health}: one per\n"
            "                         document, or a list (null items are nil); without it statusItems is nil\n"
            "  --desired-replica N    replicas for reviseReplica\n"
            "  -o, --output FORMAT    yaml (default, as karmadactl prints) or json\n"
            "\n"
            "Examples:\n"
            "  flotilla ctl interpret -f customization.yaml --check\n"
            "  flotilla ctl interpret -f customization.yaml --operation interpretHealth --observed-file observed.yaml\n"
            "  flotilla ctl interpret -f customization.yaml --operation aggregateStatus \\\n"
            "      --desired-file desired.yaml --status-file status.yaml\n");
}

static int usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int usage_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "flotilla ctl interpret: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, " (see 'flotilla ctl interpret --help')\n");
    va_end(ap);
    return 2;
}

/* One line on stderr, whatever the message holds (a Lua traceback has newlines). */
static int fail_line(const char *msg)
{
    fprintf(stderr, "flotilla ctl interpret: ");
    for (const char *p = msg; *p; p++)
        fputc(*p == '\n' || *p == '\r' ? ' ' : *p, stderr);
    fputc('\n', stderr);
    return 1;
}

static int parse(int argc, char **argv, opts *o, bool *help)
{
    static const struct {
        const char *name, *alias;
        size_t off;
    } flags[] = {
        {"filename", "f", offsetof(opts, file)},
        {"operation", NULL, offsetof(opts, operation)},
        {"desired-file", NULL, offsetof(opts, desired)},
        {"observed-file", NULL, offsetof(opts, observed)},
        {"status-file", NULL, offsetof(opts, status)},
        {"desired-replica", NULL, offsetof(opts, replica)},
        {"output", "o", offsetof(opts, output)},
    };
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            *help = true;
            return 0;
        }
        if (!strcmp(a, "--check")) {
            o->check = true;
            continue;
        }
        if (a[0] != '-' || !a[1])
            return usage_error("unexpected argument \"%s\"", a);
        bool lng = a[1] == '-';
        const char *f = a + (lng ? 2 : 1);
        size_t n = strcspn(f, "=");
        size_t k, nflags = sizeof flags / sizeof flags[0];
        for (k = 0; k < nflags; k++) {
            const char *want = lng ? flags[k].name : flags[k].alias;
            if (want && strlen(want) == n && !strncmp(want, f, n))
                break;
        }
        if (k == nflags)
            return usage_error("unknown flag %s", a);
        const char *v = f[n] == '=' ? f + n + 1 : (i + 1 < argc ? argv[++i] : NULL);
        if (!v || !*v)
            return usage_error("flag %s needs a value", a);
        *(const char **)((char *)o + flags[k].off) = v;
    }
    if (!o->file)
        return usage_error("-f FILE (the customization) is required");
    if (o->check == !!o->operation)
        return usage_error("give either --check or --operation OP");
    if (o->output && strcmp(o->output, "yaml") && strcmp(o->output, "json"))
        return usage_error("-o must be yaml or json, not \"%s\"", o->output);
    int stdin_users = 0;
    const char *const files[] = {o->file, o->desired, o->observed, o->status};
    for (size_t j = 0; j < sizeof files / sizeof files[0]; j++)
        stdin_users += files[j] && !strcmp(files[j], "-");
    if (stdin_users > 1)
        return usage_error("only one file can be \"-\" (stdin)");
    return 0;
}

static int cmd_check(const json_t *ric)
{
    json_t *report = NULL;
    char *err = NULL;
    int rc = fl_lua_backend_check(ric, &report, &err);
    if (!report) {
        fail_line(err ? err : fl_strerror(rc));
        free(err);
        return 1;
    }
    size_t i;
    json_t *r;
    json_array_foreach(json_object_get(report, "rules"), i, r) {
        const char *rule = json_string_value(json_object_get(r, "rule"));
        const char *status = json_string_value(json_object_get(r, "status"));
        const char *msg = json_string_value(json_object_get(r, "message"));
        json_int_t line = json_integer_value(json_object_get(r, "line"));
        printf("%s: %s", rule, status ? status : "?");
        if (msg) {
            /* "[string "rule"]:5: 'end' expected" reads better as "line 5: 'end' expected" */
            char prefix[256];
            snprintf(prefix, sizeof prefix, "[string \"%s\"]:%lld: ", rule, (long long)line);
            if (line > 0 && !strncmp(msg, prefix, strlen(prefix))) {
                printf(" line %lld:", (long long)line);
                msg += strlen(prefix) - 1;
            }
            putchar(' ');
            for (const char *p = msg + (*msg == ' '); *p; p++)
                putchar(*p == '\n' || *p == '\r' ? ' ' : *p);
        }
        putchar('\n');
    }
    json_decref(report);
    free(err);
    return rc ? 1 : 0;
}

static void print_results(const json_t *results, bool as_json)
{
    if (as_json) {
        char *s = json_dumps(results, JSON_INDENT(2));
        puts(s);
        free(s);
        return;
    }
    size_t n = json_object_size(results), i = 0;
    const char *name;
    json_t *v;
    json_object_foreach((json_t *)results, name, v) {
        char *y = fl_yaml_dump(v);
        printf("---\n# [%zu/%zu] %s:\n%s", ++i, n, name, y);
        free(y);
    }
}

static int cmd_run(const opts *o, const json_t *ric)
{
    enum fl_interp_op op;
    if (fl_interpret_op_parse(o->operation, &op)) {
        char names[256] = "";
        for (int i = 0; i < FL_INTERP_OP_COUNT; i++)
            snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", i ? ", " : "", op_flags[i]);
        return usage_error("unknown operation \"%s\" (one of: %s)", o->operation, names);
    }
    int ret = 1;
    json_t *desired = NULL, *observed = NULL, *items = NULL, *results = NULL;
    char *err = NULL;
    fl_interpret_inputs in = {0};
    if (o->replica) {
        char *end;
        long long n = strtoll(o->replica, &end, 10);
        if (*end || end == o->replica || n < 0 || n > INT32_MAX) {
            ret = usage_error("--desired-replica must be a whole number from 0 to %d, not \"%s\"", INT32_MAX,
                              o->replica);
            goto out;
        }
        in.has_replica = true;
        in.desired_replica = n;
    }
    if ((o->desired && read_object(o->desired, "--desired-file", &desired, &err)) ||
        (o->observed && read_object(o->observed, "--observed-file", &observed, &err)) ||
        (o->status && read_items(o->status, &items, &err))) {
        fail_line(err);
        goto out;
    }
    in.desired = desired;
    in.observed = observed;
    in.status_items = items;
    if (fl_interpret_execute(ric, op, &in, &results, &err)) {
        fail_line(err ? err : "failed");
        goto out;
    }
    print_results(results, o->output && !strcmp(o->output, "json"));
    ret = 0;
out:
    free(err);
    json_decref(desired);
    json_decref(observed);
    json_decref(items);
    json_decref(results);
    return ret;
}

int fl_ctl_interpret(int argc, char **argv)
{
    opts o = {0};
    bool help = false;
    int rc = parse(argc, argv, &o, &help);
    if (rc)
        return rc;
    if (help) {
        usage(stdout);
        return 0;
    }
    json_t *ric = NULL;
    char *err = NULL;
    if (read_customization(o.file, &ric, &err)) {
        fail_line(err);
        free(err);
        return 1;
    }
    rc = o.check ? cmd_check(ric) : cmd_run(&o, ric);
    json_decref(ric);
    return rc;
}
