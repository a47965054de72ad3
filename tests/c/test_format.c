/* test_format.c -- the byte-level format: varints, headers, checksums, codec,
 * and the records that are not calls. */
#include <stdlib.h>

#include "check.h"
#include "format.h"
#include "records.h"

static void test_varints(void)
{
    static const struct {
        uint64_t value;
        size_t len;
    } cases[] = {
        {0, 1},           {1, 1},
        {127, 1},         {128, 2},
        {16383, 2},       {16384, 3},
        {UINT32_MAX, 5},  {(uint64_t)1 << 35, 6},
        {INT64_MAX, 9},   {(uint64_t)1 << 63, 10},
        {UINT64_MAX, 10},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        uint8_t buf[16];
        uint8_t *end = tt_put_varint(buf, cases[i].value);
        CHECK_U64(end - buf, cases[i].len);
        const uint8_t *p = buf;
        uint64_t v = 0;
        CHECK(tt_get_varint(&p, end, &v) == 0);
        CHECK_U64(v, cases[i].value);
        CHECK(p == end);
        /* One byte short: the varint runs out, and p stays put. */
        p = buf;
        CHECK(tt_get_varint(&p, end - 1, &v) == -1);
        CHECK(p == buf);
    }

    /* Longer than 10 bytes is not a varint. */
    uint8_t overlong[11];
    memset(overlong, 0x80, sizeof overlong);
    overlong[10] = 0;
    const uint8_t *p = overlong;
    uint64_t v = 0;
    CHECK(tt_get_varint(&p, overlong + sizeof overlong, &v) == -1);
    const uint8_t *empty = overlong;
    CHECK(tt_get_varint(&empty, overlong, &v) == -1);
}

static void test_zigzag(void)
{
    CHECK_U64(tt_zigzag(0), 0);
    CHECK_U64(tt_zigzag(-1), 1);
    CHECK_U64(tt_zigzag(1), 2);
    CHECK_U64(tt_zigzag(-2), 3);
    CHECK_U64(tt_zigzag(INT64_MAX), UINT64_MAX - 1);
    CHECK_U64(tt_zigzag(INT64_MIN), UINT64_MAX);
    static const int64_t values[] = {0, 1, -1, 63, -64, 64, -65, INT32_MAX, INT32_MIN, INT64_MAX, INT64_MIN};
    for (size_t i = 0; i < sizeof values / sizeof values[0]; i++) {
        uint8_t buf[16];
        uint8_t *end = tt_put_varint(buf, tt_zigzag(values[i]));
        const uint8_t *p = buf;
        uint64_t z = 0;
        CHECK(tt_get_varint(&p, end, &z) == 0);
        CHECK(tt_unzigzag(z) == values[i]);
    }
    /* Small magnitudes stay small: the point of zigzag. */
    uint8_t buf[16];
    CHECK(tt_put_varint(buf, tt_zigzag(-64)) - buf == 1);
}

static void test_fixed_width(void)
{
    uint8_t buf[8];
    tt_put_u32(buf, 0x01020304u);
    CHECK(buf[0] == 4 && buf[3] == 1); /* little-endian */
    CHECK_U64(tt_get_u32(buf), 0x01020304u);
    tt_put_u64(buf, 0x0102030405060708ull);
    CHECK(buf[0] == 8 && buf[7] == 1);
    CHECK_U64(tt_get_u64(buf), 0x0102030405060708ull);
}

static void test_file_header(void)
{
    uint8_t h[TT_FILE_HEADER_SIZE];
    enum tt_file_kind kind = 0;
    const char *why = NULL;
    tt_file_header_encode(h, TT_FILE_EVENTS, TT_FORMAT_VERSION_PLAIN);
    CHECK(tt_file_header_decode(h, sizeof h, &kind, &why) == 0);
    CHECK(kind == TT_FILE_EVENTS);
    tt_file_header_encode(h, TT_FILE_DEFS, TT_FORMAT_VERSION_RING);
    CHECK(tt_file_header_decode(h, sizeof h, &kind, &why) == 0);
    CHECK(kind == TT_FILE_DEFS && tt_get_u32(h + 8) == TT_FORMAT_VERSION_RING);
    tt_file_header_encode(h, TT_FILE_DEFS, TT_FORMAT_VERSION_PLAIN);
    CHECK(tt_file_header_decode(h, sizeof h, &kind, &why) == 0);
    CHECK(kind == TT_FILE_DEFS && tt_get_u32(h + 8) == TT_FORMAT_VERSION_PLAIN);

    CHECK(tt_file_header_decode(h, sizeof h - 1, &kind, &why) == -1);
    CHECK_STR(why, "file shorter than its header");
    uint8_t bad[TT_FILE_HEADER_SIZE];
    memcpy(bad, h, sizeof h);
    bad[0] ^= 1;
    CHECK(tt_file_header_decode(bad, sizeof bad, &kind, &why) == -1);
    CHECK_STR(why, "not a tracetop trace file");
    for (uint32_t older = TT_FORMAT_VERSION_OLDEST; older < TT_FORMAT_VERSION; older++) { /* their traces read on */
        memcpy(bad, h, sizeof h);
        tt_put_u32(bad + 8, older);
        CHECK(tt_file_header_decode(bad, sizeof bad, &kind, &why) == 0);
    }
    memcpy(bad, h, sizeof h);
    tt_put_u32(bad + 8, TT_FORMAT_VERSION + 1);
    CHECK(tt_file_header_decode(bad, sizeof bad, &kind, &why) == TT_FILE_NEWER);
    CHECK(strstr(why, "newer tracetop") != NULL);
    memcpy(bad, h, sizeof h);
    tt_put_u32(bad + 8, TT_FORMAT_VERSION_OLDEST - 1);
    CHECK(tt_file_header_decode(bad, sizeof bad, &kind, &why) == -1);
    CHECK_STR(why, "unsupported trace format version");
    memcpy(bad, h, sizeof h);
    tt_put_u32(bad + 12, 99);
    CHECK(tt_file_header_decode(bad, sizeof bad, &kind, &why) == -1);
    CHECK_STR(why, "unknown trace file kind");
}

static void test_chunk_header(void)
{
    uint8_t payload[100];
    for (size_t i = 0; i < sizeof payload; i++) payload[i] = (uint8_t)(i * 7);
    struct tt_chunk_header h = {.seq = 7,
                                .base_ticks = 0x123456789abcull,
                                .stored_size = sizeof payload,
                                .raw_size = sizeof payload,
                                .codec = TT_CODEC_NONE,
                                .flags = TT_CHUNK_PARTIAL};
    uint8_t raw[TT_CHUNK_HEADER_SIZE];
    tt_chunk_header_encode(raw, &h, payload);
    CHECK(raw[26] == 0 && raw[27] == 0);

    struct tt_chunk_header d;
    const char *why = NULL;
    CHECK(tt_chunk_header_decode(raw, &d, &why) == 0);
    CHECK_U64(d.seq, 7);
    CHECK_U64(d.base_ticks, 0x123456789abcull);
    CHECK_U64(d.stored_size, sizeof payload);
    CHECK_U64(d.raw_size, sizeof payload);
    CHECK(d.codec == TT_CODEC_NONE && d.flags == TT_CHUNK_PARTIAL);
    CHECK(tt_chunk_verify(raw, payload));

    /* The checksum covers every bit of the header before it and of the payload. */
    int caught = 1;
    for (size_t bit = 0; bit < TT_CHUNK_CRC_OFFSET * 8; bit++) {
        raw[bit / 8] ^= (uint8_t)(1u << (bit % 8));
        /* Flipping a size bit makes verify read a different length; keep it in the buffer. */
        if (tt_get_u32(raw + 16) <= sizeof payload) caught &= !tt_chunk_verify(raw, payload);
        raw[bit / 8] ^= (uint8_t)(1u << (bit % 8));
    }
    for (size_t bit = 0; bit < sizeof payload * 8; bit++) {
        payload[bit / 8] ^= (uint8_t)(1u << (bit % 8));
        caught &= !tt_chunk_verify(raw, payload);
        payload[bit / 8] ^= (uint8_t)(1u << (bit % 8));
    }
    raw[TT_CHUNK_CRC_OFFSET] ^= 0x10;
    caught &= !tt_chunk_verify(raw, payload);
    raw[TT_CHUNK_CRC_OFFSET] ^= 0x10;
    CHECK(caught);
    CHECK(tt_chunk_verify(raw, payload));

    uint8_t bad[TT_CHUNK_HEADER_SIZE];
    memcpy(bad, raw, sizeof raw);
    bad[0] ^= 1;
    CHECK(tt_chunk_header_decode(bad, &d, &why) == -1);
    CHECK_STR(why, "bad chunk magic");
    memcpy(bad, raw, sizeof raw);
    tt_put_u32(bad + 20, TT_CHUNK_PAYLOAD_MAX + 1);
    CHECK(tt_chunk_header_decode(bad, &d, &why) == -1);
    CHECK_STR(why, "chunk size out of range");
    memcpy(bad, raw, sizeof raw);
    tt_put_u32(bad + 20, sizeof payload + 1); /* uncompressed, yet sizes differ */
    CHECK(tt_chunk_header_decode(bad, &d, &why) == -1);
    CHECK_STR(why, "bad chunk codec");
    memcpy(bad, raw, sizeof raw);
    bad[24] = 9;
    CHECK(tt_chunk_header_decode(bad, &d, &why) == -1);
    CHECK_STR(why, "bad chunk codec");
}

/* Whether the core was built with zstd shows at run time: the tests are
 * compiled apart from it and need not share its defines. */
static void test_codec(void)
{
    enum { N = 8192 };
    uint8_t *src = malloc(N), *dst = malloc(tt_compress_bound(N)), *back = malloc(N);
    for (size_t i = 0; i < N; i++) src[i] = (uint8_t)(i % 13 == 0 ? i : 1); /* compressible */
    void *ctx = tt_compress_ctx_new(TT_ZSTD_CHUNK_LEVEL);
    size_t n = tt_compress(ctx, dst, tt_compress_bound(N), src, N);
    struct tt_chunk_header h = {.stored_size = (uint32_t)n, .raw_size = N, .codec = TT_CODEC_ZSTD};
    const char *why = NULL;
    if (ctx) {
        CHECK(n > 0 && n < N);
        CHECK(tt_payload_decode(&h, dst, back, &why) == 0);
        CHECK(memcmp(src, back, N) == 0);
        /* A header whose raw_size disagrees with the frame fails. */
        h.raw_size = N - 1;
        CHECK(tt_payload_decode(&h, dst, back, &why) == -1);
        CHECK_STR(why, "chunk does not decompress");

        /* Incompressible data is left uncompressed: 0. */
        uint32_t x = 12345;
        for (size_t i = 0; i < N; i++) src[i] = (uint8_t)((x = x * 1103515245u + 12345u) >> 24);
        CHECK(tt_compress(ctx, dst, tt_compress_bound(N), src, N) == 0);
    } else {
        CHECK(n == 0);
        CHECK(tt_payload_decode(&h, dst, back, &why) == -1);
        CHECK_STR(why, "chunk is zstd-compressed but this build has no zstd");
    }
    struct tt_chunk_header plain = {.stored_size = 16, .raw_size = 16, .codec = TT_CODEC_NONE};
    CHECK(tt_payload_decode(&plain, src, back, &why) == 0);
    CHECK(memcmp(src, back, 16) == 0);
    tt_compress_ctx_free(ctx);
    free(src);
    free(dst);
    free(back);
}

/* ENTER_AGAIN: read as an ENTER that says so, and a step of the predictor
 * as any ENTER is (the ENTER_PREDICTED after it names its region). */
static void test_enter_again_record(void)
{
    uint8_t buf[16], *p = buf;
    *p++ = TT_EV_ENTER_AGAIN;
    p = tt_put_varint(tt_put_varint(p, 7), 300);
    *p++ = TT_EV_LEAVE_SHORT;
    *p++ = 1;
    *p++ = TT_EV_ENTER_PREDICTED;
    *p++ = 2;
    *p++ = TT_EV_LEAVE_SHORT;
    *p++ = 1;
    tt_records it;
    tt_predictor predict;
    tt_event_record r;
    const char *why = NULL;
    tt_records_init(&it, buf, (size_t)(p - buf), 1000, &predict);
    CHECK(tt_records_next_event(&it, &r, &why) == 1);
    CHECK(r.tag == TT_EV_ENTER && r.again && r.id == 300 && r.ticks == 1007);
    CHECK(tt_records_next_event(&it, &r, &why) == 1 && r.tag == TT_EV_LEAVE);
    /* The slot after 300 and one LEAVE is the one after the slot 0 filled:
     * empty, so the predicted ENTER names region 0 ... */
    CHECK(tt_records_next_event(&it, &r, &why) == 1);
    CHECK(r.tag == TT_EV_ENTER && !r.again && r.id == 0);
    CHECK(tt_records_next_event(&it, &r, &why) == 1 && r.tag == TT_EV_LEAVE);
    CHECK(tt_records_next_event(&it, &r, &why) == 0);
    /* ... and the first slot (last 0, no leaves) names 300, as an ENTER's would. */
    CHECK(predict.slot[0] == 300);
}

/* OBJECTS: read back field by field; cut short, it is an error; a tag
 * past the last is no record at all. */
static void test_objects_record(void)
{
    uint8_t buf[64], *p = buf;
    *p++ = TT_EV_OBJECTS;
    const uint64_t fields[] = {5, 4, 7, 56, 100000, 99999}; /* dt, region + 1, type, size, created, destroyed */
    for (size_t i = 0; i < 6; i++) p = tt_put_varint(p, fields[i]);
    tt_records it;
    tt_predictor predict;
    tt_event_record r;
    const char *why = NULL;
    tt_records_init(&it, buf, (size_t)(p - buf), 1000, &predict);
    CHECK(tt_records_next_event(&it, &r, &why) == 1);
    CHECK(r.tag == TT_EV_OBJECTS && r.ticks == 1005);
    CHECK(r.objects.region == 4 && r.objects.type == 7 && r.objects.size == 56);
    CHECK(r.objects.created == 100000 && r.objects.destroyed == 99999);
    CHECK(tt_records_next_event(&it, &r, &why) == 0);
    tt_records_init(&it, buf, (size_t)(p - buf) - 1, 0, &predict);
    CHECK(tt_records_next_event(&it, &r, &why) == -1 && it.pos == buf);
    uint8_t unknown[2] = {TT_EV_LAST + 1, 0};
    tt_records_init(&it, unknown, sizeof unknown, 0, &predict);
    CHECK(tt_records_next_event(&it, &r, &why) == -1 && strcmp(why, "unknown event record") == 0);
}

/* OPEN (format.h: a ring): since, then the calls open, innermost first;
 * every region there before the record is taken, and the predictor left
 * as it was. */
static void test_open_record(void)
{
    uint8_t buf[64], *p = buf;
    *p++ = TT_EV_OPEN;
    const uint64_t fields[] = {0, 70000, 3, 300, 5, 1u << 30}; /* dt, since, count, regions */
    for (size_t i = 0; i < 6; i++) p = tt_put_varint(p, fields[i]);
    tt_records it;
    tt_predictor predict;
    tt_event_record r;
    const char *why = NULL;
    tt_records_init(&it, buf, (size_t)(p - buf), 1000, &predict);
    CHECK(tt_records_next_event(&it, &r, &why) == 1);
    CHECK(r.tag == TT_EV_OPEN && r.ticks == 1000 && r.open.since == 70000 && r.open.count == 3);
    const uint8_t *at = r.open.regions;
    CHECK_U64(tt_records_open_next(&at), 300);
    CHECK_U64(tt_records_open_next(&at), 5);
    CHECK_U64(tt_records_open_next(&at), 1u << 30);
    CHECK(at == p && it.pos == p && predict.last == 0 && predict.leaves_shifted == 0);
    CHECK(tt_records_next_event(&it, &r, &why) == 0);
    tt_records_init(&it, buf, (size_t)(p - buf) - 1, 0, &predict); /* its last region cut */
    CHECK(tt_records_next_event(&it, &r, &why) == -1 && it.pos == buf);
    uint8_t reserved[2] = {TT_EV_OPEN + 1, 0};
    tt_records_init(&it, reserved, sizeof reserved, 0, &predict);
    CHECK(tt_records_next_event(&it, &r, &why) == -1 && strcmp(why, "unknown event record") == 0);
}

int main(void)
{
    test_objects_record();
    test_enter_again_record();
    test_open_record();
    test_varints();
    test_zigzag();
    test_fixed_width();
    test_file_header();
    test_chunk_header();
    test_codec();
    return check_report();
}
