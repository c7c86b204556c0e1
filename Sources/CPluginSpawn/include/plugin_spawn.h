// plugin_spawn: starts a plugin executable with pipes for its stdin, stdout and stderr (close-on-exec, every
// other descriptor closed in the child), default signal handling, no blocked signals, and its own process group.
#pragma once
#include <sys/types.h>

/// Starts `path`; on success returns 0 and sets the parent's ends of the pipes and the child's pid; else an errno.
int route_plugin_spawn(const char *path, int *to_child, int *from_child, int *child_errors, pid_t *pid);
