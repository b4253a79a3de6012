/* test_interp_rules.c - a backend's named rules (interp/rules.h): items kept by name, a new
 * ruleset built on every change and the old one dropped, attach registering once. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "core/err.h"
#include "core/mem.h"
#include "interp/rules.h"

typedef struct item {
    char *name; /* first, as fl_interp_named_put wants */
    int value;
} item;

/* A ruleset that records what it was built from. */
typedef struct set {
    item **v;
    size_t n;
} set;

typedef struct backend {
    int built, dropped;
    fl_interp_rules rules;
} backend;

static void *build(void *self, void *items, size_t n)
{
    backend *b = self;
    b->built++;
    set *s = fl_calloc(1, sizeof *s);
    s->v = items;
    s->n = n;
    return s;
}

static void drop(void *self, void *rs)
{
    backend *b = self;
    set *s = rs;
    b->dropped++;
    free(s->v);
    free(s);
}

static item a1 = {"a", 1}, a2 = {"a", 2}, b1 = {"b", 1}, c1 = {"c", 1};

static void start(backend *b)
{
    memset(b, 0, sizeof *b);
    fl_interp_rules_init(&b->rules, NULL, b, (fl_interp_rules_ops){build, drop});
}

static void test_init_builds_an_empty_ruleset(void **state)
{
    (void)state;
    backend b;
    start(&b);
    assert_int_equal(b.built, 1);
    assert_int_equal(((set *)b.rules.cur)->n, 0);
    assert_int_equal(fl_interp_rules_count(&b.rules), 0);
    fl_interp_rules_close(&b.rules);
    assert_int_equal(b.dropped, 1);
}

static void test_put_keeps_items_sorted_by_name_and_replaces_same_name(void **state)
{
    (void)state;
    backend b;
    start(&b);
    fl_interp_rules_put(&b.rules, &c1);
    fl_interp_rules_put(&b.rules, &a1);
    fl_interp_rules_put(&b.rules, &b1);
    fl_interp_rules_put(&b.rules, &a2);
    set *s = b.rules.cur;
    assert_int_equal(s->n, 3);
    assert_ptr_equal(s->v[0], &a2);
    assert_ptr_equal(s->v[1], &b1);
    assert_ptr_equal(s->v[2], &c1);
    assert_int_equal(fl_interp_rules_count(&b.rules), 3);
    /* every change built a new ruleset and dropped the one it replaced */
    assert_int_equal(b.built, 5);
    assert_int_equal(b.dropped, 4);
    fl_interp_rules_close(&b.rules);
    assert_int_equal(b.dropped, 5);
}

static void test_remove_of_a_missing_name_changes_nothing(void **state)
{
    (void)state;
    backend b;
    start(&b);
    fl_interp_rules_put(&b.rules, &a1);
    void *before = b.rules.cur;
    int built = b.built;
    assert_int_equal(fl_interp_rules_remove(&b.rules, "zz"), FL_ENOTFOUND);
    assert_ptr_equal(b.rules.cur, before);
    assert_int_equal(b.built, built);
    assert_int_equal(fl_interp_rules_remove(&b.rules, "a"), 0);
    assert_int_equal(fl_interp_rules_count(&b.rules), 0);
    assert_int_equal(fl_interp_rules_remove(&b.rules, "a"), FL_ENOTFOUND);
    fl_interp_rules_close(&b.rules);
    assert_int_equal(b.built, b.dropped);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_init_builds_an_empty_ruleset),
        cmocka_unit_test(test_put_keeps_items_sorted_by_name_and_replaces_same_name),
        cmocka_unit_test(test_remove_of_a_missing_name_changes_nothing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
