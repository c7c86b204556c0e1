// plugin_spawn: posix_spawn with GNU's pipe2 and closefrom, which Swift's Glibc module does not export.
#define _GNU_SOURCE
#include "plugin_spawn.h"
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
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
