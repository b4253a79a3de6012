/* reconciled.h - the revision at which every controller had finished, noted for the next start.
 *
 * Once the store's head has not moved for a quiet spell (FLOTILLA_RECONCILED_QUIET_MS, 1 s
 * by default) and every controller that resumes is idle (fl_ctrl_manager_idle), the head is
 * noted in the store as the revision every controller had finished at, with the build that
 * noted it, and beside it what the controllers note (fl_ctrl_note). A start whose head is
 * still that revision, by the same build, resumes there: the controllers skip their first
 * passes (docs/internals/propagation.md, "Resuming at a reconciled revision"). Any write
 * after the note, a kill before it, or another build means the next start reconciles
 * everything.
 *
 * The controllers do not see the store: the process hands this module a small interface to
 * it (fl_reconciled_store), as the server wires its store in (cli/server_cmd.c). */
#ifndef FL_RECONCILED_H
#define FL_RECONCILED_H

#include <stdbool.h>
#include <stdint.h>

#include "controllers/controller.h"
#include "core/json.h"

/* What this module needs of the store; every function any thread, ctx passed back. Notes
 * are the store's named numbers and texts kept beside the log (store.h, "notes"). */
typedef struct fl_reconciled_store {
    void *ctx;
    int64_t (*head)(void *ctx);                                   /* the head revision */
    /* Optional: whether nothing changed after rev up to the head (a store whose head moves
     * with revisions not its own: etcd's); NULL: only when the head is rev. */
    bool (*unchanged_since)(void *ctx, int64_t rev);
    int (*note_get)(void *ctx, const char *name, int64_t *value); /* 0, FL_ENOTFOUND, FL_EIO */
    int (*note_set)(void *ctx, const char *name, int64_t value);  /* durable on 0 */
    /* *text a heap string on 0 (the caller frees it) */
    int (*note_get_text)(void *ctx, const char *name, char **text);
    int (*note_set_text)(void *ctx, const char *name, const char *text);
} fl_reconciled_store;

/* Caller-owned; its fields are this module's (read them with the functions below). */
typedef struct fl_reconciled {
    fl_reconciled_store store;
    int64_t resumed_rev;  /* the revision this start resumes at, 0: none */
    int64_t seen, seen_at, noted, quiet_ms;
    unsigned notes;       /* atomic; bit i: fl_ctrl_note_names[i] is noted with noted */
} fl_reconciled;

/* Initialise r over store (copied), before anything writes to the store: whether this start
 * resumes is read here, from the notes and the head as they are now. Reads the quiet spell
 * from FLOTILLA_RECONCILED_QUIET_MS. */
void fl_reconciled_init(fl_reconciled *r, const fl_reconciled_store *store);
/* The revision this start resumes at (fl_ctrl_env.resumed_rev), or 0. Any thread. */
int64_t fl_reconciled_resumed_rev(const fl_reconciled *r);
/* What the controllers noted with the revision this start resumes at, {name: noted} (a new
 * reference, for fl_ctrl_env.resumed_notes; empty when it does not resume): a note made with
 * another revision is left out. Those found count as noted already. Once, before the
 * manager starts. */
json_t *fl_reconciled_resumed_notes(fl_reconciled *r);
/* Whether the member watches' note (FL_CTRL_NOTE_WATCHES) is noted with the revision last
 * noted (or resumed at). Any thread. */
bool fl_reconciled_watches_noted(const fl_reconciled *r);
/* The revision last noted as reconciled (at a start that resumes, that one), 0: none yet.
 * Any thread. */
int64_t fl_reconciled_noted(const fl_reconciled *r);

/* Look at the head at now_ms (a monotonic clock in ms) and note it once it has been still
 * for the quiet spell with every controller of m idle; then write the controllers' notes
 * that could not be given before. One thread, every quarter of a second or so. */
void fl_reconciled_tick(fl_reconciled *r, fl_ctrl_manager *m, int64_t now_ms);

#endif
