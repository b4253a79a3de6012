/* webhook.c - the interpreter backend made of ResourceInterpreterWebhookConfigurations:
 * checking them, answering has() from their rules, and running each operation as one
 * HTTPS POST of a ResourceInterpreterContext (contract in webhook.h).
 *
 * The set of configurations is an immutable `ruleset`, built the way lua_backend.c builds
 * its own: the configurations sorted by name, every webhook of every configuration sorted
 * by "<configuration>/<webhook>" (the order Karmada picks the first matching hook in), and
 * a quick-reject index: the operations any rule names, the operations some rule claims for
 * every kind ("*"), and a hash from each kind a rule names to the operations claimed for
 * it. has() and the operations read the current ruleset under the registry's read lock;
 * set and delete build a new one outside any lock and swap the pointer under
 * fl_interp_edit(). Configurations are shared by consecutive rulesets and counted.
 *
 * Connections: a `pool` of idle curl easy handles per endpoint (url origin + caBundle).
 * An easy handle keeps its connections open between transfers, so a call that takes a
 * handle from the pool reuses the TCP connection and the TLS session of the previous call
 * to that endpoint; concurrent calls each take their own handle (curl does not support a
 * connection cache shared by threads), and a burst leaves up to max_idle handles behind.
 * TLS sessions and DNS answers are shared by all handles through one curl share, so a
 * second connection to the same server resumes its session. Pools live in a table of the
 * backend and are counted by the webhooks that use them: a configuration that is re-applied
 * with the same endpoints keeps its warm connections.
 *
 * What a call sends and how its answer is checked and read (the ResourceInterpreterContext)
 * is webhook_review.c; the two share the parsed webhook through webhook_priv.h. */
#include "interp/webhook_priv.h"

#include <curl/curl.h>
#include <openssl/bio.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/base64.h"
#include "core/err.h"
#include "core/json.h"
#include "core/mem.h"
#include "core/random.h"
#include "interp/requirements.h"
#include "interp/rules.h"

#define NOPS FL_INTERP_OP_COUNT
#define ALL_OPS ((1u << NOPS) - 1)

/* ---- connection pools ---- */

struct pool {
    struct pool *next;    /* in the backend's table (pools_mu) */
    char *key;            /* url origin + "\n" + CA PEM: handles are interchangeable within */
    unsigned refs;        /* webhooks using it (pools_mu) */
    pthread_mutex_t mu;   /* guards idle/n */
    CURL **idle;
    size_t n;
};

/* ---- parsed configurations ---- */

/* A configuration's webhooks and their rules: struct hook and struct rule, webhook_priv.h. */
struct config {
    /* name first: the set is kept with fl_interp_named_put/drop */
    char *name;
    struct hook **hooks;
    size_t n;
    unsigned refs; /* rulesets holding it (writer mutex) */
};

struct kindbits {
    const char *kind; /* borrowed from a rule */
    unsigned ops;
};

struct ruleset {
    struct config **v; /* sorted by name */
    size_t n;
    struct hook **hooks; /* every webhook, sorted by uid */
    size_t nhooks;
    unsigned ops;          /* operations some rule claims */
    unsigned any_kind_ops; /* operations some rule claims for kinds ["*"] */
    struct kindbits *tab;  /* kind -> operations, open addressing, cap a power of two */
    size_t cap;
};

struct fl_webhook_backend {
    fl_webhook_options opt;
    char *user_agent;
    char *noproxy;
    CURLSH *share;
    pthread_mutex_t share_mu[CURL_LOCK_DATA_LAST];
    pthread_mutex_t pools_mu;
    struct pool *pools;
    fl_interp_rules rules; /* the configurations; rules.cur is a struct ruleset */
};

/* ---- small helpers ---- */

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;

static void curl_start(void)
{
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
        fprintf(stderr, "flotilla: curl_global_init failed\n");
        abort();
    }
}

static void free_strv(char **v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(v[i]);
    free(v);
}

/* ---- checking a configuration ---- */

/* A field path under construction plus the first error, for the parser. */
struct parse {
    const char *config; /* metadata.name once known */
    char *err;
};

static int perr(struct parse *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int perr(struct parse *p, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *m = fl_vasprintf(fmt, ap);
    va_end(ap);
    if (p->config)
        p->err = fl_asprintf(KIND " \"%s\": %s", p->config, m);
    else
        p->err = fl_asprintf(KIND ": %s", m);
    free(m);
    return FL_EINVAL;
}

/* A DNS-1123 label of at most 63 bytes: [a-z0-9]([-a-z0-9]*[a-z0-9])? (n bytes of s). */
static bool dns1123_label(const char *s, size_t n)
{
    if (n == 0 || n > 63 || s[0] == '-' || s[n - 1] == '-')
        return false;
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '-'))
            return false;
    return true;
}

/* A DNS-1123 subdomain: dot-separated labels, at most 253 bytes. Counts labels. */
static bool dns1123_subdomain(const char *s, size_t n, size_t *labels)
{
    *labels = 0;
    if (n == 0 || n > 253)
        return false;
    for (size_t i = 0; i <= n;) {
        const char *dot = memchr(s + i, '.', n - i);
        size_t len = dot ? (size_t)(dot - (s + i)) : n - i;
        if (!dns1123_label(s + i, len))
            return false;
        ++*labels;
        i += len + 1;
        if (!dot)
            break;
    }
    return true;
}

/* Kubernetes' IsFullyQualifiedDomainName, which Karmada requires of webhook names. */
static const char *fqdn_problem(const char *name)
{
    size_t n = strlen(name), labels;
    if (n && name[n - 1] == '.')
        n--;
    if (!dns1123_subdomain(name, n, &labels))
        return "must be a lowercase RFC 1123 subdomain (lowercase letters, digits, '-' and '.')";
    if (labels < 2)
        return "should be a domain with at least two segments separated by dots";
    return NULL;
}

/* A DNS-1035 label: [a-z]([-a-z0-9]*[a-z0-9])?, at most 63 bytes. */
static bool dns1035_label(const char *s)
{
    return s[0] >= 'a' && s[0] <= 'z' && dns1123_label(s, strlen(s));
}

/* Check url as Kubernetes' ValidateWebhookURL with https forced; on success *origin is
 * "https://host[:port]" (heap). Returns NULL or the problem. */
#define URL_FORM "; desired format: https://host[:port][/path]"
static const char *url_problem(const char *url, char **origin)
{
    *origin = NULL;
    for (const char *c = url; *c; c++)
        if ((unsigned char)*c <= 0x20 || *c == 0x7f)
            return "url must be a valid URL: it contains a space or a control character" URL_FORM;
    const char *sep = strstr(url, "://");
    if (!sep || sep - url != 5 || strncasecmp(url, "https", 5))
        return "'https' is the only allowed URL scheme" URL_FORM;
    const char *host = sep + 3;
    size_t alen = strcspn(host, "/?#");
    if (memchr(host, '@', alen))
        return "user information is not permitted in the URL";
    const char *end = host + alen, *colon = NULL;
    if (alen && host[0] == '[') { /* an IPv6 literal */
        const char *rb = memchr(host, ']', alen);
        if (!rb)
            return "url must be a valid URL: unterminated IPv6 address" URL_FORM;
        if (rb + 1 < end && rb[1] != ':')
            return "url must be a valid URL: bad port" URL_FORM;
        colon = rb + 1 < end ? rb + 1 : NULL;
    } else {
        colon = memchr(host, ':', alen);
    }
    if ((colon ? (size_t)(colon - host) : alen) == 0)
        return "host must be specified" URL_FORM;
    if (colon) {
        if (colon + 1 == end)
            return "url must be a valid URL: empty port" URL_FORM;
        for (const char *d = colon + 1; d < end; d++)
            if (*d < '0' || *d > '9')
                return "url must be a valid URL: the port must be a number" URL_FORM;
    }
    if (strchr(end, '#'))
        return "fragments are not permitted in the URL";
    if (strchr(end, '?'))
        return "query parameters are not permitted in the URL";
    *origin = fl_asprintf("https://%.*s", (int)alen, host);
    return NULL;
}

/* Kubernetes' ValidateWebhookService path rule. Returns NULL or the problem. */
static const char *service_path_problem(const char *path)
{
    if (!*path || !strcmp(path, "/"))
        return NULL;
    if (path[0] != '/')
        return "must start with a '/'";
    size_t n = strlen(path + 1);
    if (n && path[n] == '/') /* one trailing slash is allowed */
        n--;
    for (size_t i = 0; i <= n;) {
        const char *seg = path + 1 + i;
        const char *slash = memchr(seg, '/', n - i);
        size_t len = slash ? (size_t)(slash - seg) : n - i, labels;
        if (!len)
            return "segments may not be empty";
        if (!dns1123_subdomain(seg, len, &labels))
            return "segments must be lowercase RFC 1123 subdomains";
        i += len + 1;
        if (!slash)
            break;
    }
    return NULL;
}

/* PEM bytes hold at least one certificate OpenSSL can read. */
static bool has_certificate(const char *pem, size_t len)
{
    BIO *bio = BIO_new_mem_buf(pem, (int)len);
    X509 *x = bio ? PEM_read_bio_X509(bio, NULL, NULL, NULL) : NULL;
    bool ok = x != NULL;
    X509_free(x);
    BIO_free(bio);
    return ok;
}

static const char *const op_words =
    "*, InterpretReplica, InterpretComponent, ReviseReplica, Retain, AggregateStatus, InterpretStatus, "
    "InterpretHealth, InterpretDependency";

/* The mask of an operation name, -1 for an unknown name. */
static long op_mask(const char *s)
{
    if (!strcmp(s, "*"))
        return ALL_OPS;
    for (int op = 0; op < NOPS; op++)
        if (!strcmp(s, op_name(op)))
            return 1L << op;
    return -1;
}

/* rule.<key>: a non-empty array of strings; "*" alone means any (*out NULL). Empty strings
 * are allowed only in apiGroups (the core group). */
static int parse_list(struct parse *p, const char *where, const json_t *rule, const char *key, bool empty_ok,
                      char ***out, size_t *nout)
{
    const json_t *a = json_object_get(rule, key);
    *out = NULL;
    *nout = 0;
    if (!json_is_array(a) || !json_array_size(a))
        return perr(p, "%s.%s: Required value: must be a non-empty array of strings", where, key);
    size_t n = json_array_size(a);
    bool star = false;
    for (size_t i = 0; i < n; i++) {
        const char *s = json_string_value(json_array_get(a, i));
        if (!s)
            return perr(p, "%s.%s[%zu]: must be a string", where, key, i);
        if (!*s && !empty_ok)
            return perr(p, "%s.%s[%zu]: Required value", where, key, i);
        if (!strcmp(s, "*"))
            star = true;
    }
    if (star && n > 1)
        return perr(p, "%s.%s: if '*' is present, must not specify other values", where, key);
    if (star)
        return 0;
    char **v = fl_calloc(n, sizeof *v);
    for (size_t i = 0; i < n; i++)
        v[i] = fl_strdup(json_string_value(json_array_get(a, i)));
    *out = v;
    *nout = n;
    return 0;
}

static int parse_rule(struct parse *p, const char *where, const json_t *r, struct rule *out)
{
    memset(out, 0, sizeof *out);
    if (!json_is_object(r))
        return perr(p, "%s: must be an object", where);
    const json_t *ops = json_object_get(r, "operations");
    if (!json_is_array(ops) || !json_array_size(ops))
        return perr(p, "%s.operations: Required value: must be a non-empty array of operation names", where);
    for (size_t i = 0; i < json_array_size(ops); i++) {
        const char *s = json_string_value(json_array_get(ops, i));
        long m = s ? op_mask(s) : -1;
        if (m < 0)
            return s ? perr(p, "%s.operations[%zu]: Unsupported value: \"%s\": supported values: %s", where, i, s,
                            op_words)
                     : perr(p, "%s.operations[%zu]: must be a string", where, i);
        if (!strcmp(s, "*") && json_array_size(ops) > 1)
            return perr(p, "%s.operations: if '*' is present, must not specify other operations", where);
        out->ops |= (unsigned)m;
    }
    int rc;
    if ((rc = parse_list(p, where, r, "apiGroups", true, &out->groups, &out->ngroups)) ||
        (rc = parse_list(p, where, r, "apiVersions", false, &out->versions, &out->nversions)) ||
        (rc = parse_list(p, where, r, "kinds", false, &out->kinds, &out->nkinds)))
        return rc;
    return 0;
}

static void rule_clear(struct rule *r)
{
    free_strv(r->groups, r->ngroups);
    free_strv(r->versions, r->nversions);
    free_strv(r->kinds, r->nkinds);
}

static void pool_release(fl_webhook_backend *b, struct pool *pl);

static void hook_free(fl_webhook_backend *b, struct hook *h)
{
    if (!h)
        return;
    for (size_t i = 0; i < h->nrules; i++)
        rule_clear(&h->rules[i]);
    free(h->rules);
    if (h->pool)
        pool_release(b, h->pool);
    free(h->name);
    free(h->config);
    free(h->uid);
    free(h->url);
    free(h->service);
    free(h->ca);
    free(h);
}

static void config_free(fl_webhook_backend *b, struct config *c)
{
    if (!c)
        return;
    for (size_t i = 0; i < c->n; i++)
        hook_free(b, c->hooks[i]);
    free(c->hooks);
    free(c->name);
    free(c);
}

/* clientConfig of webhook `where` into h; *origin (heap) the url's origin, for pooling. */
static int parse_client(struct parse *p, const char *where, const json_t *cc, struct hook *h, char **origin)
{
    *origin = NULL;
    if (!json_is_object(cc))
        return perr(p, "%s.clientConfig: Required value: exactly one of url or service is required", where);
    const json_t *url = json_object_get(cc, "url"), *svc = json_object_get(cc, "service");
    if (json_is_null(url))
        url = NULL;
    if (json_is_null(svc))
        svc = NULL;
    if (!url == !svc)
        return perr(p, "%s.clientConfig: Required value: exactly one of url or service is required", where);
    if (url) {
        if (!json_is_string(url))
            return perr(p, "%s.clientConfig.url: must be a string", where);
        const char *why = url_problem(json_string_value(url), origin);
        if (why)
            return perr(p, "%s.clientConfig.url: %s", where, why);
        h->url = fl_strdup(json_string_value(url));
    } else {
        if (!json_is_object(svc))
            return perr(p, "%s.clientConfig.service: must be an object", where);
        const char *ns = json_string_value(json_object_get(svc, "namespace"));
        const char *name = json_string_value(json_object_get(svc, "name"));
        const json_t *path = json_object_get(svc, "path"), *port = json_object_get(svc, "port");
        if (!name || !*name)
            return perr(p, "%s.clientConfig.service.name: Required value", where);
        if (!ns || !*ns)
            return perr(p, "%s.clientConfig.service.namespace: Required value", where);
        if (path && !json_is_null(path) && !json_is_string(path))
            return perr(p, "%s.clientConfig.service.path: must be a string", where);
        if (json_is_string(path)) {
            const char *why = service_path_problem(json_string_value(path));
            if (why)
                return perr(p, "%s.clientConfig.service.path: %s", where, why);
        }
        json_int_t pn = 443; /* Karmada's default when port is unset */
        if (port && !json_is_null(port)) {
            if (!json_is_integer(port) || json_integer_value(port) < 1 || json_integer_value(port) > 65535)
                return perr(p, "%s.clientConfig.service.port: must be an integer between 1 and 65535", where);
            pn = json_integer_value(port);
        }
        h->service = fl_asprintf("%s/%s:%lld%s", ns, name, (long long)pn,
                                 json_is_string(path) ? json_string_value(path) : "");
    }
    const json_t *ca = json_object_get(cc, "caBundle");
    if (ca && !json_is_null(ca)) {
        if (!json_is_string(ca))
            return perr(p, "%s.clientConfig.caBundle: must be a base64 string", where);
        if (json_string_length(ca)) {
            size_t n;
            char *pem = fl_base64_decode(json_string_value(ca), &n);
            if (!pem)
                return perr(p, "%s.clientConfig.caBundle: not valid base64", where);
            if (!has_certificate(pem, n)) {
                free(pem);
                return perr(p, "%s.clientConfig.caBundle: holds no PEM certificate", where);
            }
            h->ca = pem;
            h->ca_len = n;
        }
    }
    return 0;
}

static struct pool *pool_acquire(fl_webhook_backend *b, const char *origin, const struct hook *h);

/* One entry of webhooks[]. b NULL: parse only (no connection pool). */
static int parse_hook(fl_webhook_backend *b, struct parse *p, size_t idx, const json_t *w, struct hook **out)
{
    char where[64], *origin = NULL;
    int rc;
    snprintf(where, sizeof where, "webhooks[%zu]", idx);
    *out = NULL;
    if (!json_is_object(w))
        return perr(p, "%s: must be an object", where);
    const char *name = json_string_value(json_object_get(w, "name"));
    if (!name || !*name)
        return perr(p, "%s.name: Required value", where);
    const char *why = fqdn_problem(name);
    if (why)
        return perr(p, "%s.name: Invalid value: \"%s\": %s", where, name, why);
    struct hook *h = fl_calloc(1, sizeof *h);
    h->name = fl_strdup(name);
    h->config = fl_strdup(p->config);
    h->uid = fl_asprintf("%s/%s", p->config, name);
    h->timeout_s = FL_WEBHOOK_DEFAULT_TIMEOUT_S;
    if ((rc = parse_client(p, where, json_object_get(w, "clientConfig"), h, &origin)))
        goto fail;
    const json_t *rules = json_object_get(w, "rules");
    if (rules && !json_is_null(rules) && !json_is_array(rules)) {
        rc = perr(p, "%s.rules: must be an array", where);
        goto fail;
    }
    h->rules = fl_calloc(json_array_size(rules) + 1, sizeof *h->rules);
    for (size_t i = 0; i < json_array_size(rules); i++) {
        char rw[96];
        snprintf(rw, sizeof rw, "%s.rules[%zu]", where, i);
        rc = parse_rule(p, rw, json_array_get(rules, i), &h->rules[i]);
        h->nrules = i + 1; /* cleared by hook_free even when half-parsed */
        if (rc)
            goto fail;
    }
    const json_t *to = json_object_get(w, "timeoutSeconds");
    if (to && !json_is_null(to)) {
        if (!json_is_integer(to) || json_integer_value(to) < 1 || json_integer_value(to) > 30) {
            rc = perr(p, "%s.timeoutSeconds: Invalid value: the timeout value must be between 1 and 30 seconds",
                      where);
            goto fail;
        }
        h->timeout_s = (long)json_integer_value(to);
    }
    const json_t *vers = json_object_get(w, "interpreterContextVersions");
    if (!json_is_array(vers) || !json_array_size(vers)) {
        rc = perr(p, "%s.interpreterContextVersions: Required value: must specify one of v1alpha1", where);
        goto fail;
    }
    bool known = false;
    for (size_t i = 0; i < json_array_size(vers); i++) {
        const char *v = json_string_value(json_array_get(vers, i));
        if (!v || !dns1035_label(v)) {
            rc = perr(p, "%s.interpreterContextVersions[%zu]: must be a lowercase RFC 1035 label", where, i);
            goto fail;
        }
        for (size_t j = 0; j < i; j++)
            if (!strcmp(v, json_string_value(json_array_get(vers, j)))) {
                rc = perr(p, "%s.interpreterContextVersions[%zu]: Invalid value: \"%s\": duplicate version", where,
                          i, v);
                goto fail;
            }
        known |= !strcmp(v, "v1alpha1");
    }
    if (!known) {
        rc = perr(p, "%s.interpreterContextVersions: Invalid value: must include at least one of v1alpha1", where);
        goto fail;
    }
    if (b && h->url)
        h->pool = pool_acquire(b, origin, h);
    free(origin);
    *out = h;
    return 0;
fail:
    free(origin);
    hook_free(b, h);
    return rc;
}

static int parse_config(fl_webhook_backend *b, const json_t *cfg, struct config **out, char **err)
{
    struct parse p = {0};
    int rc = 0;
    *out = NULL;
    if (!json_is_object(cfg)) {
        *err = fl_strdup(KIND " must be a JSON object");
        return FL_EINVAL;
    }
    const char *name = json_string_value(json_object_get(json_object_get(cfg, "metadata"), "name"));
    if (!name || !*name) {
        *err = fl_strdup(KIND ": metadata.name: must be a non-empty string");
        return FL_EINVAL;
    }
    p.config = name;
    const json_t *hooks = json_object_get(cfg, "webhooks");
    if (hooks && !json_is_null(hooks) && !json_is_array(hooks)) {
        rc = perr(&p, "webhooks: must be an array");
        *err = p.err;
        return rc;
    }
    struct config *c = fl_calloc(1, sizeof *c);
    c->name = fl_strdup(name);
    c->hooks = fl_calloc(json_array_size(hooks) + 1, sizeof *c->hooks);
    for (size_t i = 0; i < json_array_size(hooks); i++) {
        struct hook *h;
        if ((rc = parse_hook(b, &p, i, json_array_get(hooks, i), &h)))
            break;
        for (size_t j = 0; j < c->n; j++)
            if (!strcmp(c->hooks[j]->name, h->name)) {
                rc = perr(&p, "webhooks[%zu].name: Duplicate value: \"%s\"", i, h->name);
                break;
            }
        c->hooks[c->n++] = h;
        if (rc)
            break;
    }
    if (rc) {
        config_free(b, c);
        *err = p.err;
        return rc;
    }
    *out = c;
    return 0;
}

int fl_webhook_config_check(const json_t *config, char **err)
{
    struct config *c;
    char *e = NULL;
    int rc = parse_config(NULL, config, &c, &e);
    config_free(NULL, c);
    if (err)
        *err = e;
    else
        free(e);
    return rc;
}

/* ---- pools ---- */

static struct pool *pool_acquire(fl_webhook_backend *b, const char *origin, const struct hook *h)
{
    size_t olen = strlen(origin);
    char *key = fl_malloc(olen + 1 + h->ca_len + 1);
    memcpy(key, origin, olen);
    key[olen] = '\n';
    if (h->ca_len)
        memcpy(key + olen + 1, h->ca, h->ca_len);
    key[olen + 1 + h->ca_len] = '\0';
    pthread_mutex_lock(&b->pools_mu);
    struct pool *pl = b->pools;
    for (; pl; pl = pl->next)
        if (!strcmp(pl->key, key))
            break;
    if (pl) {
        free(key);
    } else {
        pl = fl_calloc(1, sizeof *pl);
        pl->key = key;
        pl->idle = fl_calloc(b->opt.max_idle, sizeof *pl->idle);
        pthread_mutex_init(&pl->mu, NULL);
        pl->next = b->pools;
        b->pools = pl;
    }
    pl->refs++;
    pthread_mutex_unlock(&b->pools_mu);
    return pl;
}

static void pool_destroy(struct pool *pl)
{
    for (size_t i = 0; i < pl->n; i++)
        curl_easy_cleanup(pl->idle[i]);
    pthread_mutex_destroy(&pl->mu);
    free(pl->idle);
    free(pl->key);
    free(pl);
}

/* Drop a webhook's hold on pl; the last one closes its connections. No call can be using
 * pl then: webhooks are freed only once no ruleset that holds them is visible. */
static void pool_release(fl_webhook_backend *b, struct pool *pl)
{
    pthread_mutex_lock(&b->pools_mu);
    bool last = --pl->refs == 0;
    if (last)
        for (struct pool **pp = &b->pools; *pp; pp = &(*pp)->next)
            if (*pp == pl) {
                *pp = pl->next;
                break;
            }
    pthread_mutex_unlock(&b->pools_mu);
    if (last)
        pool_destroy(pl);
}

static CURL *pool_take(struct pool *pl)
{
    CURL *h = NULL;
    pthread_mutex_lock(&pl->mu);
    if (pl->n)
        h = pl->idle[--pl->n];
    pthread_mutex_unlock(&pl->mu);
    if (!h && !(h = curl_easy_init())) {
        fprintf(stderr, "flotilla: curl_easy_init failed\n");
        abort();
    }
    return h;
}

/* Return h with its open connection, or close it when the pool is full. */
static void pool_give(fl_webhook_backend *b, struct pool *pl, CURL *h)
{
    pthread_mutex_lock(&pl->mu);
    if (pl->n < b->opt.max_idle) {
        pl->idle[pl->n++] = h;
        h = NULL;
    }
    pthread_mutex_unlock(&pl->mu);
    if (h)
        curl_easy_cleanup(h);
}

/* ---- rulesets ---- */

static uint64_t kind_hash(const char *s)
{
    uint64_t h = 1469598103934665603ULL;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ULL;
    return h;
}

static struct kindbits *kind_find(const struct ruleset *rs, const char *kind, bool add)
{
    if (!rs->cap)
        return NULL;
    for (size_t i = kind_hash(kind) & (rs->cap - 1);; i = (i + 1) & (rs->cap - 1)) {
        struct kindbits *t = &rs->tab[i];
        if (!t->kind) {
            if (!add)
                return NULL;
            t->kind = kind;
            return t;
        }
        if (!strcmp(t->kind, kind))
            return t;
    }
}

static int cmp_hook(const void *a, const void *b)
{
    return strcmp((*(struct hook *const *)a)->uid, (*(struct hook *const *)b)->uid);
}

static struct ruleset *ruleset_build(struct config **v, size_t n)
{
    struct ruleset *rs = fl_calloc(1, sizeof *rs);
    size_t nkinds = 0;
    rs->v = v;
    rs->n = n;
    for (size_t i = 0; i < n; i++) {
        v[i]->refs++;
        rs->nhooks += v[i]->n;
        for (size_t j = 0; j < v[i]->n; j++)
            for (size_t k = 0; k < v[i]->hooks[j]->nrules; k++)
                nkinds += v[i]->hooks[j]->rules[k].nkinds;
    }
    rs->hooks = fl_calloc(rs->nhooks + 1, sizeof *rs->hooks);
    for (size_t i = 0, m = 0; i < n; i++)
        for (size_t j = 0; j < v[i]->n; j++)
            rs->hooks[m++] = v[i]->hooks[j];
    qsort(rs->hooks, rs->nhooks, sizeof *rs->hooks, cmp_hook);
    if (nkinds)
        for (rs->cap = 8; rs->cap < 2 * nkinds; rs->cap *= 2)
            ;
    rs->tab = rs->cap ? fl_calloc(rs->cap, sizeof *rs->tab) : NULL;
    for (size_t i = 0; i < rs->nhooks; i++) {
        const struct hook *h = rs->hooks[i];
        for (size_t k = 0; k < h->nrules; k++) {
            const struct rule *r = &h->rules[k];
            rs->ops |= r->ops;
            if (!r->kinds)
                rs->any_kind_ops |= r->ops;
            for (size_t x = 0; x < r->nkinds; x++)
                kind_find(rs, r->kinds[x], true)->ops |= r->ops;
        }
    }
    return rs;
}

/* Drop rs and its holds on configurations (writer mutex held). */
static void ruleset_free(fl_webhook_backend *b, struct ruleset *rs)
{
    if (!rs)
        return;
    for (size_t i = 0; i < rs->n; i++)
        if (--rs->v[i]->refs == 0)
            config_free(b, rs->v[i]);
    free(rs->hooks);
    free(rs->tab);
    free(rs->v);
    free(rs);
}

static void *rules_build(void *self, void *items, size_t n)
{
    (void)self;
    return ruleset_build(items, n);
}

static void rules_drop(void *self, void *rs)
{
    ruleset_free(self, rs);
}

/* Is s (n bytes) in the list v (NULL: "*")? */
static bool list_has(char *const *v, size_t nv, const char *s, size_t n)
{
    if (!v)
        return true;
    for (size_t i = 0; i < nv; i++)
        if (strlen(v[i]) == n && !memcmp(v[i], s, n))
            return true;
    return false;
}

/* The webhook answering op for (av, kind): the first by uid with a matching rule. */
static const struct hook *first_hook(const struct ruleset *rs, const char *av, const char *kind, enum fl_interp_op op)
{
    unsigned bit = 1u << op;
    if (!(rs->ops & bit))
        return NULL;
    if (!(rs->any_kind_ops & bit)) {
        const struct kindbits *t = kind_find(rs, kind, false);
        if (!t || !(t->ops & bit))
            return NULL;
    }
    const char *slash = strchr(av, '/');
    const char *group = slash ? av : "", *version = slash ? slash + 1 : av;
    size_t glen = slash ? (size_t)(slash - av) : 0, vlen = strlen(version), klen = strlen(kind);
    for (size_t i = 0; i < rs->nhooks; i++) {
        const struct hook *h = rs->hooks[i];
        for (size_t k = 0; k < h->nrules; k++) {
            const struct rule *r = &h->rules[k];
            if ((r->ops & bit) && list_has(r->kinds, r->nkinds, kind, klen) &&
                list_has(r->groups, r->ngroups, group, glen) && list_has(r->versions, r->nversions, version, vlen))
                return h;
        }
    }
    return NULL;
}

/* ---- the backend ---- */

static void share_lock(CURL *h, curl_lock_data d, curl_lock_access a, void *u)
{
    fl_webhook_backend *b = u;
    pthread_mutex_lock(&b->share_mu[(unsigned)d % CURL_LOCK_DATA_LAST]);
}

static void share_unlock(CURL *h, curl_lock_data d, void *u)
{
    fl_webhook_backend *b = u;
    pthread_mutex_unlock(&b->share_mu[(unsigned)d % CURL_LOCK_DATA_LAST]);
}

fl_webhook_backend *fl_webhook_backend_new(const fl_webhook_options *opts)
{
    pthread_once(&curl_once, curl_start);
    fl_webhook_backend *b = fl_calloc(1, sizeof *b);
    if (opts)
        b->opt = *opts;
    if (!b->opt.max_idle)
        b->opt.max_idle = FL_WEBHOOK_DEFAULT_MAX_IDLE;
    if (!b->opt.max_response)
        b->opt.max_response = FL_WEBHOOK_DEFAULT_MAX_RESPONSE;
    b->user_agent = fl_strdup(opts && opts->user_agent ? opts->user_agent : "flotilla-interpreter");
    b->opt.user_agent = b->user_agent;
    /* as Go's ProxyFromEnvironment, never send loopback traffic through a proxy */
    const char *np = getenv("NO_PROXY");
    if (!np || !*np)
        np = getenv("no_proxy");
    b->noproxy = np && *np ? fl_asprintf("%s,localhost,127.0.0.1,::1", np) : fl_strdup("localhost,127.0.0.1,::1");
    for (int i = 0; i < CURL_LOCK_DATA_LAST; i++)
        pthread_mutex_init(&b->share_mu[i], NULL);
    b->share = curl_share_init();
    if (b->share) {
        curl_share_setopt(b->share, CURLSHOPT_LOCKFUNC, share_lock);
        curl_share_setopt(b->share, CURLSHOPT_UNLOCKFUNC, share_unlock);
        curl_share_setopt(b->share, CURLSHOPT_USERDATA, b);
        curl_share_setopt(b->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_DNS);
        curl_share_setopt(b->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_SSL_SESSION);
    }
    pthread_mutex_init(&b->pools_mu, NULL);
    fl_interp_rules_init(&b->rules, &fl_webhook_backend_vtable, b, (fl_interp_rules_ops){rules_build, rules_drop});
    return b;
}

void fl_webhook_backend_free(fl_webhook_backend *b)
{
    if (!b)
        return;
    fl_interp_rules_close(&b->rules); /* closes every pool: each is held by some webhook */
    if (b->share)
        curl_share_cleanup(b->share);
    for (int i = 0; i < CURL_LOCK_DATA_LAST; i++)
        pthread_mutex_destroy(&b->share_mu[i]);
    pthread_mutex_destroy(&b->pools_mu);
    free(b->user_agent);
    free(b->noproxy);
    free(b);
}

/* The registry entry: the vtable is shared, self tells backends apart. */
void fl_webhook_backend_attach(fl_webhook_backend *b, fl_interp *ip)
{
    fl_interp_rules_attach(&b->rules, ip);
}

void fl_webhook_backend_detach(fl_webhook_backend *b)
{
    fl_interp_rules_detach(&b->rules);
}

int fl_webhook_backend_set(fl_webhook_backend *b, const json_t *config, char **err)
{
    struct config *c;
    char *e = NULL;
    if (err)
        *err = NULL;
    /* parsed outside the writer mutex; its pools are taken (counted) now, so a replaced
     * configuration's endpoints keep their connections through the swap */
    int rc = parse_config(b, config, &c, &e);
    if (rc) {
        if (err)
            *err = e;
        else
            free(e);
        return rc;
    }
    fl_interp_rules_put(&b->rules, c);
    return 0;
}

int fl_webhook_backend_delete(fl_webhook_backend *b, const char *name)
{
    return fl_interp_rules_remove(&b->rules, name);
}

size_t fl_webhook_backend_count(fl_webhook_backend *b)
{
    return fl_interp_rules_count(&b->rules);
}

/* ---- one call ---- */

struct sink {
    char *buf;
    size_t len, cap, max;
    bool too_big;
};

static size_t on_write(char *p, size_t size, size_t n, void *u)
{
    struct sink *s = u;
    size_t add = size * n;
    if (s->len + add > s->max) {
        s->too_big = true;
        return 0; /* ends the transfer with CURLE_WRITE_ERROR */
    }
    if (s->len + add + 1 > s->cap) {
        while (s->len + add + 1 > s->cap)
            s->cap = s->cap ? 2 * s->cap : 4096;
        s->buf = fl_realloc(s->buf, s->cap);
    }
    memcpy(s->buf + s->len, p, add);
    s->len += add;
    s->buf[s->len] = '\0';
    return add;
}

/* POST body to h; *resp the body of a 2xx answer (heap, NUL-terminated). */
static int post(fl_webhook_backend *b, const struct hook *h, enum fl_interp_op op, const char *body, size_t len,
                char **resp, size_t *resp_len, char **err)
{
    struct sink s = {.max = b->opt.max_response};
    char ebuf[CURL_ERROR_SIZE] = "";
    struct curl_slist *hdr = curl_slist_append(NULL, "Content-Type: application/json");
    hdr = curl_slist_append(hdr, "Accept: application/json");
    /* no "Expect: 100-continue" for large bodies: a server that does not answer it would
     * cost every large call curl's one-second wait */
    hdr = curl_slist_append(hdr, "Expect:");
    *resp = NULL;
    *resp_len = 0;
    CURL *e = pool_take(h->pool);
    /* reset keeps the handle's open connections and TLS sessions, not its options */
    curl_easy_reset(e);
    curl_easy_setopt(e, CURLOPT_URL, h->url);
    curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "https");
    curl_easy_setopt(e, CURLOPT_POST, 1L);
    curl_easy_setopt(e, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, hdr);
    curl_easy_setopt(e, CURLOPT_USERAGENT, b->user_agent);
    curl_easy_setopt(e, CURLOPT_NOPROXY, b->noproxy);
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, h->timeout_s * 1000L);
    curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, h->timeout_s * 1000L);
    curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 1L);
    curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 2L);
    if (h->ca) {
        struct curl_blob blob = {.data = h->ca, .len = h->ca_len, .flags = CURL_BLOB_COPY};
        curl_easy_setopt(e, CURLOPT_CAINFO_BLOB, &blob);
    }
    if (b->share)
        curl_easy_setopt(e, CURLOPT_SHARE, b->share);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_write);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, &s);
    curl_easy_setopt(e, CURLOPT_ERRORBUFFER, ebuf);
    CURLcode cc = curl_easy_perform(e);
    long status = 0;
    curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &status);
    /* the handle goes back with its connection only after a clean exchange */
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, NULL);
    curl_easy_setopt(e, CURLOPT_ERRORBUFFER, NULL);
    if (cc == CURLE_OK)
        pool_give(b, h->pool, e);
    else
        curl_easy_cleanup(e);
    curl_slist_free_all(hdr);
    const char *why = ebuf[0] ? ebuf : curl_easy_strerror(cc);
    int rc = 0;
    switch (cc) {
    case CURLE_OK: break;
    case CURLE_OPERATION_TIMEDOUT:
        rc = fl_webhook_call_fail(h, op, FL_ETIMEDOUT, err, "timed out after %ld s", h->timeout_s);
        break;
    case CURLE_WRITE_ERROR:
        if (s.too_big) {
            rc = fl_webhook_call_fail(h, op, FL_ETOOBIG, err, "the answer is larger than %zu bytes", b->opt.max_response);
            break;
        }
        rc = fl_webhook_call_fail(h, op, FL_EIO, err, "%s", why);
        break;
    case CURLE_PEER_FAILED_VERIFICATION:
        rc = fl_webhook_call_fail(h, op, FL_EIO, err, "TLS: the server's certificate is not trusted (%s): %s",
                       h->ca ? "verified against clientConfig.caBundle" : "no caBundle: system trust store", why);
        break;
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_SSL_CERTPROBLEM:
    case CURLE_SSL_CIPHER:
    case CURLE_SSL_CACERT_BADFILE:
    case CURLE_SSL_ISSUER_ERROR:
        rc = fl_webhook_call_fail(h, op, FL_EIO, err, "TLS: %s", why);
        break;
    case CURLE_COULDNT_CONNECT:
        rc = fl_webhook_call_fail(h, op, FL_EIO, err, "cannot connect: %s", why);
        break;
    case CURLE_COULDNT_RESOLVE_HOST:
        rc = fl_webhook_call_fail(h, op, FL_EIO, err, "cannot resolve the host: %s", why);
        break;
    default: rc = fl_webhook_call_fail(h, op, FL_EIO, err, "%s", why); break;
    }
    if (!rc && (status < 200 || status > 299)) {
        char *text = fl_err_one_line(s.buf ? s.buf : "", s.len, 200);
        rc = fl_webhook_call_fail(h, op, FL_EIO, err, "HTTP %ld%s%s", status, *text ? ": " : "", text);
        free(text);
    }
    if (rc) {
        free(s.buf);
        return rc;
    }
    *resp = s.buf ? s.buf : fl_strdup("");
    *resp_len = s.len;
    return 0;
}

/* Run a's operation on h: build, POST, verify. *ctx (caller decrefs) holds *resp. */
static int call_hook(fl_webhook_backend *b, const struct hook *h, const struct args *a, json_t **ctx, json_t **resp,
                     char **err)
{
    char uid[37], *body, *text;
    size_t len, tlen;
    *ctx = NULL;
    *resp = NULL;
    if (!h->url)
        return fl_webhook_call_fail(h, a->op, FL_EINVAL, err,
                         "clientConfig.service (%s): service references cannot be resolved by Flotilla, which has no "
                         "in-cluster DNS; give the webhook's address in clientConfig.url",
                         h->service);
    fl_random_uuid4(uid);
    body = fl_webhook_request_body(a, uid, &len);
    int rc = post(b, h, a->op, body, len, &text, &tlen, err);
    free(body);
    if (rc)
        return rc;
    rc = fl_webhook_verify(h, a->op, uid, text, tlen, ctx, resp, err);
    free(text);
    return rc;
}

/* ---- the vtable ---- */

static const struct hook *answering(void *self, const json_t *obj, enum fl_interp_op op)
{
    fl_webhook_backend *b = self;
    const char *av = json_string_value(json_object_get(obj, "apiVersion"));
    const char *kind = json_string_value(json_object_get(obj, "kind"));
    return av && kind ? first_hook(b->rules.cur, av, kind, op) : NULL;
}

static bool vt_has(void *self, const char *av, const char *kind, enum fl_interp_op op)
{
    fl_webhook_backend *b = self;
    return (unsigned)op < NOPS && first_hook(b->rules.cur, av, kind, op) != NULL;
}

static int vt_get_replicas(void *self, const json_t *obj, int64_t *replicas, json_t **requirements, char **err)
{
    struct args a = {.op = FL_INTERP_REPLICA, .obj = obj};
    const struct hook *h = answering(self, obj, a.op);
    json_t *ctx, *r;
    *replicas = 0;
    *requirements = NULL;
    if (!h)
        return FL_EUNSUPPORTED;
    int rc = call_hook(self, h, &a, &ctx, &r, err);
    if (rc)
        goto out;
    const json_t *n = json_object_get(r, "replicas");
    if (!n || json_is_null(n)) {
        rc = fl_webhook_call_fail(h, a.op, FL_EINVAL, err, "response.replicas: missing");
        goto out;
    }
    if (!json_is_integer(n) || json_integer_value(n) < 0 || json_integer_value(n) > INT32_MAX) {
        rc = fl_webhook_call_fail(h, a.op, FL_EINVAL, err, "response.replicas: must be an integer from 0 to %d", INT32_MAX);
        goto out;
    }
    json_t *req = json_object_get(r, "replicaRequirements");
    if (req && !json_is_null(req)) {
        char *why = NULL;
        if (!json_is_object(req)) {
            rc = fl_webhook_call_fail(h, a.op, FL_EINVAL, err, "response.replicaRequirements: must be an object");
            goto out;
        }
        req = fl_json_deep_copy(req);
        if ((rc = fl_interp_check_requirements(req, &why))) {
            rc = fl_webhook_call_fail(h, a.op, rc, err, "response.replicaRequirements.%s", why);
            free(why);
            json_decref(req);
            goto out;
        }
        if (json_object_size(req)) /* {} states nothing: none */
            *requirements = req;
        else
            json_decref(req);
    }
    *replicas = json_integer_value(n);
out:
    json_decref(ctx);
    return rc;
}

/* The operations answered with a patch of the object sent. */
static int patched(void *self, const struct args *a, json_t **out, char **err)
{
    const struct hook *h = answering(self, a->obj, a->op);
    json_t *ctx, *r;
    *out = NULL;
    if (!h)
        return FL_EUNSUPPORTED;
    int rc = call_hook(self, h, a, &ctx, &r, err);
    if (!rc)
        rc = fl_webhook_apply_response_patch(h, a->op, r, a->obj, out, err);
    json_decref(ctx);
    return rc;
}

static int vt_revise_replica(void *self, const json_t *obj, int64_t replicas, json_t **out, char **err)
{
    struct args a = {.op = FL_INTERP_REVISE_REPLICA, .obj = obj, .replicas = replicas};
    return patched(self, &a, out, err);
}

static int vt_retain(void *self, const json_t *desired, const json_t *observed, json_t **out, char **err)
{
    struct args a = {.op = FL_INTERP_RETAIN, .obj = desired, .observed = observed};
    return patched(self, &a, out, err);
}

static int vt_aggregate_status(void *self, const json_t *obj, const json_t *items, json_t **out, char **err)
{
    struct args a = {.op = FL_INTERP_AGGREGATE_STATUS, .obj = obj, .items = items};
    return patched(self, &a, out, err);
}

static int vt_reflect_status(void *self, const json_t *observed, json_t **status, char **err)
{
    struct args a = {.op = FL_INTERP_REFLECT_STATUS, .obj = observed};
    const struct hook *h = answering(self, observed, a.op);
    json_t *ctx, *r;
    *status = NULL;
    if (!h)
        return FL_EUNSUPPORTED;
    int rc = call_hook(self, h, &a, &ctx, &r, err);
    if (!rc) {
        json_t *st = json_object_get(r, "rawStatus");
        if (!st || json_is_null(st))
            rc = fl_webhook_call_fail(h, a.op, FL_EINVAL, err, "response.rawStatus: missing");
        else if (!json_is_object(st))
            rc = fl_webhook_call_fail(h, a.op, FL_EINVAL, err, "response.rawStatus: must be an object");
        else
            *status = json_incref(st);
    }
    json_decref(ctx);
    return rc;
}

static int vt_health(void *self, const json_t *observed, enum fl_health *health, char **err)
{
    struct args a = {.op = FL_INTERP_HEALTH, .obj = observed};
    const struct hook *h = answering(self, observed, a.op);
    json_t *ctx, *r;
    *health = FL_HEALTH_UNKNOWN;
    if (!h)
        return FL_EUNSUPPORTED;
    int rc = call_hook(self, h, &a, &ctx, &r, err);
    if (!rc) {
        const json_t *v = json_object_get(r, "healthy");
        if (!v || json_is_null(v))
            rc = fl_webhook_call_fail(h, a.op, FL_EINVAL, err, "response.healthy: missing");
        else if (!json_is_boolean(v))
            rc = fl_webhook_call_fail(h, a.op, FL_EINVAL, err, "response.healthy: must be a boolean");
        else
            *health = json_is_true(v) ? FL_HEALTH_HEALTHY : FL_HEALTH_UNHEALTHY;
    }
    json_decref(ctx);
    return rc;
}

static int vt_get_dependencies(void *self, const json_t *obj, json_t **deps, char **err)
{
    struct args a = {.op = FL_INTERP_DEPENDENCY, .obj = obj};
    const struct hook *h = answering(self, obj, a.op);
    json_t *ctx, *r;
    *deps = NULL;
    if (!h)
        return FL_EUNSUPPORTED;
    int rc = call_hook(self, h, &a, &ctx, &r, err);
    if (rc)
        goto out;
    const json_t *v = json_object_get(r, "dependencies");
    if (v && !json_is_null(v) && !json_is_array(v)) {
        rc = fl_webhook_call_fail(h, a.op, FL_EINVAL, err, "response.dependencies: must be an array");
        goto out;
    }
    for (size_t i = 0; i < json_array_size(v); i++) {
        char *why = NULL;
        if ((rc = fl_webhook_check_dependency(json_array_get(v, i), i, &why))) {
            rc = fl_webhook_call_fail(h, a.op, rc, err, "response.%s", why);
            free(why);
            goto out;
        }
    }
    *deps = fl_interp_deps_sorted(v);
out:
    json_decref(ctx);
    return rc;
}

/* InterpretComponent: response.components, Karmada's []Component, checked and canonical. */
static int vt_get_components(void *self, const json_t *obj, json_t **components, char **err)
{
    struct args a = {.op = FL_INTERP_COMPONENT, .obj = obj};
    const struct hook *h = answering(self, obj, a.op);
    json_t *ctx, *r;
    *components = NULL;
    if (!h)
        return FL_EUNSUPPORTED;
    int rc = call_hook(self, h, &a, &ctx, &r, err);
    if (rc)
        goto out;
    const json_t *v = json_object_get(r, "components");
    if (v && !json_is_null(v) && !json_is_array(v)) {
        rc = fl_webhook_call_fail(h, a.op, FL_EINVAL, err, "response.components: must be an array");
        goto out;
    }
    json_t *comps = v && !json_is_null(v) ? fl_json_deep_copy(v) : json_array();
    char *why = NULL;
    if ((rc = fl_interp_check_components(comps, &why))) {
        rc = fl_webhook_call_fail(h, a.op, rc, err, "response.components%s", why);
        free(why);
        json_decref(comps);
        goto out;
    }
    *components = comps;
out:
    json_decref(ctx);
    return rc;
}

const fl_interp_backend fl_webhook_backend_vtable = {
    .name = "webhook",
    .has = vt_has,
    .get_replicas = vt_get_replicas,
    .revise_replica = vt_revise_replica,
    .retain = vt_retain,
    .reflect_status = vt_reflect_status,
    .aggregate_status = vt_aggregate_status,
    .health = vt_health,
    .get_dependencies = vt_get_dependencies,
    .get_components = vt_get_components,
};
