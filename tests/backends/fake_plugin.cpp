// Stand-ins for libattune_cuda.so, built three ways (ATTUNE_FAKE_PLUGIN_<kind>): wrong_abi speaks
// another plugin ABI, no_abi exports no ABI version at all, right_abi speaks this tree's. The
// first two abort in their factory, so a test passes only if attune refuses them before calling
// it; right_abi's factory says it was reached.
#include <cstdlib>

#include "backends/plugin.h"

#if defined(ATTUNE_FAKE_PLUGIN_wrong_abi)
extern "C" int attune_plugin_abi() {
  return attune::kPluginAbi + 1;
}
#elif defined(ATTUNE_FAKE_PLUGIN_right_abi)
extern "C" int attune_plugin_abi() {
  return attune::kPluginAbi;
}
#endif

extern "C" attune::Backend* attune_make_cuda_backend(std::string* error) {
#if defined(ATTUNE_FAKE_PLUGIN_right_abi)
  *error = "the fake plugin's factory was reached";
  return nullptr;
#else
  (void)error;
  std::abort();
#endif
}
