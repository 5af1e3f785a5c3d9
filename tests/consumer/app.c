/* A program that uses libattune-rt, as a user writes one: built against an installed attune
 * (find_package(attune) or pkg-config; tools/release-check). It must start on any host: with no
 * driver or GPU, attune_rt_open fails with one line saying so and the program goes on without
 * tuned kernels. Prints "gpu: yes" or "gpu: no: <why>"; exits 0 either way, 1 if open failed for
 * another reason. */
#include <stdio.h>
#include <string.h>

#include <attune/runtime_c.h>

int main(void) {
  attune_rt* rt = NULL;
  int s = attune_rt_open("", -1, &rt);
  if (s == ATTUNE_RT_OK) {
    printf("gpu: yes\n");
    attune_rt_close(rt);
    return 0;
  }
  const char* why = attune_rt_last_error();
  printf("gpu: no: %s\n", why ? why : "(no message)");
  return (s == ATTUNE_RT_UNSUPPORTED || s == ATTUNE_RT_CUDA) ? 0 : 1;
}
