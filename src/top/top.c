/* top.c -- `tracetop top`: the live view of processes measured with --live.
 *
 * The `tracetop top` command checks its arguments and runs this program:
 *
 *     tracetop-top [--pid PID] [--interval SECONDS] [--window SECONDS]   the screen (ncurses)
 *     tracetop-top --list                             this user's live processes
 *     tracetop-top --drain [--pid PID]                no screen: read until the processes end,
 *                                                     then say what was read (for benchmarks)
 *
 * One loop reads the channels (watch.h) every few milliseconds, so that
 * they never fill, and redraws the screen every interval (0.1 s: ten times
 * a second) from the rows of the view (view.h): by default those of the
 * last few seconds (--window; 0: since top started). Keys: q quit, s sort,
 * c sort by CPU, w the window or since the start, + and - a longer or
 * shorter window, p pause, r reset, t thread, / filter, m measurement
 * on/off, o objects (the types of objects instead of the functions), ?
 * help.
 *
 * The screen is legible from 80x24 on: the numbers take fixed columns,
 * the function and FILE:LINE share the rest, and what does not fit is cut
 * in the middle, so that names which differ at their end stay apart and
 * the line number stays.
 */
#define _GNU_SOURCE
#define NCURSES_WIDECHAR 1
#include <errno.h>
#include <locale.h>
#include <ncurses.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <wchar.h>

#include "clock.h"
#include "view.h"
#include "watch.h"

#define SCAN_NS 250000000ull   /* new processes are looked for four times a second */
#define POLL_MS 5              /* the longest the loop waits for a key */
#define READ_BUDGET (8u << 20) /* bytes read from one channel before looking at the keys again */
#define HEADER_LINES 4
#define DEFAULT_WINDOW 5 /* seconds */

static volatile sig_atomic_t stop_requested;

static void on_signal(int sig)
{
    (void)sig;
    stop_requested = 1;
}

static void catch_signals(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
}

static int fail(int status, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int fail(int status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("tracetop: error: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    return status;
}

static const char *base_name(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash && slash[1] ? slash + 1 : path;
}

static double seconds_since(uint64_t t0) { return (double)(tt_monotonic_ns() - t0) / 1e9; }

/* ---- text ---- */

/* 1234 -> "1234", 12345 -> "12.3k", ... */
static void format_count(char *buf, size_t cap, double v)
{
    if (v < 10000)
        snprintf(buf, cap, "%.0f", v);
    else if (v < 1e6)
        snprintf(buf, cap, "%.1fk", v / 1e3);
    else if (v < 1e9)
        snprintf(buf, cap, "%.1fM", v / 1e6);
    else
        snprintf(buf, cap, "%.1fG", v / 1e9);
}

/* Seconds in at most 6 columns, four digits where they fit: 1.234, 12.34,
 * 123.4, 12345. */
static void format_seconds(char *buf, size_t cap, double s)
{
    if (s < 9.9995)
        snprintf(buf, cap, "%.3f", s);
    else if (s < 99.995)
        snprintf(buf, cap, "%.2f", s);
    else if (s < 999.95)
        snprintf(buf, cap, "%.1f", s);
    else if (s < 999999.5)
        snprintf(buf, cap, "%.0f", s);
    else
        snprintf(buf, cap, "%.0fk", s / 1e3);
}

/* A percentage in 5 columns: 12.3, 100.0, 1234. */
static void format_percent(char *buf, size_t cap, double p) { snprintf(buf, cap, p < 999.95 ? "%.1f" : "%.0f", p); }

/* Calls in 6 columns: exact below a million, then 1.2M, 3.4G. */
static void format_calls(char *buf, size_t cap, uint64_t calls)
{
    if (calls < 1000000)
        snprintf(buf, cap, "%llu", (unsigned long long)calls);
    else
        format_count(buf, cap, (double)calls);
}

/* The bytes of the character at s (one for a byte that is none) and, in
 * *w, the columns it takes. */
static size_t next_char(const char *s, size_t len, mbstate_t *state, int *w)
{
    wchar_t wc;
    size_t n = mbrtowc(&wc, s, len, state);
    if (n == (size_t)-1 || n == (size_t)-2 || n == 0) {
        memset(state, 0, sizeof *state);
        n = 1, wc = L'?';
    }
    *w = wcwidth(wc);
    if (*w < 0) *w = 1;
    return n;
}

/* The columns s takes on screen. */
static int text_width(const char *s)
{
    mbstate_t state;
    memset(&state, 0, sizeof state);
    int used = 0, w;
    for (size_t bytes = 0, len = strlen(s); bytes < len; used += w)
        bytes += next_char(s + bytes, len - bytes, &state, &w);
    return used;
}

/* Writes at most `width` columns of s at (y, x); multibyte characters are
 * never cut. Returns the columns written. */
static int put(int y, int x, int width, const char *s)
{
    mbstate_t state;
    memset(&state, 0, sizeof state);
    int used = 0, w;
    size_t bytes = 0, len = strlen(s);
    while (bytes < len) {
        size_t n = next_char(s + bytes, len - bytes, &state, &w);
        if (used + w > width) break;
        used += w;
        bytes += n;
    }
    mvaddnstr(y, x, s, (int)bytes);
    return used;
}

/* Writes s in at most `width` columns at (y, x), cut in the middle when it
 * does not fit: its start, an ellipsis, its end, of at least `tail` columns
 * (a FILE:LINE keeps its line). */
static void put_middle(int y, int x, int width, const char *s, int tail)
{
    int total = text_width(s);
    if (total <= width) {
        put(y, x, width, s);
        return;
    }
    if (width <= 0) return;
    int keep = width - 1, back = keep / 2 > tail ? keep / 2 : tail;
    if (back > keep) back = keep;
    int front = put(y, x, keep - back, s);
    front += put(y, x + front, 1, MB_CUR_MAX > 1 ? "\u2026" : "~");
    /* Skip characters until what is left takes at most `back` columns. */
    mbstate_t state;
    memset(&state, 0, sizeof state);
    size_t bytes = 0, len = strlen(s);
    int w;
    while (bytes < len && total > back) {
        bytes += next_char(s + bytes, len - bytes, &state, &w);
        total -= w;
    }
    put(y, x + front, width - front, s + bytes);
}

static int putf(int y, int x, int width, const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static int putf(int y, int x, int width, const char *fmt, ...)
{
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    return put(y, x, width, buf);
}

/* ---- the screen ---- */

typedef struct screen {
    tt_watch watch;
    tt_view view;
    tt_objview objects;
    uint64_t interval_ns;
    unsigned window; /* seconds of the window, kept while the view shows everything */
    int paused, help, prompting, showing_objects, was_reset;
    char input[sizeof((tt_view *)0)->filter];
    size_t input_len;
    uint64_t rate_time, rate_events; /* events per second: counted from here */
    double rate;
} screen;

static uint64_t events_read(const tt_watch *w)
{
    uint64_t n = 0;
    for (size_t i = 0; i < w->count; i++) n += w->procs[i]->agg.events;
    return n;
}

static void update_rate(screen *s)
{
    uint64_t now = tt_monotonic_ns(), events = events_read(&s->watch);
    double elapsed = (double)(now - s->rate_time) / 1e9;
    if (elapsed >= 1.0 || (s->rate == 0 && elapsed >= 0.2)) {
        s->rate = (double)(events - s->rate_events) / elapsed;
        s->rate_time = now;
        s->rate_events = events;
    }
}

static void draw_header(screen *s)
{
    tt_watch *w = &s->watch;
    tt_view *v = &s->view;
    int x;
    attron(A_BOLD);
    x = put(0, 0, COLS, "tracetop top");
    attroff(A_BOLD);
    if (w->count == 1) {
        const tt_watched *p = w->procs[0];
        putf(0, x, COLS - x - 8, "  pid %ld  %s  (%s)", (long)p->pid, base_name(p->name), tt_watched_state(p));
    } else if (w->count > 1) {
        size_t running = 0;
        for (size_t i = 0; i < w->count; i++) running += tt_watched_running(w->procs[i]);
        putf(0, x, COLS - x - 8, "  %zu processes, %zu running", w->count, running);
    } else {
        if (w->only_count)
            putf(0, x, COLS - x - 8, "  waiting for process %ld (run with --live?)", (long)w->only[0]);
        else
            put(0, x, COLS - x - 8, "  waiting for programs run with --live");
    }
    put(0, COLS - 6, 6, "? help");

    size_t threads = 0, measuring = 0, running = 0;
    uint64_t dropped = 0;
    for (size_t i = 0; i < w->count; i++) {
        const tt_watched *p = w->procs[i];
        for (uint32_t t = 0; t < p->agg.thread_cap; t++)
            threads += p->agg.threads[t] && p->agg.threads[t]->seen && !p->agg.threads[t]->ended;
        if (tt_watched_running(p)) {
            running++;
            measuring += p->measuring != 0;
        }
        dropped += tt_watched_dropped_events(p);
    }
    char rate[32], drops[32], state[64];
    format_count(rate, sizeof rate, s->rate);
    format_count(drops, sizeof drops, (double)dropped);
    if (tt_watch_pending(w))
        snprintf(state, sizeof state, "switching");
    else if (running > 1 && measuring && measuring < running)
        snprintf(state, sizeof state, "on %zu/%zu", measuring, running);
    else
        snprintf(state, sizeof state, "%s", measuring ? "on" : "off");
    if (s->showing_objects)
        putf(1, 0, COLS, "threads %zu  events/s %s  drops %s%s  measurement %s  objects by alive", threads, rate,
             dropped ? "~" : "", drops, state);
    else
        putf(1, 0, COLS, "threads %zu  events/s %s  drops %s%s  measurement %s  sort %s", threads, rate,
             dropped ? "~" : "", drops, state, tt_sort_name(v->sort));

    if (s->prompting) {
        x = put(2, 0, COLS, "filter: ");
        put(2, x, COLS - x, s->input);
        curs_set(1);
        return;
    }
    curs_set(0);
    /* What the rows are of: over what time, which threads; then what the
     * user should know. */
    char line[512] = "";
    size_t n = 0;
    if (s->paused) n += (size_t)snprintf(line + n, sizeof line - n, "PAUSED  ");
    if (!s->showing_objects) {
        if (v->window)
            n += (size_t)snprintf(line + n, sizeof line - n, "last %u s  ", v->window);
        else
            n += (size_t)snprintf(line + n, sizeof line - n, "since %s  ", s->was_reset ? "reset" : "start");
        tt_view_thread t = tt_view_scope_thread(v, w);
        if (!t.thread) {
            n += (size_t)snprintf(line + n, sizeof line - n, "all threads  ");
        } else {
            n += (size_t)snprintf(line + n, sizeof line - n, "thread %s",
                                  tt_agg_string(&t.process->agg, t.thread->name));
            /* The pid only where several processes could have the thread. */
            if (w->count > 1 && n < sizeof line)
                n += (size_t)snprintf(line + n, sizeof line - n, " (%ld)", (long)t.process->pid);
            if (!tt_view_thread_live(t.process, t.thread) && n < sizeof line)
                n += (size_t)snprintf(line + n, sizeof line - n, " (ended)");
            if (n < sizeof line) n += (size_t)snprintf(line + n, sizeof line - n, "  ");
        }
        if (v->filter[0] && n < sizeof line)
            n += (size_t)snprintf(line + n, sizeof line - n, "filter \"%s\"  ", v->filter);
    }
    for (size_t i = 0; i < w->count && n < sizeof line; i++)
        if (w->procs[i]->problem)
            n += (size_t)snprintf(line + n, sizeof line - n, "pid %ld: %s  ", (long)w->procs[i]->pid,
                                  w->procs[i]->problem);
    if (w->notice[0] && n < sizeof line) snprintf(line + n, sizeof line - n, "%s", w->notice);
    if (s->paused) attron(A_BOLD);
    put(2, 0, COLS, line);
    if (s->paused) attroff(A_BOLD);
}

/* The numbers' columns: title, width, the sort they show. */
static const struct column {
    const char *title;
    int width;
    enum tt_sort sort;
} numbers[] = {
    {"%OWN", 5, TT_SORT_COUNT},    {"OWN s", 6, TT_SORT_OWN},         {"%CPU", 5, TT_SORT_CPU},
    {"TOTAL s", 7, TT_SORT_TOTAL}, {"%DESC", 5, TT_SORT_DESCENDANTS}, {"CALLS", 6, TT_SORT_CALLS},
};
#define NUMBERS (sizeof numbers / sizeof *numbers)
#define FIXED_COLUMNS 41 /* the numbers, a space after each, and one more */

static void location_of(const tt_function *f, char *buf, size_t cap)
{
    if (f->file[0])
        snprintf(buf, cap, "%s:%u", base_name(f->file), f->line);
    else
        snprintf(buf, cap, "-");
}

static void draw_rows(screen *s)
{
    tt_watch *w = &s->watch;
    tt_view *v = &s->view;
    int shown = LINES - HEADER_LINES < (int)v->row_count ? LINES - HEADER_LINES : (int)v->row_count;

    /* FUNCTION and FILE:LINE share what the numbers leave: FUNCTION as wide
     * as its widest on screen when both fit (FILE:LINE then has the rest),
     * else FILE:LINE a third at most. */
    int rest = COLS - FIXED_COLUMNS, name_width = 8, location_width = 9;
    char location[512];
    for (int i = 0; i < shown; i++) {
        const tt_function *f = &w->functions.items[v->rows[i].function];
        int n = text_width(f->name);
        location_of(f, location, sizeof location);
        int l = text_width(location);
        if (n > name_width) name_width = n;
        if (l > location_width) location_width = l;
    }
    int loc = rest - 1 - name_width;
    if (loc < location_width) {
        loc = rest / 3 < location_width ? rest / 3 : location_width;
        if (rest - 1 - loc > name_width) loc = rest - 1 - name_width;
    }
    int name = rest - 1 - loc;

    int y = HEADER_LINES - 1, x = 0;
    attron(A_REVERSE);
    mvhline(y, 0, ' ', COLS);
    for (size_t i = 0; i < NUMBERS; i++) {
        if (numbers[i].sort == v->sort) attron(A_BOLD | A_UNDERLINE);
        putf(y, x, numbers[i].width, "%*s", numbers[i].width, numbers[i].title);
        attroff(A_BOLD | A_UNDERLINE);
        x += numbers[i].width + 1;
    }
    put(y, FIXED_COLUMNS, name, "FUNCTION");
    put(y, FIXED_COLUMNS + name + 1, loc, "FILE:LINE");
    attroff(A_REVERSE);

    for (int i = 0; i < shown; i++) {
        const tt_row *r = &v->rows[i];
        const tt_function *f = &w->functions.items[r->function];
        char own_percent[16], own[16], cpu_percent[16], total[16], desc_percent[16], calls[32];
        format_percent(own_percent, sizeof own_percent, r->own_percent);
        format_seconds(own, sizeof own, r->own);
        format_percent(cpu_percent, sizeof cpu_percent, r->cpu_percent);
        format_seconds(total, sizeof total, r->total);
        format_percent(desc_percent, sizeof desc_percent, r->desc_percent);
        format_calls(calls, sizeof calls, r->calls);
        location_of(f, location, sizeof location);
        y = HEADER_LINES + i;
        putf(y, 0, FIXED_COLUMNS, "%5s %6s %5s %7s %5s %6s  ", own_percent, own, cpu_percent, total, desc_percent,
             calls);
        put_middle(y, FIXED_COLUMNS, name, f->name, 0);
        const char *colon = strrchr(location, ':');
        put_middle(y, FIXED_COLUMNS + name + 1, loc, location, colon ? text_width(colon) : 0);
    }
    if (!v->row_count) {
        char none[64];
        snprintf(none, sizeof none, "no calls in the last %u s", v->window);
        put(HEADER_LINES, 2, COLS - 2,
            !w->count      ? "no live process yet"
            : v->filter[0] ? "no function matches the filter"
            : v->window    ? none
                           : "no calls seen yet");
    }
}

#define OBJECT_COLUMNS 35 /* " CREATED/s DESTROYED/s      ALIVE  ", as a row's "%10s %11s %10s  " */

/* Per type: its rates and alive objects, then a bar each, scaled to the
 * largest of its kind on screen: '+' created/s, '-' destroyed/s, '#' alive. */
static void draw_objects(screen *s)
{
    const tt_objview *o = &s->objects;
    int y = HEADER_LINES - 1, name = (COLS - OBJECT_COLUMNS) / 3, bars = COLS - OBJECT_COLUMNS - name - 1;
    if (name > 32) name = 32, bars = COLS - OBJECT_COLUMNS - name - 1;
    attron(A_REVERSE);
    mvhline(y, 0, ' ', COLS);
    put(y, 0, OBJECT_COLUMNS, " CREATED/s DESTROYED/s      ALIVE  ");
    put(y, OBJECT_COLUMNS, name, "TYPE");
    put(y, OBJECT_COLUMNS + name + 1, bars, "+ created/s  - destroyed/s  # alive");
    attroff(A_REVERSE);

    double most_rate = 0, most_alive = 0;
    for (size_t i = 0; i < o->row_count; i++) {
        const tt_objrow *r = &o->rows[i];
        if (r->created_rate > most_rate) most_rate = r->created_rate;
        if (r->destroyed_rate > most_rate) most_rate = r->destroyed_rate;
        if ((double)r->alive > most_alive) most_alive = (double)r->alive;
    }
    /* Three lines a type where the screen has room, else one: the alive bar. */
    int lines = (size_t)(LINES - HEADER_LINES) >= o->row_count * 3 ? 3 : 1;
    for (size_t i = 0; i < o->row_count && HEADER_LINES + (int)i * lines < LINES; i++) {
        const tt_objrow *r = &o->rows[i];
        char created[32], destroyed[32], alive[32];
        format_count(created, sizeof created, r->created_rate);
        format_count(destroyed, sizeof destroyed, r->destroyed_rate);
        format_count(alive, sizeof alive, (double)r->alive);
        y = HEADER_LINES + (int)i * lines;
        putf(y, 0, OBJECT_COLUMNS, "%10s %11s %10s  ", created, destroyed, alive);
        put_middle(y, OBJECT_COLUMNS, name, r->type, 0);
        const struct {
            char mark;
            double value, most;
        } bar[3] = {{'#', (double)r->alive, most_alive},
                    {'+', r->created_rate, most_rate},
                    {'-', r->destroyed_rate, most_rate}};
        for (int b = 0; b < lines && y + b < LINES; b++) {
            int n = bar[b].most > 0 && bar[b].value > 0 ? (int)(bar[b].value / bar[b].most * bars + 0.5) : 0;
            if (n < 1 && bar[b].value > 0) n = 1;
            mvhline(y + b, OBJECT_COLUMNS + name + 1, (chtype)bar[b].mark, n);
        }
    }
    if (!o->row_count)
        put(HEADER_LINES, 2, COLS - 2,
            o->counting ? "no objects counted yet" : "no objects counted (run the program with --live --objects)");
}

static void draw_help(void)
{
    static const char *const lines[] = {
        "tracetop top: keys",
        "  q    quit                      p    pause the screen (reading goes on)",
        "  s    sort: own, cpu, total,    r    reset: count from now",
        "       calls, %desc              t    next live thread, then all merged",
        "  c    sort by CPU (again: own)  /    filter functions by name",
        "  w    the last N s, or all      m    measurement on or off",
        "       since the start (or r)    o    objects (--objects): created/s,",
        "  + -  a longer, shorter window       destroyed/s, alive; again: functions",
        "  ?    this help",
        "",
        "%OWN   own time, as a share of the time covered (the threads' spans, summed)",
        "OWN s  time in the function itself, seconds",
        "%CPU   its CPU time, as a share of the time covered (100: one CPU busy):",
        "       each thread's CPU time, sampled every 0.1 s, shared among its",
        "       functions by the time each held the GIL: Python code all its",
        "       own time, C functions the rest (sleep, locks and I/O release it)",
        "TOTAL s  time in it and what it called, seconds",
        "%DESC  share of TOTAL spent in what it called",
        "",
        "any key closes this help",
    };
    int n = (int)(sizeof lines / sizeof *lines), width = 80;
    if (width > COLS) width = COLS;
    int top = (LINES - n - 2) / 2, left = (COLS - width) / 2;
    if (top < 0) top = 0;
    for (int i = 0; i < n + 2 && top + i < LINES; i++) {
        mvhline(top + i, left, ' ', width);
        if (i > 0 && i <= n) put(top + i, left + 2, width - 3, lines[i - 1]);
    }
}

static void draw(screen *s)
{
    erase();
    if (COLS < 40 || LINES < HEADER_LINES + 2) {
        put(0, 0, COLS, "tracetop top: the terminal is too small");
    } else {
        draw_header(s);
        if (s->showing_objects)
            draw_objects(s);
        else
            draw_rows(s);
        if (s->help) draw_help();
    }
    if (!s->prompting) move(LINES - 1, COLS - 1);
    refresh();
}

/* Switches measurement off where any process measures, else on. */
static void toggle_measurement(tt_watch *w)
{
    int any = 0;
    for (size_t i = 0; i < w->count; i++) any |= tt_watched_running(w->procs[i]) && w->procs[i]->measuring;
    tt_watch_request(w, !any);
}

/* A key typed while entering a filter. */
static void prompt_key(screen *s, int key)
{
    if (key == '\n' || key == '\r' || key == KEY_ENTER) {
        s->input[s->input_len] = '\0';
        tt_view_set_filter(&s->view, s->input);
        s->prompting = 0;
    } else if (key == 27) {
        s->prompting = 0;
    } else if (key == KEY_BACKSPACE || key == 127 || key == 8) {
        if (s->input_len) s->input[--s->input_len] = '\0';
    } else if (key >= ' ' && key < 256 && key != 127 && s->input_len + 1 < sizeof s->input) {
        s->input[s->input_len++] = (char)key;
        s->input[s->input_len] = '\0';
    }
}

/* The windows + and - step through. */
static unsigned next_window(unsigned window, int longer)
{
    static const unsigned steps[] = {1, 2, 5, 10, 20, 30, TT_AGG_WINDOW_MAX};
    size_t n = sizeof steps / sizeof *steps;
    if (longer) {
        for (size_t i = 0; i < n; i++)
            if (steps[i] > window) return steps[i];
        return steps[n - 1];
    }
    for (size_t i = n; i-- > 0;)
        if (steps[i] < window) return steps[i];
    return steps[0];
}

/* Returns 0 to quit. */
static int on_key(screen *s, int key)
{
    if (key == KEY_RESIZE) return 1;
    if (s->prompting) {
        prompt_key(s, key);
        return 1;
    }
    if (s->help) {
        s->help = 0;
        return 1;
    }
    switch (key) {
    case 'q':
    case 'Q':
        return 0;
    case 's':
        tt_view_set_sort(&s->view, (enum tt_sort)((s->view.sort + 1) % TT_SORT_COUNT));
        break;
    case 'c':
        tt_view_set_sort(&s->view, s->view.sort == TT_SORT_CPU ? TT_SORT_OWN : TT_SORT_CPU);
        break;
    case 'w':
        tt_view_set_window(&s->view, s->view.window ? 0 : s->window);
        break;
    case '+':
    case '-':
        s->window = next_window(s->window, key == '+');
        tt_view_set_window(&s->view, s->window);
        break;
    case 'p':
        s->paused = !s->paused;
        break;
    case 'r':
        tt_watch_reset(&s->watch);
        tt_view_set_sort(&s->view, s->view.sort);
        s->was_reset = 1;
        s->rate = 0;
        s->rate_time = tt_monotonic_ns();
        s->rate_events = events_read(&s->watch);
        break;
    case 't':
        tt_view_next_thread(&s->view, &s->watch);
        break;
    case '/':
        s->prompting = 1;
        snprintf(s->input, sizeof s->input, "%s", s->view.filter);
        s->input_len = strlen(s->input);
        break;
    case 'm':
        toggle_measurement(&s->watch);
        break;
    case 'o':
        s->showing_objects = !s->showing_objects;
        break;
    case '?':
    case 'h':
        s->help = 1;
        break;
    default:
        break;
    }
    return 1;
}

/* With one process named and not watched yet: 0 while it may still be
 * (it runs, and its channel is not made yet, or not ready), else -1 with
 * the reason in err. A program just started makes its channel a moment
 * after it starts. */
static int still_to_come(pid_t only, const tt_watch *w, tt_error *err)
{
    tt_live_view *probe;
    if (tt_live_open(only, &probe, err) == 0) {
        tt_live_state state = tt_live_process_state(probe);
        tt_live_view_close(probe);
        if (state == TT_LIVE_RUNNING) return 0;
        return tt_fail(err, "process %ld cannot be watched: %s", (long)only,
                       w->notice[0] ? w->notice : "its measurement has ended");
    }
    if (kill(only, 0) < 0 && errno == ESRCH) return -1; /* err says there is no such live process */
    if (strstr(err->message, "another user")) return -1;
    return 0;
}

static int run_screen(pid_t only, double interval, unsigned window)
{
    static screen s;
    if (tt_watch_init(&s.watch, &only, only ? 1 : 0) < 0) return fail(1, "out of memory");
    tt_view_init(&s.view);
    tt_view_set_window(&s.view, window);
    s.window = window ? window : DEFAULT_WINDOW;
    s.interval_ns = (uint64_t)(interval * 1e9);
    tt_error err;
    if (tt_watch_scan(&s.watch, &err) < 0) return fail(1, "%s", err.message);
    if (only && s.watch.count == 0 && still_to_come(only, &s.watch, &err) < 0) {
        tt_watch_free(&s.watch);
        return fail(1, "%s", err.message);
    }
    if (!isatty(STDIN_FILENO) || !isatty(STDOUT_FILENO)) {
        tt_watch_free(&s.watch);
        return fail(2, "top needs a terminal (without one: tracetop top --list)");
    }

    setlocale(LC_ALL, "");
    initscr();
    cbreak();
    noecho();
    nonl();
    keypad(stdscr, TRUE);
    set_escdelay(25);
    timeout(POLL_MS);
    curs_set(0);
    catch_signals();

    s.rate_time = tt_monotonic_ns();
    uint64_t next_scan = 0, next_draw = 0;
    int status = 0;
    while (!stop_requested) {
        uint64_t now = tt_monotonic_ns();
        if (now >= next_scan) {
            if (tt_watch_scan(&s.watch, &err) < 0 ||
                (only && s.watch.count == 0 && still_to_come(only, &s.watch, &err) < 0)) {
                status = 1;
                break;
            }
            next_scan = now + SCAN_NS;
        }
        tt_watch_consume(&s.watch, READ_BUDGET);
        if (now >= next_draw) {
            update_rate(&s);
            if (!s.paused || !s.view.steady) tt_view_build(&s.view, &s.watch);
            if (!s.paused) tt_objview_build(&s.objects, &s.watch, now);
            draw(&s);
            next_draw = now + s.interval_ns;
        }
        int key = getch();
        if (key == ERR) continue;
        if (!on_key(&s, key)) break;
        /* Show at once what the key did. */
        if (!s.paused || !s.view.steady) tt_view_build(&s.view, &s.watch);
        draw(&s);
    }
    endwin();
    tt_view_free(&s.view);
    tt_objview_free(&s.objects);
    tt_watch_free(&s.watch);
    if (status) return fail(status, "%s", err.message);
    return 0;
}

/* ---- without a screen ---- */

static int run_list(void)
{
    pid_t *pids;
    size_t count, removed;
    tt_error err;
    if (tt_live_list(&pids, &count, &removed, &err) < 0) return fail(1, "%s", err.message);
    if (removed)
        fprintf(stderr, "tracetop: removed %zu channel%s left by programs that died\n", removed,
                removed == 1 ? "" : "s");
    if (count) printf("%8s  %-11s  %s\n", "PID", "MEASURING", "PROGRAM (EXPERIMENT)");
    for (size_t i = 0; i < count; i++) {
        tt_live_view *v;
        if (tt_live_open(pids[i], &v, &err) < 0) continue;
        printf("%8ld  %-11s  %s (%s)\n", (long)pids[i], tt_live_measuring(v) ? "on" : "off", tt_live_name(v),
               tt_live_experiment(v));
        tt_live_view_close(v);
    }
    free(pids);
    return 0;
}

static int run_drain(pid_t only)
{
    static tt_watch w;
    if (tt_watch_init(&w, &only, only ? 1 : 0) < 0) return fail(1, "out of memory");
    catch_signals();
    tt_error err;
    uint64_t started = tt_monotonic_ns(), next_scan = 0;
    while (!stop_requested) {
        uint64_t now = tt_monotonic_ns();
        if (now >= next_scan) {
            if (tt_watch_scan(&w, &err) < 0 || (only && w.count == 0 && still_to_come(only, &w, &err) < 0)) {
                tt_watch_free(&w);
                return fail(1, "%s", err.message);
            }
            next_scan = now + SCAN_NS / 25;
        }
        size_t running = 0;
        for (size_t i = 0; i < w.count; i++) running += tt_watched_running(w.procs[i]);
        size_t read = tt_watch_consume(&w, SIZE_MAX);
        if (w.count && !running && !read) break;
        if (!read) {
            struct timespec pause = {0, 1000000};
            nanosleep(&pause, NULL);
        }
    }
    uint64_t dropped = 0, resyncs = 0, bytes = 0;
    for (size_t i = 0; i < w.count; i++) {
        dropped += w.procs[i]->dropped - w.procs[i]->dropped_base;
        resyncs += w.procs[i]->agg.resyncs;
        bytes += w.procs[i]->agg.bytes;
    }
    printf("processes %zu events %llu bytes %llu dropped_bytes %llu resyncs %llu seconds %.3f\n", w.count,
           (unsigned long long)events_read(&w), (unsigned long long)bytes, (unsigned long long)dropped,
           (unsigned long long)resyncs, seconds_since(started));
    tt_watch_free(&w);
    return 0;
}

int main(int argc, char **argv)
{
    pid_t only = 0;
    double interval = 0.1;
    unsigned window = DEFAULT_WINDOW;
    int list = 0, drain = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--pid") == 0 && i + 1 < argc) {
            char *end;
            long pid = strtol(argv[++i], &end, 10);
            if (*end || pid <= 0) return fail(2, "not a process id: %s", argv[i]);
            only = (pid_t)pid;
        } else if (strcmp(argv[i], "--interval") == 0 && i + 1 < argc) {
            char *end;
            interval = strtod(argv[++i], &end);
            if (*end || !(interval > 0 && interval <= 10)) return fail(2, "not an interval in seconds: %s", argv[i]);
        } else if (strcmp(argv[i], "--window") == 0 && i + 1 < argc) {
            char *end;
            long seconds = strtol(argv[++i], &end, 10);
            if (*end || seconds < 0 || seconds > TT_AGG_WINDOW_MAX)
                return fail(2, "not a window in seconds (0 to %d): %s", TT_AGG_WINDOW_MAX, argv[i]);
            window = (unsigned)seconds;
        } else if (strcmp(argv[i], "--list") == 0) {
            list = 1;
        } else if (strcmp(argv[i], "--drain") == 0) {
            drain = 1;
        } else {
            return fail(2, "unknown argument: %s", argv[i]);
        }
    }
    if (list) return run_list();
    if (drain) return run_drain(only);
    return run_screen(only, interval, window);
}
