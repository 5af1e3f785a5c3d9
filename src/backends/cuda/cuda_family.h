// A kernel family on the CUDA backend: the Space and source for one op, run in the worker with
// what CudaEnv provides (device, compiler, loaded modules, L2 flush buffer, timing). Families
// live in src/kernels/; the backend dispatches to them by op. One thread at a time.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "backends/backend.h"
#include "cuda/cuda_device.h"
#include "cuda/cuda_run.h"
#include "cuda/nvrtc_build.h"

namespace attune::cuda {

// A compiled kernel ready to launch, or why it is not.
struct Built {
  Verdict verdict = Verdict::kOk;  // ok, build_failed
  std::string log;
  CUfunction fn = nullptr;
};

class CudaEnv {
 public:
  CudaEnv(CudaDevice& device, const Compiler& compiler, L2Flush flush)
      : device_(device), compiler_(compiler), flush_(std::move(flush)) {}

  CudaDevice& device() { return device_; }
  CUstream stream() const { return device_.stream(); }
  const DeviceLimits& limits() const { return device_.limits(); }
  const Compiler& compiler() const { return compiler_; }

  // Compiles (or takes from the disk cache), loads once per process, and finds `name`.
  Result<Built> function(const BuildRequest& request, const std::string& name);
  // Times launch() under the regime's policy (rank: warm, back-to-back; deploy: cold L2).
  Result<Measurement> time(const std::function<CUresult(CUstream)>& launch, Regime regime);
  // Enqueues the deploy regime's lead, an empty kernel (cuda::L2Flush::lead).
  CUresult lead(CUstream s) const { return flush_.lead(s); }
  // A chain's prefixes timed as CUDA graphs behind `lead` (cuda::time_prefixes).
  Result<std::vector<double>> time_prefixes(
      const std::vector<std::function<CUresult(CUstream)>>& steps,
      const std::function<CUresult(CUstream)>& lead, int samples) {
    return cuda::time_prefixes(steps, lead, stream(), flush_, samples);
  }

  // A seed for fresh random inputs: different for every check.
  std::uint64_t fresh_seed();

 private:
  CudaDevice& device_;
  const Compiler& compiler_;
  L2Flush flush_;
  std::map<std::string, Module> modules_;  // by build cache key
  std::map<std::string, std::map<std::string, std::string>> lowered_;
  std::uint64_t checks_ = 0;
};

class CudaFamily {
 public:
  virtual ~CudaFamily() = default;
  virtual std::string op() const = 0;
  // A backend option addressed to this family (e.g. user_spec=PATH); invalid_argument when the
  // key is not this family's.
  virtual Status configure(const std::string& key, const std::string&) {
    return Error::invalid_argument("unknown option " + key);
  }
  virtual std::vector<ProblemInfo> examples() const = 0;
  // Validates and completes a problem spec of this op (defaults, types, positive sizes).
  virtual Result<Problem> resolve(const Problem& spec) const = 0;
  virtual Result<Space> space(const Problem& problem) const = 0;
  virtual std::optional<std::string> can_implement(const Problem&, const Config&) const {
    return std::nullopt;
  }
  // What to compile for a config, so it can be built ahead of the GPU; nullopt when the config
  // compiles nothing (a library call).
  virtual std::optional<BuildRequest> build_request(const Problem& problem,
                                                    const Config& config) const = 0;
  // In the worker: build, run on fresh random inputs, check against the reference, time. An
  // error from run() becomes the candidate's verdict: oom when the device ran out of memory,
  // launch_failed otherwise.
  Outcome execute(CudaEnv& env, const Problem& problem, const Config& config, Regime regime);

 protected:
  virtual Result<Outcome> run(CudaEnv& env, const Problem& problem, const Config& config,
                              Regime regime) = 0;
};

// `name` of `request` compiled (or from the cache), loaded, and checked against a launch of
// `threads` per block with `dynamic_smem` bytes: the function, or the refusing outcome.
struct Launchable {
  CUfunction fn = nullptr;
  std::optional<Outcome> refused;
};
Result<Launchable> launchable(CudaEnv& env, const BuildRequest& request, const std::string& name,
                              unsigned threads, unsigned dynamic_smem);

// Enqueues one run of a candidate and waits for it. A launch the driver refuses is a
// launch_failed outcome; an error that poisons the context ends the worker (crashed).
Result<std::optional<Outcome>> launch_and_wait(CudaEnv& env,
                                               const std::function<CUresult(CUstream)>& launch,
                                               const char* what);

using FamilyList = std::vector<std::unique_ptr<CudaFamily>>;

}  // namespace attune::cuda
