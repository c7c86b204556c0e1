// plugin_spawn: starts a plugin executable with pipes for its stdin, stdout and stderr (close-on-exec, every
// other descriptor closed in the child), default signal handling, no blocked signals, and its own process group;
// and helper programs (yt-dlp) the same way, tied to route's life and with their memory bounded.
#pragma once
#include <sys/types.h>

/// Starts `path`; on success returns 0 and sets the parent's ends of the pipes and the child's pid; else an errno.
int route_plugin_spawn(const char *path, int *to_child, int *from_child, int *child_errors, pid_t *pid);

/// Starts the helper program `path` with `argv` (NULL-terminated; argv[0] its name): standard input /dev/null, standard
/// output `output`, standard error `errors`, its own process group, default signals, every other descriptor closed,
/// SIGKILL when the calling thread ends (PR_SET_PDEATHSIG: call it from a thread that lives as long as route), and at
/// most `data_bytes` of data memory (RLIMIT_DATA; 0 for no limit). On success returns 0 and sets `pid`; else an errno.
int route_helper_spawn(const char *path, char *const argv[], int output, int errors, unsigned long long data_bytes, pid_t *pid);

/// Starts `path` with `argv` (NULL-terminated) on its own: a session of its own, standard input, output and error
/// /dev/null, default signals, no blocked signals, every other descriptor closed, nothing tied to route's life (the route service, launched when
/// the bus cannot start it). On success returns 0 and sets `pid` (the caller reaps it); else an errno.
int route_detached_spawn(const char *path, char *const argv[], pid_t *pid);

/// Names the calling thread (its first 15 bytes), as `ps -L` and debuggers show it.
void route_thread_name(const char *name);
