/* overriders.h - the seven Karmada overriders (internal to src/policy/).
 *
 * override.c decides which rules apply to a manifest; this module validates one
 * rule's Overriders object and applies it. Messages name fields relative to the
 * Overriders object ("imageOverrider[0].component: ..."); override.c prefixes the
 * policy and rule. Pure functions: any thread. */
#ifndef FL_POLICY_OVERRIDERS_H
#define FL_POLICY_OVERRIDERS_H

#include <jansson.h>

/* Check the shape of an Overriders object (NULL/null = no overriders): list types,
 * required fields, operator and component enums, JSON pointers, the one-of json/yaml
 * of a fieldOverrider. Returns 0, or FL_EINVAL with *err (heap) naming the field. */
int fl_overriders_validate(const json_t *ovr, char **err);

/* The Overriders in Karmada's canonical form (field order and omitted-when-empty rules
 * of its Go types), as recorded in the applied-overrides annotations. ovr must have
 * passed fl_overriders_validate. Returns a new reference; never NULL. */
json_t *fl_overriders_canonical(const json_t *ovr);

/* Apply a validated Overriders to *doc, in Karmada's order. *doc may be replaced by a
 * new value (the old one is released). On failure *doc is left in some intermediate
 * state (the caller works on a copy and drops it) and *err names the overrider. */
int fl_overriders_apply(json_t **doc, const json_t *ovr, char **err);

/* Parsed container image reference, as Karmada's imageparser splits it. */
typedef struct fl_image_ref {
    char *host;   /* registry with optional port, "" when none */
    char *repo;   /* path after the registry */
    char *tag;    /* "" when none */
    char *digest; /* "" when none or when a tag is present (the tag wins) */
} fl_image_ref;

/* Parse image per the distribution reference grammar. Returns 0 and *ref (free with
 * fl_image_ref_close), or FL_EINVAL with *why a static reason (ref zeroed). */
int fl_image_ref_parse(const char *image, fl_image_ref *ref, const char **why);
/* Render: host/repo:tag, host/repo@digest or host/repo; heap string. */
char *fl_image_ref_string(const fl_image_ref *ref);
void fl_image_ref_close(fl_image_ref *ref);

#endif
