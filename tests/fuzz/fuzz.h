/* fuzz.h -- what the libFuzzer harnesses of tests/fuzz share.
 *
 * A fuzzed trace is one input: the files of one process of an experiment,
 * defs.tts first and then the stream files 0.tts, 1.tts, ..., joined by
 * FUZZ_SEPARATOR (seeds.py makes such inputs from real traces). Written as
 * EXPERIMENT/trace/1/..., it is what every reader of a trace reads.
 *
 * Chunks are checksummed (format.h), so nearly every mutation would stop
 * the reader at the first chunk header; the files are written with the
 * checksum of each chunk made right again, so that the fuzzer reaches the
 * decoders behind it. Damage the checksum catches is the reader's tests'
 * (tests/c/test_reader.c).
 */
#ifndef TRACETOP_FUZZ_H
#define TRACETOP_FUZZ_H

#include <stddef.h>
#include <stdint.h>

#define FUZZ_SEPARATOR "\n--tracetop-fuzz--\n"
#define FUZZ_MAX_FILES 8

typedef struct fuzz_part {
    const uint8_t *data;
    size_t len;
} fuzz_part;

/* Splits the input at each FUZZ_SEPARATOR: the number of parts (at most
 * FUZZ_MAX_FILES; what follows the last is left out). */
size_t fuzz_split(const uint8_t *data, size_t size, fuzz_part *parts);

/* A directory of this process's own, made once and emptied at each call:
 * "<tmp>/exp" ready to hold an experiment. */
const char *fuzz_dir(void);

/* Writes the input as the trace of an experiment in fuzz_dir() (see
 * above) and returns the experiment's directory. */
const char *fuzz_experiment(const uint8_t *data, size_t size);

/* Writes `len` bytes to `path`, whole; aborts when it cannot (the harness,
 * not the input, is at fault then). */
void fuzz_write(const char *path, const uint8_t *data, size_t len);

/* Calls `chunk` for each chunk of a .tts file in order, with its decoded
 * payload, up to the first that cannot be decoded: what a reader of the
 * format sees of it. */
void fuzz_chunks(const fuzz_part *file, void (*chunk)(void *ctx, const void *header, const uint8_t *payload),
                 void *ctx);

/* What a harness reads goes here, so that the reading is not optimized away. */
extern volatile size_t fuzz_sink;

#endif
