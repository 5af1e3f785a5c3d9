#include "backends/cuda/cuda_backend.h"

#include <algorithm>
#include <random>
#include <thread>

#include <fmt/format.h>

#include "cuda/cuda_check.h"

namespace attune::cuda {

Result<Built> CudaEnv::function(const BuildRequest& request, const std::string& name) {
  const std::string key = compiler_.cache_key(request);
  auto it = modules_.find(key);
  Built b;
  if (it == modules_.end()) {
    ATTUNE_ASSIGN(BuildResult r, compiler_.build(request));
    if (!r.ok) {
      b.verdict = Verdict::kBuildFailed;
      b.log = r.log;
      return b;
    }
    ATTUNE_ASSIGN(Module m, Module::load(r.cubin));
    it = modules_.emplace(key, std::move(m)).first;
    lowered_[key] = r.lowered_names;
  }
  const auto& lowered = lowered_[key];
  auto l = lowered.find(name);
  ATTUNE_ASSIGN(b.fn, it->second.function(l == lowered.end() ? name : l->second));
  return b;
}

Result<Measurement> CudaEnv::time(const std::function<CUresult(CUstream)>& launch, Regime regime) {
  return time_kernel(launch, stream(), regime, flush_, timing_options(regime), limits().pci_bus_id);
}

std::uint64_t CudaEnv::fresh_seed() {
  return std::random_device{}() ^ (++checks_ * 0x9e3779b97f4a7c15ULL);
}

Outcome CudaFamily::execute(CudaEnv& env, const Problem& problem, const Config& config,
                            Regime regime) {
  auto r = run(env, problem, config, regime);
  if (r) return *r;
  Outcome o;
  o.verdict =
      r.error().kind() == Error::Kind::kUnsupported ? Verdict::kOom : Verdict::kLaunchFailed;
  o.message = r.error().message();
  return o;
}

Result<Launchable> launchable(CudaEnv& env, const BuildRequest& request, const std::string& name,
                              unsigned threads, unsigned dynamic_smem) {
  ATTUNE_ASSIGN(Built b, env.function(request, name));
  if (b.verdict != Verdict::kOk) return Launchable{nullptr, Outcome::failed(b.verdict, b.log)};
  ATTUNE_ASSIGN(std::string why,
                check_launch(b.fn, threads, dynamic_smem, env.limits().max_shared_per_block_optin));
  if (!why.empty()) return Launchable{nullptr, Outcome::failed(Verdict::kLaunchFailed, why)};
  return Launchable{b.fn, std::nullopt};
}

Result<std::optional<Outcome>> launch_and_wait(CudaEnv& env,
                                               const std::function<CUresult(CUstream)>& launch,
                                               const char* what) {
  CUresult rc = launch(env.stream());
  if (rc != CUDA_SUCCESS) {
    exit_if_sticky(rc, what);
    return std::optional<Outcome>(Outcome::failed(
        Verdict::kLaunchFailed, driver_error(rc, what, __FILE__, __LINE__).message()));
  }
  rc = cuStreamSynchronize(env.stream());
  exit_if_sticky(rc, what);  // an illegal address ends this worker: the candidate is crashed
  ATTUNE_CU(rc);
  return std::optional<Outcome>();
}

CudaBackend::CudaBackend(FamilyList families)
    : families_(std::move(families)), ordinal_([] {
        // libattune-rt refuses a bad ATTUNE_DEVICE; the tuner takes --device.
        auto d = device_ordinal();
        return d ? *d : 0;
      }()) {}
CudaBackend::~CudaBackend() = default;

Status CudaBackend::configure(const std::string& key, const std::string& value) {
  for (const auto& f : families_) {
    Status s = f->configure(key, value);
    if (s.ok()) return s;
    if (s.error().message() != "unknown option " + key) return s;
  }
  return Error::invalid_argument("the cuda backend takes no option '" + key + "'");
}

Result<DeviceFingerprint> CudaBackend::fingerprint() {
  if (!fingerprint_) {
    ATTUNE_ASSIGN(DeviceFingerprint d, cuda::fingerprint(ordinal_));
    fingerprint_ = d;
  }
  return *fingerprint_;
}

Result<std::vector<DeviceFingerprint>> CudaBackend::devices() {
  ATTUNE_ASSIGN(int count, device_count());
  std::vector<DeviceFingerprint> out;
  for (int i = 0; i < count; ++i) {
    ATTUNE_ASSIGN(DeviceFingerprint d, cuda::fingerprint(i));
    out.push_back(std::move(d));
  }
  return out;
}

Status CudaBackend::select_device(int index) {
  // The compiler targets the device's arch and the worker's context lives on it: both are made
  // for one device, so the choice comes first.
  if (compiler_ || env_)
    return Error::internal("the cuda backend's device is chosen before it compiles or runs");
  ATTUNE_ASSIGN(int count, device_count());
  if (index < 0 || index >= count) return no_such_device(index, count);
  ordinal_ = index;
  fingerprint_.reset();
  return Status::success();
}

std::vector<ProblemInfo> CudaBackend::problems() const {
  std::vector<ProblemInfo> out;
  for (const auto& f : families_)
    for (auto& p : f->examples()) out.push_back(std::move(p));
  return out;
}

Result<CudaFamily*> CudaBackend::family(const Problem& problem) const {
  for (const auto& f : families_)
    if (f->op() == problem.op()) return f.get();
  std::string known;
  for (const auto& f : families_) known += (known.empty() ? "" : ", ") + f->op();
  return Error::invalid_argument("the cuda backend has no kernel family for op '" + problem.op() +
                                 "' (it has: " + known + ")");
}

Result<Problem> CudaBackend::resolve(const std::string& spec) const {
  for (const auto& info : problems())
    if (info.problem.name() == spec) return info.problem;
  ATTUNE_ASSIGN(Problem p, Problem::parse(spec));
  ATTUNE_ASSIGN(CudaFamily * f, family(p));
  return f->resolve(p);
}

Result<Space> CudaBackend::space(const Problem& problem) const {
  ATTUNE_ASSIGN(CudaFamily * f, family(problem));
  return f->space(problem);
}

std::optional<std::string> CudaBackend::can_implement(const Problem& problem,
                                                      const Config& config) const {
  auto f = family(problem);
  if (!f) return f.error().message();
  return (*f)->can_implement(problem, config);
}

Result<const Compiler*> CudaBackend::compiler() {
  if (!compiler_) {
    ATTUNE_ASSIGN(DeviceFingerprint d, fingerprint());
    compiler_ = std::make_unique<Compiler>(d.arch, default_cache_dir());
  }
  return compiler_.get();
}

int CudaBackend::prefetch_depth() const {
  return static_cast<int>(2 * std::max(1u, std::thread::hardware_concurrency()));
}

void CudaBackend::prepare(const Problem& problem, const Config& config) {
  auto f = family(problem);
  if (!f || (*f)->can_implement(problem, config)) return;
  auto req = (*f)->build_request(problem, config);
  auto c = compiler();
  if (!req || !c) return;
  if (!pool_)
    pool_ =
        std::make_unique<CompilePool>(**c, std::max(1u, std::thread::hardware_concurrency() - 1));
  // Finished builds are dropped; the cache on disk is what the worker reads.
  std::erase_if(pending_, [](const auto& fut) {
    return fut.wait_for(std::chrono::seconds(0)) == std::future_status::ready;
  });
  pending_.push_back(pool_->submit(std::move(*req)));
}

// The dropped builds' futures are ready (with an error): prepare() forgets them with the
// finished ones.
void CudaBackend::drop_prepared() {
  if (pool_) pool_->drop_queued();
}

Outcome CudaBackend::execute(const Problem& problem, const Config& config, Regime regime) {
  auto f = family(problem);
  if (!f) return Outcome::failed(Verdict::kLaunchFailed, f.error().message());
  if (!env_) {
    auto c = compiler();
    if (!c) return Outcome::failed(Verdict::kLaunchFailed, c.error().message());
    auto dev = CudaDevice::open(ordinal_);
    if (!dev) return Outcome::failed(Verdict::kLaunchFailed, dev.error().message());
    device_ = std::move(*dev);
    auto flush = L2Flush::create(**c, device_->limits().l2_bytes, device_->limits().sm_count);
    if (!flush) return Outcome::failed(Verdict::kLaunchFailed, flush.error().message());
    env_ = std::make_unique<CudaEnv>(*device_, **c, std::move(*flush));
  }
  return (*f)->execute(*env_, problem, config, regime);
}

}  // namespace attune::cuda
