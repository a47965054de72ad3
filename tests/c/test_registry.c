/* test_registry.c -- the region registry and the pointer map behind it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "format.h"
#include "ptrmap.h"
#include "registry.h"

/* A sink that keeps the definition records it is given, back to back. */
typedef struct sink {
    uint8_t bytes[1 << 20];
    size_t len;
    int records;
} sink;

static void collect(void *ctx, const uint8_t *record, size_t len)
{
    sink *s = ctx;
    memcpy(s->bytes + s->len, record, len);
    s->len += len;
    s->records++;
}

/* Decodes the collected records; checks they are well formed and that each
 * region refers to strings defined before it. Returns the record count. */
static int decode(const sink *s, int *strings, int *regions)
{
    const uint8_t *p = s->bytes, *end = s->bytes + s->len;
    uint64_t defined = 0, v, name, file, line, id;
    int n = 0;
    *strings = *regions = 0;
    while (p < end) {
        uint8_t tag = *p++;
        if (tag == TT_DEF_STRING) {
            if (tt_get_varint(&p, end, &id) < 0 || tt_get_varint(&p, end, &v) < 0 || (size_t)(end - p) < v) return -1;
            if (id != defined) return -1;
            defined++;
            p += v;
            (*strings)++;
        } else if (tag == TT_DEF_REGION) {
            if (tt_get_varint(&p, end, &id) < 0 || tt_get_varint(&p, end, &name) < 0 ||
                tt_get_varint(&p, end, &file) < 0 || tt_get_varint(&p, end, &line) < 0 || p >= end)
                return -1;
            p++; /* kind */
            if (name >= defined || file >= defined) return -1;
            (*regions)++;
        } else {
            return -1;
        }
        n++;
    }
    return n;
}

static void test_strings_and_regions(void)
{
    tt_registry r;
    static sink s;
    CHECK(tt_registry_init(&r) == 0);
    tt_registry_set_sink(&r, collect, &s);
    uint32_t a = tt_registry_string(&r, "__main__:fib", 12);
    uint32_t b = tt_registry_string(&r, "fib.py", 6);
    CHECK(a == 0 && b == 1);
    CHECK(tt_registry_string(&r, "__main__:fib", 12) == a); /* interned */
    uint32_t fib = tt_registry_region(&r, a, b, 4, TT_REGION_PYTHON);
    CHECK(fib == 0);
    uint32_t load = tt_registry_named_region(&r, tt_registry_string(&r, "user:load", 9), b, 0, TT_REGION_USER);
    CHECK(load == 1);
    CHECK(tt_registry_named_region(&r, tt_registry_string(&r, "user:load", 9), b, 0, TT_REGION_USER) == load);
    int strings, regions;
    CHECK(decode(&s, &strings, &regions) == 5);
    CHECK(strings == 3 && regions == 2);

    /* Many strings: the index grows, ids stay dense and lookups stay exact. */
    char buf[32];
    int dense = 1;
    for (int i = 0; i < 20000; i++) {
        int n = snprintf(buf, sizeof buf, "region-%d", i);
        dense &= tt_registry_string(&r, buf, (size_t)n) == (uint32_t)(3 + i);
    }
    CHECK(dense);
    CHECK(tt_registry_string(&r, "region-12345", 12) == 3 + 12345);

    /* A new session replays everything, in id order. */
    static sink again;
    tt_registry_set_sink(&r, collect, &again);
    tt_registry_replay(&r);
    CHECK(decode(&again, &strings, &regions) == 20000 + 5);
    CHECK(strings == 20003 && regions == 2);

    /* Names longer than TT_STRING_MAX are cut, not refused. */
    char *huge = malloc(TT_STRING_MAX * 2);
    memset(huge, 'x', TT_STRING_MAX * 2);
    uint32_t h = tt_registry_string(&r, huge, TT_STRING_MAX * 2);
    CHECK(h != TT_NO_ID && r.string_lens[h] == TT_STRING_MAX);
    free(huge);
    tt_registry_free(&r);
}

static void test_ptrmap(void)
{
    tt_ptrmap m;
    CHECK(tt_ptrmap_init(&m) == 0);
    static char objects[100000];
    uint32_t v;
    CHECK(!tt_ptrmap_get(&m, &objects[0], &v));
    int all = 1;
    for (uint32_t i = 0; i < 100000; i++) all &= tt_ptrmap_put(&m, &objects[i], i * 3) == 0;
    for (uint32_t i = 0; i < 100000; i++) all &= tt_ptrmap_get(&m, &objects[i], &v) && v == i * 3;
    CHECK(all);
    CHECK(tt_ptrmap_put(&m, &objects[7], 1) == 0 && tt_ptrmap_get(&m, &objects[7], &v) && v == 1);
    CHECK(m.count == 100000);
    int x;
    CHECK(!tt_ptrmap_get(&m, &x, &v));
    tt_ptrmap_free(&m);
}

/* Removal keeps every other key findable (the probe chains are repaired),
 * whatever the order keys go in and out, as objects are made and freed. */
static void test_ptrmap_remove(void)
{
    tt_ptrmap m;
    CHECK(tt_ptrmap_init(&m) == 0);
    enum { N = 50000 };
    static char objects[N];
    static uint8_t in[N];
    uint32_t v, seed = 12345;
    int all = 1;
    for (int round = 0; round < 400000; round++) {
        seed = seed * 1103515245u + 12345u;
        uint32_t i = (seed >> 8) % N;
        if (in[i]) {
            all &= tt_ptrmap_remove(&m, &objects[i], &v) == 1 && v == i;
            in[i] = 0;
        } else {
            all &= tt_ptrmap_put(&m, &objects[i], i) == 0;
            in[i] = 1;
        }
    }
    size_t count = 0;
    for (uint32_t i = 0; i < N; i++) {
        count += in[i];
        all &= tt_ptrmap_get(&m, &objects[i], &v) == in[i] && (!in[i] || v == i);
    }
    CHECK(all);
    CHECK(m.count == count);
    CHECK(tt_ptrmap_remove(&m, &objects[0], &v) == in[0]);
    tt_ptrmap_clear(&m);
    CHECK(m.count == 0 && !tt_ptrmap_get(&m, &objects[1], &v));
    tt_ptrmap_free(&m);
}

int main(void)
{
    test_strings_and_regions();
    test_ptrmap();
    test_ptrmap_remove();
    return check_report();
}
