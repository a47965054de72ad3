/* test_processes.c -- traces of more than one process, written by the real
 * session and read back by the reader: a forked child that continues the
 * forking thread's stream (fork.h), and MPI records (mpi_records.h). */
#define _GNU_SOURCE
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "scratch.h"
#include "clock.h"
#include "fork.h"
#include "mpi_records.h"
#include "profile.h"
#include "reader.h"
#include "session.h"

static char root[] = "/tmp/tracetop-processes-XXXXXX";
static tt_registry registry;

static tt_session *start(const char *experiment)
{
    tt_session_config config = {.directory = experiment, .memory = 4u << 20, .name = "test"};
    tt_session *s;
    tt_error err;
    if (tt_session_start(&config, &registry, &s, &err) != 0) {
        fprintf(stderr, "session: %s\n", err.message);
        exit(2);
    }
    return s;
}

static void stop(tt_session *s)
{
    tt_session_stats stats;
    tt_error err;
    CHECK(tt_session_stop(s, &stats, &err) == 0);
}

static uint32_t region(const char *name, uint8_t kind)
{
    uint32_t file = tt_registry_string(&registry, "", 0);
    return tt_registry_region(&registry, tt_registry_string(&registry, name, strlen(name)), file, 0, kind);
}

/* The events of stream 0 of the process with pid `pid`; the count, or -1. */
static int read_events(const tt_trace *t, uint64_t pid, tt_event *events, int max, const tt_process **process)
{
    for (size_t i = 0; i < tt_trace_process_count(t); i++) {
        const tt_process *p = tt_trace_process(t, i);
        if (p->pid != pid) continue;
        tt_cursor *c;
        tt_error err;
        if (tt_cursor_open(t, p, 0, &c, &err) != 0) return -1;
        int n = 0;
        while (n < max && tt_cursor_next(c, &events[n])) n++;
        CHECK(tt_cursor_state(c) == TT_STREAM_COMPLETE);
        tt_cursor_close(c);
        *process = p;
        return n;
    }
    return -1;
}

static void test_fork(void)
{
    char experiment[128];
    snprintf(experiment, sizeof experiment, "%s/fork", root);
    mkdir(experiment, 0777);
    uint32_t outer = region("outer", TT_REGION_PYTHON), inner = region("inner", TT_REGION_PYTHON);
    uint32_t in_child = region("in_child", TT_REGION_PYTHON);

    tt_session *parent = start(experiment);
    tt_stream *stream = tt_session_new_stream(parent, 1, "MainThread", 10);
    tt_stream_enter(stream, tt_clock_now(), outer);
    tt_stream_skip(stream, TT_STACK_SKIP);
    tt_stream_enter(stream, tt_clock_now(), inner);

    tt_fork_prepare();
    pid_t pid = fork();
    if (pid == 0) {
        tt_fork_child();
        tt_fork_abandon(parent);
        tt_session *child = start(experiment);
        tt_stream *continued = tt_session_new_stream(child, 2, "MainThread", 10);
        tt_fork_continue_stream(continued, stream, tt_clock_now());
        tt_stream_enter(continued, tt_clock_now(), in_child);
        tt_stream_leave(continued, tt_clock_now());
        for (int i = 0; i < 3; i++) tt_stream_leave(continued, tt_clock_now()); /* inner, the skip, outer */
        stop(child);
        _exit(check_failed ? 1 : 0);
    }
    tt_fork_parent();
    int status = 0;
    CHECK(pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0);
    for (int i = 0; i < 3; i++) tt_stream_leave(stream, tt_clock_now());
    stop(parent);

    tt_trace *t;
    tt_error err;
    if (!CHECK(tt_trace_open(experiment, &t, &err) == 0)) return;
    CHECK_U64(tt_trace_process_count(t), 2);
    static tt_event ev[64];
    const tt_process *p;
    int n = read_events(t, (uint64_t)pid, ev, 64, &p);
    /* The child's stream: the open regions again, at one time, its own
     * call, and the returns; the parent's events before the fork are not
     * in it, nor is the call that was not recorded. */
    if (CHECK(n == 7)) {
        CHECK_U64(p->ppid, getpid());
        CHECK(ev[0].kind == TT_EV_ENTER && ev[0].region == outer);
        CHECK(ev[1].kind == TT_EV_ENTER && ev[1].region == inner && ev[1].time == ev[0].time);
        CHECK(ev[2].kind == TT_EV_ENTER && ev[2].region == in_child);
        CHECK(ev[3].kind == TT_EV_LEAVE && ev[3].region == in_child);
        CHECK(ev[4].kind == TT_EV_LEAVE && ev[4].region == inner);
        CHECK(ev[5].kind == TT_EV_LEAVE && ev[5].region == outer);
        CHECK(ev[6].kind == TT_EV_STREAM_END);
    }
    n = read_events(t, (uint64_t)getpid(), ev, 64, &p);
    CHECK(n == 5 && ev[0].region == outer && ev[1].region == inner && ev[4].kind == TT_EV_STREAM_END);

    /* The profile of both, and of the child alone. */
    tt_profile *both, *alone;
    size_t child = tt_trace_process(t, 0)->pid == (uint64_t)pid ? 0 : 1;
    if (CHECK(tt_profile_build(t, &both, &err) == 0)) {
        CHECK(both->process_count == 2 && both->thread_count == 2 && both->problem_count == 0);
        CHECK(both->processes[child].threads == 1 && both->processes[child].events == 7);
        tt_profile_free(both);
    }
    if (CHECK(tt_profile_build_process(t, child, &alone, &err) == 0)) {
        CHECK(alone->process_count == 1 && alone->processes[0].process == child && alone->events == 7);
        CHECK(alone->region_count == 3 && alone->processes[0].top_region != SIZE_MAX);
        char *text = tt_profile_render_text(alone, 0);
        CHECK_CONTAINS(text, "tracetop summary \xe2\x80\x94 1 of 2 processes, 1 thread, 7 events");
        free(text);
        tt_profile_free(alone);
    }
    tt_trace_close(t);
}

static void test_mpi_records(void)
{
    char experiment[128];
    snprintf(experiment, sizeof experiment, "%s/mpi", root);
    mkdir(experiment, 0777);
    uint32_t send = region("MPI_Send", TT_REGION_MPI), allreduce = region("MPI_Allreduce", TT_REGION_MPI);

    tt_session *s = start(experiment);
    tt_session_define_mpi_rank(s, 1, 3);
    CHECK(tt_session_define_mpi_comm(s, 0, TT_COMM_WORLD, UINT32_MAX, 0, 3, NULL, 0) == 0);
    uint32_t self[] = {1}, pair[] = {0, 2};
    CHECK(tt_session_define_mpi_comm(s, 1, TT_COMM_SELF, UINT32_MAX, 0, 1, self, 1) == 0);
    CHECK(tt_session_define_mpi_comm(s, 2, TT_COMM_DERIVED, 0, 4, 2, pair, 2) == 0);
    tt_stream *st = tt_session_new_stream(s, 1, "MainThread", 10);
    tt_stream_enter(st, tt_clock_now(), send);
    tt_stream_mpi_message(st, tt_clock_now(), TT_EV_MPI_SEND, 2, 7, 0, 800, 0);
    tt_stream_leave(st, tt_clock_now());
    tt_stream_mpi_message(st, tt_clock_now(), TT_EV_MPI_ISEND, 1, 9, 2, 16, 5);
    tt_stream_mpi_request(st, tt_clock_now(), TT_EV_MPI_ISEND_COMPLETE, 5);
    tt_stream_mpi_request(st, tt_clock_now(), TT_EV_MPI_IRECV_REQUEST, 6);
    tt_stream_mpi_message(st, tt_clock_now(), TT_EV_MPI_IRECV, 0, 3, 2, 24, 6);
    tt_stream_enter(st, tt_clock_now(), allreduce);
    tt_stream_plain(st, tt_clock_now(), TT_EV_MPI_COLLECTIVE_BEGIN);
    tt_stream_mpi_collective_end(st, tt_clock_now(), TT_MPI_ALLREDUCE, 0, UINT32_MAX, 8, 8);
    tt_stream_leave(st, tt_clock_now());
    tt_stream_mpi_collective_end(st, tt_clock_now(), TT_MPI_BCAST, 2, 1, 0, 64);
    stop(s);

    tt_trace *t;
    tt_error err;
    if (!CHECK(tt_trace_open(experiment, &t, &err) == 0)) return;
    static tt_event ev[64];
    const tt_process *p;
    int n = read_events(t, (uint64_t)getpid(), ev, 64, &p);
    if (CHECK(n == 13)) {
        CHECK(p->mpi_rank == 1 && p->mpi_size == 3 && p->comm_count == 3);
        CHECK(p->regions[send].kind == TT_REGION_MPI);
        CHECK(p->comms[2].kind == TT_COMM_DERIVED && p->comms[2].parent == 0 && p->comms[2].seq == 4);
        CHECK(p->comms[0].parent == UINT32_MAX && p->comms[0].listed == 0);
        CHECK_U64(tt_comm_world_rank(p, 0, 2), 2);
        CHECK_U64(tt_comm_world_rank(p, 1, 0), 1);
        CHECK_U64(tt_comm_world_rank(p, 2, 1), 2);
        CHECK_U64(tt_comm_world_rank(p, 2, 2), UINT64_MAX);
        CHECK_U64(tt_comm_world_rank(p, 3, 0), UINT64_MAX);
        CHECK(ev[1].kind == TT_EV_MPI_SEND && ev[1].peer == 2 && ev[1].tag == 7 && ev[1].comm == 0 &&
              ev[1].bytes == 800 && ev[1].depth == 1);
        CHECK(ev[3].kind == TT_EV_MPI_ISEND && ev[3].peer == 1 && ev[3].tag == 9 && ev[3].comm == 2 &&
              ev[3].bytes == 16 && ev[3].request == 5);
        CHECK(ev[4].kind == TT_EV_MPI_ISEND_COMPLETE && ev[4].request == 5);
        CHECK(ev[5].kind == TT_EV_MPI_IRECV_REQUEST && ev[5].request == 6);
        CHECK(ev[6].kind == TT_EV_MPI_IRECV && ev[6].peer == 0 && ev[6].bytes == 24 && ev[6].request == 6);
        CHECK(ev[8].kind == TT_EV_MPI_COLLECTIVE_BEGIN);
        CHECK(ev[9].kind == TT_EV_MPI_COLLECTIVE_END && ev[9].op == TT_MPI_ALLREDUCE && ev[9].comm == 0 &&
              ev[9].root == UINT32_MAX && ev[9].sent == 8 && ev[9].received == 8);
        CHECK(ev[11].kind == TT_EV_MPI_COLLECTIVE_END && ev[11].op == TT_MPI_BCAST && ev[11].root == 1 &&
              ev[11].received == 64);
    }

    /* The profile counts messages as sent, by world rank: to rank 2 in the
     * world, and to rank 1 of communicator 2, which is rank 2 too. */
    tt_profile *prof;
    if (CHECK(tt_profile_build(t, &prof, &err) == 0)) {
        if (CHECK(prof->message_count == 1))
            CHECK(prof->messages[0].sender == 1 && prof->messages[0].receiver == 2 && prof->messages[0].count == 2 &&
                  prof->messages[0].bytes == 816);
        CHECK(prof->collectives[TT_MPI_ALLREDUCE].calls == 1 && prof->collectives[TT_MPI_ALLREDUCE].sent == 8);
        CHECK(prof->collectives[TT_MPI_BCAST].calls == 1 && prof->collectives[TT_MPI_BCAST].received == 64);
        char *text = tt_profile_render_text(prof, 0);
        CHECK_CONTAINS(text, "(rank 1 of 3, ended normally)");
        CHECK_CONTAINS(text, "MPI messages sent, by rank: 2 messages, 816 bytes");
        free(text);
        tt_profile_free(prof);
    }
    tt_trace_close(t);
}

int main(void)
{
    if (!mkdtemp(root) || tt_registry_init(&registry) != 0) {
        perror("setup");
        return 2;
    }
    test_fork();
    test_mpi_records();
    scratch_remove(root);
    return check_report();
}
