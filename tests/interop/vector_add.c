/* A small C kernel Kernel Tuner tunes on the CPU (lang="C"): block_size_x x unroll x repeat.
 * Kernel Tuner passes each knob as a #define of its name and takes the returned float as the
 * config's time in milliseconds, so the function times itself.
 *   unroll == 3 fails to build with a message Kernel Tuner treats as a skippable compile failure
 *     (CompilationFailedConfig), as a kernel using too much shared memory does on a GPU;
 *   CRASH_AT_BLOCK (a compiler option) aborts the process on that block size's unroll-4 config:
 *     Kernel Tuner dies mid-run and leaves its cache open, as a crash does. */
#include <stdlib.h>
#include <time.h>

#if unroll == 3
#error "uses too much shared data (unroll 3 is planted as a compile failure)"
#endif

float vector_add(float* c, const float* a, const float* b, int n) {
#ifdef CRASH_AT_BLOCK
  if (block_size_x == CRASH_AT_BLOCK && unroll == 4) abort();
#endif
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (int r = 0; r < repeat; ++r)
    for (int i = 0; i < n; i += block_size_x * unroll)
      for (int j = i; j < i + block_size_x * unroll && j < n; ++j) c[j] = a[j] + b[j];
  clock_gettime(CLOCK_MONOTONIC, &t1);
  return (float)((t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) * 1e-6);
}
