// Opens a table given on the command line and runs nothing: built (not run) by
// runtime_install_test.
#include <attune/runtime.h>

#include <cstdio>

int main(int argc, char** argv) {
  std::unique_ptr<attune::rt::Runtime> runtime;
  attune::rt::Status s = attune::rt::Runtime::open(argc > 1 ? argv[1] : "", &runtime);
  if (!s.ok()) {
    std::fprintf(stderr, "%s\n", s.message().c_str());
    return 1;
  }
  attune::rt::Counters c = runtime->counters();
  std::printf("%llu hits\n", static_cast<unsigned long long>(c.hits));
  return 0;
}
