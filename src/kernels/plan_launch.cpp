#include "kernels/plan_launch.h"

#include <cstdlib>
#include <string_view>

namespace attune::kernels {

namespace {

constexpr std::size_t kMaxArgs = 16;

void* bind(const std::string& name, PlanArgs& a) {
  if (name == "c") return &a.c;
  if (name == "a") return &a.a;
  if (name == "b") return &a.b;
  if (name == "bias") return &a.bias;
  if (name == "workspace") return &a.workspace;
  if (name == "y") return &a.y;
  if (name == "h") return &a.h;
  if (name == "x") return &a.x;
  if (name == "r") return &a.r;
  if (name == "w") return &a.w;
  if (name == "rows") return &a.rows;
  if (name == "eps") return &a.eps;
  if (name == "o") return &a.o;
  if (name == "q") return &a.q;
  if (name == "k") return &a.k;
  if (name == "v") return &a.v;
  if (name == "kv") return &a.kv;
  if (name == "qkv") return &a.qkv;
  if (name == "q_norm") return &a.q_norm;
  if (name == "k_norm") return &a.k_norm;
  if (name == "seq") return &a.seq;
  for (std::size_t i = 0; i < kMaxTensorMaps; ++i)
    if (name == "tensor_map" + std::to_string(i)) return &a.tensor_maps[i];
  return nullptr;
}

Status check_step(const LaunchStep& step) {
  PlanArgs probe;
  if (step.args.size() > kMaxArgs)
    return Error::internal("plan step " + step.kernel + " has too many arguments");
  for (const auto& name : step.args)
    if (!bind(name, probe))
      return Error::internal("plan step " + step.kernel + " names an unknown argument '" + name +
                             "'");
  if (step.tensor_maps.size() > kMaxTensorMaps)
    return Error::internal("plan step " + step.kernel + " has too many tensor maps");
  for (const TensorMap2d& m : step.tensor_maps)
    if (!pointer_arg(m.arg, probe))
      return Error::internal("plan step " + step.kernel + " maps an unknown pointer argument '" +
                             m.arg + "'");
  return Status::success();
}

// With ATTUNE_DEPENDENT_LAUNCH=1 every plan kernel is launched programmatically dependent on the
// kernel ahead of it in the stream (Hopper's programmatic dependent launch; an ignored attribute
// before sm_90): its blocks may be scheduled while that kernel finishes, and wait for it at their
// first line (attune_grid_dependency, launch_header()). In a CUDA graph the edge between the two
// becomes a programmatic one. Off by default: on the H200 it saved nothing measurable on the tuned
// Qwen3-Embedding layer (40.3 against 40.4 us at 1 x 128 tokens, cuBLASLt's GEMMs;
// bench/results/layer-h200-2026-12-05b.md), on an H100 3.8% there with three of the four GEMMs
// attune's kernels (bench/results/gemm-few-rows-h100-2026-12-07.md); bench/layer.py times it both
// ways.
bool dependent_launch() {
  static const bool on = [] {
    const char* e = std::getenv("ATTUNE_DEPENDENT_LAUNCH");
    return e && std::string_view(e) == "1";
  }();
  return on;
}

CUresult launch(CUfunction fn, const LaunchStep& s, CUstream stream, void** params) {
  if (!dependent_launch())
    return cuLaunchKernel(fn, s.grid.x, s.grid.y, s.grid.z, s.block.x, s.block.y, s.block.z,
                          s.shared_bytes, stream, params, nullptr);
  CUlaunchAttribute dependent{};
  dependent.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
  dependent.value.programmaticStreamSerializationAllowed = 1;
  CUlaunchConfig config{};
  config.gridDimX = s.grid.x;
  config.gridDimY = s.grid.y;
  config.gridDimZ = s.grid.z;
  config.blockDimX = s.block.x;
  config.blockDimY = s.block.y;
  config.blockDimZ = s.block.z;
  config.sharedMemBytes = s.shared_bytes;
  config.hStream = stream;
  config.attrs = &dependent;
  config.numAttrs = 1;
  return cuLaunchKernelEx(&config, fn, params, nullptr);
}

}  // namespace

Status check_args(const KernelPlan& plan) {
  for (const auto& step : plan.steps) ATTUNE_TRY(check_step(step));
  return Status::success();
}

Status check_args(const ChainPlan& plan) {
  PlanArgs probe;
  for (const ChainStep& step : plan.steps) {
    if (const auto* k = std::get_if<LaunchStep>(&step)) {
      ATTUNE_TRY(check_step(*k));
      continue;
    }
    const auto& mm = std::get<LtMatmul>(step);
    for (const auto* op : {&mm.a, &mm.b, &mm.c, &mm.residual})
      if ((op != &mm.residual || !op->arg.empty()) && !pointer_arg(op->arg, probe))
        return Error::internal("a matmul step names an unknown pointer argument '" + op->arg + "'");
  }
  return Status::success();
}

CUdeviceptr* pointer_arg(const std::string& name, PlanArgs& a) {
  for (CUdeviceptr* p : {&a.c, &a.a, &a.b, &a.bias, &a.workspace, &a.y, &a.h, &a.x, &a.r, &a.w,
                         &a.o, &a.q, &a.k, &a.v, &a.qkv, &a.q_norm, &a.k_norm})
    if (bind(name, a) == p) return p;
  return nullptr;
}

CUresult encode_tensor_maps(const LaunchStep& step, PlanArgs& args) {
  for (std::size_t i = 0; i < step.tensor_maps.size(); ++i) {
    const TensorMap2d& m = step.tensor_maps[i];
    const CUdeviceptr* ptr = pointer_arg(m.arg, args);
    if (!ptr) return CUDA_ERROR_INVALID_VALUE;
    const cuuint64_t dims[2] = {m.cols, m.rows}, strides[1] = {m.cols * 2};
    const cuuint32_t box[2] = {m.box_cols, m.box_rows}, element_strides[2] = {1, 1};
    CUresult rc = cuTensorMapEncodeTiled(
        &args.tensor_maps[i], CU_TENSOR_MAP_DATA_TYPE_UINT16, 2, reinterpret_cast<void*>(*ptr),
        dims, strides, box, element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE,
        CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
        CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    if (rc != CUDA_SUCCESS) return rc;
  }
  return CUDA_SUCCESS;
}

CUresult launch_step(const LaunchStep& s, CUfunction fn, PlanArgs& args, CUstream stream) {
  if (CUresult rc = encode_tensor_maps(s, args); rc != CUDA_SUCCESS) return rc;
  void* params[kMaxArgs];
  std::size_t n = 0;
  CUdeviceptr workspace = args.workspace + s.workspace_offset;
  for (const auto& name : s.args) params[n++] = name == "workspace" ? &workspace : bind(name, args);
  return launch(fn, s, stream, params);
}

CUresult enqueue(const KernelPlan& plan, const std::vector<CUfunction>& fns, PlanArgs& args,
                 CUstream stream) {
  for (std::size_t i = 0; i < plan.steps.size(); ++i) {
    CUresult rc = launch_step(plan.steps[i], fns[i], args, stream);
    if (rc != CUDA_SUCCESS) return rc;
  }
  return CUDA_SUCCESS;
}

Result<PlanBinding> bind_args(const KernelPlan& plan) {
  ATTUNE_TRY(check_args(plan));
  PlanArgs probe;
  const char* base = reinterpret_cast<const char*>(&probe);
  PlanBinding b;
  for (const auto& step : plan.steps) {
    if (step.workspace_offset != 0)
      return Error::internal("plan step " + step.kernel +
                             ": a workspace offset is a chain's, which enqueue(ChainPlan) binds");
    auto& offs = b.offsets.emplace_back();
    for (const auto& name : step.args)
      offs.push_back(static_cast<std::size_t>(static_cast<const char*>(bind(name, probe)) - base));
  }
  return b;
}

CUresult enqueue(const KernelPlan& plan, const PlanBinding& binding,
                 const std::vector<CUfunction>& fns, PlanArgs& args, CUstream stream) {
  char* base = reinterpret_cast<char*>(&args);
  for (std::size_t i = 0; i < plan.steps.size(); ++i) {
    const LaunchStep& s = plan.steps[i];
    if (CUresult rc = encode_tensor_maps(s, args); rc != CUDA_SUCCESS) return rc;
    void* params[kMaxArgs];
    std::size_t n = 0;
    for (std::size_t off : binding.offsets[i]) params[n++] = base + off;
    CUresult rc = launch(fns[i], s, stream, params);
    if (rc != CUDA_SUCCESS) return rc;
  }
  return CUDA_SUCCESS;
}

}  // namespace attune::kernels
