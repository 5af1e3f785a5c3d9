// Executor: runs on the device what the Selector decided. The first call of a shape prepares its
// launch from the row's config (or the baseline's) through the kernel plans the tuner launches:
// kernels::plan (each op's plan), compiled by cuda::Compiler (cubins cached on disk), loaded once
// per process into the device's primary context; cuBLASLt configs through choose_lt_algo; chains of
// both (attention_decode's split baseline) through kernels/plan_chain. A row that cannot run here
// (it does not build, does not fit the device, cuBLASLt refuses it) is demoted to the baseline,
// said on stderr. Later calls enqueue the prepared launch.
//
// Thread-safety: prepare() serializes first calls under a mutex and publishes each launch once;
// run() takes no lock, except a per-shape lock for cuBLASLt with a bias (the bias pointer lives
// in the shared matmul descriptor) and the first use of a stream's workspace. Split-K and cuBLASLt
// workspaces are per stream (per thread for cudaStreamPerThread), so concurrent streams never
// share one.
#pragma once

#include <cublasLt.h>
#include <cuda.h>

#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "attune/runtime.h"
#include "core/error.h"
#include "cuda/cuda_device.h"
#include "cuda/cuda_run.h"
#include "cuda/nvrtc_build.h"
#include "kernels/gemm/gemm_lt.h"
#include "kernels/plan_chain.h"
#include "kernels/plan_launch.h"
#include "runtime/selector.h"

namespace attune::runtime {

// What one prepared launch runs, in both API forms. Immutable once made; its address is stable.
struct DispatchRecord {
  rt::Dispatch cpp;
  std::string kernels_joined;
  attune_rt_dispatch c{};
};

struct Launch {
  const DispatchRecord* record = nullptr;
  // attune's NVRTC kernels
  std::optional<kernels::KernelPlan> plan;
  kernels::PlanBinding binding;
  std::vector<CUfunction> fns;
  std::size_t workspace_bytes = 0;
  // attune's kernels and cuBLASLt matmuls in one chain (attention_decode's split baseline)
  std::optional<kernels::ChainPlan> chain;
  kernels::ChainLaunch chain_launch;
  // cuBLASLt
  std::optional<kernels::LtProblem> lt;
  cublasLtMatmulAlgo_t algo{};
  bool lt_bias = false;
  std::mutex lt_mu;  // guards the descriptor's bias pointer
};

class Executor {
 public:
  static Result<std::unique_ptr<Executor>> open(int ordinal,
                                                const std::filesystem::path& cubin_dir);
  ~Executor();
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;

  const DeviceFingerprint& fingerprint() const { return fingerprint_; }
  const cuda::DeviceLimits& limits() const { return limits_; }
  const std::filesystem::path& cubin_dir() const { return cubin_dir_; }
  const cuda::Compiler& compiler() const { return *compiler_; }
  // Unique to this Executor in the process (addresses are reused, generations are not).
  std::uint64_t generation() const { return generation_; }

  // This thread's current context is the device's primary context (made current when none is).
  Status enter() const {
    CUcontext cur = nullptr;
    if (cuCtxGetCurrent(&cur) == CUDA_SUCCESS && cur == ctx_) return Status::success();
    return enter_slow(cur);
  }

  // The slot's launch; the first call of a slot prepares it (args: the call's pointers, for the
  // bias a cuBLASLt descriptor is created with).
  Result<Launch*> launch_for(Selector& selector, Slot& slot, const kernels::PlanArgs& args) {
    if (void* l = slot.exec.load(std::memory_order_acquire)) return static_cast<Launch*>(l);
    return prepare(selector, slot, args);
  }

  // Enqueues a prepared launch on `stream`.
  Status run(Launch& launch, kernels::PlanArgs& args, CUstream stream);

 private:
  Executor() = default;
  Status enter_slow(CUcontext current) const;
  Result<Launch*> prepare(Selector& selector, Slot& slot, const kernels::PlanArgs& args);
  // The launch of `config` for `problem` (its kernels and cache key into rec), or null with why it
  // cannot run here in *refusal. An Error is a failure of CUDA itself, not of the config.
  Result<std::unique_ptr<Launch>> build_launch(const Problem& problem, const std::string& config,
                                               const kernels::PlanArgs& args, DispatchRecord& rec,
                                               std::string* refusal);
  // The loaded functions of `steps` of `build` (compiled once, loaded once per process), each
  // checked to launch here; empty with *refusal when one cannot. Their names go to rec.
  Result<std::vector<CUfunction>> load_steps(const cuda::BuildRequest& build,
                                             const std::vector<const kernels::LaunchStep*>& steps,
                                             DispatchRecord& rec, std::string* refusal);
  Result<CUdeviceptr> workspace(CUstream stream, std::size_t bytes);

  struct LoadedModule {
    cuda::Module module;
    std::map<std::string, std::string> lowered;
  };

  DeviceFingerprint fingerprint_;
  cuda::DeviceLimits limits_;
  std::filesystem::path cubin_dir_;
  std::unique_ptr<cuda::Compiler> compiler_;
  CUdevice dev_ = 0;
  CUcontext ctx_ = nullptr;
  cublasLtHandle_t lt_ = nullptr;
  std::uint64_t generation_ =
      0;  // tells this Executor's thread-local workspace cache from another's

  std::mutex mu_;                                // below: first calls, modules, workspaces
  std::map<std::string, LoadedModule> modules_;  // by compile cache key
  std::vector<std::unique_ptr<Launch>> launches_;
  std::vector<std::unique_ptr<DispatchRecord>> records_;
  std::map<std::pair<CUstream, std::thread::id>, cuda::DeviceBuffer> workspaces_;
  std::vector<cuda::DeviceBuffer>
      retired_;  // outgrown workspaces: work already enqueued may use them
};

}  // namespace attune::runtime
