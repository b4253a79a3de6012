/* interpret_cmd.h - `flotilla ctl interpret`: check or run a ResourceInterpreterCustomization
 * offline, against files, with the same Lua engine the server uses (src/interp/lua.h).
 *
 * fl_ctl_interpret is the command; fl_interpret_op_parse and fl_interpret_execute are
 * its core, shared with the unit test that runs the bundled customizations' test cases
 * (tests/unit/test_bundled.c), so that what the tests check is what the command prints. */
#ifndef FL_CLI_INTERPRET_CMD_H
#define FL_CLI_INTERPRET_CMD_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "interp/interp.h"

/* The command. argv[0] is "interpret" (argv starts after `flotilla ctl`), the flags
 * follow; see --help. Prints results on stdout, one error line on stderr. Returns the
 * exit code: 0 done, 1 failure (a script error, a check that found an ERROR, missing or
 * unreadable input), 2 usage (unknown flag or operation, no -f). Main thread only
 * (reads stdin for "-"). */
int fl_ctl_interpret(int argc, char **argv);

/* Karmada's --operation names: interpretReplica, reviseReplica, retain, interpretStatus,
 * aggregateStatus, interpretHealth, interpretDependency (matched ignoring case, as
 * karmadactl does). Returns 0 with *op set, or FL_EINVAL for any other name. */
int fl_interpret_op_parse(const char *name, enum fl_interp_op *op);

/* The --operation name of op ("interpretReplica", ...); "" for a bad value. */
const char *fl_interpret_op_flag(enum fl_interp_op op);

/* Inputs of one run; NULL when not given. */
typedef struct fl_interpret_inputs {
    const json_t *desired;      /* --desired-file */
    const json_t *observed;     /* --observed-file */
    const json_t *status_items; /* --status-file: array of AggregatedStatusItem or null; NULL: none
                                 * given, statusItems is nil */
    bool has_replica;           /* --desired-replica given */
    int64_t desired_replica;
} fl_interpret_inputs;

/* Run operation op of the customization ric on in, as karmadactl's interpret does: retain
 * takes the desired and the observed object; every other operation takes one object,
 * the desired or the observed one (not both); reviseReplica also needs the replica
 * count; aggregateStatus takes the status items if any. *results (new reference) is an object of the
 * named results karmadactl prints, in its order:
 *   interpretReplica     {"replica": N, "requires": {...} | null}
 *   reviseReplica        {"revised": {...}}
 *   retain               {"retained": {...}}
 *   interpretStatus      {"status": {...} | null}
 *   aggregateStatus      {"aggregatedStatus": {...}}
 *   interpretHealth      {"healthy": true | false}
 *   interpretDependency  {"dependencies": [...]}
 * Returns 0; FL_EINVAL with *err naming the flag when an input is missing or both
 * objects are given, or holding the engine's message (customization, function, script
 * line) when the script fails; FL_EUNSUPPORTED with *err when ric has no script for op.
 * *err is malloc'd (caller frees; NULL on success; err may be NULL); *results is NULL on
 * failure. Any thread. */
int fl_interpret_execute(const json_t *ric, enum fl_interp_op op, const fl_interpret_inputs *in, json_t **results,
                         char **err);

#endif
