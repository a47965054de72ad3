/* test_pool.c -- the memory budget: never exceeded, and a caller that finds
 * it used up waits for a returned chunk instead of losing events. */
#include <pthread.h>
#include <time.h>

#include "check.h"
#include "pool.h"

static void *give_back_later(void *arg)
{
    void **args = arg;
    struct timespec pause = {0, 50 * 1000 * 1000};
    nanosleep(&pause, NULL);
    tt_pool_put(args[0], args[1]);
    return NULL;
}

static void test_budget(void)
{
    tt_pool pool;
    tt_error err;
    CHECK(tt_pool_init(&pool, 100 * 1024, &err) < 0); /* below the minimum */
    CHECK(strstr(err.message, "too small") != NULL);

    CHECK(tt_pool_init(&pool, 10 * sizeof(tt_chunk) + 100, &err) == 0);
    tt_chunk *taken[10];
    int got = 1;
    for (int i = 0; i < 10; i++) got &= (taken[i] = tt_pool_try_get(&pool)) != NULL;
    CHECK(got);
    CHECK(tt_pool_try_get(&pool) == NULL); /* the budget holds ten */
    CHECK_U64(pool.allocated, 10);

    /* A full budget makes the caller wait until a chunk comes back. */
    pthread_t writer;
    void *args[2] = {&pool, taken[3]};
    pthread_create(&writer, NULL, give_back_later, args);
    tt_chunk *c = tt_pool_get_wait(&pool);
    pthread_join(writer, NULL);
    CHECK(c == taken[3]);
    CHECK_U64(pool.waits, 1);
    CHECK(pool.wait_ns >= 40 * 1000 * 1000);
    CHECK_U64(pool.allocated, 10);

    /* Returned chunks are reused before any new one is allocated. */
    tt_pool_put(&pool, taken[0]);
    CHECK(tt_pool_try_get(&pool) == taken[0]);
    CHECK_U64(pool.waits, 1);
    for (int i = 0; i < 10; i++) tt_pool_put(&pool, taken[i] == taken[3] ? c : taken[i]);
    tt_pool_destroy(&pool);
}

int main(void)
{
    test_budget();
    return check_report();
}
