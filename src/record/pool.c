/* pool.c -- chunk buffers within a budget. Off the hot path: a chunk is
 * taken once per TT_CHUNK_PAYLOAD_SIZE bytes of events. */
#include "pool.h"

#include <stdlib.h>

#include "clock.h"

int tt_pool_init(tt_pool *p, uint64_t budget_bytes, tt_error *err)
{
    uint64_t chunks = budget_bytes / sizeof(tt_chunk);
    if (chunks < TT_POOL_MIN_CHUNKS)
        return tt_fail(err, "memory budget of %llu bytes is too small: at least %llu are needed",
                       (unsigned long long)budget_bytes, (unsigned long long)(TT_POOL_MIN_CHUNKS * sizeof(tt_chunk)));
    p->limit = chunks > UINT32_MAX ? UINT32_MAX : (uint32_t)chunks;
    p->allocated = 0;
    p->free_list = NULL;
    p->waits = p->wait_ns = 0;
    pthread_mutex_init(&p->lock, NULL);
    pthread_cond_init(&p->returned, NULL);
    return 0;
}

void tt_pool_destroy(tt_pool *p)
{
    while (p->free_list) {
        tt_chunk *c = p->free_list;
        p->free_list = c->next;
        free(c);
    }
    pthread_mutex_destroy(&p->lock);
    pthread_cond_destroy(&p->returned);
}

/* Called with p->lock held. */
static tt_chunk *take(tt_pool *p)
{
    tt_chunk *c = p->free_list;
    if (c) {
        p->free_list = c->next;
    } else if (p->allocated < p->limit) {
        c = malloc(sizeof *c);
        if (c) p->allocated++;
    }
    return c;
}

tt_chunk *tt_pool_try_get(tt_pool *p)
{
    pthread_mutex_lock(&p->lock);
    tt_chunk *c = take(p);
    pthread_mutex_unlock(&p->lock);
    return c;
}

tt_chunk *tt_pool_get_wait(tt_pool *p)
{
    pthread_mutex_lock(&p->lock);
    tt_chunk *c = take(p);
    if (!c) {
        uint64_t t0 = tt_monotonic_ns();
        p->waits++;
        /* malloc failing with chunks still in flight also lands here: the
         * writer returning one is what unblocks us either way. */
        while (!(c = take(p))) pthread_cond_wait(&p->returned, &p->lock);
        p->wait_ns += tt_monotonic_ns() - t0;
    }
    pthread_mutex_unlock(&p->lock);
    return c;
}

void tt_pool_put(tt_pool *p, tt_chunk *c)
{
    pthread_mutex_lock(&p->lock);
    c->next = p->free_list;
    p->free_list = c;
    pthread_cond_signal(&p->returned);
    pthread_mutex_unlock(&p->lock);
}
