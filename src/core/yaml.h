/* yaml.h - YAML <-> JSON (jansson) through libfyaml.
 *
 * Kubernetes objects arrive as YAML in server-side apply bodies and in CLI files.
 * Scalars map as kubectl's YAML decoder (sigs.k8s.io/yaml over go-yaml v2, YAML 1.1
 * rules) maps them, so a manifest means the same here as there: plain scalars that
 * look like integers become JSON integers (int64 exact), floats become reals,
 * true/false/yes/no/on/off booleans, null/~/empty null; quoted scalars are always
 * strings. Anchors/aliases resolve; merge keys
 * ("<<") are expanded. Errors return FL_EINVAL with *err = heap message
 * "line L, column C: problem". Pure functions: any thread. */
#ifndef FL_YAML_H
#define FL_YAML_H

#include <jansson.h>
#include <stddef.h>

/* Parse exactly one document (an empty stream is FL_EINVAL "no document"). */
int fl_yaml_parse(const char *buf, size_t len, json_t **out, char **err);
/* fl_yaml_parse for bytes from the network: the input's length plus the JSON encoding of
 * every alias's copy may come to no more than max_bytes, checked at each alias before it is
 * expanded. Past it: FL_ETOOBIG, *err "line L, column C: aliases expand the document past N
 * bytes". What the input writes itself encodes to a small multiple of its length (quotes and
 * separators are added), so only aliases could multiply it, and they are what is counted.
 * max_bytes 0: no bound, as fl_yaml_parse. */
int fl_yaml_parse_limited(const char *buf, size_t len, size_t max_bytes, json_t **out, char **err);
/* Parse a multi-document stream ("---" separated) into a JSON array, skipping empty documents. */
int fl_yaml_parse_all(const char *buf, size_t len, json_t **out, char **err);
/* Render a JSON value as block YAML (kubectl -o yaml style, 2-space indent, keys in
 * the value's order). Returns a heap string; never NULL. */
char *fl_yaml_dump(const json_t *v);

#endif
