/* The C API from C: built (not run) by runtime_install_test. */
#include <attune/runtime_c.h>

#include <stdio.h>

int main(int argc, char** argv) {
  attune_rt* rt = NULL;
  if (attune_rt_open(argc > 1 ? argv[1] : NULL, -1, &rt) != ATTUNE_RT_OK) {
    fprintf(stderr, "%s\n", attune_rt_last_error());
    return 1;
  }
  printf("%d rows, abi %d\n", attune_rt_row_count(rt), attune_rt_abi_version());
  attune_rt_close(rt);
  return 0;
}
