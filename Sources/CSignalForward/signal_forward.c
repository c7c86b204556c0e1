// signal_forward: the async-signal-safe handler that forwards signals to a pipe (see signal_forward.h).
#define _GNU_SOURCE
#include "signal_forward.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

static volatile sig_atomic_t forward_fd = -1;
static volatile sig_atomic_t forward_pid = 0;

static void forward(int number) {
    int saved = errno;
    unsigned char byte = (unsigned char)number;
    int fd = forward_fd;
    // A helper forked and not yet exec'd shares the handler and the pipe: its signals are not route's.
    if (fd >= 0 && getpid() == forward_pid) (void)!write(fd, &byte, 1);
    errno = saved;
}

int route_signals_forward(int fd, const int *signals, int count) {
    forward_pid = getpid();
    forward_fd = fd;
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_handler = forward;
    action.sa_flags = SA_RESTART;
    sigemptyset(&action.sa_mask);
    for (int i = 0; i < count; i++) {
        if (sigaction(signals[i], &action, NULL) != 0) return errno;
    }
    return 0;
}

int route_signals_pipe(int ends[2]) {
    if (pipe2(ends, O_CLOEXEC) != 0) return errno;
    if (fcntl(ends[1], F_SETFL, O_NONBLOCK) != 0) {
        int failure = errno;
        close(ends[0]);
        close(ends[1]);
        return failure;
    }
    return 0;
}
