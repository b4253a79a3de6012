/* kubeconfig.h - reading kubeconfig files into what a client needs to connect, and
 * writing the small one the server, the simulated members and the agent hand out.
 *
 * A kubeconfig (the YAML file kubectl reads) names clusters, users and contexts; a
 * context pairs one cluster with one user. Loading resolves one context (the file's
 * current-context, or one named by the caller) into a flat fl_kubeconfig: the
 * server URL, how to trust the server (CA bytes or insecure-skip-tls-verify) and how
 * to authenticate (bearer token, client certificate, or basic auth). Files the
 * kubeconfig refers to (certificate-authority, tokenFile, client-certificate,
 * client-key) are read at load time, relative to the kubeconfig's directory as
 * kubectl resolves them, so the result holds bytes only and needs no filesystem later.
 *
 * Errors name the file and the field ("/home/u/.kube/config: users[name=admin].user.
 * client-key-data: not valid base64") so a user can fix the file without guessing.
 * Credential plugins (exec, auth-provider) are refused with FL_EUNSUPPORTED.
 *
 * Pure functions over caller-owned memory (the writers touch only the file they are
 * given): any thread. */
#ifndef FL_KUBECONFIG_H
#define FL_KUBECONFIG_H

#include <stdbool.h>
#include <stddef.h>

typedef struct fl_kubeconfig {
    char *origin;           /* the file it came from, or the caller's label; never NULL after load */
    char *context;          /* context used (NULL when built with fl_kubeconfig_init) */
    char *cluster;          /* cluster name from the context */
    char *user;             /* user name from the context */
    char *namespace;        /* the context's namespace, "default" when unset */
    char *server;           /* base URL, no trailing '/': "https://127.0.0.1:6443" */
    char *ca_pem;           /* CA bundle (PEM) to trust, or NULL for the system's */
    bool insecure;          /* insecure-skip-tls-verify: do not verify the server */
    char *tls_server_name;  /* name to check the server's certificate against, or NULL */
    char *token;            /* bearer token (token, else tokenFile's contents), or NULL */
    char *client_cert_pem;  /* client certificate (PEM), or NULL */
    char *client_key_pem;   /* its private key (PEM), or NULL */
    char *username;         /* basic auth, or NULL */
    char *password;
} fl_kubeconfig;

/* Load a kubeconfig file. path NULL means kubectl's default: the first file of
 * $KUBECONFIG (a ':'-separated list), else $HOME/.kube/config. context NULL (or "")
 * means the file's current-context. On success fills *out (caller closes it with
 * fl_kubeconfig_close). On failure *out is zeroed and *err (when err is not NULL) is
 * a heap message naming the file and the field; returns
 *   FL_ENOTFOUND    the file does not exist, or the context/cluster/user is missing
 *   FL_EIO          the file (or a file it names) cannot be read
 *   FL_EINVAL       malformed YAML or a field with a bad value
 *   FL_EUNSUPPORTED exec / auth-provider credential plugins */
int fl_kubeconfig_load(const char *path, const char *context, fl_kubeconfig *out, char **err);

/* The same from bytes already in memory. origin labels errors (and resolves relative
 * file references against its directory, as if it were the file's path). */
int fl_kubeconfig_parse(const char *buf, size_t len, const char *origin, const char *context,
                        fl_kubeconfig *out, char **err);

/* Fill *out for a server URL with an optional bearer token and no TLS settings (the
 * in-process and test case). Copies both strings; close with fl_kubeconfig_close. */
void fl_kubeconfig_init(fl_kubeconfig *out, const char *server, const char *token);

/* Write a kubeconfig (cluster "flotilla", user "admin", context "flotilla") for server_url
 * with the CA embedded (certificate-authority-data) and token auth (ca_pem NULL for plain
 * HTTP). Written atomically (temp file + rename), mode 0600. Returns 0 or FL_EIO. */
int fl_kubeconfig_write(const char *path, const char *server_url, const char *ca_pem, const char *token);

/* The same, naming the kubeconfig's user `user` (quoted unless a plain name). */
int fl_kubeconfig_write_user(const char *path, const char *server_url, const char *ca_pem, const char *user,
                             const char *token);

/* What fl_kubeconfig_format writes: one cluster, one user, one context. */
typedef struct fl_kubeconfig_spec {
    const char *server;     /* the URL */
    const char *ca_pem;     /* embedded as certificate-authority-data; NULL: none */
    const char *user;       /* the kubeconfig's user entry's name */
    const char *token;      /* bearer token; or */
    const char *cert_pem, *key_pem; /* a client certificate and its key (client-*-data) */
    const char *namespace;  /* the context's namespace; NULL: none */
    const char *cluster, *context; /* entry names; NULL: "flotilla" */
} fl_kubeconfig_spec;

/* The kubeconfig YAML of s (names quoted unless plain, PEMs base64 on one line, as kubectl
 * writes them). Heap string (*len bytes, len may be NULL; it holds credentials: wipe before
 * freeing), or NULL when out of memory for the stream. */
char *fl_kubeconfig_format(const fl_kubeconfig_spec *s, size_t *len);
/* The same for several: a cluster and a context per entry, a user entry per distinct user
 * name (the first entry's credentials), and the first entry's context current. */
char *fl_kubeconfig_format_many(const fl_kubeconfig_spec *ks, size_t n, size_t *len);

/* Free every field and zero the struct. NULL-safe; safe on a zeroed struct. */
void fl_kubeconfig_close(fl_kubeconfig *kc);

#endif
