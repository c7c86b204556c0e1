// plugin_spawn: posix_spawn with GNU's pipe2 and closefrom, which Swift's Glibc module does not export; fork and exec
// for helpers, which need what posix_spawn cannot set (a parent-death signal, a memory limit).
#define _GNU_SOURCE
#include "plugin_spawn.h"
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

extern char **environ;

int route_plugin_spawn(const char *path, int *to_child, int *from_child, int *child_errors, pid_t *pid) {
    int in[2], out[2], err[2];
    if (pipe2(in, O_CLOEXEC) != 0) return errno;
    if (pipe2(out, O_CLOEXEC) != 0) { int e = errno; close(in[0]); close(in[1]); return e; }
    if (pipe2(err, O_CLOEXEC) != 0) { int e = errno; close(in[0]); close(in[1]); close(out[0]); close(out[1]); return e; }
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, in[0], 0);
    posix_spawn_file_actions_adddup2(&actions, out[1], 1);
    posix_spawn_file_actions_adddup2(&actions, err[1], 2);
    // Libraries under route open descriptors without close-on-exec; a plugin gets none of them.
    posix_spawn_file_actions_addclosefrom_np(&actions, 3);
    posix_spawnattr_t attributes;
    posix_spawnattr_init(&attributes);
    posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    posix_spawnattr_setpgroup(&attributes, 0);
    sigset_t none, defaults;
    sigemptyset(&none);
    posix_spawnattr_setsigmask(&attributes, &none);
    // route ignores SIGPIPE, and ignored signals survive exec.
    sigemptyset(&defaults);
    int reset[] = {SIGPIPE, SIGINT, SIGTERM, SIGHUP, SIGTSTP, SIGCONT, SIGCHLD};
    for (unsigned i = 0; i < sizeof reset / sizeof reset[0]; i++) sigaddset(&defaults, reset[i]);
    posix_spawnattr_setsigdefault(&attributes, &defaults);
    char *argv[] = {(char *)path, NULL};
    int result = posix_spawn(pid, path, &actions, &attributes, argv, environ);
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attributes);
    close(in[0]);
    close(out[1]);
    close(err[1]);
    if (result != 0) {
        close(in[1]);
        close(out[0]);
        close(err[0]);
        return result;
    }
    *to_child = in[1];
    *from_child = out[0];
    *child_errors = err[0];
    return 0;
}

int route_helper_spawn(const char *path, char *const argv[], int output, int errors, unsigned long long data_bytes, pid_t *pid) {
    // posix_spawn cannot set a parent-death signal or a limit: fork, then only async-signal-safe calls until exec.
    pid_t parent = getpid();
    int report[2];
    if (pipe2(report, O_CLOEXEC) != 0) return errno;
    pid_t child = fork();
    if (child < 0) { int e = errno; close(report[0]); close(report[1]); return e; }
    if (child == 0) {
        int failure = 0;
        if (setpgid(0, 0) != 0 || prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) failure = errno;
        // route ended between fork and prctl: nobody would kill this child.
        if (!failure && getppid() != parent) _exit(127);
        if (!failure && data_bytes > 0) {
            struct rlimit limit = {data_bytes, data_bytes};
            if (setrlimit(RLIMIT_DATA, &limit) != 0) failure = errno;
        }
        int nothing = open("/dev/null", O_RDONLY);
        if (!failure && (nothing < 0 || dup2(nothing, 0) < 0 || dup2(output, 1) < 0 || dup2(errors, 2) < 0)) failure = errno;
        if (!failure) {
            sigset_t none;
            sigemptyset(&none);
            sigprocmask(SIG_SETMASK, &none, NULL);
            int reset[] = {SIGPIPE, SIGINT, SIGTERM, SIGHUP, SIGTSTP, SIGCONT, SIGCHLD};
            for (unsigned i = 0; i < sizeof reset / sizeof reset[0]; i++) signal(reset[i], SIG_DFL);
            // The report pipe is close-on-exec: exec closes it, which tells the parent the start went well.
            if (report[1] > 3) close_range(3, (unsigned)report[1] - 1, 0);
            close_range((unsigned)report[1] + 1, ~0U, 0);
            execv(path, argv);
            failure = errno;
        }
        ssize_t written = write(report[1], &failure, sizeof failure);
        (void)written;
        _exit(127);
    }
    close(report[1]);
    int failure = 0;
    ssize_t got;
    do { got = read(report[0], &failure, sizeof failure); } while (got < 0 && errno == EINTR);
    close(report[0]);
    if (got == (ssize_t)sizeof failure && failure != 0) {
        int status;
        waitpid(child, &status, 0);
        return failure;
    }
    *pid = child;
    return 0;
}

int route_detached_spawn(const char *path, char *const argv[], pid_t *pid) {
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    for (int descriptor = 0; descriptor < 3; descriptor++)
        posix_spawn_file_actions_addopen(&actions, descriptor, "/dev/null", descriptor == 0 ? O_RDONLY : O_WRONLY, 0);
    posix_spawn_file_actions_addclosefrom_np(&actions, 3);
    posix_spawnattr_t attributes;
    posix_spawnattr_init(&attributes);
    sigset_t none, all;
    sigemptyset(&none);
    sigfillset(&all);
    posix_spawnattr_setsigmask(&attributes, &none);
    posix_spawnattr_setsigdefault(&attributes, &all);
    // A session of its own from the start: a Ctrl-C or a closed terminal meant for route never reaches it.
    posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSID);
    int result = posix_spawn(pid, path, &actions, &attributes, argv, environ);
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attributes);
    return result;
}

void route_thread_name(const char *name) {
    char shortened[16];
    snprintf(shortened, sizeof shortened, "%s", name);
    pthread_setname_np(pthread_self(), shortened);
}
