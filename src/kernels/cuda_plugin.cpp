// The CUDA plugin's composition root: the CUDA backend with every kernel family (one per op of
// the registration list, kernels/ops.h, the user's kernels and the assembled layer), behind the
// entry points of backends/plugin.h.
#include "backends/cuda/cuda_backend.h"
#include "backends/plugin.h"
#include "kernels/layer/layer_family.h"
#include "kernels/ops.h"
#include "kernels/user/user_family.h"

namespace attune::kernels {
#define ATTUNE_DECLARE_FAMILY(NAME) std::unique_ptr<cuda::CudaFamily> make_##NAME##_family();
ATTUNE_KERNEL_OPS(ATTUNE_DECLARE_FAMILY)
#undef ATTUNE_DECLARE_FAMILY
}  // namespace attune::kernels

extern "C" int attune_plugin_abi() {
  return attune::kPluginAbi;
}

extern "C" attune::Backend* attune_make_cuda_backend(std::string* error) {
  try {
    attune::cuda::FamilyList families;
#define ATTUNE_ADD_FAMILY(NAME) families.push_back(attune::kernels::make_##NAME##_family());
    ATTUNE_KERNEL_OPS(ATTUNE_ADD_FAMILY)
#undef ATTUNE_ADD_FAMILY
    families.push_back(attune::kernels::make_user_family());
    families.push_back(attune::kernels::make_layer_family());
    return new attune::cuda::CudaBackend(std::move(families));
  } catch (const std::exception& e) {
    *error = e.what();
    return nullptr;
  }
}
