// spawn: runs one command and writes its resource usage, for bench/bench.py.
//
//   spawn <result-file> <program> [args...]
//
// Forks, execs the program, waits for it with wait4() and writes one line to <result-file>:
//   <wall seconds> <user CPU seconds> <system CPU seconds> <peak RSS KiB> <wait status>
// then exits with the program's exit code (128 + signal when it was killed).
//
// Why not os.wait4() from the Python harness directly: Linux carries a process's peak RSS across
// execve(), and a child forked (or vforked) from the harness starts with the harness's resident
// set as its high-water mark, so ru_maxrss would report max(harness, program). Forked from this
// small process instead, the program starts at about a megabyte.
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: spawn <result-file> <program> [args...]\n");
    return 2;
  }
  double start = now();
  pid_t pid = fork();
  if (pid < 0) {
    perror("spawn: fork");
    return 127;
  }
  if (pid == 0) {
    execvp(argv[2], argv + 2);
    fprintf(stderr, "spawn: cannot run %s: %s\n", argv[2], strerror(errno));
    _exit(127);
  }
  int status = 0;
  struct rusage usage;
  while (wait4(pid, &status, 0, &usage) < 0) {
    if (errno != EINTR) {
      perror("spawn: wait4");
      return 127;
    }
  }
  double wall = now() - start;
  FILE *out = fopen(argv[1], "w");
  if (out == NULL) {
    perror("spawn: result file");
    return 127;
  }
  fprintf(out, "%.6f %ld.%06ld %ld.%06ld %ld %d\n", wall, (long)usage.ru_utime.tv_sec,
          (long)usage.ru_utime.tv_usec, (long)usage.ru_stime.tv_sec,
          (long)usage.ru_stime.tv_usec, usage.ru_maxrss, status);
  fclose(out);
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 127;
}
