// signal_forward: signals caught by a real handler (installed at once, unlike a dispatch source's, which the kernel
// learns of later and which misses a signal sent in between) and written, one byte each, to a pipe route reads.
#pragma once

/// Makes the pipe: `ends[0]` to read (blocking), `ends[1]` for the handler (nonblocking), both close-on-exec.
/// Returns 0 or an errno.
int route_signals_pipe(int ends[2]);

/// Has each of `signals` (`count` of them) write its number as one byte to `fd` when it arrives in this process (a
/// nonblocking pipe's write end, which must stay open; a full pipe drops the byte; a child forked since, which has
/// not yet reset its signals, writes nothing). The handlers stay until reset with signal().
/// Returns 0, or the errno of the sigaction that failed.
int route_signals_forward(int fd, const int *signals, int count);
