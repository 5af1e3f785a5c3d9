// The CUDA plugin's composition root: the CUDA backend with every kernel family, behind the
// entry points of backends/plugin.h.
#include "backends/cuda/cuda_backend.h"
#include "backends/plugin.h"
#include "kernels/gemm/gemm_family.h"
#include "kernels/rmsnorm/rmsnorm_family.h"
#include "kernels/user/user_family.h"

extern "C" int attune_plugin_abi() { return attune::kPluginAbi; }

extern "C" attune::Backend* attune_make_cuda_backend(std::string* error) {
  try {
    attune::cuda::FamilyList families;
    families.push_back(attune::kernels::make_gemm_family());
    families.push_back(attune::kernels::make_rmsnorm_family());
    families.push_back(attune::kernels::make_user_family());
    return new attune::cuda::CudaBackend(std::move(families));
  } catch (const std::exception& e) {
    *error = e.what();
    return nullptr;
  }
}
