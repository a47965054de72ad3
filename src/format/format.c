/* format.c -- file and chunk headers, checksums and the per-chunk codec. */
#include "format.h"

#include <string.h>

#include "hash.h"

#ifdef TRACETOP_HAVE_ZSTD
#define ZSTD_STATIC_LINKING_ONLY /* ZSTD_c_literalCompressionMode */
#include <zstd.h>
#endif

void tt_file_header_encode(uint8_t *out, enum tt_file_kind kind, uint32_t version)
{
    memcpy(out, TT_FILE_MAGIC, 8);
    tt_put_u32(out + 8, version);
    tt_put_u32(out + 12, (uint32_t)kind);
}

int tt_file_header_decode(const uint8_t *in, size_t len, enum tt_file_kind *kind, const char **why)
{
    if (len < TT_FILE_HEADER_SIZE) {
        *why = "file shorter than its header";
        return -1;
    }
    if (memcmp(in, TT_FILE_MAGIC, 8) != 0) {
        *why = "not a tracetop trace file";
        return -1;
    }
    uint32_t version = tt_get_u32(in + 8);
    if (version > TT_FORMAT_VERSION) {
        *why = "written by a newer tracetop, in a trace format this one cannot read: upgrade tracetop to read it";
        return TT_FILE_NEWER;
    }
    if (version < TT_FORMAT_VERSION_OLDEST) {
        *why = "unsupported trace format version";
        return -1;
    }
    uint32_t k = tt_get_u32(in + 12);
    if (k != TT_FILE_DEFS && k != TT_FILE_EVENTS) {
        *why = "unknown trace file kind";
        return -1;
    }
    *kind = (enum tt_file_kind)k;
    return 0;
}

/* XXH3 rather than a CRC: the writer checksums every chunk it writes, and
 * XXH3 costs a fraction of an instruction per byte. Header and payload are
 * hashed apart so a payload's hash can be built up as it grows. */
static uint32_t chunk_crc(const uint8_t *header, uint64_t payload_hash)
{
    return (uint32_t)(XXH3_64bits(header, TT_CHUNK_CRC_OFFSET) ^ payload_hash);
}

void tt_chunk_header_encode(uint8_t *out, const struct tt_chunk_header *h, const uint8_t *payload)
{
    tt_chunk_header_encode_hashed(out, h, XXH3_64bits(payload, h->stored_size));
}

void tt_chunk_header_encode_hashed(uint8_t *out, const struct tt_chunk_header *h, uint64_t payload_hash)
{
    tt_put_u32(out, TT_CHUNK_MAGIC);
    tt_put_u32(out + 4, h->seq);
    tt_put_u64(out + 8, h->base_ticks);
    tt_put_u32(out + 16, h->stored_size);
    tt_put_u32(out + 20, h->raw_size);
    out[24] = h->codec;
    out[25] = h->flags;
    out[26] = out[27] = 0;
    tt_put_u32(out + TT_CHUNK_CRC_OFFSET, chunk_crc(out, payload_hash));
}

int tt_chunk_header_decode(const uint8_t *in, struct tt_chunk_header *h, const char **why)
{
    if (tt_get_u32(in) != TT_CHUNK_MAGIC) {
        *why = "bad chunk magic";
        return -1;
    }
    h->seq = tt_get_u32(in + 4);
    h->base_ticks = tt_get_u64(in + 8);
    h->stored_size = tt_get_u32(in + 16);
    h->raw_size = tt_get_u32(in + 20);
    h->codec = in[24];
    h->flags = in[25];
    if (h->raw_size > TT_CHUNK_PAYLOAD_MAX || h->stored_size > TT_CHUNK_PAYLOAD_MAX) {
        *why = "chunk size out of range";
        return -1;
    }
    if (h->codec == TT_CODEC_NONE ? h->stored_size != h->raw_size : h->codec != TT_CODEC_ZSTD) {
        *why = "bad chunk codec";
        return -1;
    }
    return 0;
}

int tt_chunk_verify(const uint8_t *header, const uint8_t *payload)
{
    uint32_t stored = tt_get_u32(header + 16);
    return chunk_crc(header, XXH3_64bits(payload, stored)) == tt_get_u32(header + TT_CHUNK_CRC_OFFSET);
}

#ifdef TRACETOP_HAVE_ZSTD
void *tt_compress_ctx_new(int level)
{
    ZSTD_CCtx *ctx = ZSTD_createCCtx();
    if (ctx && ZSTD_isError(ZSTD_CCtx_setParameter(ctx, ZSTD_c_compressionLevel, level))) {
        ZSTD_freeCCtx(ctx);
        return NULL;
    }
    /* An experimental parameter: a libzstd without it leaves the literals
     * raw, which costs bytes, not correctness. */
    if (ctx && level < 0) ZSTD_CCtx_setParameter(ctx, ZSTD_c_literalCompressionMode, ZSTD_ps_enable);
    return ctx;
}
void tt_compress_ctx_free(void *ctx) { ZSTD_freeCCtx(ctx); }
size_t tt_compress_bound(size_t len) { return ZSTD_compressBound(len); }

size_t tt_compress(void *ctx, uint8_t *dst, size_t dst_cap, const uint8_t *src, size_t len)
{
    if (!ctx) return 0;
    size_t n = ZSTD_compress2(ctx, dst, dst_cap, src, len);
    if (ZSTD_isError(n) || n >= len) return 0;
    return n;
}
#else
void *tt_compress_ctx_new(int level)
{
    (void)level;
    return NULL;
}
void tt_compress_ctx_free(void *ctx) { (void)ctx; }
size_t tt_compress_bound(size_t len) { return len; }
size_t tt_compress(void *ctx, uint8_t *dst, size_t dst_cap, const uint8_t *src, size_t len)
{
    (void)ctx, (void)dst, (void)dst_cap, (void)src, (void)len;
    return 0;
}
#endif

int tt_payload_decode(const struct tt_chunk_header *h, const uint8_t *stored, uint8_t *dst, const char **why)
{
    if (h->codec == TT_CODEC_NONE) {
        memcpy(dst, stored, h->raw_size);
        return 0;
    }
#ifdef TRACETOP_HAVE_ZSTD
    size_t n = ZSTD_decompress(dst, h->raw_size, stored, h->stored_size);
    if (ZSTD_isError(n) || n != h->raw_size) {
        *why = "chunk does not decompress";
        return -1;
    }
    return 0;
#else
    *why = "chunk is zstd-compressed but this build has no zstd";
    return -1;
#endif
}

static const char *const collective_names[] = {
    [TT_MPI_BARRIER] = "barrier",
    [TT_MPI_BCAST] = "bcast",
    [TT_MPI_GATHER] = "gather",
    [TT_MPI_GATHERV] = "gatherv",
    [TT_MPI_SCATTER] = "scatter",
    [TT_MPI_SCATTERV] = "scatterv",
    [TT_MPI_ALLGATHER] = "allgather",
    [TT_MPI_ALLGATHERV] = "allgatherv",
    [TT_MPI_ALLTOALL] = "alltoall",
    [TT_MPI_ALLTOALLV] = "alltoallv",
    [TT_MPI_ALLTOALLW] = "alltoallw",
    [TT_MPI_ALLREDUCE] = "allreduce",
    [TT_MPI_REDUCE] = "reduce",
    [TT_MPI_REDUCE_SCATTER] = "reduce_scatter",
    [TT_MPI_SCAN] = "scan",
    [TT_MPI_EXSCAN] = "exscan",
    [TT_MPI_REDUCE_SCATTER_BLOCK] = "reduce_scatter_block",
};

static const char *const region_kind_names[] = {
    [TT_REGION_PYTHON] = "python", [TT_REGION_C] = "c",   [TT_REGION_USER] = "user",
    [TT_REGION_MPI] = "mpi",       [TT_REGION_GC] = "gc",
};

const char *tt_region_kind_name(unsigned kind)
{
    return kind < sizeof region_kind_names / sizeof *region_kind_names ? region_kind_names[kind] : NULL;
}

const char *tt_mpi_collective_name(unsigned op)
{
    return op < sizeof collective_names / sizeof *collective_names && collective_names[op] ? collective_names[op]
                                                                                           : "unknown";
}
