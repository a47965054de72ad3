/* filter.h -- Score-P filter files: which regions a measurement records.
 *
 * The syntax is Score-P's (`--filter FILE`, SCOREP_FILTERING_FILE):
 *
 *     # a comment, to the end of the line
 *     SCOREP_REGION_NAMES_BEGIN
 *       EXCLUDE *
 *       INCLUDE __main__:main  __main__:step
 *               __main__:helper*          <- a rule goes on until the next keyword
 *       EXCLUDE MANGLED foo               <- MANGLED is accepted and ignored
 *     SCOREP_REGION_NAMES_END
 *     SCOREP_FILE_NAMES_BEGIN
 *       EXCLUDE *site-packages*
 *     SCOREP_FILE_NAMES_END
 *
 * Patterns are shell wildcards (fnmatch(3): `*`, `?`, `[...]`, `\` escapes
 * the next character) matched against the whole region name or the whole
 * source file name. Within each block the last rule that matches a name
 * decides; a name no rule matches is included. A region is excluded when its
 * name is excluded or its file is (file rules apply only to regions with a
 * known file: Python functions).
 *
 * Contract:
 *  - tt_filter_parse never half-accepts a file: it returns a filter, or fails
 *    with one line "ORIGIN:LINE: what is wrong" in err.
 *  - A filter is immutable once parsed and owns its patterns.
 *  - tt_filter_excludes is for the slow path (once per region), not per call.
 */
#ifndef TRACETOP_FILTER_H
#define TRACETOP_FILTER_H

#include <stddef.h>

#include "error.h"

typedef struct tt_filter tt_filter;

/* Parses the text of a filter file; `origin` names it in error messages. */
int tt_filter_parse(const char *text, size_t len, const char *origin, tt_filter **out, tt_error *err);

/* Reads and parses the file at path. */
int tt_filter_load(const char *path, tt_filter **out, tt_error *err);

void tt_filter_free(tt_filter *f);

/* 1 when the region named `name`, defined in `file` ("" when unknown), is
 * excluded from recording; 0 when it is recorded. */
int tt_filter_excludes(const tt_filter *f, const char *name, const char *file);

#endif
