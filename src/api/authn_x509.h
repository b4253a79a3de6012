/* authn_x509.h - client-certificate authentication, as kube-apiserver's x509 authenticator:
 * a certificate that chains to a trusted CA (--client-ca-file; by default the control plane's
 * own, DIR/pki/ca.crt), is within its validity and allows client authentication names the
 * user by its subject's common name (CN) and the groups by its organizations (O).
 *
 * The TLS layer (http.c) asks every client for a certificate without requiring one and hands
 * the DER it got to fl_x509_authn_verify on the request's worker; all the checking is here,
 * with OpenSSL, so a certificate that fails is a 401 like any other bad credential.
 *
 * A verified certificate is remembered by its SHA-256 (a small table, until it expires or
 * for a minute at most) so a connection's requests do not verify its chain each time.
 *
 * Threads: fl_x509_authn_verify may be called from any thread, concurrently. */
#ifndef FL_AUTHN_X509_H
#define FL_AUTHN_X509_H

#include <stddef.h>

#include "api/auth.h"

typedef struct fl_x509_authn fl_x509_authn;

/* A verifier trusting the CA certificates in ca_pem (one or more PEM certificates). *out is
 * set on every path. Returns 0, or FL_EINVAL with *err (heap) when ca_pem holds none. */
int fl_x509_authn_new(const char *ca_pem, fl_x509_authn **out, char **err);
/* NULL-safe. No verification may be running. */
void fl_x509_authn_free(fl_x509_authn *x);

/* A certificate as the peer sent it: DER bytes (borrowed). */
typedef struct fl_x509_der {
    const unsigned char *data;
    size_t len;
} fl_x509_der;

/* Verify the peer's chain (certs[0] its own certificate, the rest intermediates it sent)
 * against the trusted CAs for client authentication at time now (seconds since the epoch; 0
 * = the clock). On success *who is the certificate's user (CN) with groups its O values and
 * system:authenticated, and 0 is returned; otherwise FL_EINVAL (*who all empty) and, when why
 * is not NULL, *why a static reason for the log ("certificate has expired", "unable to get
 * local issuer certificate", "no common name", ...). */
int fl_x509_authn_verify(fl_x509_authn *x, const fl_x509_der *certs, size_t n, long long now, fl_identity *who,
                         const char **why);

/* Let x issue client certificates too, with this CA (PEMs copied; the key is wiped at free):
 * what `flotilla ctl kubeconfig` asks for through POST FL_X509_SIGN_PATH. */
void fl_x509_authn_set_signer(fl_x509_authn *x, const char *ca_cert_pem, const char *ca_key_pem);
/* Sign csr_pem as fl_pki_sign_client does (tls.h). FL_EUNSUPPORTED when x has no signer. */
int fl_x509_authn_sign(fl_x509_authn *x, const char *csr_pem, long long seconds, char **cert_pem, char **err);

/* The signing endpoint: a ClientCertificate (flotilla.io/v1alpha1) with spec.request (base64 of
 * a PEM certificate request) and spec.expirationSeconds, answered with status.certificate. */
#define FL_X509_SIGN_PATH "/apis/flotilla.io/v1alpha1/clientcertificates"

#endif
