/* kubeconfig_cmd.c - `flotilla ctl kubeconfig`: a kubeconfig for one person, with a client
 * certificate the control plane signs.
 *
 *   flotilla ctl kubeconfig --user NAME [--group G]... [--namespace NS] [--days N]
 *                           [--kubeconfig ADMIN] [--context C]  > alice.kubeconfig
 *
 * The key is made here (EC P-256) and never leaves this process except into the kubeconfig on
 * standard output. A certificate request (CN = NAME, one O per --group) goes to the control
 * plane's POST /apis/flotilla.io/v1alpha1/clientcertificates, which only system:masters may
 * call (the admin kubeconfig's identity), and which signs it with the control plane's CA for
 * client authentication. The control plane keeps no record: the certificate is the
 * credential, valid until it expires (--days, default 365).
 *
 * Why not a certificates.k8s.io CertificateSigningRequest: the control plane does not serve
 * CSRs with a signer behind them (create, approve, wait for status.certificate); the endpoint
 * takes the same spec.request and spec.expirationSeconds, so the switch is small when it does.
 *
 * Exit codes: 0 done, 1 failure (one line on stderr), 2 usage. */
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/ctl_out.h"
#include "client/client.h"
#include "client/kubeconfig.h"
#include "core/base64.h"
#include "core/err.h"
#include "core/json.h"
#include "core/mem.h"

#define SIGN_PATH "/apis/flotilla.io/v1alpha1/clientcertificates"
#define MAX_GROUPS 15
#define MAX_DAYS 3650

typedef struct kc_opts {
    const char *kubeconfig, *context, *user, *ns;
    const char *groups[MAX_GROUPS];
    int ngroups;
    long days;
} kc_opts;

static void usage(FILE *f)
{
    fprintf(f, "Usage: flotilla ctl kubeconfig --user NAME [--group GROUP]... [--namespace NS] [--days N]\n"
               "                               [--kubeconfig ADMIN] [--context NAME]\n"
               "\n"
               "Prints on standard output a kubeconfig that authenticates as NAME (in the groups given)\n"
               "with a client certificate signed by the control plane's CA. ADMIN is a kubeconfig of\n"
               "system:masters (default: $KUBECONFIG, then ~/.kube/config); the server and its CA come\n"
               "from it. NAME is the user RBAC sees, each GROUP a group.\n"
               "\n"
               "  --user NAME       the certificate's common name (required)\n"
               "  --group GROUP     an organization of the certificate; repeat for more (at most 15)\n"
               "  --namespace NS    the context's default namespace\n"
               "  --days N          validity in days (default 365, at most 3650)\n");
}

static int usage_error(const char *fmt, const char *arg)
{
    fprintf(stderr, "flotilla ctl kubeconfig: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, " (see 'flotilla ctl kubeconfig --help')\n");
    return 2;
}

/* "--flag VALUE" or "--flag=VALUE" at argv[*i] for name; NULL when argv[*i] is another flag. */
static const char *flag_value(const char *name, int argc, char **argv, int *i, bool *missing)
{
    const char *a = argv[*i];
    size_t n = strlen(name);
    if (strncmp(a, name, n) || (a[n] && a[n] != '='))
        return NULL;
    if (a[n] == '=')
        return a + n + 1;
    if (*i + 1 >= argc) {
        *missing = true;
        return NULL;
    }
    return argv[++*i];
}

static int parse(int argc, char **argv, kc_opts *o, bool *help)
{
    o->days = 365;
    const char *days = NULL;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i], *v;
        bool missing = false;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            *help = true;
            return 0;
        }
        if ((v = flag_value("--user", argc, argv, &i, &missing)))
            o->user = v;
        else if ((v = flag_value("--group", argc, argv, &i, &missing))) {
            if (o->ngroups == MAX_GROUPS)
                return usage_error("%s: at most 15 groups", "--group");
            o->groups[o->ngroups++] = v;
        } else if ((v = flag_value("--namespace", argc, argv, &i, &missing)) ||
                   (v = flag_value("-n", argc, argv, &i, &missing)))
            o->ns = v;
        else if ((v = flag_value("--kubeconfig", argc, argv, &i, &missing)))
            o->kubeconfig = v;
        else if ((v = flag_value("--context", argc, argv, &i, &missing)))
            o->context = v;
        else if ((v = flag_value("--days", argc, argv, &i, &missing)))
            days = v;
        else if (missing)
            return usage_error("%s needs a value", a);
        else
            return usage_error("unexpected argument \"%s\"", a);
    }
    if (!o->user || !o->user[0])
        return usage_error("%s", "--user NAME is required");
    for (int g = 0; g < o->ngroups; g++)
        if (!o->groups[g][0])
            return usage_error("%s", "--group needs a non-empty value");
    if (days) {
        char *end;
        o->days = strtol(days, &end, 10);
        if (*end || end == days || o->days < 1 || o->days > MAX_DAYS)
            return usage_error("--days %s: expected a whole number of days from 1 to 3650", days);
    }
    return 0;
}

/* A fresh EC P-256 key and a certificate request for it naming user and groups, as PEM (heap
 * strings). 0, or FL_EIO. */
static int make_request(const kc_opts *o, char **key_pem, char **csr_pem)
{
    *key_pem = *csr_pem = NULL;
    EVP_PKEY *key = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256");
    X509_REQ *req = X509_REQ_new();
    BIO *kb = BIO_new(BIO_s_mem()), *rb = BIO_new(BIO_s_mem());
    int rc = FL_EIO;
    if (!key || !req || !kb || !rb)
        goto out;
    X509_NAME *name = X509_REQ_get_subject_name(req);
    if (X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8, (const unsigned char *)o->user, -1, -1, 0) != 1)
        goto out;
    for (int i = 0; i < o->ngroups; i++)
        if (X509_NAME_add_entry_by_txt(name, "O", MBSTRING_UTF8, (const unsigned char *)o->groups[i], -1, -1, 0) != 1)
            goto out;
    if (X509_REQ_set_pubkey(req, key) != 1 || X509_REQ_sign(req, key, EVP_sha256()) <= 0 ||
        PEM_write_bio_PrivateKey(kb, key, NULL, NULL, 0, NULL, NULL) != 1 || PEM_write_bio_X509_REQ(rb, req) != 1)
        goto out;
    char *data;
    long n = BIO_get_mem_data(kb, &data);
    *key_pem = fl_strndup(data, (size_t)n);
    n = BIO_get_mem_data(rb, &data);
    *csr_pem = fl_strndup(data, (size_t)n);
    rc = 0;
out:
    ERR_clear_error();
    EVP_PKEY_free(key);
    X509_REQ_free(req);
    BIO_free(kb);
    BIO_free(rb);
    return rc;
}

int fl_ctl_kubeconfig(int argc, char **argv)
{
    kc_opts o = {0};
    bool help = false;
    int rc = parse(argc, argv, &o, &help);
    if (help) {
        usage(stdout);
        return 0;
    }
    if (rc)
        return rc;
    fl_kubeconfig admin;
    char *err = NULL, *key_pem = NULL, *csr_pem = NULL, *cert_pem = NULL, *out = NULL;
    fl_client *c = NULL;
    json_t *body = NULL, *resp = NULL;
    size_t len = 0;
    if ((rc = fl_kubeconfig_load(o.kubeconfig, o.context, &admin, &err))) {
        fl_ctl_out_fail("kubeconfig", "control plane kubeconfig: %s", err ? err : fl_strerror(rc));
        free(err);
        return 1;
    }
    if ((rc = fl_client_new(&admin, &(fl_client_options){.user_agent = "flotilla-ctl", .timeout_ms = 30000}, &c,
                            &err))) {
        fl_ctl_out_fail("kubeconfig", "control plane kubeconfig: %s", err ? err : fl_strerror(rc));
        goto out;
    }
    if (make_request(&o, &key_pem, &csr_pem)) {
        rc = fl_ctl_out_fail("kubeconfig", "cannot make a key and certificate request (OpenSSL)");
        goto out;
    }
    char *csr64 = fl_base64_encode(csr_pem, strlen(csr_pem));
    body = json_pack("{s:s, s:s, s:{s:s, s:I}}", "apiVersion", "flotilla.io/v1alpha1", "kind", "ClientCertificate",
                     "spec", "request", csr64, "expirationSeconds", (json_int_t)o.days * 86400);
    free(csr64);
    size_t blen;
    char *btext = fl_json_dumps(body, &blen);
    fl_client_error ce = {0};
    rc = fl_client_request(c, "POST", SIGN_PATH, "application/json", btext, blen, NULL, &resp, &ce);
    free(btext);
    if (rc) {
        fl_ctl_out_fail("kubeconfig", "signing a certificate for %s: %s", o.user,
                        ce.http == 403 ? "forbidden: the kubeconfig given must be an administrator's (system:masters)"
                                       : fl_errmsg(ce.message, rc));
        goto out;
    }
    const char *cert64 = json_string_value(json_object_get(json_object_get(resp, "status"), "certificate"));
    if (!cert64 || !(cert_pem = fl_base64_decode(cert64, NULL))) {
        rc = fl_ctl_out_fail("kubeconfig", "the control plane's answer has no status.certificate");
        goto out;
    }
    char context[300];
    snprintf(context, sizeof context, "%s@flotilla", o.user);
    out = fl_kubeconfig_format(&(fl_kubeconfig_spec){.server = admin.server, .ca_pem = admin.ca_pem, .user = o.user,
                                                     .cert_pem = cert_pem, .key_pem = key_pem, .namespace = o.ns,
                                                     .context = context},
                               &len);
    if (!out || fwrite(out, 1, len, stdout) != len || fflush(stdout) != 0) {
        rc = fl_ctl_out_fail("kubeconfig", "cannot write the kubeconfig to standard output");
        goto out;
    }
    rc = 0;
out:
    if (out)
        OPENSSL_cleanse(out, len);
    free(out);
    if (key_pem)
        OPENSSL_cleanse(key_pem, strlen(key_pem));
    free(key_pem);
    free(csr_pem);
    free(cert_pem);
    free(err);
    json_decref(body);
    json_decref(resp);
    fl_client_free(c);
    fl_kubeconfig_close(&admin);
    return rc ? 1 : 0;
}
