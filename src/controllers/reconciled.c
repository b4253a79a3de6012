/* reconciled.c - noting the revision every controller had finished at, and resuming there
 * (reconciled.h; docs/internals/propagation.md, "Resuming at a reconciled revision").
 *
 * Two notes say where a start may resume: NOTE_BUILD, the build that noted, written first,
 * and NOTE_REV, the revision, written last, so that a note of the revision alone never pairs
 * with another build's. Between them go the controllers' own notes (fl_ctrl_note), each
 * under its name as {"rev": <the reconciled revision>, "noted": ...}: where the member
 * watches had reached, once the execution controller is idle; which bindings propagate
 * dependencies. A start reads them through fl_reconciled_store, the only way this module
 * reaches the store. */
#include "controllers/reconciled.h"

#include <stdlib.h>
#include <string.h>

#include "core/build.h"
#include "core/env.h"
#include "core/log.h"

#define RECONCILED_QUIET_MS 1000 /* FLOTILLA_RECONCILED_QUIET_MS */
#define NOTE_REV "reconciled_rev"
#define NOTE_BUILD "reconciled_build"

/* The reconciled revision this build noted, if nothing changed since (the head is still
 * it, or, on etcd, only revisions outside the store came after it); else 0. */
static int64_t resumes_at(const fl_reconciled_store *st)
{
    int64_t rev = 0, build = 0, head = st->head(st->ctx);
    if (!fl_build_id() || st->note_get(st->ctx, NOTE_REV, &rev) || st->note_get(st->ctx, NOTE_BUILD, &build) ||
        build != fl_build_id() || rev <= 0)
        return 0;
    if (rev == head)
        return rev;
    return st->unchanged_since && rev < head && st->unchanged_since(st->ctx, rev) ? rev : 0;
}

void fl_reconciled_init(fl_reconciled *r, const fl_reconciled_store *store)
{
    int64_t resumed = resumes_at(store);
    *r = (fl_reconciled){.store = *store,
                         .resumed_rev = resumed,
                         .seen = -1,
                         .noted = resumed,
                         .quiet_ms = fl_env_ms("FLOTILLA_RECONCILED_QUIET_MS", RECONCILED_QUIET_MS, 0)};
}

int64_t fl_reconciled_resumed_rev(const fl_reconciled *r)
{
    return r->resumed_rev;
}

json_t *fl_reconciled_resumed_notes(fl_reconciled *r)
{
    const fl_reconciled_store *st = &r->store;
    json_t *out = json_object();
    for (unsigned i = 0; r->resumed_rev && fl_ctrl_note_names[i]; i++) {
        char *text = NULL;
        if (st->note_get_text(st->ctx, fl_ctrl_note_names[i], &text))
            continue;
        json_t *note = fl_json_load(text, strlen(text));
        free(text);
        json_t *at = json_object_get(note, "rev"), *noted = json_object_get(note, "noted");
        if (json_is_integer(at) && json_integer_value(at) == r->resumed_rev && noted) {
            json_object_set(out, fl_ctrl_note_names[i], noted);
            r->notes |= 1u << i;
        }
        json_decref(note);
    }
    return out;
}

static unsigned all_notes(void)
{
    unsigned n = 0;
    while (fl_ctrl_note_names[n])
        n++;
    return (1u << n) - 1;
}

/* The bit of the member watches' note. */
static unsigned watches_bit(void)
{
    for (unsigned i = 0; fl_ctrl_note_names[i]; i++)
        if (!strcmp(fl_ctrl_note_names[i], FL_CTRL_NOTE_WATCHES))
            return 1u << i;
    return 0;
}

bool fl_reconciled_watches_noted(const fl_reconciled *r)
{
    return (__atomic_load_n(&r->notes, __ATOMIC_RELAXED) & watches_bit()) != 0;
}

int64_t fl_reconciled_noted(const fl_reconciled *r)
{
    return __atomic_load_n(&r->noted, __ATOMIC_RELAXED);
}

/* Write the controllers' notes not yet written for the reconciled revision head, those
 * their controllers can give now (the execution controller's once it is idle). */
static void write_notes(fl_reconciled *r, fl_ctrl_manager *m, int64_t head)
{
    const fl_reconciled_store *st = &r->store;
    unsigned have = __atomic_load_n(&r->notes, __ATOMIC_RELAXED);
    for (unsigned i = 0; fl_ctrl_note_names[i]; i++) {
        if (have & (1u << i))
            continue;
        json_t *noted = fl_ctrl_manager_note(m, fl_ctrl_note_names[i], head);
        if (!noted)
            continue;
        json_t *note = json_pack("{s:I, s:o}", "rev", (json_int_t)head, "noted", noted);
        char *text = fl_json_dumps(note, NULL);
        json_decref(note);
        if (st->note_set_text(st->ctx, fl_ctrl_note_names[i], text) == 0)
            have |= 1u << i;
        free(text);
    }
    __atomic_store_n(&r->notes, have, __ATOMIC_RELAXED);
}

void fl_reconciled_tick(fl_reconciled *r, fl_ctrl_manager *m, int64_t now_ms)
{
    const fl_reconciled_store *st = &r->store;
    int64_t head = st->head(st->ctx);
    if (head != r->seen) {
        r->seen = head;
        r->seen_at = now_ms;
        return;
    }
    if ((head == r->noted && r->notes == all_notes()) || now_ms - r->seen_at < r->quiet_ms || !fl_build_id() ||
        !fl_ctrl_manager_idle(m))
        return;
    if (head == r->noted) {
        /* a controller could not say yet when the revision was noted (the execution
         * controller still busy with its members), or the start resumed without its note:
         * it follows once it can */
        write_notes(r, m, head);
        return;
    }
    /* the build first: a note of the revision alone never pairs with another build's; the
     * controllers' notes before the revision too, naming the revision they go with */
    if (st->note_set(st->ctx, NOTE_BUILD, fl_build_id()))
        return;
    __atomic_store_n(&r->notes, 0, __ATOMIC_RELAXED);
    write_notes(r, m, head);
    if (st->note_set(st->ctx, NOTE_REV, head) == 0) {
        __atomic_store_n(&r->noted, head, __ATOMIC_RELAXED);
        /* the server's log, as it is the server's store that keeps the note */
        fl_log(FL_LOG_DEBUG, "server", "the controllers are idle at revision %lld: noted as reconciled%s",
               (long long)head, r->notes & watches_bit() ? ", with the member watches" : "");
    }
}
