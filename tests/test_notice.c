/* Notices (cls_set_notice): an engine that compiles its kernels from source says so, once per
 * program, through the function set; one that loads them from the program cache says nothing;
 * with no function set (the default, or NULL again) nothing is sent anywhere. The OpenCL device is
 * $CLS_TEST_DEVICE, default POCL's CPU device. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "clsearch.h"
#include "testutil.h"

typedef struct seen {
    int n;
    char last[1024];
} seen;

static void on_notice(void *user, const char *line)
{
    seen *s = user;
    s->n++;
    snprintf(s->last, sizeof s->last, "%s", line);
}

static cls_index *small_index(void)
{
    cls_analyzer_opts an;
    cls_analyzer_defaults(&an);
    cls_builder *b;
    ck_assert_int_eq(cls_builder_create(&an, &b), CLS_OK);
    ck_assert_int_eq(cls_builder_add(b, "d1", 2, "apple pie", 9), CLS_OK);
    ck_assert_int_eq(cls_builder_add(b, "d2", 2, "apple juice", 11), CLS_OK);
    const char *path = tu_tmp_path("notice.idx");
    ck_assert_int_eq(cls_builder_write(b, path), CLS_OK);
    cls_builder_free(b);
    cls_index *idx;
    ck_assert_int_eq(cls_index_open(path, &idx), CLS_OK);
    return idx;
}

/* One engine start on the device; whether its programs came from the cache. */
static int start(cls_index *idx)
{
    cls_engine *e;
    ck_assert_msg(cls_engine_create(idx, tu_device(), &e) == CLS_OK, "%s", cls_last_error());
    double secs;
    int cached;
    cls_engine_build_times(e, &secs, &cached);
    cls_engine_free(e);
    return cached;
}

START_TEST(compiling_is_announced_loading_is_not)
{
    /* an empty program cache of its own, so the first start compiles */
    const char *cache = tu_tmp_path("notice-cache");
    ck_assert_int_eq(mkdir(cache, 0755), 0);
    setenv("CLSEARCH_CACHE_DIR", cache, 1);
    cls_index *idx = small_index();
    seen s = {0};

    cls_set_notice(on_notice, &s);
    ck_assert_int_eq(start(idx), 0);
    ck_assert_msg(s.n >= 1, "a cold start sent no notice");
    char want[4300];
    snprintf(want, sizeof want, "(once; cached in %s", cache); /* "... and the driver's own cache" on POCL */
    ck_assert_msg(strncmp(s.last, "compiling kernels for ", 22) == 0 && strstr(s.last, want) != NULL,
                  "notice: %s", s.last);

    /* the same start again: the programs come from the cache, and nothing is said */
    s.n = 0;
    ck_assert_int_eq(start(idx), 1);
    ck_assert_int_eq(s.n, 0);

    /* with no function, a compiling start sends nothing (a fresh cache: it compiles) */
    const char *cache2 = tu_tmp_path("notice-cache");
    ck_assert_int_eq(mkdir(cache2, 0755), 0);
    setenv("CLSEARCH_CACHE_DIR", cache2, 1);
    cls_set_notice(NULL, NULL);
    ck_assert_int_eq(start(idx), 0);
    ck_assert_int_eq(s.n, 0);

    /* the reference engine compiles nothing */
    cls_set_notice(on_notice, &s);
    cls_engine *ref;
    ck_assert_int_eq(cls_engine_create(idx, "ref", &ref), CLS_OK);
    cls_engine_free(ref);
    ck_assert_int_eq(s.n, 0);
    cls_set_notice(NULL, NULL);
    cls_index_close(idx);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("notice");
    TCase *tc = tcase_create("notice");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, compiling_is_announced_loading_is_not);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return tu_run_suite(suite()); }
