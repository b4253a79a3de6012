/* base64.h - standard base64 (RFC 4648, "+/" alphabet), the encoding of Secret data,
 * kubeconfig *-data fields, continue tokens and protobuf bytes rendered as JSON.
 * Pure functions: any thread. */
#ifndef FL_BASE64_H
#define FL_BASE64_H

#include <stddef.h>

/* Encode n bytes with padding. Returns a NUL-terminated heap string; never NULL. */
char *fl_base64_encode(const void *data, size_t n);

/* Decode s, skipping whitespace (kubeconfig data may be wrapped); padding is optional but
 * '=' may only end the input. Returns a NUL-terminated heap buffer (the bytes may contain
 * NULs: *outlen, when not NULL, is their count), or NULL when s is not base64. */
char *fl_base64_decode(const char *s, size_t *outlen);

#endif
