/* hash.h -- XXH3, the trace's checksum (format.h: a chunk's crc) and the
 * index's, as libxxhash gives it.
 *
 * Where libxxhash has its x86 dispatcher (Debian's has), XXH3_64bits and
 * XXH3_64bits_update are its _dispatch forms: they pick the widest vector
 * unit the CPU has (AVX2, AVX-512) at the first call, where the plain ones
 * use SSE2, so the writer hashes a chunk in a fraction of the instructions.
 * XXH3's value is the same on every unit: a trace hashed either way
 * verifies either way. */
#ifndef TRACETOP_HASH_H
#define TRACETOP_HASH_H

#include <xxhash.h>
#ifdef TRACETOP_HAVE_XXH_DISPATCH
#include <xxh_x86dispatch.h>
#endif

#endif
