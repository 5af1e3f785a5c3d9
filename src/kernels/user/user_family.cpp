#include "kernels/user/user_family.h"

#include <dlfcn.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstring>
#include <map>

#include <fmt/format.h>

#include "cuda/cuda_check.h"
#include "cuda/host_types.h"
#include "kernels/common/gate.h"
#include "kernels/user/spec.h"
#include "verify/compare.h"

namespace attune::kernels {

namespace {

using namespace attune::cuda;
using user::ArgInstance;
using user::ArgRole;
using user::ElementType;

constexpr std::size_t kGuardBytes = 256;
constexpr unsigned char kPoisonByte = 0xA5;  // integers and the guard region

bool is_output(ArgRole r) {
  return r == ArgRole::kOutput || r == ArgRole::kInOut;
}
bool is_filled(ArgRole r) {
  return r == ArgRole::kInput || r == ArgRole::kInOut;
}

// One element's poison: a NaN with a payload no arithmetic makes for floating types, 0xA5 bytes
// for integers.
void poison_element(ElementType t, unsigned char* p) {
  switch (t) {
    case ElementType::kFloat32: {
      std::uint32_t v = kPoisonBits;
      std::memcpy(p, &v, 4);
      break;
    }
    case ElementType::kFloat64: {
      std::uint64_t v = 0x7ff8deaddeaddeadULL;
      std::memcpy(p, &v, 8);
      break;
    }
    case ElementType::kFloat16:
    case ElementType::kBFloat16: {
      std::uint16_t v = kPoison16;
      std::memcpy(p, &v, 2);
      break;
    }
    default:
      std::memset(p, kPoisonByte, user::size_of(t));
  }
}

double element_value(ElementType t, const unsigned char* p) {
  switch (t) {
    case ElementType::kFloat32: {
      float v;
      std::memcpy(&v, p, 4);
      return v;
    }
    case ElementType::kFloat64: {
      double v;
      std::memcpy(&v, p, 8);
      return v;
    }
    case ElementType::kFloat16: {
      std::uint16_t v;
      std::memcpy(&v, p, 2);
      return fp16_to_float(v);
    }
    case ElementType::kBFloat16: {
      std::uint16_t v;
      std::memcpy(&v, p, 2);
      return bf16_to_float(v);
    }
    case ElementType::kInt32: {
      std::int32_t v;
      std::memcpy(&v, p, 4);
      return v;
    }
    case ElementType::kInt64: {
      std::int64_t v;
      std::memcpy(&v, p, 8);
      return static_cast<double>(v);
    }
    case ElementType::kUInt32: {
      std::uint32_t v;
      std::memcpy(&v, p, 4);
      return v;
    }
    case ElementType::kInt8: {
      std::int8_t v;
      std::memcpy(&v, p, 1);
      return v;
    }
    case ElementType::kUInt8:
      return *p;
  }
  return 0;
}

struct DlClose {
  void operator()(void* h) const {
    if (h) dlclose(h);
  }
};

class UserFamily final : public CudaFamily {
 public:
  std::string op() const override { return "user"; }

  Status configure(const std::string& key, const std::string& value) override {
    if (key == "user_spec")
      spec_path_ = value;
    else if (key == "user_kernel")
      kernel_path_ = value;
    else if (key == "user_problem")
      sizes_ = value;
    else
      return Error::invalid_argument("unknown option " + key);
    if (spec_path_.empty()) return Status::success();
    std::optional<std::filesystem::path> kernel;
    if (!kernel_path_.empty()) kernel = kernel_path_;
    ATTUNE_ASSIGN(user::UserKernelSpec s, user::load_spec(spec_path_, kernel));
    if (!sizes_.empty()) ATTUNE_TRY(user::set_problem_sizes(s, sizes_));
    spec_ = std::move(s);
    return Status::success();
  }

  std::vector<ProblemInfo> examples() const override {
    if (!spec_) return {};
    Problem p = user::make_problem(*spec_);
    p.set_name(spec_->kernel);
    return {{p, spec_->description.empty() ? "the user kernel of " + spec_->spec_path.string()
                                           : spec_->description}};
  }

  Result<Problem> resolve(const Problem& problem) const override {
    ATTUNE_ASSIGN(user::UserKernelSpec s, spec_for(problem));
    Problem p = user::make_problem(s);
    p.set_name(spec_->kernel);
    return p;
  }

  Result<Space> space(const Problem& problem) const override {
    ATTUNE_ASSIGN(user::UserKernelSpec s, spec_for(problem));
    return user::make_space(s);
  }

  std::optional<std::string> can_implement(const Problem& problem,
                                           const Config& config) const override {
    auto s = spec_for(problem);
    if (!s) return s.error().message();
    // Shared memory is left to the device check in the worker, where too much of it is a launch
    // verdict; everything else impossible is refused here, before any build.
    user::LaunchLimits lim;
    lim.max_shared_memory_bytes = std::int64_t{1} << 40;
    return user::unsupported_reason(*s, config, lim);
  }

  std::optional<BuildRequest> build_request(const Problem& problem,
                                            const Config& config) const override {
    auto s = spec_for(problem);
    if (!s) return std::nullopt;
    user::LaunchLimits lim;
    lim.max_shared_memory_bytes = std::int64_t{1} << 40;
    auto inst = user::instantiate(*s, config, lim);
    if (!inst) return std::nullopt;
    return BuildRequest{s->source,
                        s->source_path.filename().string(),
                        inst->compile_options,
                        {inst->name_expression}};
  }

 private:
  Result<user::UserKernelSpec> spec_for(const Problem& problem) const {
    if (!spec_)
      return Error::invalid_argument("user kernels need --spec FILE (and --kernel FILE.cu)");
    return user::spec_for_problem(*spec_, problem);
  }

  user::LaunchLimits limits(CudaEnv& env) const {
    user::LaunchLimits lim;
    lim.max_threads_per_block = env.limits().max_threads_per_block;
    lim.max_shared_memory_bytes = std::int64_t{1} << 40;  // decided by check_launch
    return lim;
  }

  // One input set: the inputs drawn from one seed and the reference's outputs for them, kept on
  // the device for the checks of kChecksPerInputSet candidates. Remaking the inputs from the seed
  // costs one fill kernel per check; computing the reference and comparing on the host cost about
  // a second per check of a 4096^3 fp32 matmul on an H200 (issue 14), so the reference runs once
  // per set and outputs are compared on the device.
  struct InputSet {
    std::string problem_key;
    std::uint64_t seed = 0;
    int checks = 0;
    std::vector<DeviceBuffer> expected;  // per arg: the reference's output (compared args only)
    std::vector<DeviceBuffer> work;      // per arg: the candidate's buffer with its guard bytes
    // By spec index: the bytes of every input with a fixed fill (a constant, a .npy file) and of
    // every constant-memory input (random ones drawn once per set: no kernel can write them).
    std::map<std::size_t, DeviceBuffer> fixed;
  };
  // A fresh set after this many checks, so a long search sees more than one draw of inputs.
  static constexpr int kChecksPerInputSet = 32;

  static GateType gate_type(ElementType t) {
    switch (t) {
      case ElementType::kFloat32:
        return GateType::kF32;
      case ElementType::kFloat64:
        return GateType::kF64;
      case ElementType::kFloat16:
        return GateType::kF16;
      case ElementType::kBFloat16:
        return GateType::kBf16;
      case ElementType::kInt32:
        return GateType::kI32;
      case ElementType::kInt64:
        return GateType::kI64;
      case ElementType::kUInt32:
        return GateType::kU32;
      case ElementType::kInt8:
        return GateType::kI8;
      case ElementType::kUInt8:
        return GateType::kU8;
    }
    return GateType::kU8;
  }

  static std::uint64_t poison_bits(ElementType t) {
    std::array<unsigned char, 8> p{};
    poison_element(t, p.data());
    std::uint64_t bits = 0;
    std::memcpy(&bits, p.data(), user::size_of(t));
    return bits;
  }

  // Kernel parameters for `args` over device pointers `ptrs` (scalars by value).
  static std::vector<void*> params_for(const std::vector<ArgInstance>& args,
                                       std::vector<CUdeviceptr>& ptrs) {
    std::vector<void*> params;
    for (std::size_t i = 0; i < args.size(); ++i)
      params.push_back(args[i].role == ArgRole::kScalar
                           ? const_cast<unsigned char*>(args[i].scalar_bytes.data())
                           : static_cast<void*>(&ptrs[i]));
    return params;
  }

  // An argument's random values: a function of the set's seed and the argument alone, so the
  // reference and every candidate see the same.
  Status draw(CudaEnv& env, const ArgInstance& a, CUdeviceptr p, std::uint64_t seed) {
    return gate_.fill_random(env, p, static_cast<std::size_t>(a.elements), gate_type(a.type),
                             seed + a.spec_index * 0x9e3779b97f4a7c15ULL, a.range.first,
                             a.range.second);
  }

  // The set's fixed bytes: fixed fills read (a file) or made (a constant) once per set, and
  // constant-memory inputs drawn.
  Status prepare_fixed(CudaEnv& env, InputSet& set, const std::vector<ArgInstance>& args) {
    for (const ArgInstance& a : args) {
      if (!is_filled(a.role) || set.fixed.count(a.spec_index)) continue;
      if (a.fill.kind == user::FillKind::kRandom && !a.constant_memory) continue;
      ATTUNE_ASSIGN(DeviceBuffer b, DeviceBuffer::alloc(static_cast<std::size_t>(a.bytes)));
      if (a.fill.kind == user::FillKind::kRandom) {
        ATTUNE_TRY(draw(env, a, b.ptr(), set.seed));
      } else {
        ATTUNE_ASSIGN(std::vector<unsigned char> bytes, user::fixed_bytes(a));
        ATTUNE_TRY(b.upload(bytes.data(), bytes.size(), env.stream()));
      }
      set.fixed.emplace(a.spec_index, std::move(b));
    }
    return Status::success();
  }

  // Copies the set's values of the constant-memory inputs into the __constant__ symbols of the
  // module `fn` belongs to.
  Status fill_constants(CudaEnv& env, CUfunction fn, const std::vector<ArgInstance>& cargs,
                        const InputSet& set) {
    if (cargs.empty()) return Status::success();
    CUmodule mod = nullptr;
    ATTUNE_CU(cuFuncGetModule(&mod, fn));
    for (const ArgInstance& a : cargs) {
      CUdeviceptr sym = 0;
      std::size_t bytes = 0;
      if (cuModuleGetGlobal(&sym, &bytes, mod, a.symbol.c_str()) != CUDA_SUCCESS)
        return Error::invalid_argument(fmt::format(
            "{}: the module has no __constant__ symbol '{}' (memory: constant)", a.name, a.symbol));
      if (bytes < static_cast<std::size_t>(a.bytes))
        return Error::invalid_argument(
            fmt::format("{}: __constant__ {} holds {} bytes, the spec's size {}", a.name, a.symbol,
                        bytes, a.bytes));
      ATTUNE_CU(cuMemcpyDtoDAsync(sym, set.fixed.at(a.spec_index).ptr(),
                                  static_cast<std::size_t>(a.bytes), env.stream()));
    }
    return Status::success();
  }

  // Puts the set's inputs into `ptrs` (random inputs and inouts drawn from the seed, fixed ones
  // copied, outputs poisoned, every buffer's guard bytes reset), as before every check.
  Status stage(CudaEnv& env, const std::vector<ArgInstance>& args,
               const std::vector<CUdeviceptr>& ptrs, const InputSet& set) {
    for (std::size_t i = 0; i < args.size(); ++i) {
      const ArgInstance& a = args[i];
      if (a.role == ArgRole::kScalar || !ptrs[i]) continue;
      const auto n = static_cast<std::size_t>(a.elements);
      if (is_filled(a.role)) {
        if (auto f = set.fixed.find(a.spec_index); f != set.fixed.end())
          ATTUNE_CU(cuMemcpyDtoDAsync(ptrs[i], f->second.ptr(), static_cast<std::size_t>(a.bytes),
                                      env.stream()));
        else
          ATTUNE_TRY(draw(env, a, ptrs[i], set.seed));
      } else if (a.role == ArgRole::kOutput) {
        ATTUNE_TRY(gate_.fill_pattern(env, ptrs[i], n, static_cast<int>(user::size_of(a.type)),
                                      poison_bits(a.type)));
      }
      ATTUNE_CU(cuMemsetD8Async(ptrs[i] + static_cast<std::size_t>(a.bytes), kPoisonByte,
                                kGuardBytes, env.stream()));
    }
    return Status::success();
  }

  // Buffers of the args' sizes plus guard bytes; scratch too when with_scratch.
  static Result<std::vector<DeviceBuffer>> allocate(const std::vector<ArgInstance>& args,
                                                    bool with_scratch) {
    std::vector<DeviceBuffer> out(args.size());
    for (std::size_t i = 0; i < args.size(); ++i) {
      if (args[i].role == ArgRole::kScalar) continue;
      if (args[i].role == ArgRole::kScratch && !with_scratch) continue;
      ATTUNE_ASSIGN(out[i],
                    DeviceBuffer::alloc(static_cast<std::size_t>(args[i].bytes) + kGuardBytes));
    }
    return out;
  }

  // The set for this problem: the cached one while it serves, else a fresh draw with the
  // reference run on it.
  Result<InputSet*> input_set(CudaEnv& env, const user::UserKernelSpec& s, const Problem& problem,
                              const user::Instance& inst) {
    const std::string key = problem.structural_key();
    if (set_ && set_->problem_key == key && set_->checks < kChecksPerInputSet) return &*set_;
    set_.reset();  // its memory first: the new set may need it
    InputSet fresh;
    fresh.problem_key = key;
    fresh.seed = env.fresh_seed();
    ATTUNE_TRY(prepare_fixed(env, fresh, inst.args));
    ATTUNE_TRY(prepare_fixed(env, fresh, inst.constant_args));
    ATTUNE_ASSIGN(fresh.expected, reference(env, s, fresh));
    ATTUNE_ASSIGN(fresh.work, allocate(inst.args, false));
    set_ = std::move(fresh);
    return &*set_;
  }

  // Checks compared argument i of the candidate's buffer against the set's reference output.
  Result<Outcome> check(CudaEnv& env, const user::UserKernelSpec& s, const ArgInstance& a,
                        CUdeviceptr got, CUdeviceptr want) {
    ATTUNE_ASSIGN(user::GateTolerance gt, user::gate_tolerance(s, a.spec_index));
    Tolerance tol = tolerance_for(gt.dtype, gt.reduction_length);
    if (gt.rtol) tol.rtol = *gt.rtol;
    if (gt.floor) tol.floor = *gt.floor;
    const auto n = static_cast<std::size_t>(a.elements);
    ATTUNE_ASSIGN(DeviceCheck dc,
                  gate_.check_typed(env, got, want, n, gate_type(a.type),
                                    a.role == ArgRole::kOutput, poison_bits(a.type), tol));
    Outcome o;
    if (dc.ok()) {
      o.verdict = Verdict::kOk;
      o.check = ErrorCheck{"max_rel_err", dc.max_rel_err, tol.rtol};
      ATTUNE_ASSIGN(std::uint64_t past,
                    gate_.bytes_changed(env, got + a.bytes, kGuardBytes, kPoisonByte));
      if (past) {
        o.verdict = Verdict::kWrongOutput;
        o.message = fmt::format("{}: wrote past the end of the buffer", a.name);
      }
      return o;
    }
    // A failure is rare and worth its words: the host comparison names the worst element.
    const std::size_t es = user::size_of(a.type);
    std::vector<unsigned char> raw(n * es), ref_raw(n * es);
    ATTUNE_CU(cuMemcpyDtoHAsync(raw.data(), got, raw.size(), env.stream()));
    ATTUNE_CU(cuMemcpyDtoHAsync(ref_raw.data(), want, ref_raw.size(), env.stream()));
    CUresult rc = cuStreamSynchronize(env.stream());
    exit_if_sticky(rc, "reading a failed output");
    ATTUNE_CU(rc);
    std::vector<double> wide(n), ref(n);
    std::vector<std::uint8_t> unwritten(n);
    std::vector<unsigned char> poison(es);
    poison_element(a.type, poison.data());
    for (std::size_t e = 0; e < n; ++e) {
      const unsigned char* p = raw.data() + e * es;
      unwritten[e] = a.role == ArgRole::kOutput && std::memcmp(p, poison.data(), es) == 0;
      wide[e] = element_value(a.type, p);
      ref[e] = element_value(a.type, ref_raw.data() + e * es);
    }
    Comparison c = compare_widened(wide, unwritten, ref, tol);
    o.verdict = c.verdict;
    o.check = c.check;
    o.message = c.message.empty() ? "" : a.name + ": " + c.message;
    if (o.verdict == Verdict::kOk) {
      // The device counted a failure the host does not see (rounding of the RMS floor at the
      // tolerance's edge): the device's count stands, slow-but-correct.
      o.verdict = dc.non_finite ? Verdict::kNonFinite : Verdict::kWrongOutput;
      o.message = fmt::format("{}: {} unwritten, {} non-finite, {} off by more than {:.3g}", a.name,
                              dc.unwritten, dc.non_finite, dc.mismatched, tol.rtol);
    }
    return o;
  }

  Result<Outcome> run(CudaEnv& env, const Problem& problem, const Config& config,
                      Regime regime) override {
    ATTUNE_ASSIGN(user::UserKernelSpec s, spec_for(problem));
    Outcome o;
    auto inst = user::instantiate(s, config, limits(env));
    if (!inst) {
      o.verdict = inst.error().kind() == Error::Kind::kUnsupported ? Verdict::kUnsupported
                                                                   : Verdict::kLaunchFailed;
      o.message = inst.error().message();
      return o;
    }
    const auto& L = inst->launch;
    ATTUNE_ASSIGN(Launchable k,
                  launchable(env, *build_request(problem, config), inst->name_expression,
                             static_cast<unsigned>(L.threads_per_block()),
                             static_cast<unsigned>(L.shared_memory_bytes)));
    if (k.refused) return *k.refused;
    ATTUNE_ASSIGN(InputSet * set, input_set(env, s, problem, *inst));
    ++set->checks;
    // Scratch may depend on the knobs: its own buffers, per candidate.
    ATTUNE_ASSIGN(std::vector<DeviceBuffer> scratch, allocate(inst->args, true));
    std::vector<CUdeviceptr> ptrs(inst->args.size(), 0);
    for (std::size_t i = 0; i < inst->args.size(); ++i) {
      if (inst->args[i].role == ArgRole::kScalar) continue;
      ptrs[i] = inst->args[i].role == ArgRole::kScratch ? scratch[i].ptr() : set->work[i].ptr();
    }
    ATTUNE_TRY(stage(env, inst->args, ptrs, *set));
    ATTUNE_TRY(fill_constants(env, k.fn, inst->constant_args, *set));
    std::vector<void*> params = params_for(inst->args, ptrs);
    auto launch = [&](CUstream st) {
      return cuLaunchKernel(
          k.fn, static_cast<unsigned>(L.grid[0]), static_cast<unsigned>(L.grid[1]),
          static_cast<unsigned>(L.grid[2]), static_cast<unsigned>(L.block[0]),
          static_cast<unsigned>(L.block[1]), static_cast<unsigned>(L.block[2]),
          static_cast<unsigned>(L.shared_memory_bytes), st, params.data(), nullptr);
    };
    ATTUNE_ASSIGN(auto refused, launch_and_wait(env, launch, "user kernel run"));
    if (refused) return *refused;

    o.verdict = Verdict::kOk;
    for (std::size_t i = 0; i < inst->args.size() && o.verdict == Verdict::kOk; ++i) {
      const ArgInstance& a = inst->args[i];
      if (!is_output(a.role)) continue;
      ATTUNE_ASSIGN(o, check(env, s, a, ptrs[i], set->expected[i].ptr()));
    }
    if (o.verdict != Verdict::kOk) return o;
    ATTUNE_ASSIGN(Measurement m, env.time(launch, regime));
    o.measurement = m;
    return o;
  }

  // The reference's output for every compared argument (empty buffers for the others), on the
  // set's inputs.
  Result<std::vector<DeviceBuffer>> reference(CudaEnv& env, const user::UserKernelSpec& s,
                                              const InputSet& set) {
    ATTUNE_ASSIGN(user::Instance ri, user::instantiate_reference(s, limits(env)));
    ATTUNE_ASSIGN(std::vector<DeviceBuffer> bufs, allocate(ri.args, true));
    std::vector<CUdeviceptr> ptrs(ri.args.size(), 0);
    for (std::size_t i = 0; i < ri.args.size(); ++i) ptrs[i] = bufs[i].ptr();
    ATTUNE_TRY(stage(env, ri.args, ptrs, set));
    std::vector<DeviceBuffer> out(ri.args.size());
    if (const auto* lib = std::get_if<user::ReferenceLibrary>(&s.reference)) {
      std::unique_ptr<void, DlClose> h(dlopen(lib->path.c_str(), RTLD_NOW | RTLD_LOCAL));
      if (!h)
        return Error::invalid_argument(std::string("cannot load the reference library: ") +
                                       dlerror());
      using Fn = int (*)(void* const*, const std::int64_t*, int);
      auto fn = reinterpret_cast<Fn>(dlsym(h.get(), lib->function.c_str()));
      if (!fn)
        return Error::invalid_argument("the reference library has no function " + lib->function);
      // Every argument in spec order, constant-memory ones among them (from the set's bytes).
      std::vector<std::pair<const ArgInstance*, CUdeviceptr>> all;
      for (std::size_t i = 0; i < ri.args.size(); ++i) all.emplace_back(&ri.args[i], ptrs[i]);
      for (const ArgInstance& a : ri.constant_args)
        all.emplace_back(&a, set.fixed.at(a.spec_index).ptr());
      std::sort(all.begin(), all.end(), [](const auto& x, const auto& y) {
        return x.first->spec_index < y.first->spec_index;
      });
      std::vector<std::vector<unsigned char>> host(all.size());
      std::vector<void*> hptrs;
      std::vector<std::int64_t> counts;
      for (std::size_t i = 0; i < all.size(); ++i) {
        const ArgInstance& a = *all[i].first;
        if (a.role == ArgRole::kScalar) {
          host[i].assign(a.scalar_bytes.begin(), a.scalar_bytes.end());
        } else {
          host[i].assign(static_cast<std::size_t>(a.bytes), 0);
          if (is_filled(a.role))
            ATTUNE_CU(
                cuMemcpyDtoHAsync(host[i].data(), all[i].second, host[i].size(), env.stream()));
        }
        hptrs.push_back(host[i].data());
        counts.push_back(a.role == ArgRole::kScalar ? 1 : a.elements);
      }
      CUresult rc = cuStreamSynchronize(env.stream());
      exit_if_sticky(rc, "reading the inputs for the reference");
      ATTUNE_CU(rc);
      if (int ret = fn(hptrs.data(), counts.data(), static_cast<int>(hptrs.size())); ret != 0)
        return Error::internal(fmt::format("the reference function returned {}", ret));
      for (std::size_t i = 0; i < all.size(); ++i) {
        if (!is_output(all[i].first->role)) continue;
        // Back to the position among the kernel's parameters.
        const auto at = static_cast<std::size_t>(all[i].first - ri.args.data());
        ATTUNE_TRY(bufs[at].upload(host[i].data(), host[i].size(), env.stream()));
        out[at] = std::move(bufs[at]);
      }
      return out;
    }
    const auto& rk = std::get<user::ReferenceKernel>(s.reference);
    BuildRequest req{
        rk.source, rk.source_path.filename().string(), ri.compile_options, {ri.name_expression}};
    ATTUNE_ASSIGN(Built k, env.function(req, ri.name_expression));
    if (k.verdict != Verdict::kOk)
      return Error::invalid_argument("the reference kernel does not compile: " + k.log);
    ATTUNE_TRY(fill_constants(env, k.fn, ri.constant_args, set));
    std::vector<void*> params = params_for(ri.args, ptrs);
    const auto& L = ri.launch;
    CUresult rc = cuLaunchKernel(
        k.fn, static_cast<unsigned>(L.grid[0]), static_cast<unsigned>(L.grid[1]),
        static_cast<unsigned>(L.grid[2]), static_cast<unsigned>(L.block[0]),
        static_cast<unsigned>(L.block[1]), static_cast<unsigned>(L.block[2]),
        static_cast<unsigned>(L.shared_memory_bytes), env.stream(), params.data(), nullptr);
    exit_if_sticky(rc, "reference kernel launch");
    ATTUNE_CU(rc);
    rc = cuStreamSynchronize(env.stream());
    exit_if_sticky(rc, "reference kernel run");
    ATTUNE_CU(rc);
    for (std::size_t i = 0; i < ri.args.size(); ++i)
      if (is_output(ri.args[i].role)) out[i] = std::move(bufs[i]);
    return out;
  }

  std::string spec_path_, kernel_path_, sizes_;
  std::optional<user::UserKernelSpec> spec_;
  DeviceGate gate_;
  std::optional<InputSet> set_;
};

}  // namespace

std::unique_ptr<CudaFamily> make_user_family() {
  return std::make_unique<UserFamily>();
}

}  // namespace attune::kernels
