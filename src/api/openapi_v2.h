/* openapi_v2.h - the protobuf form of the OpenAPI v2 (swagger 2.0) document.
 *
 * client-go (discovery.OpenAPISchema, used by `kubectl explain
 * --output=plaintext-openapiv2` and older kubectl validation) asks /openapi/v2 for
 * application/com.github.proto-openapi.spec.v2@v1.0+protobuf and decodes the answer as
 * gnostic's openapi_v2.Document without looking at the content type, so the JSON
 * document (openapi.c) is also served in that encoding. Pure computation: any thread. */
#ifndef FL_OPENAPI_V2_H
#define FL_OPENAPI_V2_H

#include <jansson.h>
#include <stddef.h>

/* The Accept value client-go sends for the protobuf form. */
#define FL_OPENAPI_V2_PB_TYPE "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"

/* Encode a swagger 2.0 document (as openapi.c builds it) as an openapi.v2.Document
 * message. Schemas keep their JSON Schema keywords that the message has fields for;
 * x-* keys become vendor extensions carrying their value as YAML (JSON text); other
 * keys are dropped. Returns heap bytes (never NULL; out of memory aborts) and their
 * length in *len. */
unsigned char *fl_openapi_v2_encode(const json_t *doc, size_t *len);

#endif
