/* test_reconciled.c - noting the revision at which the controllers had finished
 * (src/controllers/reconciled.c), through the small store interface the server fills in
 * (fl_reconciled_store), here a table of notes the test holds: a head that stays still for
 * the quiet spell while the controllers are idle is noted with the build; a head that moves
 * is not; a start at the noted head by the same build resumes there and no other start does;
 * a note that failed to be written is tried again. The controllers are the scheduler alone,
 * over an in-process API; the clock is the test's, passed to each tick. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "controllers/reconciled.h"
#include "core/build.h"
#include "core/err.h"
#include "core/mem.h"

#include "testapi.h"
#include "testutil.h"

#define DEADLINE_MS 10000
#define QUIET_MS 50

/* The store as the module sees it: a head the test moves, and notes by name. */
typedef struct fake_store {
    int64_t head;
    int fail_sets;  /* the next this many note writes fail with FL_EIO */
    int sets;       /* note writes that succeeded */
    bool unchanged; /* unchanged_since's answer, when the test sets that function */
    struct {
        char name[64];
        int64_t value;
        char *text;
    } notes[16];
    int n;
} fake_store;

static int find(fake_store *s, const char *name)
{
    for (int i = 0; i < s->n; i++)
        if (!strcmp(s->notes[i].name, name))
            return i;
    return -1;
}

static int at(fake_store *s, const char *name)
{
    int i = find(s, name);
    if (i < 0) {
        assert_true(s->n < 16);
        i = s->n++;
        snprintf(s->notes[i].name, sizeof s->notes[i].name, "%s", name);
    }
    return i;
}

static int64_t fs_head(void *ctx)
{
    return ((fake_store *)ctx)->head;
}

static int fs_get(void *ctx, const char *name, int64_t *value)
{
    int i = find(ctx, name);
    if (i < 0)
        return FL_ENOTFOUND;
    *value = ((fake_store *)ctx)->notes[i].value;
    return 0;
}

static int fs_set(void *ctx, const char *name, int64_t value)
{
    fake_store *s = ctx;
    if (s->fail_sets > 0) {
        s->fail_sets--;
        return FL_EIO;
    }
    s->notes[at(s, name)].value = value;
    s->sets++;
    return 0;
}

static int fs_get_text(void *ctx, const char *name, char **text)
{
    fake_store *s = ctx;
    int i = find(s, name);
    if (i < 0 || !s->notes[i].text)
        return FL_ENOTFOUND;
    *text = fl_strdup(s->notes[i].text);
    return 0;
}

static int fs_set_text(void *ctx, const char *name, const char *text)
{
    fake_store *s = ctx;
    int i = at(s, name);
    free(s->notes[i].text);
    s->notes[i].text = fl_strdup(text);
    return 0;
}

typedef struct fixture {
    test_fixture *t;
    fake_store fs;
    fl_reconciled_store iface;
} fixture;

static int setup(void **state)
{
    setenv("FLOTILLA_RECONCILED_QUIET_MS", "50", 1);
    fixture *f = fl_calloc(1, sizeof *f);
    f->t = test_fixture_new();
    test_ctrl_start(&f->t->api, "scheduler", &f->t->ctrl);
    f->iface = (fl_reconciled_store){.ctx = &f->fs,
                                     .head = fs_head,
                                     .note_get = fs_get,
                                     .note_set = fs_set,
                                     .note_get_text = fs_get_text,
                                     .note_set_text = fs_set_text};
    WAIT_UNTIL(fl_ctrl_manager_idle(f->t->ctrl.m), DEADLINE_MS);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    test_fixture_free(f->t);
    for (int i = 0; i < f->fs.n; i++)
        free(f->fs.notes[i].text);
    free(f);
    return 0;
}

static int64_t note(fixture *f, const char *name)
{
    int64_t v = -1;
    return fs_get(&f->fs, name, &v) == 0 ? v : -1;
}

static void a_still_head_with_idle_controllers_is_noted_with_the_build(void **state)
{
    fixture *f = *state;
    assert_true(fl_build_id() != 0); /* without a build id nothing is ever noted */
    f->fs.head = 7;
    fl_reconciled r;
    fl_reconciled_init(&r, &f->iface);
    assert_int_equal(fl_reconciled_resumed_rev(&r), 0); /* nothing noted: no resume */
    fl_reconciled_tick(&r, f->t->ctrl.m, 1000);             /* the head is seen */
    fl_reconciled_tick(&r, f->t->ctrl.m, 1000 + QUIET_MS - 1);
    assert_int_equal(note(f, "reconciled_rev"), -1); /* not still for long enough yet */
    fl_reconciled_tick(&r, f->t->ctrl.m, 1000 + QUIET_MS);
    assert_int_equal(note(f, "reconciled_rev"), 7);
    assert_int_equal(note(f, "reconciled_build"), fl_build_id());
    assert_int_equal(fl_reconciled_noted(&r), 7);
    int sets = f->fs.sets;
    fl_reconciled_tick(&r, f->t->ctrl.m, 1000 + 10 * QUIET_MS); /* the same head: written once */
    assert_int_equal(f->fs.sets, sets);
}

static void a_moving_head_is_noted_only_once_it_is_still_again(void **state)
{
    fixture *f = *state;
    f->fs.head = 10;
    fl_reconciled r;
    fl_reconciled_init(&r, &f->iface);
    int64_t t = 1000;
    fl_reconciled_tick(&r, f->t->ctrl.m, t);
    for (int i = 0; i < 5; i++) { /* a write every half spell */
        t += QUIET_MS / 2;
        f->fs.head++;
        fl_reconciled_tick(&r, f->t->ctrl.m, t);
        assert_int_equal(note(f, "reconciled_rev"), -1);
    }
    t += QUIET_MS / 2;
    fl_reconciled_tick(&r, f->t->ctrl.m, t); /* still for half a spell only */
    assert_int_equal(note(f, "reconciled_rev"), -1);
    t += QUIET_MS / 2;
    fl_reconciled_tick(&r, f->t->ctrl.m, t);
    assert_int_equal(note(f, "reconciled_rev"), 15);
}

static void only_a_start_at_the_noted_head_by_the_same_build_resumes(void **state)
{
    fixture *f = *state;
    f->fs.head = 21;
    fl_reconciled r;
    fl_reconciled_init(&r, &f->iface);
    fl_reconciled_tick(&r, f->t->ctrl.m, 0);
    fl_reconciled_tick(&r, f->t->ctrl.m, QUIET_MS);
    assert_int_equal(note(f, "reconciled_rev"), 21);

    fl_reconciled again; /* a restart with nothing written since */
    fl_reconciled_init(&again, &f->iface);
    assert_int_equal(fl_reconciled_resumed_rev(&again), 21);
    assert_int_equal(fl_reconciled_noted(&again), 21);

    f->fs.head = 22; /* a write after the note */
    fl_reconciled_init(&again, &f->iface);
    assert_int_equal(fl_reconciled_resumed_rev(&again), 0);

    f->fs.head = 21; /* another build noted it */
    fs_set(&f->fs, "reconciled_build", fl_build_id() + 1);
    fl_reconciled_init(&again, &f->iface);
    assert_int_equal(fl_reconciled_resumed_rev(&again), 0);
    json_t *notes = fl_reconciled_resumed_notes(&again);
    assert_int_equal(json_object_size(notes), 0); /* no resume: no controller's note either */
    json_decref(notes);
}

/* An etcd store: its head is the cluster's revision, moved by the note itself and by keys
 * of others; whether anything of the store changed after the note is its to say. */
static bool fs_unchanged_since(void *ctx, int64_t rev)
{
    (void)rev;
    return ((fake_store *)ctx)->unchanged;
}

static void a_start_past_the_noted_head_resumes_there_when_the_store_says_nothing_changed(void **state)
{
    fixture *f = *state;
    f->fs.head = 40;
    fl_reconciled r;
    fl_reconciled_init(&r, &f->iface);
    fl_reconciled_tick(&r, f->t->ctrl.m, 0);
    fl_reconciled_tick(&r, f->t->ctrl.m, QUIET_MS);
    assert_int_equal(note(f, "reconciled_rev"), 40);

    f->fs.head = 44; /* the notes' own revisions, and another prefix's */
    fl_reconciled again;
    fl_reconciled_init(&again, &f->iface); /* a store that cannot say: no resume */
    assert_int_equal(fl_reconciled_resumed_rev(&again), 0);
    f->iface.unchanged_since = fs_unchanged_since;
    f->fs.unchanged = true;
    fl_reconciled_init(&again, &f->iface);
    assert_int_equal(fl_reconciled_resumed_rev(&again), 40); /* the noted revision, not the head */
    assert_int_equal(fl_reconciled_noted(&again), 40);
    f->fs.unchanged = false; /* a key of the store changed after the note */
    fl_reconciled_init(&again, &f->iface);
    assert_int_equal(fl_reconciled_resumed_rev(&again), 0);
}

static void a_note_that_failed_is_written_on_a_later_tick(void **state)
{
    fixture *f = *state;
    f->fs.head = 30;
    fl_reconciled r;
    fl_reconciled_init(&r, &f->iface);
    fl_reconciled_tick(&r, f->t->ctrl.m, 0);
    f->fs.fail_sets = 1; /* the build's note fails: the revision must not be noted alone */
    fl_reconciled_tick(&r, f->t->ctrl.m, QUIET_MS);
    assert_int_equal(note(f, "reconciled_rev"), -1);
    assert_int_equal(fl_reconciled_noted(&r), 0);
    fl_reconciled_tick(&r, f->t->ctrl.m, QUIET_MS + 250);
    assert_int_equal(note(f, "reconciled_rev"), 30);
    assert_int_equal(fl_reconciled_noted(&r), 30);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(a_still_head_with_idle_controllers_is_noted_with_the_build, setup, teardown),
        cmocka_unit_test_setup_teardown(a_moving_head_is_noted_only_once_it_is_still_again, setup, teardown),
        cmocka_unit_test_setup_teardown(only_a_start_at_the_noted_head_by_the_same_build_resumes, setup, teardown),
        cmocka_unit_test_setup_teardown(a_note_that_failed_is_written_on_a_later_tick, setup, teardown),
        cmocka_unit_test_setup_teardown(a_start_past_the_noted_head_resumes_there_when_the_store_says_nothing_changed,
                                        setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
