// The user-kernel examples on a real GPU, driven only by what the spec layer hands the backend:
// for every config of each example's space, instantiate() gives the name expression, NVRTC
// options, launch and argument layout; the kernel runs on the same random inputs as the
// reference, with its outputs poisoned first, and must match the reference bit for bit (both
// examples move or add floats exactly). The driver is loaded with dlopen so the binary starts
// (and ctest lists it) on machines without one; there it skips.
#include <cuda.h>
#include <dlfcn.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "cuda/nvrtc_build.h"
#include "kernels/user/spec.h"

namespace attune::user {
namespace {

#define ATTUNE_STR2_(x) #x
#define ATTUNE_STR_(x) ATTUNE_STR2_(x)  // expands cuda.h's versioned names (cuMemAlloc_v2)

struct Driver {
  bool ok = false;
  std::string why;
#define ATTUNE_FN_(name) decltype(&name) name##_ = nullptr;
  ATTUNE_FN_(cuInit)
  ATTUNE_FN_(cuDeviceGetCount)
  ATTUNE_FN_(cuDeviceGet)
  ATTUNE_FN_(cuDevicePrimaryCtxRetain)
  ATTUNE_FN_(cuCtxSetCurrent)
  ATTUNE_FN_(cuCtxSynchronize)
  ATTUNE_FN_(cuModuleLoadData)
  ATTUNE_FN_(cuModuleUnload)
  ATTUNE_FN_(cuModuleGetFunction)
  ATTUNE_FN_(cuFuncSetAttribute)
  ATTUNE_FN_(cuMemAlloc)
  ATTUNE_FN_(cuMemFree)
  ATTUNE_FN_(cuMemcpyHtoD)
  ATTUNE_FN_(cuMemcpyDtoH)
  ATTUNE_FN_(cuMemsetD8)
  ATTUNE_FN_(cuLaunchKernel)
  ATTUNE_FN_(cuGetErrorString)
#undef ATTUNE_FN_
};

Driver& driver() {
  static Driver d = [] {
    Driver d;
    void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
      d.why = "no libcuda.so.1";
      return d;
    }
#define ATTUNE_LOAD_(name)                                                    \
  d.name##_ = reinterpret_cast<decltype(&name)>(dlsym(h, ATTUNE_STR_(name))); \
  if (!d.name##_) {                                                           \
    d.why = std::string("libcuda lacks ") + ATTUNE_STR_(name);                \
    return d;                                                                 \
  }
    ATTUNE_LOAD_(cuInit)
    ATTUNE_LOAD_(cuDeviceGetCount)
    ATTUNE_LOAD_(cuDeviceGet)
    ATTUNE_LOAD_(cuDevicePrimaryCtxRetain)
    ATTUNE_LOAD_(cuCtxSetCurrent)
    ATTUNE_LOAD_(cuCtxSynchronize)
    ATTUNE_LOAD_(cuModuleLoadData)
    ATTUNE_LOAD_(cuModuleUnload)
    ATTUNE_LOAD_(cuModuleGetFunction)
    ATTUNE_LOAD_(cuFuncSetAttribute)
    ATTUNE_LOAD_(cuMemAlloc)
    ATTUNE_LOAD_(cuMemFree)
    ATTUNE_LOAD_(cuMemcpyHtoD)
    ATTUNE_LOAD_(cuMemcpyDtoH)
    ATTUNE_LOAD_(cuMemsetD8)
    ATTUNE_LOAD_(cuLaunchKernel)
    ATTUNE_LOAD_(cuGetErrorString)
#undef ATTUNE_LOAD_
    int n = 0;
    CUdevice dev;
    CUcontext ctx;
    if (d.cuInit_(0) != CUDA_SUCCESS || d.cuDeviceGetCount_(&n) != CUDA_SUCCESS || n == 0 ||
        d.cuDeviceGet_(&dev, 0) != CUDA_SUCCESS ||
        d.cuDevicePrimaryCtxRetain_(&ctx, dev) != CUDA_SUCCESS ||
        d.cuCtxSetCurrent_(ctx) != CUDA_SUCCESS) {
      d.why = "no GPU answers";
      return d;
    }
    d.ok = true;
    return d;
  }();
  return d;
}

std::string cu_error(CUresult rc) {
  const char* s = nullptr;
  driver().cuGetErrorString_(rc, &s);
  return s ? s : "unknown CUDA error";
}

#define CU_ASSERT(call)                                             \
  do {                                                              \
    CUresult rc_ = (call);                                          \
    ASSERT_EQ(rc_, CUDA_SUCCESS) << #call << ": " << cu_error(rc_); \
  } while (0)

using Bytes = std::vector<unsigned char>;

// Fresh random contents for an input, in its range, in its type.
Bytes random_input(const ArgInstance& a, std::mt19937_64& rng) {
  Bytes out(static_cast<std::size_t>(a.bytes));
  std::uniform_real_distribution<double> u(a.range.first, a.range.second);
  for (std::int64_t i = 0; i < a.elements; ++i) {
    double v = u(rng);
    unsigned char* p = out.data() + i * static_cast<std::int64_t>(size_of(a.type));
    switch (a.type) {
      case ElementType::kFloat32: {
        float f = static_cast<float>(v);
        std::memcpy(p, &f, 4);
        break;
      }
      case ElementType::kFloat64:
        std::memcpy(p, &v, 8);
        break;
      case ElementType::kInt32: {
        auto x = static_cast<std::int32_t>(v);
        std::memcpy(p, &x, 4);
        break;
      }
      default:
        ADD_FAILURE() << "this test fills float32, float64 and int32 only";
        return out;
    }
  }
  return out;
}

// Builds and runs one instance on the inputs; returns every buffer's contents afterwards.
void run(const cuda::Compiler& compiler, const std::string& source, const Instance& inst,
         const std::vector<Bytes>& inputs, std::vector<Bytes>* after) {
  Driver& d = driver();
  cuda::BuildRequest req{source, "user.cu", inst.compile_options, {inst.name_expression}};
  auto built = compiler.build(req);
  ASSERT_TRUE(built.ok()) << built.error().message();
  ASSERT_TRUE(built->ok) << inst.name_expression << ": " << built->log;
  CUmodule module;
  CU_ASSERT(d.cuModuleLoadData_(&module, built->cubin.data()));
  CUfunction fn;
  CU_ASSERT(
      d.cuModuleGetFunction_(&fn, module, built->lowered_names.at(inst.name_expression).c_str()));
  if (inst.launch.shared_memory_bytes > 48 * 1024)
    CU_ASSERT(d.cuFuncSetAttribute_(fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                    static_cast<int>(inst.launch.shared_memory_bytes)));
  std::vector<CUdeviceptr> ptrs(inst.args.size(), 0);
  std::vector<void*> params;
  for (std::size_t i = 0; i < inst.args.size(); ++i) {
    const ArgInstance& a = inst.args[i];
    if (a.role == ArgRole::kScalar) {
      params.push_back(const_cast<unsigned char*>(a.scalar_bytes.data()));
      continue;
    }
    CU_ASSERT(d.cuMemAlloc_(&ptrs[i], static_cast<std::size_t>(a.bytes)));
    if (a.role == ArgRole::kInput || a.role == ArgRole::kInOut)
      CU_ASSERT(d.cuMemcpyHtoD_(ptrs[i], inputs[i].data(), inputs[i].size()));
    else  // poison: all-ones bytes are NaN in every float type
      CU_ASSERT(d.cuMemsetD8_(ptrs[i], 0xff, static_cast<std::size_t>(a.bytes)));
    params.push_back(&ptrs[i]);
  }
  const auto& l = inst.launch;
  CU_ASSERT(d.cuLaunchKernel_(
      fn, static_cast<unsigned>(l.grid[0]), static_cast<unsigned>(l.grid[1]),
      static_cast<unsigned>(l.grid[2]), static_cast<unsigned>(l.block[0]),
      static_cast<unsigned>(l.block[1]), static_cast<unsigned>(l.block[2]),
      static_cast<unsigned>(l.shared_memory_bytes), nullptr, params.data(), nullptr));
  CU_ASSERT(d.cuCtxSynchronize_());
  after->assign(inst.args.size(), {});
  for (std::size_t i = 0; i < inst.args.size(); ++i) {
    if (!ptrs[i]) continue;
    (*after)[i].resize(static_cast<std::size_t>(inst.args[i].bytes));
    CU_ASSERT(d.cuMemcpyDtoH_((*after)[i].data(), ptrs[i], (*after)[i].size()));
    CU_ASSERT(d.cuMemFree_(ptrs[i]));
  }
  CU_ASSERT(d.cuModuleUnload_(module));
}

std::filesystem::path examples_dir() {
  if (const char* e = std::getenv("ATTUNE_EXAMPLES_DIR")) return e;
  const char* root =
      std::getenv("ATTUNE_SOURCE_ROOT");  // set by tools/gpu-check on the GPU machine
  return std::filesystem::path(root ? root : ATTUNE_SOURCE_DIR) / "examples" / "user-kernel";
}

class UserExampleGpu : public ::testing::TestWithParam<std::string> {};

TEST_P(UserExampleGpu, EveryConfigMatchesTheReferenceExactly) {
  if (!driver().ok) GTEST_SKIP() << driver().why;
  auto spec = load_spec(examples_dir() / (GetParam() + ".yaml"));
  ASSERT_TRUE(spec.ok()) << spec.error().message();
  auto space = make_space(*spec);
  ASSERT_TRUE(space.ok()) << space.error().message();
  cuda::Compiler compiler("sm_90a", "");

  auto ref = instantiate_reference(*spec);
  ASSERT_TRUE(ref.ok()) << ref.error().message();
  std::mt19937_64 rng(42);
  std::vector<Bytes> inputs;
  for (const auto& a : ref->args)
    inputs.push_back(a.role == ArgRole::kInput || a.role == ArgRole::kInOut ? random_input(a, rng)
                                                                            : Bytes{});
  std::vector<Bytes> expected;
  run(compiler, std::get<ReferenceKernel>(spec->reference).source, *ref, inputs, &expected);
  if (HasFatalFailure()) return;
  // Outputs start as all-ones bytes; a reference that leaves any element so would let a
  // candidate that writes nothing there pass.
  for (std::size_t i = 0; i < ref->args.size(); ++i) {
    if (ref->args[i].role != ArgRole::kOutput && ref->args[i].role != ArgRole::kInOut) continue;
    const std::size_t width = size_of(ref->args[i].type);
    std::size_t unwritten = 0;
    for (std::size_t j = 0; j < expected[i].size(); j += width) {
      bool ones = true;
      for (std::size_t b = 0; b < width; ++b) ones = ones && expected[i][j + b] == 0xff;
      unwritten += ones;
    }
    ASSERT_EQ(unwritten, 0u) << "the reference left elements of '" << ref->args[i].name
                             << "' unwritten";
  }

  int ran = 0;
  for (auto e = space->enumerate(); auto p = e.next();) {
    Config c = space->config(*p);
    auto inst = instantiate(*spec, c);
    ASSERT_TRUE(inst.ok()) << c.text() << ": " << inst.error().message();
    std::vector<Bytes> got;
    run(compiler, spec->source, *inst, inputs, &got);
    if (HasFatalFailure()) return;
    for (std::size_t i = 0; i < inst->args.size(); ++i) {
      const auto role = inst->args[i].role;
      if (role != ArgRole::kOutput && role != ArgRole::kInOut) continue;
      EXPECT_TRUE(got[i] == expected[i])
          << c.text() << ": output '" << inst->args[i].name << "' differs from the reference";
    }
    ++ran;
  }
  EXPECT_EQ(static_cast<std::uint64_t>(ran), space->count());
  std::cout << GetParam() << ": " << ran << " configs matched the reference\n";
}

INSTANTIATE_TEST_SUITE_P(Examples, UserExampleGpu, ::testing::Values("vector_add", "transpose"));

}  // namespace
}  // namespace attune::user
