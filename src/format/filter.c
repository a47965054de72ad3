/* filter.c -- Score-P filter files (see filter.h).
 *
 * The file is read line by line into a list of rules, each one pattern with
 * its block (region names or file names) and its verdict (INCLUDE or
 * EXCLUDE). Matching walks a block's rules from the last one back and stops
 * at the first that matches, which is "the last matching rule decides".
 */
#include "filter.h"

#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"

/* A filter file is a few lines typed by a person; anything this big is not one. */
#define FILTER_FILE_MAX (16u << 20)

enum block { OUTSIDE, REGIONS, FILES };

typedef struct rule {
    char *pattern;
    enum block block;
    int exclude;
} rule;

struct tt_filter {
    rule *rules;
    size_t count, cap;
};

static const struct {
    const char *word;
    enum block block; /* opened (from OUTSIDE) or closed (back to OUTSIDE) */
    int opens;
} block_words[] = {
    {"SCOREP_REGION_NAMES_BEGIN", REGIONS, 1},
    {"SCOREP_REGION_NAMES_END", REGIONS, 0},
    {"SCOREP_FILE_NAMES_BEGIN", FILES, 1},
    {"SCOREP_FILE_NAMES_END", FILES, 0},
};

static const char *block_name(enum block b) { return b == REGIONS ? "SCOREP_REGION_NAMES" : "SCOREP_FILE_NAMES"; }

typedef struct parser {
    tt_filter *f;
    const char *origin;
    size_t line;
    enum block block;
    size_t block_line; /* where the open block began */
    int verdict;       /* -1 before INCLUDE or EXCLUDE in this block, else exclude? */
    tt_error *err;
} parser;

static int fail_at(parser *p, const char *what, const char *token, size_t len)
{
    if (token) return tt_fail(p->err, "%s:%zu: %s '%.*s'", p->origin, p->line, what, (int)(len > 80 ? 80 : len), token);
    return tt_fail(p->err, "%s:%zu: %s", p->origin, p->line, what);
}

static int add_rule(parser *p, const char *token, size_t len)
{
    tt_filter *f = p->f;
    if (TT_RESERVE(f->rules, f->cap, f->count + 1) != 0) return tt_fail(p->err, "out of memory");
    char *pattern = strndup(token, len);
    if (!pattern) return tt_fail(p->err, "out of memory");
    f->rules[f->count++] = (rule){pattern, p->block, p->verdict};
    return 0;
}

static int is_word(const char *token, size_t len, const char *word)
{
    return strlen(word) == len && memcmp(token, word, len) == 0;
}

/* One whitespace-separated token of a line. */
static int take_token(parser *p, const char *token, size_t len)
{
    for (size_t i = 0; i < sizeof block_words / sizeof *block_words; i++) {
        if (!is_word(token, len, block_words[i].word)) continue;
        if (block_words[i].opens) {
            if (p->block != OUTSIDE) return fail_at(p, "a block cannot begin inside another:", token, len);
            p->block = block_words[i].block;
            p->block_line = p->line;
            p->verdict = -1;
        } else {
            if (p->block != block_words[i].block) return fail_at(p, "no open block to end:", token, len);
            p->block = OUTSIDE;
        }
        return 0;
    }
    if (p->block == OUTSIDE) return fail_at(p, "outside a SCOREP_REGION_NAMES or SCOREP_FILE_NAMES block:", token, len);
    if (is_word(token, len, "INCLUDE") || is_word(token, len, "EXCLUDE")) {
        p->verdict = token[0] == 'E';
        return 0;
    }
    if (p->verdict < 0) return fail_at(p, "a pattern before INCLUDE or EXCLUDE:", token, len);
    /* Score-P matches MANGLED names of C++ functions; a Python region has
     * one name only. */
    if (is_word(token, len, "MANGLED")) return 0;
    if (token[len - 1] == '\\' && (len < 2 || token[len - 2] != '\\'))
        return fail_at(p, "a pattern ends in an unfinished escape:", token, len);
    return add_rule(p, token, len);
}

/* One line, without its newline. */
static int take_line(parser *p, const char *s, size_t len)
{
    size_t i = 0;
    while (i < len) {
        while (i < len && (s[i] == ' ' || s[i] == '\t' || s[i] == '\r' || s[i] == '\v' || s[i] == '\f')) i++;
        if (i == len || s[i] == '#') return 0;
        size_t start = i;
        /* A backslash escapes the next character, a blank or a '#' too. */
        while (i < len && s[i] != ' ' && s[i] != '\t' && s[i] != '\r' && s[i] != '\v' && s[i] != '\f' && s[i] != '#')
            i += s[i] == '\\' && i + 1 < len ? 2 : 1;
        if (take_token(p, s + start, i - start) != 0) return -1;
    }
    return 0;
}

int tt_filter_parse(const char *text, size_t len, const char *origin, tt_filter **out, tt_error *err)
{
    *out = NULL;
    tt_filter *f = calloc(1, sizeof *f);
    if (!f) return tt_fail(err, "out of memory");
    parser p = {.f = f, .origin = origin, .line = 0, .block = OUTSIDE, .err = err};
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < len;) {
        const char *end = memchr(text + i, '\n', len - i);
        size_t n = end ? (size_t)(end - (text + i)) : len - i;
        p.line++;
        if (memchr(text + i, '\0', n))
            rc = fail_at(&p, "not a text file (a NUL byte)", NULL, 0);
        else
            rc = take_line(&p, text + i, n);
        i += n + 1;
    }
    if (rc == 0 && p.block != OUTSIDE) {
        p.line = p.block_line;
        char what[96];
        snprintf(what, sizeof what, "%s_BEGIN without %s_END", block_name(p.block), block_name(p.block));
        rc = fail_at(&p, what, NULL, 0);
    }
    if (rc != 0) {
        tt_filter_free(f);
        return rc;
    }
    *out = f;
    return 0;
}

int tt_filter_load(const char *path, tt_filter **out, tt_error *err)
{
    *out = NULL;
    FILE *file = fopen(path, "rb");
    if (!file) return tt_fail_errno(err, "cannot read filter file %s", path);
    char *text = NULL;
    size_t len = 0, cap = 0;
    int rc = 0;
    for (;;) {
        if (TT_RESERVE(text, cap, len + 4096) != 0) {
            rc = tt_fail(err, "out of memory");
            break;
        }
        size_t n = fread(text + len, 1, cap - len, file);
        len += n;
        if (len > FILTER_FILE_MAX) {
            rc = tt_fail(err, "filter file %s: too large to be a filter file", path);
            break;
        }
        if (n == 0) {
            if (ferror(file)) rc = tt_fail_errno(err, "cannot read filter file %s", path);
            break;
        }
    }
    fclose(file);
    if (rc == 0) rc = tt_filter_parse(text, len, path, out, err);
    free(text);
    return rc;
}

void tt_filter_free(tt_filter *f)
{
    if (!f) return;
    for (size_t i = 0; i < f->count; i++) free(f->rules[i].pattern);
    free(f->rules);
    free(f);
}

/* The verdict of the last rule of `block` that matches s: 1 exclude, 0 not. */
static int excluded_by(const tt_filter *f, enum block block, const char *s)
{
    for (size_t i = f->count; i-- > 0;)
        if (f->rules[i].block == block && fnmatch(f->rules[i].pattern, s, 0) == 0) return f->rules[i].exclude;
    return 0;
}

int tt_filter_excludes(const tt_filter *f, const char *name, const char *file)
{
    return excluded_by(f, REGIONS, name) || (*file && excluded_by(f, FILES, file));
}
