/* test_objects_series.c -- a process's objects over time from OBJECTS
 * events as the streams give them: a batch's records of one type merged,
 * the same time from two streams merged, points in time order, counts
 * cumulative per type, and a reset for the next process. */
#include "check.h"
#include "objects_series.h"

static void add(tt_objects_series *s, uint64_t time, uint32_t region, uint32_t type, uint64_t created,
                uint64_t destroyed)
{
    tt_event ev = {.kind = TT_EV_OBJECTS,
                   .time = time,
                   .region = region,
                   .name = type,
                   .created = created,
                   .destroyed = destroyed};
    CHECK(tt_objects_series_add(s, &ev) == 0);
}

static void check_point(const tt_objects_point *p, uint64_t time, uint32_t type, uint64_t created, uint64_t destroyed)
{
    CHECK_U64(p->time, time);
    CHECK_U64(p->type, type);
    CHECK_U64(p->created, created);
    CHECK_U64(p->destroyed, destroyed);
}

static void test_two_streams(void)
{
    tt_objects_series s = {0};
    /* Stream 0: a batch at 100 (type 3 from two regions, type 7), then one at 300. */
    add(&s, 100, 1, 3, 5, 0);
    add(&s, 100, 2, 3, 2, 1);
    add(&s, 100, 1, 7, 4, 0);
    add(&s, 300, 1, 3, 0, 6);
    /* Stream 1, read after: a batch at 50, one at 100 as stream 0's, one at 200. */
    add(&s, 50, 9, 7, 1, 0);
    add(&s, 100, 9, 3, 1, 0);
    add(&s, 200, 9, 7, 0, 5);
    CHECK(tt_objects_series_finish(&s) == 0);
    CHECK_U64(s.count, 5);
    if (s.count == 5) {
        check_point(&s.points[0], 50, 7, 1, 0);
        check_point(&s.points[1], 100, 3, 8, 1);
        check_point(&s.points[2], 100, 7, 5, 0);
        check_point(&s.points[3], 200, 7, 5, 5);
        check_point(&s.points[4], 300, 3, 8, 7);
        CHECK_U64(tt_objects_alive(&s.points[1]), 7);
        CHECK_U64(tt_objects_alive(&s.points[3]), 0);
        CHECK_U64(tt_objects_alive(&s.points[4]), 1);
    }
    CHECK_U64(s.type_count, 2);
    if (s.type_count == 2) {
        CHECK_U64(s.types[0], 7);
        CHECK_U64(s.types[1], 3);
    }

    /* The next process starts from nothing. */
    tt_objects_series_reset(&s);
    add(&s, 10, 0, 3, 2, 0);
    CHECK(tt_objects_series_finish(&s) == 0);
    CHECK_U64(s.count, 1);
    CHECK_U64(s.type_count, 1);
    if (s.count == 1) check_point(&s.points[0], 10, 3, 2, 0);
    tt_objects_series_free(&s);
}

/* A range that starts after objects were made (convert --from) can see more
 * destroyed than created: none alive, never a wrapped count. */
static void test_more_destroyed_than_created(void)
{
    tt_objects_series s = {0};
    add(&s, 10, 0, 1, 0, 3);
    CHECK(tt_objects_series_finish(&s) == 0);
    CHECK_U64(s.count, 1);
    if (s.count == 1) CHECK_U64(tt_objects_alive(&s.points[0]), 0);
    CHECK_U64(s.type_count, 1);
    tt_objects_series_free(&s);
}

int main(void)
{
    test_two_streams();
    test_more_destroyed_than_created();
    return check_report();
}
