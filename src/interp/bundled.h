/* bundled.h - the interpreter customizations Flotilla ships for common CRDs.
 *
 * Karmada carries Lua customizations for third-party kinds and asks them after webhooks
 * and before its native rules; Flotilla does the same with its own scripts for
 * OpenKruise CloneSet and Advanced StatefulSet, Argo Workflow, Flux HelmRelease and
 * Kustomization, Kubeflow PyTorchJob, Ray RayCluster and Flink FlinkDeployment. Each is
 * an ordinary ResourceInterpreterCustomization in src/interp/bundled/<file>.yaml,
 * compiled into the binary at build time (embed.cmake), so a user can read, test
 * (`flotilla ctl interpret`) and override it like one of their own. docs/interpreter.md
 * lists what each does; src/interp/bundled/testdata/<file>/ holds its test cases.
 *
 * Pure functions over the embedded text: any thread. */
#ifndef FL_INTERP_BUNDLED_H
#define FL_INTERP_BUNDLED_H

#include <jansson.h>
#include <stddef.h>

#include "interp/lua.h"

/* How many customizations are bundled. */
size_t fl_bundled_count(void);

/* The i-th bundled customization (i < fl_bundled_count(), in file-name order) as a
 * ResourceInterpreterCustomization JSON object: *ric a new reference the caller owns.
 * *file (may be NULL) receives the file's stem, e.g. "kruise-cloneset" (static). Returns
 * 0, FL_ENOTFOUND for an i out of range, or FL_EINVAL with *err (malloc'd, caller frees;
 * err may be NULL) when the embedded YAML does not parse (a build that shipped a broken
 * file; test_bundled catches it first). *ric is NULL on failure. */
int fl_bundled_get(size_t i, json_t **ric, const char **file, char **err);

/* A summary of every bundled customization: *list (new reference) is an array of
 * {"file": "kruise-cloneset", "name": "flotilla-bundled-kruise-cloneset",
 *  "target": {"apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet"},
 *  "rules": ["replicaResource", ...]} in file-name order; rules are those with a
 * script, in the order of enum fl_interp_op.
 * Returns 0, or fl_bundled_get's error (then *list is NULL). */
int fl_bundled_list(json_t **list, char **err);

/* Set every bundled customization into b (fl_lua_backend_set: compiled and checked).
 * Returns 0, or the first failure's code with *err (malloc'd, caller frees; err may be
 * NULL) naming the file; customizations set before the failure stay in b. Call it on a
 * backend made for them (fl_lua_backend_new("bundled", ...)), attached to the registry
 * before the users' customization backend so that users' customizations win. */
int fl_bundled_load(fl_lua_backend *b, char **err);

/* A "bundled" backend with every bundled customization loaded and attached to ip (the
 * server's and the agent's registries alike). A customization that fails to load is logged
 * under `component` and the others stay in force. Free it after fl_interp_free(ip). */
fl_lua_backend *fl_bundled_attach(fl_interp *ip, const char *component);

#endif
