/* http_tls.c - kube-apiserver's TLS flags (--tls-min-version, --tls-cipher-suites) as the
 * GnuTLS priority string libmicrohttpd takes (see fl_http_tls_priorities in http.h). */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "api/http.h"
#include "core/err.h"
#include "core/mem.h"
#include "core/strbuf.h"

/* A cipher suite as kube-apiserver names it (Go's crypto/tls names, which are IANA's), and the
 * parts GnuTLS enables it by: key exchange ("" for TLS 1.3's suites, which name none), bulk
 * cipher, MAC. RC4 suites are left out: GnuTLS no longer offers them. */
typedef struct tls_suite {
    const char *name, *kx, *cipher, *mac;
} tls_suite;

static const tls_suite tls_suites[] = {
    {"TLS_AES_128_GCM_SHA256", "", "AES-128-GCM", "AEAD"},
    {"TLS_AES_256_GCM_SHA384", "", "AES-256-GCM", "AEAD"},
    {"TLS_CHACHA20_POLY1305_SHA256", "", "CHACHA20-POLY1305", "AEAD"},
    {"TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256", "ECDHE-ECDSA", "AES-128-GCM", "AEAD"},
    {"TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256", "ECDHE-RSA", "AES-128-GCM", "AEAD"},
    {"TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384", "ECDHE-ECDSA", "AES-256-GCM", "AEAD"},
    {"TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384", "ECDHE-RSA", "AES-256-GCM", "AEAD"},
    {"TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256", "ECDHE-ECDSA", "CHACHA20-POLY1305", "AEAD"},
    {"TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256", "ECDHE-RSA", "CHACHA20-POLY1305", "AEAD"},
    {"TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305", "ECDHE-ECDSA", "CHACHA20-POLY1305", "AEAD"},
    {"TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305", "ECDHE-RSA", "CHACHA20-POLY1305", "AEAD"},
    {"TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA", "ECDHE-ECDSA", "AES-128-CBC", "SHA1"},
    {"TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA", "ECDHE-RSA", "AES-128-CBC", "SHA1"},
    {"TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA", "ECDHE-ECDSA", "AES-256-CBC", "SHA1"},
    {"TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA", "ECDHE-RSA", "AES-256-CBC", "SHA1"},
    {"TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256", "ECDHE-ECDSA", "AES-128-CBC", "SHA256"},
    {"TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256", "ECDHE-RSA", "AES-128-CBC", "SHA256"},
    {"TLS_RSA_WITH_AES_128_GCM_SHA256", "RSA", "AES-128-GCM", "AEAD"},
    {"TLS_RSA_WITH_AES_256_GCM_SHA384", "RSA", "AES-256-GCM", "AEAD"},
    {"TLS_RSA_WITH_AES_128_CBC_SHA", "RSA", "AES-128-CBC", "SHA1"},
    {"TLS_RSA_WITH_AES_256_CBC_SHA", "RSA", "AES-256-CBC", "SHA1"},
    {"TLS_RSA_WITH_AES_128_CBC_SHA256", "RSA", "AES-128-CBC", "SHA256"},
    {"TLS_RSA_WITH_3DES_EDE_CBC_SHA", "RSA", "3DES-CBC", "SHA1"},
    {"TLS_ECDHE_RSA_WITH_3DES_EDE_CBC_SHA", "ECDHE-RSA", "3DES-CBC", "SHA1"},
};

/* The default, as a modern kube-apiserver would be configured: forward secrecy and AEAD only. */
#define TLS_DEFAULT_SUITES                                                                                            \
    "-CIPHER-ALL:+AES-128-GCM:+AES-256-GCM:+CHACHA20-POLY1305:-MAC-ALL:+AEAD:-KX-ALL:+ECDHE-ECDSA:+ECDHE-RSA"

/* Append ":+part" unless the string has it already: a part several suites share is named once. */
static void add_part(fl_strbuf *b, const char *part)
{
    if (!part[0])
        return;
    char item[48];
    snprintf(item, sizeof item, ":+%s", part);
    const char *p = fl_strbuf_str(b);
    size_t n = strlen(item);
    for (const char *hit = strstr(p, item); hit; hit = strstr(hit + 1, item))
        if (hit[n] == ':' || hit[n] == 0)
            return;
    fl_strbuf_adds(b, item);
}

int fl_http_tls_priorities(const char *min_version, const char *cipher_suites, char **out, char **err)
{
    *out = NULL;
    *err = NULL;
    const char *versions;
    if (!min_version || !min_version[0] || !strcmp(min_version, "VersionTLS12"))
        versions = "+VERS-TLS1.3:+VERS-TLS1.2";
    else if (!strcmp(min_version, "VersionTLS13"))
        versions = "+VERS-TLS1.3";
    else {
        *err = fl_asprintf("--tls-min-version %s: expected VersionTLS12 or VersionTLS13 (TLS 1.0 and 1.1 are "
                           "not offered)", min_version);
        return FL_EINVAL;
    }
    fl_strbuf b = FL_STRBUF_INIT;
    fl_strbuf_printf(&b, "NORMAL:-VERS-ALL:%s:", versions);
    if (!cipher_suites || !cipher_suites[0]) {
        fl_strbuf_adds(&b, TLS_DEFAULT_SUITES);
        *out = fl_strbuf_take(&b);
        return 0;
    }
    /* the parts of every suite named: ciphers, then MACs, then key exchanges */
    fl_strbuf parts[3] = {FL_STRBUF_INIT, FL_STRBUF_INIT, FL_STRBUF_INIT};
    for (int i = 0; i < 3; i++)
        fl_strbuf_adds(&parts[i], i == 0 ? "-CIPHER-ALL" : i == 1 ? ":-MAC-ALL" : ":-KX-ALL");
    int rc = 0;
    bool aead = false; /* a suite named whose cipher TLS 1.3 can use */
    const char *p = cipher_suites;
    while (*p) {
        size_t n = strcspn(p, ",");
        while (n && (*p == ' ')) {
            p++;
            n--;
        }
        size_t m = n;
        while (m && p[m - 1] == ' ')
            m--;
        const tls_suite *found = NULL;
        for (size_t i = 0; m && i < sizeof tls_suites / sizeof tls_suites[0]; i++)
            if (strlen(tls_suites[i].name) == m && !strncmp(tls_suites[i].name, p, m))
                found = &tls_suites[i];
        if (!found) {
            *err = fl_asprintf("--tls-cipher-suites: unknown or unsupported cipher suite \"%.*s\" (IANA names such "
                               "as TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256)", (int)m, p);
            rc = FL_EINVAL;
            goto cleanup;
        }
        aead = aead || !strcmp(found->mac, "AEAD");
        add_part(&parts[0], found->cipher);
        add_part(&parts[1], found->mac);
        add_part(&parts[2], found->kx);
        p += n;
        while (*p == ',' || *p == ' ')
            p++;
    }
    if (!aead && !strcmp(versions, "+VERS-TLS1.3")) {
        *err = fl_strdup("--tls-cipher-suites names no suite TLS 1.3 can use (AES-GCM or ChaCha20-Poly1305), "
                         "and --tls-min-version VersionTLS13 allows TLS 1.3 only");
        rc = FL_EINVAL;
        goto cleanup;
    }
    for (int i = 0; i < 3; i++)
        fl_strbuf_add(&b, parts[i].p, parts[i].len);
    *out = fl_strbuf_take(&b);
cleanup:
    for (int i = 0; i < 3; i++)
        fl_strbuf_close(&parts[i]);
    fl_strbuf_close(&b);
    return rc;
}

