// The CUDA backend: NVRTC-built kernel families and library calls on one of the GPUs this process
// sees (by CUDA ordinal: $ATTUNE_DEVICE, else 0, unless select_device() names another). The
// scheduler side fingerprints the device without creating a context and compiles ahead on a
// thread pool into the on-disk cache; execute() runs in the worker, which owns the context.
// One thread at a time.
#pragma once

#include <memory>

#include "backends/cuda/cuda_family.h"

namespace attune::cuda {

class CudaBackend final : public Backend {
 public:
  explicit CudaBackend(FamilyList families);
  ~CudaBackend() override;

  std::string name() const override { return "cuda"; }
  Status configure(const std::string& key, const std::string& value) override;
  Result<DeviceFingerprint> fingerprint() override;
  Result<std::vector<DeviceFingerprint>> devices() override;
  Status select_device(int index) override;
  int device_index() const override { return ordinal_; }
  std::vector<ProblemInfo> problems() const override;
  Result<Problem> resolve(const std::string& spec) const override;
  Result<Space> space(const Problem& problem) const override;
  std::optional<std::string> can_implement(const Problem& problem,
                                           const Config& config) const override;
  Outcome execute(const Problem& problem, const Config& config, Regime regime) override;
  void prepare(const Problem& problem, const Config& config) override;
  int prefetch_depth() const override;
  void drop_prepared() override;
  // A candidate that has to compile in the worker takes seconds; a hang is known in a minute.
  double default_timeout_s() const override { return 60.0; }

 private:
  Result<CudaFamily*> family(const Problem& problem) const;
  Result<const Compiler*> compiler();

  FamilyList families_;
  int ordinal_;
  std::optional<DeviceFingerprint> fingerprint_;
  std::unique_ptr<Compiler> compiler_;
  std::unique_ptr<CompilePool> pool_;
  std::vector<std::shared_future<Result<BuildResult>>> pending_;
  std::unique_ptr<CudaDevice> device_;  // worker side only
  std::unique_ptr<CudaEnv> env_;
};

}  // namespace attune::cuda
