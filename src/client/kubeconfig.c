/* kubeconfig.c - resolve one context of a kubeconfig file (contract in kubeconfig.h).
 *
 * The file is parsed with fl_yaml_parse into JSON and walked by hand: contexts,
 * clusters and users are lists of {name, <kind>: {...}} entries, looked up by name.
 * Every check writes its error as "<origin>: <field path>: <problem>", where the
 * field path spells the entry by name (clusters[name=prod].cluster.server), because
 * the list index means nothing to someone editing the file.
 *
 * Where client-go's validation refuses a combination (both a CA file and CA data,
 * a CA together with insecure-skip-tls-verify, a certificate without its key) we
 * refuse it too, with the same meaning, rather than pick one silently.
 *
 * The writer at the end produces the small kubeconfig the server, the simulated members
 * and the agent hand out (one cluster, one user, one context, all inline), so that
 * reading and writing the format sit in one file. */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <jansson.h>
#include <openssl/crypto.h>

#include "client/kubeconfig.h"
#include "core/base64.h"
#include "core/err.h"
#include "core/file.h"
#include "core/log.h"
#include "core/mem.h"
#include "core/yaml.h"

#define KC_MAX_FILE (16u << 20) /* no credential or kubeconfig is anywhere near this */

/* Parsing state: where errors go and how relative paths resolve. */
typedef struct kc_ctx {
    const char *origin;
    char *dir;      /* directory of origin, for relative file references ("" = cwd) */
    char **err;
} kc_ctx;

static int fail(kc_ctx *k, int rc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(kc_ctx *k, int rc, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fl_err_vset(k->err, k->origin, fmt, ap);
    va_end(ap);
    return rc;
}



/* The entry named `name` in the list `list` of the document ({name, <what>: {...}}).
 * Returns its <what> object, or NULL with an error written. */
static int find_entry(kc_ctx *k, json_t *doc, const char *list, const char *what, const char *name, json_t **out)
{
    *out = NULL;
    json_t *arr = json_object_get(doc, list);
    if (arr && !json_is_array(arr) && !json_is_null(arr))
        return fail(k, FL_EINVAL, "%s: must be a list", list);
    size_t i;
    json_t *e;
    json_array_foreach(arr, i, e) {
        json_t *n = json_object_get(e, "name");
        if (!json_is_string(n) || strcmp(json_string_value(n), name) != 0)
            continue;
        json_t *body = json_object_get(e, what);
        if (!body || json_is_null(body)) {
            *out = json_object(); /* an entry with no body is an empty one */
            json_object_set_new(e, what, *out);
            return 0;
        }
        if (!json_is_object(body))
            return fail(k, FL_EINVAL, "%s[name=%s].%s: must be a mapping", list, name, what);
        *out = body;
        return 0;
    }
    return fail(k, FL_ENOTFOUND, "%s[name=%s]: not found", list, name);
}

/* Optional string field: *out = heap copy, or NULL when absent/empty. */
static int get_str(kc_ctx *k, json_t *obj, const char *field, const char *where, char **out)
{
    *out = NULL;
    json_t *v = json_object_get(obj, field);
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_string(v))
        return fail(k, FL_EINVAL, "%s.%s: must be a string", where, field);
    if (json_string_length(v) > 0)
        *out = fl_strdup(json_string_value(v));
    return 0;
}

static char *resolve_path(kc_ctx *k, const char *p)
{
    if (p[0] == '/' || !k->dir[0])
        return fl_strdup(p);
    return fl_asprintf("%s/%s", k->dir, p);
}

/* A file a field names, read whole. */
static int get_file(kc_ctx *k, const char *where, const char *field, const char *file, char **out)
{
    char *full = resolve_path(k, file);
    int rc = fl_read_file(full, KC_MAX_FILE, out, NULL);
    if (rc)
        fail(k, rc, "%s.%s: cannot read %s: %s", where, field, full, strerror(errno));
    free(full);
    return rc;
}

static bool looks_pem(const char *s)
{
    return strstr(s, "-----BEGIN ") != NULL;
}

/* One PEM value given either inline as base64 (<field>-data) or as a file (<field>). */
static int get_pem(kc_ctx *k, json_t *obj, const char *where, const char *data_field, const char *file_field,
                   char **out)
{
    *out = NULL;
    char *data = NULL, *file = NULL;
    int rc = get_str(k, obj, data_field, where, &data);
    if (!rc)
        rc = get_str(k, obj, file_field, where, &file);
    if (rc)
        goto out;
    if (data && file) {
        rc = fail(k, FL_EINVAL, "%s: both %s and %s are set; use one", where, data_field, file_field);
        goto out;
    }
    if (data) {
        *out = fl_base64_decode(data, NULL);
        if (!*out) {
            rc = fail(k, FL_EINVAL, "%s.%s: not valid base64", where, data_field);
            goto out;
        }
        if (!looks_pem(*out)) {
            rc = fail(k, FL_EINVAL, "%s.%s: does not hold a PEM block", where, data_field);
            goto out;
        }
    } else if (file) {
        rc = get_file(k, where, file_field, file, out);
        if (!rc && !looks_pem(*out))
            rc = fail(k, FL_EINVAL, "%s.%s: %s does not hold a PEM block", where, file_field, file);
    }
out:
    if (rc) {
        free(*out);
        *out = NULL;
    }
    free(data);
    free(file);
    return rc;
}

static int load_cluster(kc_ctx *k, json_t *doc, const char *name, fl_kubeconfig *kc)
{
    json_t *cl;
    int rc = find_entry(k, doc, "clusters", "cluster", name, &cl);
    if (rc)
        return rc;
    char *where = fl_asprintf("clusters[name=%s].cluster", name);
    char *server = NULL;
    rc = get_str(k, cl, "server", where, &server);
    if (rc)
        goto out;
    if (!server) {
        rc = fail(k, FL_EINVAL, "%s.server: required (the API server's URL)", where);
        goto out;
    }
    if (strncmp(server, "https://", 8) != 0 && strncmp(server, "http://", 7) != 0) {
        if (strstr(server, "://")) {
            rc = fail(k, FL_EINVAL, "%s.server: scheme of %s must be http or https", where, server);
            goto out;
        }
        char *s = fl_asprintf("https://%s", server); /* kubectl's default for host:port */
        free(server);
        server = s;
    }
    size_t n = strlen(server);
    while (n > 0 && server[n - 1] == '/')
        server[--n] = 0;
    kc->server = server;
    server = NULL;

    json_t *ins = json_object_get(cl, "insecure-skip-tls-verify");
    if (ins && !json_is_null(ins)) {
        if (!json_is_boolean(ins)) {
            rc = fail(k, FL_EINVAL, "%s.insecure-skip-tls-verify: must be true or false", where);
            goto out;
        }
        kc->insecure = json_is_true(ins);
    }
    rc = get_pem(k, cl, where, "certificate-authority-data", "certificate-authority", &kc->ca_pem);
    if (rc)
        goto out;
    if (kc->ca_pem && kc->insecure) {
        rc = fail(k, FL_EINVAL, "%s: a certificate authority and insecure-skip-tls-verify cannot both be set", where);
        goto out;
    }
    rc = get_str(k, cl, "tls-server-name", where, &kc->tls_server_name);
out:
    free(server);
    free(where);
    return rc;
}

static int load_user(kc_ctx *k, json_t *doc, const char *name, fl_kubeconfig *kc)
{
    json_t *u;
    int rc = find_entry(k, doc, "users", "user", name, &u);
    if (rc)
        return rc;
    char *where = fl_asprintf("users[name=%s].user", name);
    char *token_file = NULL;
    if (json_object_get(u, "exec") && !json_is_null(json_object_get(u, "exec"))) {
        rc = fail(k, FL_EUNSUPPORTED, "%s.exec: credential plugins are not supported; use a token or a client certificate",
                  where);
        goto out;
    }
    if (json_object_get(u, "auth-provider") && !json_is_null(json_object_get(u, "auth-provider"))) {
        rc = fail(k, FL_EUNSUPPORTED, "%s.auth-provider: auth providers are not supported; use a token or a client certificate",
                  where);
        goto out;
    }
    if ((rc = get_str(k, u, "token", where, &kc->token)) || (rc = get_str(k, u, "tokenFile", where, &token_file)))
        goto out;
    if (!kc->token && token_file) { /* kubectl: an inline token wins over tokenFile */
        rc = get_file(k, where, "tokenFile", token_file, &kc->token);
        if (rc)
            goto out;
        size_t n = strlen(kc->token);
        while (n > 0 && (kc->token[n - 1] == '\n' || kc->token[n - 1] == '\r' || kc->token[n - 1] == ' '))
            kc->token[--n] = 0;
        if (!n) {
            rc = fail(k, FL_EINVAL, "%s.tokenFile: %s is empty", where, token_file);
            goto out;
        }
    }
    if ((rc = get_pem(k, u, where, "client-certificate-data", "client-certificate", &kc->client_cert_pem)) ||
        (rc = get_pem(k, u, where, "client-key-data", "client-key", &kc->client_key_pem)))
        goto out;
    if (!!kc->client_cert_pem != !!kc->client_key_pem) {
        rc = fail(k, FL_EINVAL, "%s: %s is set without %s", where,
                  kc->client_cert_pem ? "client-certificate-data" : "client-key-data",
                  kc->client_cert_pem ? "client-key-data" : "client-certificate-data");
        goto out;
    }
    if ((rc = get_str(k, u, "username", where, &kc->username)) || (rc = get_str(k, u, "password", where, &kc->password)))
        goto out;
    if (kc->username && kc->token) {
        rc = fail(k, FL_EINVAL, "%s: username/password and a token cannot both be set", where);
        goto out;
    }
out:
    free(token_file);
    free(where);
    return rc;
}

static int parse_doc(kc_ctx *k, json_t *doc, const char *context, fl_kubeconfig *kc)
{
    if (!json_is_object(doc))
        return fail(k, FL_EINVAL, "not a kubeconfig (the document is not a mapping)");
    json_t *kind = json_object_get(doc, "kind");
    if (kind && json_is_string(kind) && strcmp(json_string_value(kind), "Config") != 0)
        return fail(k, FL_EINVAL, "kind: %s is not Config", json_string_value(kind));

    const char *ctx_name = context && *context ? context : NULL;
    if (!ctx_name) {
        json_t *cur = json_object_get(doc, "current-context");
        if (cur && !json_is_null(cur) && !json_is_string(cur))
            return fail(k, FL_EINVAL, "current-context: must be a string");
        if (!json_is_string(cur) || !json_string_length(cur))
            return fail(k, FL_EINVAL, "current-context: not set, and no context was named");
        ctx_name = json_string_value(cur);
    }
    json_t *cx;
    int rc = find_entry(k, doc, "contexts", "context", ctx_name, &cx);
    if (rc)
        return rc;
    kc->context = fl_strdup(ctx_name);
    char *where = fl_asprintf("contexts[name=%s].context", ctx_name);
    if ((rc = get_str(k, cx, "cluster", where, &kc->cluster)) || (rc = get_str(k, cx, "user", where, &kc->user)) ||
        (rc = get_str(k, cx, "namespace", where, &kc->namespace)))
        goto out;
    if (!kc->cluster) {
        rc = fail(k, FL_EINVAL, "%s.cluster: required", where);
        goto out;
    }
    if (!kc->namespace)
        kc->namespace = fl_strdup("default");
    if ((rc = load_cluster(k, doc, kc->cluster, kc)))
        goto out;
    if (kc->user)
        rc = load_user(k, doc, kc->user, kc);
out:
    free(where);
    return rc;
}

int fl_kubeconfig_parse(const char *buf, size_t len, const char *origin, const char *context, fl_kubeconfig *out,
                        char **err)
{
    memset(out, 0, sizeof *out);
    if (err)
        *err = NULL;
    if (!origin)
        origin = "kubeconfig";
    kc_ctx k = {.origin = origin, .err = err};
    const char *slash = strrchr(origin, '/');
    k.dir = slash ? fl_strndup(origin, (size_t)(slash - origin) + (slash == origin)) : fl_strdup("");

    json_t *doc = NULL;
    char *yerr = NULL;
    int rc = fl_yaml_parse(buf, len, &doc, &yerr);
    if (rc) {
        rc = fail(&k, FL_EINVAL, "%s", yerr ? yerr : "not valid YAML");
        free(yerr);
        goto out;
    }
    out->origin = fl_strdup(origin);
    rc = parse_doc(&k, doc, context, out);
out:
    json_decref(doc);
    free(k.dir);
    if (rc)
        fl_kubeconfig_close(out);
    return rc;
}

int fl_kubeconfig_load(const char *path, const char *context, fl_kubeconfig *out, char **err)
{
    memset(out, 0, sizeof *out);
    if (err)
        *err = NULL;
    char *chosen = NULL;
    if (path && *path) {
        chosen = fl_strdup(path);
    } else {
        /* kubectl merges every file in $KUBECONFIG; we take the first, which is
         * where kubectl writes and where our own tools put a single cluster */
        const char *env = getenv("KUBECONFIG");
        if (env && *env) {
            const char *colon = strchr(env, ':');
            chosen = colon ? fl_strndup(env, (size_t)(colon - env)) : fl_strdup(env);
        }
        if (!chosen || !*chosen) {
            free(chosen);
            const char *home = getenv("HOME");
            if (!home || !*home) {
                if (err)
                    *err = fl_strdup("no kubeconfig: neither KUBECONFIG nor HOME is set");
                return FL_ENOTFOUND;
            }
            chosen = fl_asprintf("%s/.kube/config", home);
        }
    }
    char *buf = NULL;
    size_t len = 0;
    int rc = fl_read_file(chosen, KC_MAX_FILE, &buf, &len);
    if (rc) {
        if (err)
            *err = fl_asprintf("%s: cannot read: %s", chosen, strerror(errno));
    } else {
        rc = fl_kubeconfig_parse(buf, len, chosen, context, out, err);
    }
    free(buf);
    free(chosen);
    return rc;
}

void fl_kubeconfig_init(fl_kubeconfig *out, const char *server, const char *token)
{
    memset(out, 0, sizeof *out);
    out->origin = fl_strdup("(in memory)");
    out->namespace = fl_strdup("default");
    out->server = fl_strdup(server);
    size_t n = strlen(out->server);
    while (n > 0 && out->server[n - 1] == '/')
        out->server[--n] = 0;
    if (token && *token)
        out->token = fl_strdup(token);
}

/* Zero secrets before freeing them: a kubeconfig is a credential. */
static void free_secret(char *s)
{
    if (s) {
        explicit_bzero(s, strlen(s));
        free(s);
    }
}

void fl_kubeconfig_close(fl_kubeconfig *kc)
{
    if (!kc)
        return;
    free(kc->origin);
    free(kc->context);
    free(kc->cluster);
    free(kc->user);
    free(kc->namespace);
    free(kc->server);
    free(kc->ca_pem);
    free(kc->tls_server_name);
    free_secret(kc->token);
    free(kc->client_cert_pem);
    free_secret(kc->client_key_pem);
    free(kc->username);
    free_secret(kc->password);
    memset(kc, 0, sizeof *kc);
}

/* ---------- writing ---------- */

/* Write s to f as a YAML double-quoted scalar. */
static void yaml_quoted(FILE *f, const char *s)
{
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\')
            fprintf(f, "\\%c", *p);
        else if (*p < 0x20 || *p == 0x7f)
            fprintf(f, "\\x%02x", *p);
        else
            fputc(*p, f);
    }
    fputc('"', f);
}

/* Write s plain when it is a simple name ("admin", "system:bootstrap"), else quoted. */
static void yaml_name(FILE *f, const char *s)
{
    bool plain = isalnum((unsigned char)s[0]);
    for (const char *p = s; *p && plain; p++)
        plain = isalnum((unsigned char)*p) || strchr("._:-", *p);
    if (plain)
        fputs(s, f);
    else
        yaml_quoted(f, s);
}

int fl_kubeconfig_write(const char *path, const char *server_url, const char *ca_pem, const char *token)
{
    return fl_kubeconfig_write_user(path, server_url, ca_pem, "admin", token);
}

/* "name: <b64>" of pem on one line of standard base64, as kubectl itself writes *-data fields. */
static void pem_field(FILE *f, const char *name, const char *pem)
{
    char *b64 = fl_base64_encode(pem, strlen(pem));
    fprintf(f, "    %s: %s\n", name, b64);
    OPENSSL_cleanse(b64, strlen(b64));
    free(b64);
}

/* One user entry of k's credentials. */
static void user_entry(FILE *f, const fl_kubeconfig_spec *k)
{
    fputs("- name: ", f);
    yaml_name(f, k->user);
    fputs("\n  user:", f);
    if (k->token) {
        fputs("\n    token: ", f);
        yaml_quoted(f, k->token);
        fputc('\n', f);
    } else if (k->cert_pem && k->key_pem) {
        fputc('\n', f);
        pem_field(f, "client-certificate-data", k->cert_pem);
        pem_field(f, "client-key-data", k->key_pem);
    } else {
        fputs(" {}\n", f);
    }
}

char *fl_kubeconfig_format_many(const fl_kubeconfig_spec *ks, size_t nk, size_t *len)
{
    char *buf = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&buf, &n);
    if (!f)
        return NULL;
#define NAME_OR(x) ((x) ? (x) : "flotilla")
    fputs("apiVersion: v1\nkind: Config\nclusters:\n", f);
    for (size_t i = 0; i < nk; i++) {
        fputs("- name: ", f);
        yaml_name(f, NAME_OR(ks[i].cluster));
        fputs("\n  cluster:\n    server: ", f);
        yaml_quoted(f, ks[i].server ? ks[i].server : "");
        fputc('\n', f);
        if (ks[i].ca_pem)
            pem_field(f, "certificate-authority-data", ks[i].ca_pem);
    }
    fputs("users:\n", f);
    for (size_t i = 0; i < nk; i++) {
        size_t seen = 0; /* a user shared by several contexts is written once */
        while (seen < i && strcmp(ks[seen].user, ks[i].user))
            seen++;
        if (seen == i)
            user_entry(f, &ks[i]);
    }
    fputs("contexts:\n", f);
    for (size_t i = 0; i < nk; i++) {
        fputs("- name: ", f);
        yaml_name(f, NAME_OR(ks[i].context));
        fputs("\n  context:\n    cluster: ", f);
        yaml_name(f, NAME_OR(ks[i].cluster));
        fputs("\n    user: ", f);
        yaml_name(f, ks[i].user);
        if (ks[i].namespace) {
            fputs("\n    namespace: ", f);
            yaml_name(f, ks[i].namespace);
        }
        fputc('\n', f);
    }
    fputs("current-context: ", f);
    yaml_name(f, nk ? NAME_OR(ks[0].context) : "flotilla");
    fputs("\npreferences: {}\n", f);
#undef NAME_OR
    if (fclose(f) != 0) {
        free(buf);
        return NULL;
    }
    if (len)
        *len = n;
    return buf;
}

char *fl_kubeconfig_format(const fl_kubeconfig_spec *k, size_t *len)
{
    return fl_kubeconfig_format_many(k, 1, len);
}

int fl_kubeconfig_write_user(const char *path, const char *server_url, const char *ca_pem, const char *user,
                             const char *token)
{
    size_t len = 0;
    char *buf = fl_kubeconfig_format(
        &(fl_kubeconfig_spec){.server = server_url, .ca_pem = ca_pem, .user = user, .token = token}, &len);
    if (!buf)
        return FL_EIO;
    int rc = fl_write_file_atomic(path, buf, len, 0600);
    if (rc)
        fl_log(FL_LOG_ERROR, "pki", "cannot write kubeconfig %s: %s", path, strerror(errno));
    OPENSSL_cleanse(buf, len);
    free(buf);
    return rc ? FL_EIO : 0;
}
