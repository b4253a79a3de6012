/* test_file.c - the guards of a data directory (core/file.h): which files others may reach,
 * making a directory private, and the lock one owning process holds. Each test works in a
 * temporary directory of its own. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/err.h"
#include "core/file.h"
#include "core/mem.h"

static int setup_dir(void **state)
{
    char tmpl[] = "/tmp/fl-test-file-XXXXXX";
    char *d = mkdtemp(tmpl);
    assert_non_null(d);
    *state = strdup(d);
    return 0;
}

static int teardown_dir(void **state)
{
    char *cmd = fl_asprintf("rm -rf '%s'", (char *)*state);
    assert_int_equal(system(cmd), 0);
    free(cmd);
    free(*state);
    return 0;
}

static char *touch(const char *dir, const char *name, mode_t mode)
{
    char *p = fl_asprintf("%s/%s", dir, name);
    int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    assert_true(fd >= 0);
    close(fd);
    assert_int_equal(chmod(p, mode), 0);
    return p;
}

static void private_files_and_missing_ones_pass(void **state)
{
    char *a = touch(*state, "a.key", 0600), *b = touch(*state, "b.token", 0400);
    char *missing = fl_asprintf("%s/not-there", (char *)*state);
    const char *paths[] = {a, missing, b, NULL};
    char *err = (char *)"unset";
    assert_int_equal(fl_file_check_private(paths, &err), 0);
    assert_null(err);
    free(a);
    free(b);
    free(missing);
}

static void the_first_file_open_to_others_is_named_and_the_chmod_covers_them_all(void **state)
{
    char *a = touch(*state, "a.key", 0600), *b = touch(*state, "b.key", 0640), *c = touch(*state, "c.key", 0602);
    const char *paths[] = {a, b, c, NULL};
    char *err = NULL;
    assert_int_equal(fl_file_check_private(paths, &err), FL_EINVAL);
    char *want = fl_asprintf("%s is readable by others (mode 0640); run: chmod 600 %s %s", b, b, c);
    assert_string_equal(err, want);
    free(want);
    free(err);

    /* writable but not readable by others: said as it is */
    const char *only_c[] = {c, NULL};
    assert_int_equal(fl_file_check_private(only_c, &err), FL_EINVAL);
    assert_non_null(strstr(err, "is accessible by others (mode 0602)"));
    free(err);
    free(a);
    free(b);
    free(c);
}

static void a_directory_open_to_others_becomes_0700_and_a_private_one_is_left(void **state)
{
    const char *dir = *state;
    mode_t was = 0;
    assert_int_equal(chmod(dir, 0755), 0);
    assert_int_equal(fl_file_private_dir(dir, &was), 0);
    assert_int_equal(was, 0755);
    struct stat st;
    assert_int_equal(stat(dir, &st), 0);
    assert_int_equal(st.st_mode & 07777, 0700);

    assert_int_equal(chmod(dir, 0500), 0); /* private, if odd: not ours to change */
    assert_int_equal(fl_file_private_dir(dir, &was), 0);
    assert_int_equal(was, 0500);
    assert_int_equal(stat(dir, &st), 0);
    assert_int_equal(st.st_mode & 07777, 0500);
    assert_int_equal(chmod(dir, 0700), 0);
}

static void a_held_lock_is_refused_naming_its_holder_and_free_again_once_closed(void **state)
{
    char *path = fl_asprintf("%s/x.lock", (char *)*state);
    int fd = -2, fd2 = -2;
    long holder = -1;
    assert_int_equal(fl_file_lock(path, &fd, &holder), 0);
    assert_true(fd >= 0);
    assert_int_equal(holder, 0);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 07777, 0600);

    /* flock locks belong to an open file: a second open, even in this process, is refused */
    assert_int_equal(fl_file_lock(path, &fd2, &holder), FL_EEXIST);
    assert_int_equal(fd2, -1);
    assert_int_equal(holder, (long)getpid());

    close(fd);
    assert_int_equal(fl_file_lock(path, &fd2, &holder), 0);
    assert_true(fd2 >= 0);
    assert_int_equal(holder, 0);
    close(fd2);
    free(path);
}

static void a_lock_in_a_missing_directory_fails_with_errno(void **state)
{
    char *path = fl_asprintf("%s/no/such/dir/x.lock", (char *)*state);
    int fd = -2;
    long holder = -1;
    assert_int_equal(fl_file_lock(path, &fd, &holder), FL_EIO);
    assert_int_equal(errno, ENOENT);
    assert_int_equal(fd, -1);
    assert_int_equal(holder, 0);
    free(path);
}

#define T(f) cmocka_unit_test_setup_teardown(f, setup_dir, teardown_dir)

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(private_files_and_missing_ones_pass),
        T(the_first_file_open_to_others_is_named_and_the_chmod_covers_them_all),
        T(a_directory_open_to_others_becomes_0700_and_a_private_one_is_left),
        T(a_held_lock_is_refused_naming_its_holder_and_free_again_once_closed),
        T(a_lock_in_a_missing_directory_fails_with_errno),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
