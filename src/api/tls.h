/* tls.h - the server's PKI: a CA and serving certificate generated on first start into
 * DIR/pki/, and an admin bearer token (the kubeconfig that carries them to kubectl is
 * written by fl_kubeconfig_write, client/kubeconfig.h).
 * The server's bootstrap token (DIR/pki/bootstrap.token) is made by fl_token_ensure.
 * Uses OpenSSL. Called at start-up from one thread. */
#ifndef FL_TLS_H
#define FL_TLS_H

typedef struct fl_pki {
    char *ca_cert_pem;      /* heap PEM strings */
    char *server_cert_pem;
    char *server_key_pem;
    char *admin_token;      /* 64 hex chars */
    char *ca_key_pem;       /* the CA's key: signs client certificates (fl_pki_sign_client) */
    char *sa_key_pem;       /* DIR/pki/sa.key: signs ServiceAccount tokens (sa_token.h) */
} fl_pki;

/* Check that the files under DIR/pki/ that hold secrets (the private keys, the admin and the
 * bootstrap token) are private to the server's user, as fl_pki_ensure does before it writes
 * anything: 0, or FL_EIO with *err (heap; may be NULL) naming the first file others can reach
 * and the chmod to run. Reads only. Any thread. */
int fl_pki_check_private(const char *dir, char **err);

/* Load DIR/pki/{ca.crt,ca.key,server.crt,server.key,sa.key} and DIR/pki/admin.token, creating
 * whatever is missing (CA: EC P-256, 10 years; serving cert signed by the CA with SANs
 * localhost, 127.0.0.1, ::1 and each entry of extra_sans (IPs or DNS names), 1 year).
 * Keys are written mode 0600. An existing key or token that the group or others may read is
 * refused before anything is written, *err naming it and the chmod to run. Returns 0 or
 * FL_EIO with *err a heap message. */
int fl_pki_ensure(const char *dir, const char *const *extra_sans, fl_pki *out, char **err);
void fl_pki_close(fl_pki *p);

/* Bounds of a client certificate's lifetime (fl_pki_sign_client), in seconds: at least ten
 * minutes, as certificates.k8s.io's expirationSeconds; one year when not asked. */
#define FL_PKI_CLIENT_MIN_SECONDS 600
#define FL_PKI_CLIENT_DEFAULT_SECONDS (365LL * 86400)

/* Sign the PKCS#10 request csr_pem (PEM, its signature checked: the requester holds the key)
 * as a client certificate of the CA in ca_cert_pem/ca_key_pem: subject CN and O values copied
 * from the request (a CN is required; other attributes and requested extensions are
 * ignored), extended key usage clientAuth only, valid from an hour ago for `seconds` (capped
 * at the CA's own expiry). *cert_pem (heap) set on success. Returns 0, or FL_EINVAL with *err
 * (heap) saying what is wrong with the request, or FL_EIO. Any thread. */
int fl_pki_sign_client(const char *ca_cert_pem, const char *ca_key_pem, const char *csr_pem, long long seconds,
                       char **cert_pem, char **err);

/* Load the token in path (64 hex digits, surrounding whitespace ignored), creating it from
 * 32 random bytes, mode 0600, if the file is missing (the admin token's format; the server's
 * bootstrap token uses it too). *out (heap) set on success, NULL otherwise. Returns 0 or
 * FL_EIO with *err a heap message (also for a file that holds something else). */
int fl_token_ensure(const char *path, char **out, char **err);

/* Constant-time comparison for tokens. */
int fl_token_equal(const char *a, const char *b);

#endif
