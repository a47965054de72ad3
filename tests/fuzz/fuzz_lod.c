/* fuzz_lod.c -- the viewer's index loader (lod.h) on a fuzzed view.idx,
 * then every query over what it loaded.
 *
 * The index is cached for the trace it was made from (its signature);
 * the input is written into an experiment whose trace directory is empty,
 * with the signature and size of that experiment, so that the loader
 * checks the rest instead of rebuilding. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz.h"
#include "lod.h"
#include "lod_file.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void query(const tt_lod *x)
{
    size_t lanes = tt_lod_lane_count(x), tracks = tt_lod_track_count(x);

    for (size_t i = 0; i < tt_lod_region_count(x); i++) fuzz_sink += strlen(tt_lod_region(x, i).name);
    for (size_t i = 0; i < tt_lod_problem_count(x); i++) fuzz_sink += strlen(tt_lod_problem(x, i));
    uint32_t *lane_ids = malloc((lanes + 1) * sizeof *lane_ids), *track_ids = malloc((tracks + 1) * sizeof *track_ids);
    if (!lane_ids || !track_ids) abort();
    for (size_t i = 0; i < lanes; i++) {
        lane_ids[i] = (uint32_t)i;
        tt_lod_lane_info l = tt_lod_lane(x, i);
        fuzz_sink += strlen(l.name) + strlen(l.process);
        size_t n;
        const tt_lod_param *p = tt_lod_params(x, i, &n);
        for (size_t j = 0; j < n; j++)
            fuzz_sink += strlen(tt_lod_string(x, p[j].name)) + strlen(tt_lod_string(x, p[j].text));
        const tt_lod_mark *m = tt_lod_marks(x, i, &n);
        for (size_t j = 0; j < n; j++) fuzz_sink += strlen(tt_lod_string(x, m[j].name));
        for (uint32_t depth = 0; depth < l.depths && depth < 64; depth++)
            for (unsigned level = 0; level < tt_lod_levels(x); level++) {
                tt_lod_cursor c;
                tt_lod_seek(x, i, depth, level, tt_lod_begin(x), UINT64_MAX, &c);
                const tt_lod_span *s;
                for (int k = 0; k < 1000 && (s = tt_lod_peek(&c)); k++, tt_lod_advance(&c)) fuzz_sink += s->region;
            }
        tt_lod_span span;
        uint64_t self;
        size_t first, count;
        fuzz_sink += (size_t)tt_lod_call_at(x, i, 0, (tt_lod_begin(x) + tt_lod_end(x)) / 2, &span, &self, &first,
                                            &count);
    }
    for (size_t i = 0; i < tracks; i++) {
        track_ids[i] = (uint32_t)i;
        fuzz_sink += strlen(tt_lod_track(x, i).name);
    }
    /* A lane and a track past the last: queries answer what lies within. */
    lane_ids[lanes] = (uint32_t)lanes;
    track_ids[tracks] = (uint32_t)tracks;
    tt_lod_view views[] = {
        {tt_lod_begin(x), tt_lod_end(x) + 1, 800}, {tt_lod_begin(x), tt_lod_begin(x) + 1000, 100}, {0, UINT64_MAX, 1}};
    for (size_t v = 0; v < sizeof views / sizeof views[0]; v++) {
        tt_lod_buffer b = {0};
        tt_lod_query_spans(x, views[v], lane_ids, lanes + 1, NULL, 10000, &b);
        tt_lod_buffer_free(&b);
        tt_lod_query_samples(x, views[v], track_ids, tracks + 1, &b);
        tt_lod_buffer_free(&b);
        tt_lod_query_tree(x, views[v].t0, views[v].t1, lane_ids, lanes + 1, &b);
        tt_lod_buffer_free(&b);
        tt_lod_query_objects(x, views[v].t0, views[v].t1, lane_ids, lanes + 1, &b);
        tt_lod_buffer_free(&b);
        tt_lod_query_tree_objects(x, views[v].t0, views[v].t1, lane_ids, lanes + 1, NULL, &b);
        tt_lod_buffer_free(&b);
        tt_lod_query_tree_objects(x, views[v].t0, views[v].t1, lane_ids, 1, "list", &b);
        tt_lod_buffer_free(&b);
    }
    free(lane_ids);
    free(track_ids);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *exp = fuzz_dir();
    char path[512];
    snprintf(path, sizeof path, "%s/trace", exp);
    if (mkdir(path, 0700) != 0) abort();
    uint8_t *image = malloc(size + 1);
    if (!image) abort();
    memcpy(image, data, size);
    if (size >= sizeof(lod_header)) {
        lod_header h;
        memcpy(&h, image, sizeof h);
        h.signature = LOD_VERSION; /* an empty trace directory's */
        h.size = size;
        memcpy(image, &h, sizeof h);
    }
    snprintf(path, sizeof path, "%s/" TT_LOD_FILE, exp);
    fuzz_write(path, image, size);
    free(image);
    tt_lod *x;
    tt_error err;
    int built;
    if (tt_lod_open(exp, &x, &built, NULL, &err) != 0) return 0;
    query(x);
    tt_lod_close(x);
    return 0;
}
