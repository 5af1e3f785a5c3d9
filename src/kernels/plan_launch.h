// Enqueueing a KernelPlan: binds each step's named arguments and launches the steps in order on
// one stream. The tuner's families and libattune-rt call this one function, so a plan is launched
// the same way in both. Thread-safe (no state).
#pragma once

#include <cuda.h>

#include <string>
#include <vector>

#include "core/error.h"
#include "kernels/plan.h"

namespace attune::kernels {

// The values a plan's argument names bind to.
struct PlanArgs {
  CUdeviceptr c = 0, a = 0, b = 0, bias = 0, workspace = 0;  // gemm
  CUdeviceptr y = 0, h = 0, x = 0, r = 0, w = 0;             // rmsnorm
  CUdeviceptr o = 0, q = 0, k = 0, v = 0;                    // attention_decode, _prefill
  CUdeviceptr qkv = 0, q_norm = 0, k_norm = 0;               // rope (and q, k, v)
  int rows = 0;
  float eps = 0;
  int kv = 0;
  int seq = 0;  // rope
  // A step's TMA descriptors (LaunchStep::tensor_maps), encoded by the launch from the pointers
  // above; the kernel takes them by value (__grid_constant__).
  CUtensorMap tensor_maps[kMaxTensorMaps] = {};
};

// Encodes step's tensor maps into args.tensor_maps from the pointers they name.
CUresult encode_tensor_maps(const LaunchStep& step, PlanArgs& args);

// Checks that every step's argument names are known (an unknown name is a bug in the plan).
Status check_args(const KernelPlan& plan);
Status check_args(const ChainPlan& plan);

// The device pointer an argument name binds to; nullptr when the name is no pointer's.
CUdeviceptr* pointer_arg(const std::string& name, PlanArgs& args);

// One kernel step launched with its arguments bound by name.
CUresult launch_step(const LaunchStep& step, CUfunction fn, PlanArgs& args, CUstream stream);

// fns[i] is the loaded function of plan.steps[i].
CUresult enqueue(const KernelPlan& plan, const std::vector<CUfunction>& fns, PlanArgs& args,
                 CUstream stream);

// A plan's argument names resolved once to their places in PlanArgs, for a launcher that enqueues
// one plan many times (libattune-rt): the same launches as enqueue() above, without comparing
// names per launch.
struct PlanBinding {
  std::vector<std::vector<std::size_t>> offsets;  // per step, per argument: offset in PlanArgs
};
Result<PlanBinding> bind_args(const KernelPlan& plan);
CUresult enqueue(const KernelPlan& plan, const PlanBinding& binding,
                 const std::vector<CUfunction>& fns, PlanArgs& args, CUstream stream);

}  // namespace attune::kernels
