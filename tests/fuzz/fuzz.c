/* fuzz.c -- the harnesses' shared part (fuzz.h). */
#define _GNU_SOURCE
#include "fuzz.h"

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "format.h"

volatile size_t fuzz_sink;

size_t fuzz_split(const uint8_t *data, size_t size, fuzz_part *parts)
{
    const size_t sep = sizeof FUZZ_SEPARATOR - 1;
    size_t n = 0;
    while (n < FUZZ_MAX_FILES) {
        const uint8_t *at = memmem(data, size, FUZZ_SEPARATOR, sep);
        parts[n++] = (fuzz_part){data, at ? (size_t)(at - data) : size};
        if (!at) break;
        size -= (size_t)(at - data) + sep;
        data = at + sep;
    }
    return n;
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    return remove(path);
}

const char *fuzz_dir(void)
{
    static char dir[256];
    if (!dir[0]) {
        const char *tmp = getenv("TMPDIR");
        snprintf(dir, sizeof dir, "%s/tracetop-fuzz-XXXXXX", tmp && *tmp ? tmp : "/tmp");
        if (!mkdtemp(dir)) abort();
        strcat(dir, "/exp");
    } else {
        nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
    }
    if (mkdir(dir, 0700) != 0) abort();
    return dir;
}

/* Leaves the fuzzer's directory behind only while it runs. */
static void remove_dir(void)
{
    const char *dir = fuzz_dir();
    char parent[256];
    snprintf(parent, sizeof parent, "%s", dir);
    *strrchr(parent, '/') = '\0';
    nftw(parent, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

void fuzz_write(const char *path, const uint8_t *data, size_t len)
{
    FILE *f = fopen(path, "wb");
    if (!f || (len && fwrite(data, 1, len, f) != len) || fclose(f) != 0) abort();
}

/* Walks the chunks of a .tts file: `visit` is told of each whole one. */
static void walk(uint8_t *file, size_t len, void (*visit)(void *ctx, uint8_t *header, struct tt_chunk_header *h),
                 void *ctx)
{
    size_t at = TT_FILE_HEADER_SIZE;
    while (at <= len && len - at >= TT_CHUNK_HEADER_SIZE) {
        struct tt_chunk_header h;
        const char *why;
        if (tt_chunk_header_decode(file + at, &h, &why) != 0 || h.stored_size > len - at - TT_CHUNK_HEADER_SIZE) return;
        visit(ctx, file + at, &h);
        at += TT_CHUNK_HEADER_SIZE + h.stored_size;
    }
}

static void fix_checksum(void *ctx, uint8_t *header, struct tt_chunk_header *h)
{
    (void)ctx;
    tt_chunk_header_encode(header, h, header + TT_CHUNK_HEADER_SIZE);
}

const char *fuzz_experiment(const uint8_t *data, size_t size)
{
    static int registered;
    if (!registered) registered = !atexit(remove_dir);
    const char *exp = fuzz_dir();
    char path[512];
    snprintf(path, sizeof path, "%s/trace", exp);
    if (mkdir(path, 0700) != 0) abort();
    snprintf(path, sizeof path, "%s/trace/1", exp);
    if (mkdir(path, 0700) != 0) abort();
    fuzz_part parts[FUZZ_MAX_FILES];
    size_t n = fuzz_split(data, size, parts);
    for (size_t i = 0; i < n; i++) {
        uint8_t *copy = malloc(parts[i].len + 1);
        if (!copy) abort();
        memcpy(copy, parts[i].data, parts[i].len);
        walk(copy, parts[i].len, fix_checksum, NULL);
        if (i == 0)
            snprintf(path, sizeof path, "%s/trace/1/defs.tts", exp);
        else
            snprintf(path, sizeof path, "%s/trace/1/%zu.tts", exp, i - 1);
        fuzz_write(path, copy, parts[i].len);
        free(copy);
    }
    return exp;
}

typedef struct decode_ctx {
    void (*chunk)(void *ctx, const void *header, const uint8_t *payload);
    void *ctx;
    int stopped;
} decode_ctx;

static void decode_chunk(void *ctx, uint8_t *header, struct tt_chunk_header *h)
{
    decode_ctx *d = ctx;
    if (d->stopped) return;
    uint8_t *raw = malloc(h->raw_size ? h->raw_size : 1);
    const char *why;
    if (!raw || tt_payload_decode(h, header + TT_CHUNK_HEADER_SIZE, raw, &why) != 0)
        d->stopped = 1;
    else
        d->chunk(d->ctx, h, raw);
    free(raw);
}

void fuzz_chunks(const fuzz_part *file, void (*chunk)(void *ctx, const void *header, const uint8_t *payload), void *ctx)
{
    uint8_t *copy = malloc(file->len + 1);
    if (!copy) abort();
    memcpy(copy, file->data, file->len);
    decode_ctx d = {chunk, ctx, 0};
    walk(copy, file->len, decode_chunk, &d);
    free(copy);
}
