/* auth.c - the token table, the authorizer and the registration endpoint (see auth.h and
 * docs/internals/auth.md).
 *
 * The table maps the SHA-256 digest of each token to an identity: a sorted array searched
 * with bsearch under one mutex, held only to look up, insert or drop entries. Agent entries
 * are an index, not the authority: the authority is the Secret karmada-cluster/<name>-agent-token
 * (its tokenSHA256, its label, its cluster-uid annotation) together with Cluster <name> of that
 * uid. Each agent request re-reads both from the store's memory; while neither has been written
 * since the entry was last confirmed (same Secret revision, same Cluster incarnation) that is
 * two in-memory lookups, otherwise the Secret is parsed again. Whatever removes or replaces the
 * Secret or the Cluster - unjoin, re-registration, kubectl delete, namespace deletion, the
 * garbage collector following the Secret's ownerReference - revokes the token on the next
 * request, with nothing to invalidate.
 *
 * Authorization is RBAC (rbac.c): system:masters (admin) may do everything, everyone else what
 * the Roles and ClusterRoles bound to them grant. The defaults give bootstrap discovery, /version,
 * health and registration, the metrics reader that and GET /metrics; registration gives each
 * agent its own Cluster, Lease and execution namespace (rbac_defaults.c).
 *
 * Registration runs its reads and writes through fl_api_handle as in-process requests (user
 * NULL), so they get the same validation, defaulting and watch events as any client's. One
 * registration runs at a time (reg_mu): they are rare, and it keeps get-then-write simple. */
#include "api/auth.h"

#include <openssl/crypto.h>
#include <openssl/rand.h>
#include <openssl/sha.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api_internal.h"
#include "api/authn_x509.h"
#include "api/jwt.h"
#include "api/sa_token.h"
#include "api/rbac.h"
#include "api/validate.h"
#include "core/err.h"
#include "core/json.h"
#include "core/json_get.h"
#include "core/log.h"
#include "core/mem.h"
#include "core/timefmt.h"
#include "core/wellknown.h"

#define LOG "auth"
#define DIGEST_LEN SHA256_DIGEST_LENGTH
#define TOKEN_BYTES 32

enum ident { ID_ADMIN, ID_BOOTSTRAP, ID_AGENT, ID_METRICS_READER, ID_FILE };

typedef struct entry {
    unsigned char digest[DIGEST_LEN];
    int ident;                                  /* enum ident */
    size_t file_index;                          /* ID_FILE: in fl_auth.file_ids */
    char cluster[FL_AUTH_CLUSTER_NAME_MAX + 1]; /* ID_AGENT */
    int64_t secret_rev;                         /* Secret revision last confirmed; 0 = never */
    int64_t cluster_create_rev;                 /* the Cluster incarnation last confirmed */
} entry;

struct fl_auth {
    fl_api *api;
    pthread_mutex_t mu; /* guards v, n, cap */
    entry *v;           /* sorted by digest */
    size_t n, cap;
    pthread_mutex_t reg_mu; /* one registration at a time */
    fl_identity *file_ids;  /* --token-auth-file's identities (guarded by mu) */
    size_t nfile_ids;
    struct fl_x509_authn *x509; /* client certificates, or NULL */
    struct fl_sa_tokens *sa;    /* ServiceAccount tokens, or NULL */
    fl_rbac *rbac;          /* the authorizer (rbac.c) */
    _Atomic int64_t reloaded_ms; /* when reload_agents last read the store (monotonic), 0: never */
};

/* ---------------------------------------------------------------- identities */

int fl_identity_set(fl_identity *id, const char *user, const char *uid)
{
    memset(id, 0, sizeof *id);
    if (!user || !*user || strlen(user) >= sizeof id->user || (uid && strlen(uid) >= sizeof id->uid))
        return FL_EINVAL;
    snprintf(id->user, sizeof id->user, "%s", user);
    snprintf(id->uid, sizeof id->uid, "%s", uid ? uid : "");
    return 0;
}

int fl_identity_add_group(fl_identity *id, const char *group)
{
    if (!group || !*group || strlen(group) >= FL_AUTH_GROUP_MAX)
        return FL_EINVAL;
    if (fl_identity_in_group(id, group))
        return 0;
    if (id->ngroups == FL_AUTH_GROUPS_MAX)
        return FL_EINVAL;
    snprintf(id->groups[id->ngroups++], FL_AUTH_GROUP_MAX, "%s", group);
    return 0;
}

bool fl_identity_in_group(const fl_identity *id, const char *group)
{
    for (size_t i = 0; i < id->ngroups; i++)
        if (!strcmp(id->groups[i], group))
            return true;
    return false;
}

void fl_identity_anonymous(fl_identity *id)
{
    fl_identity_set(id, FL_AUTH_ANONYMOUS, NULL);
    fl_identity_add_group(id, FL_AUTH_GROUP_UNAUTHENTICATED);
}

/* ---------------------------------------------------------------- digests */

static void digest_of(const char *token, unsigned char out[DIGEST_LEN])
{
    SHA256((const unsigned char *)token, strlen(token), out);
}

static void to_hex(const unsigned char *b, size_t n, char *out)
{
    static const char d[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = d[b[i] >> 4];
        out[2 * i + 1] = d[b[i] & 15];
    }
    out[2 * n] = 0;
}

static int from_hex(const char *s, size_t len, unsigned char *out, size_t n)
{
    if (len != 2 * n)
        return FL_EINVAL;
    for (size_t i = 0; i < 2 * n; i++) {
        char c = s[i];
        int v = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
        if (v < 0)
            return FL_EINVAL;
        if (i % 2 == 0)
            out[i / 2] = (unsigned char)(v << 4);
        else
            out[i / 2] |= (unsigned char)v;
    }
    return 0;
}

/* ---------------------------------------------------------------- the table */

/* Index of digest in a->v, or where it would go (*found false). Caller holds mu. */
static size_t locate(const fl_auth *a, const unsigned char *digest, bool *found)
{
    size_t lo = 0, hi = a->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = memcmp(a->v[mid].digest, digest, DIGEST_LEN);
        if (c == 0) {
            *found = true;
            return mid;
        }
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    *found = false;
    return lo;
}

static void remove_at(fl_auth *a, size_t i)
{
    OPENSSL_cleanse(a->v[i].digest, DIGEST_LEN);
    memmove(&a->v[i], &a->v[i + 1], (a->n - i - 1) * sizeof *a->v);
    a->n--;
}

/* Insert or replace e. Caller holds mu. */
static void put_locked(fl_auth *a, const entry *e)
{
    bool found;
    size_t i = locate(a, e->digest, &found);
    if (found) {
        a->v[i] = *e;
        return;
    }
    if (a->n == a->cap) {
        a->cap = a->cap ? a->cap * 2 : 16;
        a->v = fl_realloc(a->v, a->cap * sizeof *a->v);
    }
    memmove(&a->v[i + 1], &a->v[i], (a->n - i) * sizeof *a->v);
    a->v[i] = *e;
    a->n++;
}

/* Drop every agent entry of cluster. Caller holds mu. */
static void drop_cluster_locked(fl_auth *a, const char *cluster)
{
    for (size_t i = a->n; i-- > 0;)
        if (a->v[i].ident == ID_AGENT && !strcmp(a->v[i].cluster, cluster))
            remove_at(a, i);
}

/* Replace the cluster's agent entries with one for digest. */
static void set_agent(fl_auth *a, const char *cluster, const unsigned char *digest)
{
    entry e;
    memset(&e, 0, sizeof e);
    memcpy(e.digest, digest, DIGEST_LEN);
    e.ident = ID_AGENT;
    snprintf(e.cluster, sizeof e.cluster, "%s", cluster);
    pthread_mutex_lock(&a->mu);
    drop_cluster_locked(a, cluster);
    put_locked(a, &e);
    pthread_mutex_unlock(&a->mu);
    OPENSSL_cleanse(&e, sizeof e);
}

static void add_fixed(fl_auth *a, const char *token, int ident)
{
    if (!token || !*token)
        return;
    entry e;
    memset(&e, 0, sizeof e);
    digest_of(token, e.digest);
    e.ident = ident;
    put_locked(a, &e);
}

int fl_auth_new(fl_api *api, const char *admin_token, const char *bootstrap_token, fl_auth **out)
{
    fl_auth *a = fl_calloc(1, sizeof *a);
    a->api = api;
    pthread_mutex_init(&a->mu, NULL);
    pthread_mutex_init(&a->reg_mu, NULL);
    a->rbac = fl_rbac_new(api);
    add_fixed(a, admin_token, ID_ADMIN);
    add_fixed(a, bootstrap_token, ID_BOOTSTRAP);
    *out = a;
    return 0;
}

void fl_auth_set_metrics_reader(fl_auth *a, const char *token)
{
    pthread_mutex_lock(&a->mu);
    add_fixed(a, token, ID_METRICS_READER);
    pthread_mutex_unlock(&a->mu);
}

void fl_auth_free(fl_auth *a)
{
    if (!a)
        return;
    if (a->v)
        OPENSSL_cleanse(a->v, a->cap * sizeof *a->v);
    free(a->v);
    if (a->file_ids)
        OPENSSL_cleanse(a->file_ids, a->nfile_ids * sizeof *a->file_ids);
    free(a->file_ids);
    pthread_mutex_destroy(&a->mu);
    pthread_mutex_destroy(&a->reg_mu);
    fl_rbac_free(a->rbac);
    free(a);
}

size_t fl_auth_agent_count(fl_auth *a)
{
    size_t n = 0;
    pthread_mutex_lock(&a->mu);
    for (size_t i = 0; i < a->n; i++)
        n += a->v[i].ident == ID_AGENT;
    pthread_mutex_unlock(&a->mu);
    return n;
}

/* ---------------------------------------------------------------- the stored credentials */

static char *secret_key(fl_api *api, const char *cluster)
{
    const fl_kind *k = fl_kindreg_by_resource(api->kinds, "", "v1", "secrets");
    char *name = fl_asprintf("%s%s", cluster, FL_AUTH_SECRET_SUFFIX);
    char *key = fl_obj_key(k, FL_AUTH_SECRET_NAMESPACE, name);
    free(name);
    return key;
}

static char *cluster_key(fl_api *api, const char *cluster)
{
    const fl_kind *k = fl_kindreg_by_resource(api->kinds, "cluster.karmada.io", "v1alpha1", "clusters");
    return fl_obj_key(k, NULL, cluster);
}

/* The cluster a parsed agent-token Secret is for and the digest it holds; 0 or FL_EINVAL. */
static int parse_secret(const json_t *secret, const char **cluster, unsigned char digest[DIGEST_LEN])
{
    const json_t *meta = json_object_get(secret, "metadata");
    *cluster = json_string_value(json_object_get(json_object_get(meta, "labels"), FL_AUTH_SECRET_LABEL));
    const char *b64 = json_string_value(json_object_get(json_object_get(secret, "data"), FL_AUTH_SECRET_KEY));
    if (!*cluster || !b64 || strlen(*cluster) > FL_AUTH_CLUSTER_NAME_MAX)
        return FL_EINVAL;
    size_t len = 0;
    char *hex = fl_base64_decode(b64, &len);
    if (!hex)
        return FL_EINVAL;
    int rc = from_hex(hex, len, digest, DIGEST_LEN);
    free(hex);
    return rc;
}

/* Does the store still vouch for agent entry e (a copy)? On success *secret_rev and
 * *cluster_create_rev are what was confirmed. */
static bool confirm_agent(fl_auth *a, const entry *e, int64_t *secret_rev, int64_t *cluster_create_rev)
{
    fl_store *store = a->api->store;
    char *skey = secret_key(a->api, e->cluster), *ckey = cluster_key(a->api, e->cluster);
    fl_kv skv = {0}, ckv = {0};
    bool ok = false;
    json_t *secret = NULL, *cluster = NULL;
    if (fl_store_get(store, skey, &skv) != 0 || fl_store_get(store, ckey, &ckv) != 0)
        goto out;
    *secret_rev = skv.rev;
    *cluster_create_rev = ckv.create_rev;
    if (skv.rev == e->secret_rev && ckv.create_rev == e->cluster_create_rev) {
        ok = true; /* nothing written to either since the last confirmation */
        goto out;
    }
    secret = fl_json_load(skv.value->data, skv.value->len);
    cluster = fl_json_load(ckv.value->data, ckv.value->len);
    const char *for_cluster;
    unsigned char digest[DIGEST_LEN];
    if (!secret || !cluster || parse_secret(secret, &for_cluster, digest) != 0 || strcmp(for_cluster, e->cluster))
        goto out;
    const char *want_uid = json_string_value(json_object_get(
        json_object_get(json_object_get(secret, "metadata"), "annotations"), FL_AUTH_SECRET_UID_ANNOTATION));
    const char *uid = fl_obj_str(cluster, "metadata", "uid");
    /* a Cluster deleted and created again (not re-registered) is another cluster */
    if (!want_uid || !uid || strcmp(want_uid, uid))
        goto out;
    ok = CRYPTO_memcmp(digest, e->digest, DIGEST_LEN) == 0;
    OPENSSL_cleanse(digest, sizeof digest);
out:
    json_decref(secret);
    json_decref(cluster);
    if (skv.value)
        fl_blob_unref(skv.value);
    if (ckv.value)
        fl_blob_unref(ckv.value);
    free(skey);
    free(ckey);
    return ok;
}

static bool reload_agents(fl_auth *a, const char *token);

int fl_auth_authenticate(fl_auth *a, const char *token, fl_identity *who)
{
    memset(who, 0, sizeof *who);
    if (!token || !*token)
        return FL_ENOTFOUND;
    entry e;
    digest_of(token, e.digest);
    bool found;
    pthread_mutex_lock(&a->mu);
    size_t i = locate(a, e.digest, &found);
    if (found)
        e = a->v[i];
    if (found && e.ident == ID_FILE)
        *who = a->file_ids[e.file_index];
    pthread_mutex_unlock(&a->mu);
    if (!found && reload_agents(a, token)) { /* another replica's registration? */
        pthread_mutex_lock(&a->mu);
        i = locate(a, e.digest, &found);
        if (found)
            e = a->v[i];
        pthread_mutex_unlock(&a->mu);
    }
    if (!found) /* not a token of the table: a ServiceAccount's JWT? */
        return a->sa && fl_jwt_looks_like(token) && fl_sa_tokens_authenticate(a->sa, token, NULL, 0, who, NULL) == 0
                   ? 0
                   : FL_ENOTFOUND;
    switch (e.ident) {
    case ID_FILE:
        break;
    case ID_ADMIN:
        fl_identity_set(who, FL_AUTH_ADMIN, NULL);
        fl_identity_add_group(who, FL_AUTH_GROUP_MASTERS);
        break;
    case ID_BOOTSTRAP:
        fl_identity_set(who, FL_AUTH_BOOTSTRAP, NULL);
        fl_identity_add_group(who, FL_AUTH_GROUP_BOOTSTRAPPERS);
        break;
    case ID_METRICS_READER:
        fl_identity_set(who, FL_AUTH_METRICS_READER, NULL);
        break;
    default: {
        int64_t srev = 0, crev = 0;
        bool ok = confirm_agent(a, &e, &srev, &crev);
        pthread_mutex_lock(&a->mu);
        i = locate(a, e.digest, &found);
        if (found && ok) {
            a->v[i].secret_rev = srev;
            a->v[i].cluster_create_rev = crev;
        } else if (found) {
            fl_log_kv(FL_LOG_INFO, LOG, "agent token revoked (Secret or Cluster gone or replaced)", "object",
                      FL_LOG_OBJ("Cluster", NULL, a->v[i].cluster), "cluster", a->v[i].cluster, NULL);
            remove_at(a, i);
        }
        pthread_mutex_unlock(&a->mu);
        OPENSSL_cleanse(e.digest, sizeof e.digest);
        if (!ok)
            return FL_ENOTFOUND;
        char user[FL_AUTH_USER_MAX];
        snprintf(user, sizeof user, "%s%s", FL_AUTH_AGENT_PREFIX, e.cluster);
        fl_identity_set(who, user, NULL);
        fl_identity_add_group(who, FL_AUTH_GROUP_AGENTS);
        break;
    }
    }
    fl_identity_add_group(who, FL_AUTH_GROUP_AUTHENTICATED);
    return 0;
}

void fl_auth_set_authenticators(fl_auth *a, struct fl_x509_authn *x509, struct fl_sa_tokens *sa)
{
    a->x509 = x509;
    a->sa = sa;
}

struct fl_sa_tokens *fl_auth_sa_tokens(const fl_auth *a)
{
    return a ? a->sa : NULL;
}

struct fl_x509_authn *fl_auth_x509(const fl_auth *a)
{
    return a ? a->x509 : NULL;
}

bool fl_auth_has_x509(const fl_auth *a)
{
    return a && a->x509;
}

int fl_auth_authenticate_cert(fl_auth *a, const fl_x509_der *certs, size_t n, fl_identity *who)
{
    memset(who, 0, sizeof *who);
    if (!a->x509)
        return FL_ENOTFOUND;
    const char *why = NULL;
    if (fl_x509_authn_verify(a->x509, certs, n, 0, who, &why) == 0)
        return 0;
    fl_log(FL_LOG_DEBUG, LOG, "client certificate refused: %s", why ? why : "");
    return FL_ENOTFOUND;
}

/* ---------------------------------------------------------------- --token-auth-file */

/* The next CSV field of line at *p (quotes as RFC 4180: "" is a quote inside), into out;
 * false when it does not fit or a quote is not closed. */
static bool csv_field(const char **p, char *out, size_t cap)
{
    const char *s = *p;
    size_t n = 0;
    bool quoted = *s == '"';
    if (quoted)
        s++;
    for (;; s++) {
        if (quoted && *s == '"' && s[1] == '"') {
            s++;
        } else if (quoted && *s == '"') {
            quoted = false;
            s++;
            if (*s && *s != ',')
                return false;
            break;
        } else if (!quoted && (*s == ',' || !*s)) {
            break;
        } else if (!*s) {
            return false;
        }
        if (quoted || (*s != ',' && *s)) {
            if (n + 1 >= cap)
                return false;
            out[n++] = *s;
        }
    }
    out[n] = 0;
    *p = *s == ',' ? s + 1 : s;
    return true;
}

int fl_auth_load_token_file(fl_auth *a, const char *path, char **err)
{
    *err = NULL;
    FILE *f = fopen(path, "r");
    if (!f) {
        *err = fl_asprintf("--token-auth-file %s: cannot open it", path);
        return FL_EINVAL;
    }
    entry *es = NULL;
    fl_identity *ids = NULL;
    size_t n = 0, cap = 0;
    char line[4096];
    int lineno = 0, rc = 0;
    while (!rc && fgets(line, sizeof line, f)) {
        lineno++;
        size_t l = strlen(line);
        if (l == sizeof line - 1 && line[l - 1] != '\n') {
            rc = FL_EINVAL;
            *err = fl_asprintf("--token-auth-file %s line %d: longer than %zu bytes", path, lineno, sizeof line - 2);
            break;
        }
        while (l && (line[l - 1] == '\n' || line[l - 1] == '\r'))
            line[--l] = 0;
        if (!l || line[0] == '#')
            continue;
        char token[1024], user[FL_AUTH_USER_MAX], uid[FL_AUTH_UID_MAX], groups[FL_AUTH_GROUPS_MAX * FL_AUTH_GROUP_MAX];
        const char *p = line;
        groups[0] = 0;
        if (!csv_field(&p, token, sizeof token) || !csv_field(&p, user, sizeof user) ||
            !csv_field(&p, uid, sizeof uid) || (*p && !csv_field(&p, groups, sizeof groups)) || *p || !token[0] ||
            !user[0]) {
            rc = FL_EINVAL;
            *err = fl_asprintf("--token-auth-file %s line %d: want token,user,uid[,\"group1,group2\"] "
                               "(a field is missing, empty, too long, or badly quoted)",
                               path, lineno);
            break;
        }
        if (n == cap) {
            cap = cap ? 2 * cap : 8;
            es = fl_realloc(es, cap * sizeof *es);
            ids = fl_realloc(ids, cap * sizeof *ids);
        }
        fl_identity_set(&ids[n], user, uid);
        for (char *g = groups; *g && !rc;) {
            size_t gl = strcspn(g, ",");
            char one[FL_AUTH_GROUP_MAX];
            if (gl && (gl >= sizeof one || (memcpy(one, g, gl), one[gl] = 0, fl_identity_add_group(&ids[n], one)))) {
                rc = FL_EINVAL;
                *err = fl_asprintf("--token-auth-file %s line %d: at most %d groups of fewer than %d bytes", path,
                                   lineno, FL_AUTH_GROUPS_MAX - 1, FL_AUTH_GROUP_MAX);
            }
            g += gl + (g[gl] == ',');
        }
        if (!rc && fl_identity_add_group(&ids[n], FL_AUTH_GROUP_AUTHENTICATED)) {
            rc = FL_EINVAL;
            *err = fl_asprintf("--token-auth-file %s line %d: at most %d groups", path, lineno, FL_AUTH_GROUPS_MAX - 1);
        }
        memset(&es[n], 0, sizeof es[n]);
        digest_of(token, es[n].digest);
        OPENSSL_cleanse(token, sizeof token);
        es[n].ident = ID_FILE;
        n++;
    }
    OPENSSL_cleanse(line, sizeof line);
    fclose(f);
    if (!rc) {
        pthread_mutex_lock(&a->mu);
        size_t base = a->nfile_ids;
        a->file_ids = fl_realloc(a->file_ids, (base + n + 1) * sizeof *a->file_ids);
        for (size_t i = 0; i < n; i++) {
            a->file_ids[base + i] = ids[i];
            es[i].file_index = base + i;
            put_locked(a, &es[i]);
        }
        a->nfile_ids = base + n;
        pthread_mutex_unlock(&a->mu);
    }
    if (es)
        OPENSSL_cleanse(es, cap * sizeof *es);
    free(es);
    free(ids);
    return rc ? rc : (int)n;
}

#define LOAD_AGENTS_MAX 4096

typedef struct load_ctx {
    fl_auth *a;
    int loaded;
    struct {
        char name[FL_AUTH_CLUSTER_NAME_MAX + 1];
        char uid[64];
    } *agents;
    size_t nagents;
} load_ctx;

static bool load_one(void *vctx, const char *key, const fl_kv *kv)
{
    load_ctx *c = vctx;
    if (!memmem(kv->value->data, kv->value->len, FL_AUTH_SECRET_LABEL, strlen(FL_AUTH_SECRET_LABEL)))
        return true; /* not ours: skip the parse */
    json_t *secret = fl_json_load(kv->value->data, kv->value->len);
    const char *cluster;
    unsigned char digest[DIGEST_LEN];
    if (secret && parse_secret(secret, &cluster, digest) == 0) {
        set_agent(c->a, cluster, digest);
        c->loaded++;
        const char *uid = json_string_value(json_object_get(
            json_object_get(json_object_get(secret, "metadata"), "annotations"), FL_AUTH_SECRET_UID_ANNOTATION));
        if (uid && c->agents && c->nagents < LOAD_AGENTS_MAX) { /* after the list: it writes */
            snprintf(c->agents[c->nagents].name, sizeof c->agents[c->nagents].name, "%s", cluster);
            snprintf(c->agents[c->nagents].uid, sizeof c->agents[c->nagents].uid, "%s", uid);
            c->nagents++;
        }
    } else {
        fl_log_kv(FL_LOG_WARN, LOG, "not a valid agent-token Secret: ignored", secret ? "object" : "key",
                  secret ? FL_LOG_OBJ("Secret", fl_json_meta(secret, "namespace"), fl_json_meta(secret, "name")) : key,
                  NULL);
    }
    json_decref(secret);
    return true;
}

/* Replicas on one store (etcd) each keep their own table: a token that another replica
 * issued after this one loaded its table is not in it. On a token shaped like an agent's
 * that the table lacks, read the agent-token Secrets again, at most once a second (a stream
 * of unknown tokens costs one list a second). Entries are still confirmed against the store
 * on each use (confirm_agent). True when the table was read again. */
static bool reload_agents(fl_auth *a, const char *token)
{
    if (strlen(token) != 2 * TOKEN_BYTES || token[strspn(token, "0123456789abcdef")])
        return false;
    int64_t now = fl_time_mono_ms(), last = atomic_load(&a->reloaded_ms);
    if ((last && now - last < 1000) || !atomic_compare_exchange_strong(&a->reloaded_ms, &last, now))
        return false;
    const fl_kind *k = fl_kindreg_by_resource(a->api->kinds, "", "v1", "secrets");
    char *prefix = fl_coll_prefix(k, FL_AUTH_SECRET_NAMESPACE);
    load_ctx c = {a, 0, NULL, 0}; /* no roles to ensure: the registering replica wrote them */
    int64_t rev = 0;
    int rc = fl_store_list(a->api->store, prefix, NULL, 0, 0, load_one, &c, &rev, NULL);
    free(prefix);
    return rc == 0;
}

int fl_auth_load(fl_auth *a)
{
    const fl_kind *k = fl_kindreg_by_resource(a->api->kinds, "", "v1", "secrets");
    char *prefix = fl_coll_prefix(k, FL_AUTH_SECRET_NAMESPACE);
    load_ctx c = {a, 0, NULL, 0};
    c.agents = fl_calloc(LOAD_AGENTS_MAX, sizeof *c.agents);
    int64_t rev = 0;
    int rc = fl_store_list(a->api->store, prefix, NULL, 0, 0, load_one, &c, &rev, NULL);
    free(prefix);
    if (rc)
        fl_log(FL_LOG_WARN, LOG, "cannot list agent tokens: %s", fl_strerror(rc));
    /* the default roles, and each agent's (registered before the server had RBAC, or deleted) */
    if (fl_rbac_ensure_defaults(a->api) < 0)
        fl_log(FL_LOG_WARN, LOG, "some default RBAC objects could not be created");
    for (size_t i = 0; i < c.nagents; i++)
        if (fl_rbac_ensure_agent(a->api, c.agents[i].name, c.agents[i].uid) != 0)
            fl_log(FL_LOG_WARN, LOG, "cannot create the roles of agent %s", c.agents[i].name);
    fl_rbac_sync(a->rbac); /* the first index, and the aggregated roles' rules written */
    free(c.agents);
    return c.loaded;
}

/* ---------------------------------------------------------------- authorization */

/* Trusted callers (who NULL) and system:masters are allowed everything whatever the RBAC
 * objects say, as kube-apiserver's privileged-group authorizer does: deleting a binding cannot
 * lock the admin out. The admin's requests still bring the index (and the aggregated
 * ClusterRoles it writes back) up to date, so what the admin reads next is current. */
static bool privileged(fl_auth *a, const fl_identity *who)
{
    if (!who)
        return true;
    if (!fl_identity_in_group(who, FL_AUTH_GROUP_MASTERS))
        return false;
    if (a)
        fl_rbac_sync(a->rbac);
    return true;
}

bool fl_auth_allowed(fl_auth *a, const fl_auth_attrs *at)
{
    if (privileged(a, at->who))
        return true;
    return a && fl_rbac_allowed(a->rbac, at, NULL, 0);
}

fl_rbac *fl_auth_rbac(fl_auth *a)
{
    return a ? a->rbac : NULL;
}

/* The name a list/watch is narrowed to by fieldSelector metadata.name=X (or ==X), as
 * Kubernetes' request info reads it; "" when none. */
static void selector_name(const fl_req *r, char *out, size_t cap)
{
    out[0] = 0;
    const char *fs = fl_req_query(r, "fieldSelector");
    while (fs && *fs) {
        size_t n = strcspn(fs, ",");
        if (!strncmp(fs, "metadata.name=", 14) && n > 14) {
            const char *v = fs + 14 + (fs[14] == '=');
            size_t vl = (size_t)(fs + n - v);
            if (vl < cap && !memchr(v, '\\', vl)) {
                memcpy(out, v, vl);
                out[vl] = 0;
            }
            return;
        }
        fs += n + (fs[n] == ',');
    }
}

/* metadata.name of a JSON request body; "" when absent or not JSON. Decoded exactly as the
 * create handler decodes JSON (duplicate keys rejected), so both see the same name; YAML and
 * protobuf bodies name nothing here and are refused where the name matters. */
static void body_name(const fl_req *r, char *out, size_t cap)
{
    out[0] = 0;
    const char *ct = r->content_type;
    if (!r->body || !r->body_len || (ct && (strncmp(ct, "application/json", 16) || strstr(ct, "yaml"))))
        return;
    json_t *obj = NULL;
    if (fl_json_loadb(r->body, r->body_len, JSON_REJECT_DUPLICATES, &obj, NULL) != 0)
        return;
    const char *n = fl_obj_str(obj, "metadata", "name");
    if (n)
        snprintf(out, cap, "%s", n);
    json_decref(obj);
}

bool fl_auth_authorize(fl_auth *a, fl_req *r, const char *verb, const fl_target *t)
{
    if (privileged(a, r->who))
        return true;
    char name[256];
    snprintf(name, sizeof name, "%s", t->name);
    bool agent = !strncmp(r->who->user, FL_AUTH_AGENT_PREFIX, strlen(FL_AUTH_AGENT_PREFIX));
    if (!name[0] && (!strcmp(verb, "list") || !strcmp(verb, "watch")))
        selector_name(r, name, sizeof name);
    else if (!name[0] && agent && !strcmp(verb, "create"))
        body_name(r, name, sizeof name);
    /* as Kubernetes: a request for a Namespace object is also "in" that namespace */
    const char *ns = t->ns;
    if (!t->group[0] && !strcmp(t->resource, "namespaces") && !t->has_ns)
        ns = name;
    fl_auth_attrs at = {.who = r->who, .verb = verb, .path = NULL, .group = t->group,
                        .resource = t->resource, .subresource = t->sub, .ns = ns, .name = name};
    if (fl_auth_allowed(a, &at))
        return true;
    fl_target ft = *t;
    if (!strcmp(verb, "create"))
        ft.name[0] = 0; /* Kubernetes names no object in a create's Forbidden */
    else
        snprintf(ft.name, sizeof ft.name, "%s", name);
    char qualified[256], named[300] = "", scope[320];
    if (t->group[0])
        snprintf(qualified, sizeof qualified, "%s.%s", t->resource, t->group);
    else
        snprintf(qualified, sizeof qualified, "%s", t->resource);
    if (ft.name[0])
        snprintf(named, sizeof named, " \"%s\"", ft.name);
    if (ns[0])
        snprintf(scope, sizeof scope, "in the namespace \"%s\"", ns);
    else
        snprintf(scope, sizeof scope, "at the cluster scope");
    fl_resp_status(r, 403, "Forbidden", &ft, NULL,
                   "%s%s is forbidden: User \"%s\" cannot %s resource \"%s%s%s\" in API group \"%s\" %s", qualified,
                   named, r->who->user, verb, t->resource, t->sub[0] ? "/" : "", t->sub, t->group, scope);
    return false;
}

bool fl_auth_authorize_path(fl_auth *a, fl_req *r)
{
    if (privileged(a, r->who))
        return true;
    char verb[16];
    size_t i = 0;
    for (const char *m = r->method ? r->method : "get"; *m && i + 1 < sizeof verb; m++)
        verb[i++] = (char)(*m >= 'A' && *m <= 'Z' ? *m - 'A' + 'a' : *m);
    verb[i] = 0;
    const char *path = r->path && r->path[0] ? r->path : "/";
    fl_auth_attrs at = {.who = r->who, .verb = verb, .path = path, .group = "", .resource = "",
                        .subresource = "", .ns = "", .name = ""};
    if (fl_auth_allowed(a, &at))
        return true;
    fl_resp_status(r, 403, "Forbidden", NULL, NULL, "forbidden: User \"%s\" cannot %s path \"%s\"", r->who->user, verb,
                   path);
    return false;
}

/* ---------------------------------------------------------------- registration */

bool fl_auth_is_register_path(const char *path)
{
    if (!path)
        return false;
    size_t n = strlen(FL_AUTH_REGISTER_PATH);
    return !strncmp(path, FL_AUTH_REGISTER_PATH, n) && (!path[n] || !strcmp(path + n, "/"));
}

/* One in-process request through the API (user NULL: trusted). Returns the HTTP code;
 * *out (may be NULL) receives the parsed response body. */
static int call(fl_api *api, const char *method, const char *path, const json_t *body, json_t **out)
{
    char *text = body ? fl_json_dumps(body, NULL) : NULL;
    fl_req r;
    memset(&r, 0, sizeof r);
    r.method = method;
    r.path = path;
    r.content_type = "application/json";
    r.user_agent = "flotilla-registration";
    r.body = text;
    r.body_len = text ? strlen(text) : 0;
    fl_api_handle(api, &r);
    if (out)
        *out = r.resp ? fl_json_load(r.resp, r.resp_len) : NULL;
    free(r.resp);
    free(r.warnings);
    free(text);
    return r.code;
}

static const fl_target register_target = {.group = "flotilla.io", .version = "v1alpha1", .resource = "register"};

/* Pass an in-process failure on to the client: the Status it produced, or a 500. */
static void relay(fl_req *r, int code, json_t *status, const char *what)
{
    const char *msg = fl_obj_str(status, "message", NULL);
    const char *reason = fl_obj_str(status, "reason", NULL);
    if (code >= 400 && code < 600 && msg && reason)
        fl_resp_status(r, code, reason, &register_target, NULL, "%s: %s", what, msg);
    else
        fl_resp_status(r, 500, "InternalError", &register_target, NULL, "%s: unexpected answer %d", what, code);
}

/* The Cluster to register: created with syncMode Pull unless present. Returns the Cluster
 * (new reference) or NULL after answering r. */
static json_t *ensure_pull_cluster(fl_api *api, fl_req *r, const char *name, bool *created)
{
    char *path = fl_asprintf("/apis/cluster.karmada.io/v1alpha1/clusters/%s", name);
    json_t *cl = NULL;
    int code = 0;
    *created = false;
    for (int attempt = 0; attempt < 3; attempt++) {
        json_decref(cl);
        cl = NULL;
        code = call(api, "GET", path, NULL, &cl);
        if (code == 404) {
            json_decref(cl);
            json_t *want = json_pack("{s:s, s:s, s:{s:s}, s:{s:s}}", "apiVersion", "cluster.karmada.io/v1alpha1",
                                     "kind", "Cluster", "metadata", "name", name, "spec", "syncMode", "Pull");
            code = call(api, "POST", "/apis/cluster.karmada.io/v1alpha1/clusters", want, &cl);
            json_decref(want);
            if (code == 201) {
                *created = true;
                break;
            }
            if (code == 409)
                continue; /* created meanwhile by someone else: look again */
            relay(r, code, cl, "cannot create the Cluster");
            goto fail;
        }
        if (code != 200) {
            relay(r, code, cl, "cannot read the Cluster");
            goto fail;
        }
        break;
    }
    if (code != 200 && code != 201) {
        relay(r, code, cl, "cannot create the Cluster");
        goto fail;
    }
    const char *mode = fl_obj_str(cl, "spec", "syncMode");
    if (!mode || strcmp(mode, "Pull")) {
        fl_resp_status(r, 409, "Conflict", &register_target, NULL,
                       "cluster \"%s\" is already joined in %s mode; only a Pull cluster can be registered by an "
                       "agent (unjoin it first, or pick another name)",
                       name, mode ? mode : "Push");
        goto fail;
    }
    if (fl_obj_str(cl, "metadata", "deletionTimestamp")) {
        fl_resp_status(r, 409, "Conflict", &register_target, NULL,
                       "cluster \"%s\" is being deleted; register again once it is gone", name);
        goto fail;
    }
    if (!fl_obj_str(cl, "metadata", "uid")) {
        fl_resp_status(r, 500, "InternalError", &register_target, NULL, "cluster \"%s\" has no uid", name);
        goto fail;
    }
    free(path);
    return cl;
fail:
    json_decref(cl);
    free(path);
    return NULL;
}

/* Write the agent-token Secret for cluster cl holding hex_digest. 0, or answers r. */
static int write_secret(fl_api *api, fl_req *r, const char *name, const json_t *cl, const char *hex_digest)
{
    const char *uid = fl_obj_str(cl, "metadata", "uid");
    char *sname = fl_asprintf("%s%s", name, FL_AUTH_SECRET_SUFFIX);
    char *path = fl_asprintf("/api/v1/namespaces/%s/secrets/%s", FL_AUTH_SECRET_NAMESPACE, sname);
    char *b64 = fl_base64_encode(hex_digest, strlen(hex_digest));
    json_t *want = json_pack(
        "{s:s, s:s, s:{s:s, s:s, s:{s:s}, s:{s:s}, s:[{s:s, s:s, s:s, s:s}]}, s:s, s:{s:s}}", "apiVersion", "v1",
        "kind", "Secret", "metadata", "name", sname, "namespace", FL_AUTH_SECRET_NAMESPACE, "labels",
        FL_AUTH_SECRET_LABEL, name, "annotations", FL_AUTH_SECRET_UID_ANNOTATION, uid, "ownerReferences",
        "apiVersion", "cluster.karmada.io/v1alpha1", "kind", "Cluster", "name", name, "uid", uid, "type", "Opaque",
        "data", FL_AUTH_SECRET_KEY, b64);
    json_t *cur = NULL, *resp = NULL;
    int rc = FL_EIO;
    int code = call(api, "GET", path, NULL, &cur);
    if (code == 200) {
        const char *label = json_string_value(
            json_object_get(json_object_get(json_object_get(cur, "metadata"), "labels"), FL_AUTH_SECRET_LABEL));
        if (!label || strcmp(label, name)) {
            fl_resp_status(r, 409, "Conflict", &register_target, NULL,
                           "secret %s/%s exists and is not the agent token of cluster \"%s\"; remove it to register",
                           FL_AUTH_SECRET_NAMESPACE, sname, name);
            goto out;
        }
        json_t *rv = json_object_get(json_object_get(cur, "metadata"), "resourceVersion");
        if (rv)
            json_object_set(json_object_get(want, "metadata"), "resourceVersion", rv);
        code = call(api, "PUT", path, want, &resp);
    } else if (code == 404) {
        char *coll = fl_asprintf("/api/v1/namespaces/%s/secrets", FL_AUTH_SECRET_NAMESPACE);
        code = call(api, "POST", coll, want, &resp);
        free(coll);
    } else {
        relay(r, code, cur, "cannot read the agent-token Secret");
        goto out;
    }
    if (code != 200 && code != 201) {
        relay(r, code, resp, "cannot store the agent token");
        goto out;
    }
    rc = 0;
out:
    json_decref(cur);
    json_decref(resp);
    json_decref(want);
    free(b64);
    free(path);
    free(sname);
    return rc;
}

void fl_auth_register(fl_api *api, fl_req *r)
{
    r->verb = "POST";
    snprintf(r->resource, sizeof r->resource, "register");
    fl_auth *a = api->auth;
    if (!a) {
        fl_resp_status(r, 404, "NotFound", NULL, NULL, "the server could not find the requested resource");
        return;
    }
    fl_auth_attrs reg = {.who = r->who, .verb = "create", .path = NULL, .group = "flotilla.io",
                         .resource = "register", .subresource = "", .ns = "", .name = ""};
    if (!fl_auth_allowed(a, &reg)) {
        fl_resp_status(r, 403, "Forbidden", &register_target, NULL,
                       "register.flotilla.io is forbidden: User \"%s\" cannot create resource \"register\" in API "
                       "group \"flotilla.io\" at the cluster scope",
                       r->who->user);
        return;
    }
    if (!r->method || strcmp(r->method, "POST")) {
        fl_resp_status(r, 405, "MethodNotAllowed", &register_target, NULL,
                       "%s is not allowed on register: POST {\"clusterName\": NAME}", r->method ? r->method : "");
        return;
    }
    json_t *body = r->body_len ? fl_json_load(r->body, r->body_len) : NULL;
    if (!json_is_object(body)) {
        json_decref(body);
        fl_resp_status(r, 400, "BadRequest", &register_target, NULL,
                       "the request body must be a JSON object {\"clusterName\": NAME}");
        return;
    }
    const char *name = json_string_value(json_object_get(body, "clusterName"));
    const char *problem = !name || !name[0] ? "Required value"
                          : strlen(name) > FL_AUTH_CLUSTER_NAME_MAX
                              ? "must be no more than 48 characters"
                              : fl_validate_dns1123_label(name);
    if (problem) {
        json_t *causes = json_array();
        fl_cause_add(causes, !name || !name[0] ? "FieldValueRequired" : "FieldValueInvalid", "clusterName", "%s",
                     problem);
        fl_resp_status(r, 422, "Invalid", &register_target, causes, "clusterName: Invalid value: \"%s\": %s",
                       name ? name : "", problem);
        json_decref(body);
        return;
    }

    pthread_mutex_lock(&a->reg_mu);
    char *exec_ns = fl_asprintf("%s%s", FL_EXECUTION_SPACE_PREFIX, name);
    bool created = false;
    json_t *cl = NULL;
    unsigned char raw[TOKEN_BYTES], digest[DIGEST_LEN];
    char token[2 * TOKEN_BYTES + 1], hex[2 * DIGEST_LEN + 1];
    token[0] = 0;
    if (fl_api_ensure_namespace(api, FL_AUTH_SECRET_NAMESPACE) || fl_api_ensure_namespace(api, exec_ns)) {
        fl_resp_status(r, 500, "InternalError", &register_target, NULL,
                       "cannot create the namespaces %s and %s", FL_AUTH_SECRET_NAMESPACE, exec_ns);
        goto out;
    }
    if (!(cl = ensure_pull_cluster(api, r, name, &created)))
        goto out;
    if (RAND_bytes(raw, sizeof raw) != 1) {
        fl_resp_status(r, 500, "InternalError", &register_target, NULL, "no randomness for the agent token");
        goto out;
    }
    to_hex(raw, sizeof raw, token);
    digest_of(token, digest);
    to_hex(digest, sizeof digest, hex);
    if (write_secret(api, r, name, cl, hex) != 0)
        goto out;
    /* what the agent may do: RBAC objects owned by its Cluster (rbac_defaults.c) */
    if (fl_rbac_ensure_agent(api, name, fl_obj_str(cl, "metadata", "uid")) != 0) {
        fl_resp_status(r, 500, "InternalError", &register_target, NULL,
                       "cannot create the roles and bindings of agent \"%s\"", name);
        goto out;
    }
    set_agent(a, name, digest); /* the previous token of this cluster stops here */
    fl_log_kvf(FL_LOG_INFO, LOG, FL_LOG_KV("object", FL_LOG_OBJ("Cluster", NULL, name), "cluster", name),
               "registered pull cluster (%s, by %s)", created ? "new Cluster" : "token rotated",
               r->who ? r->who->user : "the server");
    fl_resp_json(r, 201,
                 json_pack("{s:s, s:s, s:s, s:s}", "apiVersion", "flotilla.io/v1alpha1", "kind",
                           "ClusterRegistration", "clusterName", name, "token", token));
out:
    pthread_mutex_unlock(&a->reg_mu);
    OPENSSL_cleanse(raw, sizeof raw);
    OPENSSL_cleanse(token, sizeof token);
    json_decref(cl);
    json_decref(body);
    free(exec_ns);
}
