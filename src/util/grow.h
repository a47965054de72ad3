/* grow.h -- growable arrays for the reading side (reader.c, profile.c).
 *
 * An array is a pointer and a capacity; TT_RESERVE(arr, cap, need) makes room
 * for `need` elements, doubling so that appending one at a time stays linear.
 * It evaluates to 0, or -1 when memory runs out (the array is then unchanged).
 * Its arguments are evaluated more than once: pass plain lvalues and sums.
 * The macro, not a function taking `void **`, so that the pointer keeps its
 * type: writing a `tt_region *` through a `void **` breaks aliasing rules.
 */
#ifndef TRACETOP_GROW_H
#define TRACETOP_GROW_H

#include <stdint.h>
#include <stdlib.h>

/* Returns arr reallocated for at least `need` elements of `size` bytes (and
 * updates *cap), or NULL when memory runs out. Only called when need > *cap. */
static inline void *tt_grow(void *arr, size_t *cap, size_t need, size_t size)
{
    size_t n = *cap ? *cap : 16;
    while (n < need) {
        if (n > SIZE_MAX / 2) return NULL;
        n *= 2;
    }
    if (n > SIZE_MAX / size) return NULL;
    void *grown = realloc(arr, n * size);
    if (grown) *cap = n;
    return grown;
}

#define TT_RESERVE(arr, cap, need)                                        \
    ({                                                                    \
        int failed_ = 0;                                                  \
        if ((need) > (cap)) {                                             \
            void *grown_ = tt_grow((arr), &(cap), (need), sizeof *(arr)); \
            if (grown_)                                                   \
                (arr) = grown_;                                           \
            else                                                          \
                failed_ = -1;                                             \
        }                                                                 \
        failed_;                                                          \
    })

#endif
