/* fuzz_protobuf.c - libFuzzer target for the Kubernetes protobuf body decoder
 * (src/api/protobuf.c). Each input is tried three ways: as a whole body, behind
 * the "k8s\0" magic, and as the raw typed message of a kind chosen by its first
 * byte inside a well-formed runtime.Unknown envelope, so that mutations reach
 * the message tables rather than dying in the envelope. Checks the contract:
 * only 0, FL_EINVAL or FL_EUNSUPPORTED; *out set exactly on success, *err
 * exactly on failure; the result serializes. */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "api/protobuf.h"
#include "core/err.h"
#include "core/mem.h"

static void check(const unsigned char *p, size_t n)
{
    json_t *out = NULL;
    char *err = NULL;
    int rc = fl_protobuf_decode(p, n, &out, &err);
    if (rc == 0) {
        if (!out || err || !json_is_object(out))
            abort();
        char *s = json_dumps(out, JSON_COMPACT);
        if (!s)
            abort();
        free(s);
        json_decref(out);
    } else {
        if (out || !err || (rc != FL_EINVAL && rc != FL_EUNSUPPORTED))
            abort();
        free(err);
    }
}

/* append a varint */
static size_t varint(unsigned char *o, size_t v)
{
    size_t n = 0;
    do {
        o[n] = (unsigned char)(v & 0x7f);
        v >>= 7;
        if (v)
            o[n] |= 0x80;
        n++;
    } while (v);
    return n;
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    static int ready;
    if (!ready) {
        fl_mem_init();
        ready = 1;
    }
    check(data, size);

    unsigned char *m = malloc(size + FL_PB_MAGIC_LEN);
    memcpy(m, FL_PB_MAGIC, FL_PB_MAGIC_LEN);
    if (size)
        memcpy(m + FL_PB_MAGIC_LEN, data, size);
    check(m, size + FL_PB_MAGIC_LEN);
    free(m);

    if (size == 0)
        return 0;
    const fl_pb_kind *k = &fl_pb_kinds[data[0] % fl_pb_nkinds];
    size_t al = strlen(k->api_version), kl = strlen(k->kind);
    size_t cap = 64 + al + kl + size;
    unsigned char *b = malloc(cap), *o = b;
    memcpy(o, FL_PB_MAGIC, FL_PB_MAGIC_LEN);
    o += FL_PB_MAGIC_LEN;
    *o++ = 0x0a; /* typeMeta */
    o += varint(o, 2 + al + 2 + kl); /* kind names are short: one-byte lengths */
    *o++ = 0x0a;
    o += varint(o, al);
    memcpy(o, k->api_version, al);
    o += al;
    *o++ = 0x12;
    o += varint(o, kl);
    memcpy(o, k->kind, kl);
    o += kl;
    *o++ = 0x12; /* raw */
    o += varint(o, size - 1);
    memcpy(o, data + 1, size - 1);
    o += size - 1;
    check(b, (size_t)(o - b));
    free(b);
    return 0;
}
