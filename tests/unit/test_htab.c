/* test_htab.c - the shared intrusive hash table (core/htab.h): lookup, growth across many
 * doublings, colliding hashes, removal during iteration, replacement in place. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/hash.h"
#include "core/htab.h"
#include "core/mem.h"

typedef struct item {
    int value;
    fl_hnode node; /* not first: fl_htab_entry must undo the offset */
    char key[32];
} item;

static bool item_eq(const fl_hnode *n, const void *key)
{
    return !strcmp(fl_htab_entry(n, item, node)->key, key);
}

static item *get(const fl_htab *t, const char *key)
{
    return fl_htab_entry(fl_htab_find(t, fl_hash_str(key), item_eq, key), item, node);
}

static item *put(fl_htab *t, const char *key, int value)
{
    item *it = fl_calloc(1, sizeof *it);
    snprintf(it->key, sizeof it->key, "%s", key);
    it->value = value;
    fl_htab_add(t, &it->node, fl_hash_str(key));
    return it;
}

static void free_all(fl_htab *t)
{
    fl_htab_iter i;
    for (fl_hnode *n = fl_htab_first(t, &i); n; n = fl_htab_next(&i)) {
        fl_htab_remove(t, n);
        free(fl_htab_entry(n, item, node));
    }
    assert_int_equal(fl_htab_count(t), 0);
    fl_htab_close(t);
}

static void an_empty_table_finds_nothing_and_iterates_nothing(void **state)
{
    (void)state;
    fl_htab t = {0};
    assert_null(get(&t, "x"));
    fl_htab_iter i;
    assert_null(fl_htab_first(&t, &i));
    fl_htab_init(&t, 10);
    assert_null(get(&t, "x"));
    assert_null(fl_htab_first(&t, &i));
    fl_htab_close(&t);
}

static void entries_are_found_by_key_after_growth_across_many_doublings(void **state)
{
    (void)state;
    fl_htab t;
    fl_htab_init(&t, 4);
    char key[32];
    for (int i = 0; i < 20000; i++) {
        snprintf(key, sizeof key, "ns/name-%d", i);
        put(&t, key, i);
        assert_true(t.nb >= t.n); /* doubled once the entries outnumbered the buckets */
    }
    assert_int_equal(fl_htab_count(&t), 20000);
    assert_true(t.nb >= 16384);
    assert_int_equal(t.nb & (t.nb - 1), 0);
    for (int i = 0; i < 20000; i++) {
        snprintf(key, sizeof key, "ns/name-%d", i);
        item *it = get(&t, key);
        assert_non_null(it);
        assert_int_equal(it->value, i);
    }
    assert_null(get(&t, "ns/name-20000"));
    free_all(&t);
}

static bool collide_eq(const fl_hnode *n, const void *key)
{
    return fl_htab_entry(n, item, node)->value == *(const int *)key;
}

static void entries_with_equal_hashes_are_told_apart_by_the_callback(void **state)
{
    (void)state;
    fl_htab t = {0};
    item it[100];
    for (int i = 0; i < 100; i++) {
        it[i].value = i;
        fl_htab_add(&t, &it[i].node, 7); /* every one in one chain */
    }
    for (int i = 0; i < 100; i++)
        assert_ptr_equal(fl_htab_entry(fl_htab_find(&t, 7, collide_eq, &i), item, node), &it[i]);
    int none = 100;
    assert_null(fl_htab_find(&t, 7, collide_eq, &none));
    int five = 5;
    assert_null(fl_htab_find(&t, 8, collide_eq, &five)); /* another hash: never compared */
    fl_htab_remove(&t, &it[50].node);
    int fifty = 50;
    assert_null(fl_htab_find(&t, 7, collide_eq, &fifty));
    assert_ptr_equal(fl_htab_entry(fl_htab_find(&t, 7, collide_eq, &five), item, node), &it[5]);
    assert_int_equal(fl_htab_count(&t), 99);
    fl_htab_close(&t);
}

static void removing_the_current_entry_during_iteration_visits_every_other_once(void **state)
{
    (void)state;
    fl_htab t = {0};
    char key[32];
    for (int i = 0; i < 1000; i++) {
        snprintf(key, sizeof key, "k%d", i);
        put(&t, key, i);
    }
    int seen[1000] = {0};
    fl_htab_iter i;
    for (fl_hnode *n = fl_htab_first(&t, &i); n; n = fl_htab_next(&i)) {
        item *it = fl_htab_entry(n, item, node);
        seen[it->value]++;
        if (it->value % 2) { /* drop the odd ones as we go */
            fl_htab_remove(&t, n);
            free(it);
        }
    }
    for (int k = 0; k < 1000; k++)
        assert_int_equal(seen[k], 1);
    assert_int_equal(fl_htab_count(&t), 500);
    for (int k = 0; k < 1000; k++) {
        snprintf(key, sizeof key, "k%d", k);
        if (k % 2)
            assert_null(get(&t, key));
        else
            assert_int_equal(get(&t, key)->value, k);
    }
    free_all(&t);
}

static void replace_puts_the_new_entry_in_the_old_ones_place(void **state)
{
    (void)state;
    fl_htab t = {0};
    put(&t, "a", 1);
    item *old = put(&t, "b", 2);
    put(&t, "c", 3);
    item *fresh = fl_calloc(1, sizeof *fresh);
    snprintf(fresh->key, sizeof fresh->key, "b");
    fresh->value = 20;
    fl_htab_replace(&t, &old->node, &fresh->node);
    free(old);
    assert_int_equal(fl_htab_count(&t), 3);
    assert_ptr_equal(get(&t, "b"), fresh);
    assert_int_equal(get(&t, "a")->value, 1);
    assert_int_equal(get(&t, "c")->value, 3);
    free_all(&t);
}

static void a_closed_table_can_be_filled_again(void **state)
{
    (void)state;
    fl_htab t;
    fl_htab_init(&t, 16);
    put(&t, "x", 1);
    free_all(&t);
    assert_null(get(&t, "x"));
    put(&t, "y", 2);
    assert_int_equal(t.nb, 16); /* the size it was made with */
    assert_int_equal(get(&t, "y")->value, 2);
    free_all(&t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(an_empty_table_finds_nothing_and_iterates_nothing),
        cmocka_unit_test(entries_are_found_by_key_after_growth_across_many_doublings),
        cmocka_unit_test(entries_with_equal_hashes_are_told_apart_by_the_callback),
        cmocka_unit_test(removing_the_current_entry_during_iteration_visits_every_other_once),
        cmocka_unit_test(replace_puts_the_new_entry_in_the_old_ones_place),
        cmocka_unit_test(a_closed_table_can_be_filled_again),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
