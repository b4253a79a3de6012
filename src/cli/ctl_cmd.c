/* ctl_cmd.c - `flotilla ctl`: the multi-cluster verbs kubectl lacks.
 *
 *   flotilla ctl [--kubeconfig F] [--context C] join NAME --cluster-kubeconfig F [--cluster-context C]
 *   flotilla ctl [--kubeconfig F] [--context C] unjoin NAME
 *   flotilla ctl fault NAME --members-kubeconfig F --set down|slow=MS|partition|clear
 *   flotilla ctl suspend|resume ...   (suspend_cmd.c)
 *   flotilla ctl failover history KIND/NAME ...   (failover_cmd.c)
 *   flotilla ctl rollout history|undo|status|pause|resume|approve|abort KIND/NAME ...   (rollout_cmd.c)
 *   flotilla ctl promote|release ...   (promote_cmd.c, release_cmd.c)
 *   flotilla ctl status [KIND[/NAME]] ...   (status_cmd.c)
 *   flotilla ctl kubeconfig --user NAME [--group G]...   (kubeconfig_cmd.c)
 *   flotilla ctl store backup|copy ...   (store_cmd.c)
 *
 * As with karmadactl, --kubeconfig/--context name the control plane (kubectl's rules:
 * $KUBECONFIG, then ~/.kube/config, when absent) and the member's kubeconfig is given
 * separately. Join (Push mode) reads the member's server URL, CA and bearer token from its
 * kubeconfig, checks the member answers with those credentials, and writes two objects
 * on the control plane, as karmadactl does:
 *   Secret karmada-cluster/NAME   type Opaque, data.token and data.caBundle
 *   Cluster NAME                  spec.syncMode Push, apiEndpoint, secretRef
 * Both are created or brought up to date, so joining again is how credentials are
 * rotated. Unjoin deletes the Cluster, waits (bounded) until it is gone, then deletes
 * the Secret it referenced.
 *
 * Flags may come before or after the verb, as kubectl allows. Exit codes: 0 done,
 * 1 failure (one line on stderr saying what and where), 2 usage. */
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/cli.h"
#include "cli/ctl_out.h"
#include "cli/failover_cmd.h"
#include "cli/interpret_cmd.h"
#include "cli/promote_cmd.h"
#include "cli/rollout_cmd.h"
#include "cli/status_cmd.h"
#include "cli/store_cmd.h"
#include "client/client.h"
#include "client/kubeconfig.h"
#include "core/base64.h"
#include "core/err.h"
#include "core/mem.h"

#define CLUSTER_NAMESPACE "karmada-cluster"
#define UNJOIN_WAIT_MS 60000

static const fl_gvr NAMESPACES = {"v1", "namespaces"};
static const fl_gvr SECRETS = {"v1", "secrets"};
static const fl_gvr CLUSTERS = {"cluster.karmada.io/v1alpha1", "clusters"};

typedef struct ctl_opts {
    const char *kubeconfig, *context;                  /* the control plane */
    const char *cluster_kubeconfig, *cluster_context;  /* the member (join) */
    const char *members_kubeconfig, *set;              /* a simulated member host (fault) */
    const char *verb, *name;
} ctl_opts;

static void usage(FILE *f)
{
    fprintf(f, "Usage: flotilla ctl [--kubeconfig FILE] [--context NAME] <command> [options]\n"
               "\n"
               "Commands:\n"
               "  join NAME --cluster-kubeconfig FILE [--cluster-context NAME]\n"
               "                 register a member cluster in Push mode (again: update its credentials)\n"
               "  unjoin NAME    remove a member cluster and its credentials\n"
               "  fault NAME --members-kubeconfig FILE --set down|slow=MS|partition|clear\n"
               "                 inject a fault into a simulated member (FILE: the member host's\n"
               "                 admin.kubeconfig, written by `flotilla member`)\n"
               "  suspend|resume (policy|clusterpolicy|binding|clusterbinding|work|cluster) NAME [-n NS]\n"
               "                 [--clusters a,b] [--wait] [--timeout DURATION]\n"
               "                 stop or restart delivery; --wait until the executors acknowledge\n"
               "                 (see 'flotilla ctl suspend --help')\n"
               "  interpret -f CUSTOMIZATION (--check | --operation OP ...)\n"
               "                 run a ResourceInterpreterCustomization's Lua offline\n"
               "                 (see 'flotilla ctl interpret --help')\n"
               "  promote KIND (NAME | --all | -l SELECTOR) [-n NS] --cluster NAME [--dry-run]\n"
               "                 take objects running in a member under management, without a restart\n"
               "  release KIND/NAME [-n NS] [--policy] [--wait]\n"
               "                 stop managing them and leave them running (see docs/migration.md)\n"
               "  failover history KIND/NAME [-n NS] [-o yaml|json]\n"
               "                 where a workload has been and why it moved\n"
               "  rollout history|undo KIND/NAME [-n NS] [--revision N|--to-revision N]\n"
               "                 a template's revisions, and going back to one\n"
               "  rollout status|pause|resume|approve|abort KIND/NAME [-n NS] [--watch]\n"
               "                 a template's staged rollout (see 'flotilla ctl rollout --help')\n"
               "  status [KIND[/NAME]] [-n NS | -A] [-o yaml|json] [--cluster NAME] [--state STATE]\n"
               "         [--watch] [--wait] [--timeout DURATION]\n"
               "                 is it live on every cluster, and if not, where and why\n"
               "                 (see 'flotilla ctl status --help')\n"
               "  kubeconfig --user NAME [--group G]... [--namespace NS] [--days N]\n"
               "                 print a kubeconfig for a person, with a client certificate signed by\n"
               "                 the control plane (see 'flotilla ctl kubeconfig --help')\n"
               "  store backup --data-dir DIR OUT\n"
               "  store copy --from sqlite:DIR --to sqlite:DIR2|etcd:URL[,URL]\n"
               "                 back up a running server's store, or copy a stopped one's into another\n"
               "                 store (see 'flotilla ctl store --help')\n"
               "\n"
               "Options:\n"
               "  --kubeconfig FILE   the control plane's kubeconfig (default: $KUBECONFIG, then ~/.kube/config)\n"
               "  --context NAME      context in that kubeconfig (default: its current-context)\n"
               "  --cluster-kubeconfig FILE  the member's kubeconfig (join)\n"
               "  --cluster-context NAME     context in the member's kubeconfig (join)\n");
}

static int usage_error(const char *fmt, const char *arg)
{
    fprintf(stderr, "flotilla ctl: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, " (see 'flotilla ctl --help')\n");
    return 2;
}

/* Flags with a value, as "--flag VALUE" or "--flag=VALUE". */
static int parse(int argc, char **argv, ctl_opts *o, bool *help)
{
    static const fl_cli_flag flags[] = {
        {"kubeconfig", NULL, offsetof(ctl_opts, kubeconfig)},
        {"context", NULL, offsetof(ctl_opts, context)},
        {"cluster-kubeconfig", NULL, offsetof(ctl_opts, cluster_kubeconfig)},
        {"cluster-context", NULL, offsetof(ctl_opts, cluster_context)},
        {"members-kubeconfig", NULL, offsetof(ctl_opts, members_kubeconfig)},
        {"set", NULL, offsetof(ctl_opts, set)},
    };
    const char *pos[3] = {0};
    int npos = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            *help = true;
            return 0;
        }
        if (a[0] == '-' && a[1]) {
            const char *why = fl_cli_take_flag(flags, sizeof flags / sizeof *flags, argc, argv, &i, o);
            if (why)
                return usage_error(why, a);
            continue;
        }
        if (npos == 3)
            return usage_error("unexpected argument \"%s\"", a);
        pos[npos++] = a;
    }
    if (npos == 0)
        return usage_error("%s", "a command is required (join, unjoin, fault, suspend or resume)");
    o->verb = pos[0];
    if (strcmp(o->verb, "join") && strcmp(o->verb, "unjoin") && strcmp(o->verb, "fault"))
        return usage_error("unknown command \"%s\"", o->verb);
    if (npos < 2)
        return usage_error("%s needs a cluster NAME", o->verb);
    if (npos > 2)
        return usage_error("unexpected argument \"%s\"", pos[2]);
    o->name = pos[1];
    if (!strcmp(o->verb, "join") && !o->cluster_kubeconfig)
        return usage_error("%s", "join needs --cluster-kubeconfig FILE (the member cluster's kubeconfig)");
    if (!strcmp(o->verb, "unjoin") && (o->cluster_kubeconfig || o->cluster_context))
        return usage_error("%s", "unjoin takes no --cluster-kubeconfig/--cluster-context");
    if (!strcmp(o->verb, "fault") && (!o->members_kubeconfig || !o->set))
        return usage_error("%s", "fault needs --members-kubeconfig FILE and --set down|slow=MS|partition|clear");
    return 0;
}

/* Karmada's rule for cluster names: a DNS-1123 label of at most 48 characters. */
static const char *name_problem(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > 48)
        return "must be 1 to 48 characters";
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || (c == '-' && i > 0 && i + 1 < n)))
            return "must consist of lower case letters, digits and '-', and start and end with a letter or digit";
    }
    return NULL;
}

/* Create obj, or when it exists, let merge() bring the stored one up to date and update
 * it (retrying lost races). What is stored is left in *out (may be NULL). */
typedef int (*merge_fn)(json_t *stored, const json_t *want, const ctl_opts *o);

static int create_or_update(fl_client *cp, const fl_gvr *r, const char *ns, const char *what, json_t *want,
                            merge_fn merge, const ctl_opts *o)
{
    fl_client_error ce;
    int rc = fl_client_create(cp, r, ns, want, NULL, NULL, &ce);
    for (int attempt = 0; rc == FL_EEXIST && attempt < 5; attempt++) {
        json_t *cur = NULL;
        rc = fl_client_get(cp, r, ns, json_string_value(json_object_get(json_object_get(want, "metadata"), "name")),
                           &cur, &ce);
        if (rc == FL_ENOTFOUND) { /* deleted meanwhile: create again */
            rc = fl_client_create(cp, r, ns, want, NULL, NULL, &ce);
            continue;
        }
        if (rc)
            break;
        rc = merge(cur, want, o);
        if (rc == 0)
            rc = fl_client_update(cp, r, ns, cur, NULL, NULL, &ce);
        json_decref(cur);
        if (rc > 0)
            return 1; /* merge refused and said why */
        if (rc == FL_ECONFLICT)
            rc = FL_EEXIST; /* someone else wrote it: read again */
    }
    if (rc)
        return fl_ctl_out_fail(o->verb, "writing %s: %s", what, fl_errmsg(ce.message, rc));
    return 0;
}

static int merge_secret(json_t *stored, const json_t *want, const ctl_opts *o)
{
    json_object_set(stored, "type", json_object_get(want, "type"));
    json_object_set(stored, "data", json_object_get(want, "data"));
    json_object_del(stored, "stringData");
    return 0;
}

static int merge_cluster(json_t *stored, const json_t *want, const ctl_opts *o)
{
    json_t *spec = json_object_get(stored, "spec");
    if (!json_is_object(spec)) {
        spec = json_object();
        json_object_set_new(stored, "spec", spec);
    }
    const char *mode = json_string_value(json_object_get(spec, "syncMode"));
    if (mode && !strcmp(mode, "Pull"))
        return fl_ctl_out_fail(o->verb, "cluster %s is registered in Pull mode (its agent manages it); "
                             "unjoin it first to register it in Push mode", o->name);
    json_t *ws = json_object_get(want, "spec");
    static const char *const keys[] = {"syncMode", "apiEndpoint", "secretRef", "insecureSkipTLSVerification", NULL};
    for (int i = 0; keys[i]; i++) {
        json_t *v = json_object_get(ws, keys[i]);
        if (v)
            json_object_set(spec, keys[i], v);
        else
            json_object_del(spec, keys[i]);
    }
    return 0;
}

static int cmd_join(const ctl_opts *o)
{
    const char *bad = name_problem(o->name);
    if (bad)
        return fl_ctl_out_fail(o->verb, "invalid cluster name \"%s\": %s", o->name, bad);

    /* the member's credentials, and proof that they work */
    fl_kubeconfig mk;
    char *err = NULL;
    int rc = fl_kubeconfig_load(o->cluster_kubeconfig, o->cluster_context, &mk, &err);
    if (rc) {
        fl_ctl_out_fail(o->verb, "member kubeconfig: %s", err ? err : fl_strerror(rc));
        free(err);
        return 1;
    }
    int ret = 1;
    fl_client *member = NULL, *cp = NULL;
    json_t *ns = NULL, *secret = NULL, *cluster = NULL;
    if (!mk.token) {
        fl_ctl_out_fail(o->verb, "member kubeconfig %s: user \"%s\" has no bearer token (token or tokenFile); "
                      "the control plane reaches Push members with a token",
             mk.origin, mk.user ? mk.user : "");
        goto out;
    }
    rc = fl_client_new(&mk, &(fl_client_options){.user_agent = "flotilla-ctl", .timeout_ms = 15000}, &member, &err);
    if (rc) {
        fl_ctl_out_fail(o->verb, "member kubeconfig: %s", err ? err : fl_strerror(rc));
        goto out;
    }
    fl_client_error ce;
    rc = fl_client_request(member, "GET", "/api", NULL, NULL, 0, NULL, NULL, &ce);
    if (rc) {
        fl_ctl_out_fail(o->verb, "cannot reach member cluster at %s with the credentials in %s: %s", mk.server, mk.origin,
             fl_errmsg(ce.message, rc));
        goto out;
    }

    if (fl_cli_control_plane(o->kubeconfig, o->context, o->verb, &cp))
        goto out;
    ns = json_pack("{s:s, s:s, s:{s:s}}", "apiVersion", "v1", "kind", "Namespace", "metadata", "name",
                   CLUSTER_NAMESPACE);
    rc = fl_client_create(cp, &NAMESPACES, NULL, ns, NULL, NULL, &ce);
    if (rc && rc != FL_EEXIST) {
        fl_ctl_out_fail(o->verb, "creating namespace %s on the control plane: %s", CLUSTER_NAMESPACE, fl_errmsg(ce.message, rc));
        goto out;
    }

    char *tok64 = fl_base64_encode(mk.token, strlen(mk.token));
    secret = json_pack("{s:s, s:s, s:{s:s, s:s}, s:s, s:{s:s%}}", "apiVersion", "v1", "kind", "Secret", "metadata",
                       "name", o->name, "namespace", CLUSTER_NAMESPACE, "type", "Opaque", "data", "token", tok64,
                       strlen(tok64));
    free(tok64);
    if (mk.ca_pem && !mk.insecure) {
        char *ca64 = fl_base64_encode(mk.ca_pem, strlen(mk.ca_pem));
        json_object_set_new(json_object_get(secret, "data"), "caBundle", json_string(ca64));
        free(ca64);
    }
    char what[256];
    snprintf(what, sizeof what, "Secret %s/%s", CLUSTER_NAMESPACE, o->name);
    if (create_or_update(cp, &SECRETS, CLUSTER_NAMESPACE, what, secret, merge_secret, o))
        goto out;

    cluster = json_pack("{s:s, s:s, s:{s:s}, s:{s:s, s:s, s:{s:s, s:s}}}", "apiVersion", "cluster.karmada.io/v1alpha1",
                        "kind", "Cluster", "metadata", "name", o->name, "spec", "syncMode", "Push", "apiEndpoint",
                        mk.server, "secretRef", "namespace", CLUSTER_NAMESPACE, "name", o->name);
    if (mk.insecure)
        json_object_set_new(json_object_get(cluster, "spec"), "insecureSkipTLSVerification", json_true());
    snprintf(what, sizeof what, "Cluster %s", o->name);
    if (create_or_update(cp, &CLUSTERS, NULL, what, cluster, merge_cluster, o))
        goto out;
    printf("cluster %s joined (Push) at %s\n", o->name, mk.server);
    ret = 0;
out:
    free(err);
    json_decref(ns);
    json_decref(secret);
    json_decref(cluster);
    fl_client_free(member);
    fl_client_free(cp);
    fl_kubeconfig_close(&mk);
    return ret;
}

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static int cmd_unjoin(const ctl_opts *o)
{
    fl_client *cp = NULL;
    if (fl_cli_control_plane(o->kubeconfig, o->context, o->verb, &cp))
        return 1;
    int ret = 1;
    fl_client_error ce;
    json_t *cl = NULL;
    char *sns = fl_strdup(CLUSTER_NAMESPACE), *sname = fl_strdup(o->name);
    int rc = fl_client_get(cp, &CLUSTERS, NULL, o->name, &cl, &ce);
    if (rc == FL_ENOTFOUND) {
        fl_ctl_out_fail(o->verb, "cluster %s not found on the control plane", o->name);
        goto out;
    }
    if (rc) {
        fl_ctl_out_fail(o->verb, "reading cluster %s: %s", o->name, fl_errmsg(ce.message, rc));
        goto out;
    }
    /* the Secret the Cluster points at, which is ours only when join wrote it */
    json_t *ref = json_object_get(json_object_get(cl, "spec"), "secretRef");
    const char *rns = json_string_value(json_object_get(ref, "namespace"));
    const char *rname = json_string_value(json_object_get(ref, "name"));
    if (rns && rname) {
        free(sns);
        free(sname);
        sns = fl_strdup(rns);
        sname = fl_strdup(rname);
    }
    rc = fl_client_delete(cp, &CLUSTERS, NULL, o->name, NULL, NULL, &ce);
    if (rc && rc != FL_ENOTFOUND) {
        fl_ctl_out_fail(o->verb, "deleting cluster %s: %s", o->name, fl_errmsg(ce.message, rc));
        goto out;
    }
    /* finalizers may hold the Cluster while its work is cleaned up; its credentials are
     * needed until then */
    for (int waited = 0;; waited += 100) {
        json_t *still = NULL;
        rc = fl_client_get(cp, &CLUSTERS, NULL, o->name, &still, &ce);
        json_decref(still);
        if (rc == FL_ENOTFOUND)
            break;
        if (rc) {
            fl_ctl_out_fail(o->verb, "waiting for cluster %s to be deleted: %s", o->name, fl_errmsg(ce.message, rc));
            goto out;
        }
        if (waited >= UNJOIN_WAIT_MS) {
            fl_ctl_out_fail(o->verb, "cluster %s is still being deleted after %d s (finalizers pending); run unjoin again later",
                 o->name, UNJOIN_WAIT_MS / 1000);
            goto out;
        }
        sleep_ms(100);
    }
    rc = fl_client_delete(cp, &SECRETS, sns, sname, NULL, NULL, &ce);
    if (rc && rc != FL_ENOTFOUND) {
        fl_ctl_out_fail(o->verb, "deleting Secret %s/%s: %s", sns, sname, fl_errmsg(ce.message, rc));
        goto out;
    }
    printf("cluster %s unjoined\n", o->name);
    ret = 0;
out:
    json_decref(cl);
    free(sns);
    free(sname);
    fl_client_free(cp);
    return ret;
}

/* PUT the fault to the member host's admin endpoint (src/member/member.h). */
static int cmd_fault(const ctl_opts *o)
{
    char body[96];
    const char *v = o->set;
    if (!strcmp(v, "down"))
        snprintf(body, sizeof body, "{\"down\":true}");
    else if (!strcmp(v, "partition"))
        snprintf(body, sizeof body, "{\"partition\":true}");
    else if (!strcmp(v, "clear"))
        snprintf(body, sizeof body, "{}");
    else if (!strncmp(v, "slow=", 5) && atoi(v + 5) > 0)
        snprintf(body, sizeof body, "{\"slowMs\":%d}", atoi(v + 5));
    else
        return usage_error("--set %s: expected down, slow=MS, partition or clear", v);
    fl_kubeconfig kc;
    char *err = NULL;
    fl_client *c = NULL;
    int rc = fl_kubeconfig_load(o->members_kubeconfig, NULL, &kc, &err);
    if (rc == 0)
        rc = fl_client_new(&kc, &(fl_client_options){.user_agent = "flotilla-ctl", .timeout_ms = 10000}, &c, &err);
    fl_kubeconfig_close(&kc);
    if (rc) {
        fl_ctl_out_fail("fault", "member host kubeconfig: %s", err ? err : fl_strerror(rc));
        free(err);
        return 1;
    }
    char *path = fl_asprintf("/admin/clusters/%s/fault", o->name);
    fl_client_error ce = {0};
    rc = fl_client_request(c, "PUT", path, "application/json", body, strlen(body), NULL, NULL, &ce);
    free(path);
    fl_client_free(c);
    if (rc)
        return fl_ctl_out_fail("fault", "%s: %s", o->name,
                    rc == FL_ENOTFOUND ? "no such simulated cluster" : fl_errmsg(ce.message, rc));
    printf("cluster %s: fault %s\n", o->name, v);
    return 0;
}

/* The first argument that is not a flag (or a flag's value), or -1. */
static int verb_index(int argc, char **argv)
{
    static const char *const with_value[] = {"--kubeconfig", "--context", "--cluster-kubeconfig", "--cluster-context",
                                             "--members-kubeconfig", "--set", "-n", "--namespace", "--clusters",
                                             "--timeout", "-o", "--output", "--cluster", "--state",
                                             "--chunk-size", "--user", "--group", "--days", NULL};
    for (int i = 1; i < argc; i++) {
        if (argv[i][0] != '-')
            return i;
        for (int k = 0; with_value[k]; k++)
            if (!strcmp(argv[i], with_value[k]))
                i++;
    }
    return -1;
}


static int suspend_verb(int argc, char **argv)
{
    return fl_ctl_suspend(true, argc, argv);
}

static int resume_verb(int argc, char **argv)
{
    return fl_ctl_suspend(false, argc, argv);
}

/* The verbs with options of their own, each in its own file: they get every argument but
 * the verb. Offline verbs (no control plane, flags of their own) must come first and get
 * their arguments after the verb, the verb in argv[0]. */
static const struct {
    const char *verb;
    bool first_only; /* offline: only as the first argument, its flags are not ctl's */
    int (*run)(int argc, char **argv);
} own_verbs[] = {
    {"interpret", true, fl_ctl_interpret},
    {"store", true, fl_ctl_store},
    {"failover", false, fl_ctl_failover},
    {"rollout", false, fl_ctl_rollout},
    {"status", false, fl_ctl_status},
    {"kubeconfig", false, fl_ctl_kubeconfig},
    {"suspend", false, suspend_verb},
    {"resume", false, resume_verb},
    {"promote", false, fl_ctl_promote},
    {"release", false, fl_ctl_release},
};

int fl_cmd_ctl(int argc, char **argv)
{
    int v = verb_index(argc, argv);
    for (size_t k = 0; v > 0 && k < sizeof own_verbs / sizeof *own_verbs; k++) {
        if (strcmp(argv[v], own_verbs[k].verb) != 0 || (own_verbs[k].first_only && v != 1))
            continue;
        if (own_verbs[k].first_only)
            return own_verbs[k].run(argc - 1, argv + 1);
        char **rest = fl_calloc((size_t)argc, sizeof *rest);
        int n = 0;
        for (int i = 1; i < argc; i++)
            if (i != v)
                rest[n++] = argv[i];
        int rc = own_verbs[k].run(n, rest);
        free(rest);
        return rc;
    }
    ctl_opts o;
    memset(&o, 0, sizeof o);
    bool help = false;
    int rc = parse(argc, argv, &o, &help);
    if (help) {
        usage(stdout);
        return 0;
    }
    if (rc)
        return rc;
    if (!strcmp(o.verb, "join"))
        return cmd_join(&o);
    if (!strcmp(o.verb, "fault"))
        return cmd_fault(&o);
    return cmd_unjoin(&o);
}
