#include "kernels/user/user_family.h"

#include <dlfcn.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <random>

#include <fmt/format.h>

#include "cuda/cuda_check.h"
#include "cuda/host_types.h"
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

std::vector<unsigned char> poisoned(ElementType t, std::size_t elements, std::size_t extra_bytes) {
  const std::size_t es = user::size_of(t);
  std::vector<unsigned char> bytes(elements * es + extra_bytes, kPoisonByte);
  for (std::size_t i = 0; i < elements; ++i) poison_element(t, bytes.data() + i * es);
  return bytes;
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

void set_element(ElementType t, unsigned char* p, double x) {
  switch (t) {
    case ElementType::kFloat32: {
      float v = static_cast<float>(x);
      std::memcpy(p, &v, 4);
      break;
    }
    case ElementType::kFloat64:
      std::memcpy(p, &x, 8);
      break;
    case ElementType::kFloat16: {
      std::uint16_t v = float_to_fp16(static_cast<float>(x));
      std::memcpy(p, &v, 2);
      break;
    }
    case ElementType::kBFloat16: {
      std::uint16_t v = float_to_bf16(static_cast<float>(x));
      std::memcpy(p, &v, 2);
      break;
    }
    case ElementType::kInt32: {
      std::int32_t v = static_cast<std::int32_t>(x);
      std::memcpy(p, &v, 4);
      break;
    }
    case ElementType::kInt64: {
      std::int64_t v = static_cast<std::int64_t>(x);
      std::memcpy(p, &v, 8);
      break;
    }
    case ElementType::kUInt32: {
      std::uint32_t v = static_cast<std::uint32_t>(x);
      std::memcpy(p, &v, 4);
      break;
    }
    case ElementType::kInt8: {
      std::int8_t v = static_cast<std::int8_t>(x);
      std::memcpy(p, &v, 1);
      break;
    }
    case ElementType::kUInt8:
      *p = static_cast<unsigned char>(x);
      break;
  }
}

// Fresh random values in the argument's range (integers inclusive).
std::vector<unsigned char> random_bytes(const ArgInstance& a, std::uint64_t seed) {
  std::mt19937_64 g(seed);
  const std::size_t es = user::size_of(a.type);
  std::vector<unsigned char> out(static_cast<std::size_t>(a.bytes));
  std::uniform_real_distribution<double> real(a.range.first, a.range.second);
  std::uniform_int_distribution<std::int64_t> integer(static_cast<std::int64_t>(a.range.first),
                                                      static_cast<std::int64_t>(a.range.second));
  for (std::int64_t i = 0; i < a.elements; ++i)
    set_element(a.type, out.data() + i * es,
                user::is_floating(a.type) ? real(g) : static_cast<double>(integer(g)));
  return out;
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

  // Runs `inst` on device buffers; fills `outputs` with each compared argument's bytes.
  struct Buffers {
    std::vector<DeviceBuffer> dev;  // per arg (empty for scalars)
    std::vector<CUdeviceptr> ptrs;
    std::vector<void*> params;
  };

  Result<Buffers> allocate(const user::Instance& inst,
                           const std::vector<std::vector<unsigned char>>& inputs, CUstream st) {
    Buffers b;
    b.dev.resize(inst.args.size());
    b.ptrs.resize(inst.args.size());
    for (std::size_t i = 0; i < inst.args.size(); ++i) {
      const ArgInstance& a = inst.args[i];
      if (a.role == ArgRole::kScalar) continue;
      ATTUNE_ASSIGN(b.dev[i], DeviceBuffer::alloc(static_cast<std::size_t>(a.bytes) + kGuardBytes));
      b.ptrs[i] = b.dev[i].ptr();
      std::vector<unsigned char> bytes =
          is_filled(a.role) ? inputs[i] : poisoned(a.type, static_cast<std::size_t>(a.elements), 0);
      bytes.resize(static_cast<std::size_t>(a.bytes) + kGuardBytes, kPoisonByte);
      ATTUNE_TRY(b.dev[i].upload(bytes.data(), bytes.size(), st));
    }
    for (std::size_t i = 0; i < inst.args.size(); ++i)
      b.params.push_back(inst.args[i].role == ArgRole::kScalar
                             ? const_cast<unsigned char*>(inst.args[i].scalar_bytes.data())
                             : static_cast<void*>(&b.ptrs[i]));
    return b;
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
    // Fresh random inputs, shared by the candidate and the reference.
    std::vector<std::vector<unsigned char>> inputs(inst->args.size());
    for (std::size_t i = 0; i < inst->args.size(); ++i)
      if (is_filled(inst->args[i].role)) inputs[i] = random_bytes(inst->args[i], env.fresh_seed());
    ATTUNE_ASSIGN(std::vector<std::vector<unsigned char>> expected, reference(env, s, inputs));

    ATTUNE_ASSIGN(Buffers b, allocate(*inst, inputs, env.stream()));
    auto launch = [&](CUstream st) {
      return cuLaunchKernel(
          k.fn, static_cast<unsigned>(L.grid[0]), static_cast<unsigned>(L.grid[1]),
          static_cast<unsigned>(L.grid[2]), static_cast<unsigned>(L.block[0]),
          static_cast<unsigned>(L.block[1]), static_cast<unsigned>(L.block[2]),
          static_cast<unsigned>(L.shared_memory_bytes), st, b.params.data(), nullptr);
    };
    ATTUNE_ASSIGN(auto refused, launch_and_wait(env, launch, "user kernel run"));
    if (refused) return *refused;

    o.verdict = Verdict::kOk;
    for (std::size_t i = 0; i < inst->args.size() && o.verdict == Verdict::kOk; ++i) {
      const ArgInstance& a = inst->args[i];
      if (!is_output(a.role)) continue;
      std::vector<unsigned char> got(static_cast<std::size_t>(a.bytes) + kGuardBytes);
      ATTUNE_TRY(b.dev[i].download(got.data(), got.size(), env.stream()));
      const std::size_t es = user::size_of(a.type), n = static_cast<std::size_t>(a.elements);
      std::vector<double> wide(n), ref(n);
      std::vector<std::uint8_t> unwritten(n);
      std::vector<unsigned char> poison(es);
      poison_element(a.type, poison.data());
      for (std::size_t e = 0; e < n; ++e) {
        const unsigned char* p = got.data() + e * es;
        unwritten[e] = a.role == ArgRole::kOutput && std::memcmp(p, poison.data(), es) == 0;
        wide[e] = element_value(a.type, p);
        ref[e] = element_value(a.type, expected[i].data() + e * es);
      }
      ATTUNE_ASSIGN(user::GateTolerance gt, user::gate_tolerance(s, i));
      Tolerance tol = tolerance_for(gt.dtype, gt.reduction_length);
      if (gt.rtol) tol.rtol = *gt.rtol;
      if (gt.floor) tol.floor = *gt.floor;
      Comparison c = compare_widened(wide, unwritten, ref, tol);
      o.verdict = c.verdict;
      o.check = c.check;
      o.message = c.message.empty() ? "" : a.name + ": " + c.message;
      if (o.verdict == Verdict::kOk) {
        for (std::size_t g = 0; g < kGuardBytes; ++g)
          if (got[static_cast<std::size_t>(a.bytes) + g] != kPoisonByte) {
            o.verdict = Verdict::kWrongOutput;
            o.message = fmt::format("{}: wrote past the end of the buffer", a.name);
            break;
          }
      }
    }
    if (o.verdict != Verdict::kOk) return o;
    ATTUNE_ASSIGN(Measurement m, env.time(launch, regime));
    o.measurement = m;
    return o;
  }

  // The reference's bytes for every compared argument (empty for the others).
  Result<std::vector<std::vector<unsigned char>>> reference(
      CudaEnv& env, const user::UserKernelSpec& s,
      const std::vector<std::vector<unsigned char>>& inputs) {
    ATTUNE_ASSIGN(user::Instance ri, user::instantiate_reference(s, limits(env)));
    std::vector<std::vector<unsigned char>> out(ri.args.size());
    if (const auto* lib = std::get_if<user::ReferenceLibrary>(&s.reference)) {
      std::unique_ptr<void, DlClose> h(dlopen(lib->path.c_str(), RTLD_NOW | RTLD_LOCAL));
      if (!h)
        return Error::invalid_argument(std::string("cannot load the reference library: ") +
                                       dlerror());
      using Fn = int (*)(void* const*, const std::int64_t*, int);
      auto fn = reinterpret_cast<Fn>(dlsym(h.get(), lib->function.c_str()));
      if (!fn)
        return Error::invalid_argument("the reference library has no function " + lib->function);
      std::vector<std::vector<unsigned char>> host(ri.args.size());
      std::vector<void*> ptrs;
      std::vector<std::int64_t> counts;
      for (std::size_t i = 0; i < ri.args.size(); ++i) {
        const ArgInstance& a = ri.args[i];
        if (a.role == ArgRole::kScalar) {
          host[i].assign(a.scalar_bytes.begin(), a.scalar_bytes.end());
        } else {
          host[i] = is_filled(a.role)
                        ? inputs[i]
                        : std::vector<unsigned char>(static_cast<std::size_t>(a.bytes), 0);
        }
        ptrs.push_back(host[i].data());
        counts.push_back(a.role == ArgRole::kScalar ? 1 : a.elements);
      }
      if (int rc = fn(ptrs.data(), counts.data(), static_cast<int>(ptrs.size())); rc != 0)
        return Error::internal(fmt::format("the reference function returned {}", rc));
      for (std::size_t i = 0; i < ri.args.size(); ++i)
        if (is_output(ri.args[i].role)) out[i] = std::move(host[i]);
      return out;
    }
    const auto& rk = std::get<user::ReferenceKernel>(s.reference);
    BuildRequest req{
        rk.source, rk.source_path.filename().string(), ri.compile_options, {ri.name_expression}};
    ATTUNE_ASSIGN(Built k, env.function(req, ri.name_expression));
    if (k.verdict != Verdict::kOk)
      return Error::invalid_argument("the reference kernel does not compile: " + k.log);
    ATTUNE_ASSIGN(Buffers b, allocate(ri, inputs, env.stream()));
    const auto& L = ri.launch;
    CUresult rc = cuLaunchKernel(
        k.fn, static_cast<unsigned>(L.grid[0]), static_cast<unsigned>(L.grid[1]),
        static_cast<unsigned>(L.grid[2]), static_cast<unsigned>(L.block[0]),
        static_cast<unsigned>(L.block[1]), static_cast<unsigned>(L.block[2]),
        static_cast<unsigned>(L.shared_memory_bytes), env.stream(), b.params.data(), nullptr);
    exit_if_sticky(rc, "reference kernel launch");
    ATTUNE_CU(rc);
    rc = cuStreamSynchronize(env.stream());
    exit_if_sticky(rc, "reference kernel run");
    ATTUNE_CU(rc);
    for (std::size_t i = 0; i < ri.args.size(); ++i)
      if (is_output(ri.args[i].role)) {
        out[i].resize(static_cast<std::size_t>(ri.args[i].bytes));
        ATTUNE_TRY(b.dev[i].download(out[i].data(), out[i].size(), env.stream()));
      }
    return out;
  }

  std::string spec_path_, kernel_path_, sizes_;
  std::optional<user::UserKernelSpec> spec_;
};

}  // namespace

std::unique_ptr<CudaFamily> make_user_family() {
  return std::make_unique<UserFamily>();
}

}  // namespace attune::kernels
