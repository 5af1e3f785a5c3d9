// The simulated device: a stand-in GPU for running attune end to end without one. Each built-in
// problem has a seeded, deterministic latency landscape over its knobs (interacting knobs,
// wave-quantization plateaus, register-spill and shared-memory cliffs, measurement noise) with a
// known optimum, and its candidates compute a real small result that passes through the
// correctness gate. The `faults` problem plants every failure class for real: configs that fail
// to build or launch, abort or segfault the worker, hang, exhaust the device's memory, write a
// wrong result or NaN. The problems of built-in ops take their size attributes from the ops'
// signatures (core/op.h); `faults` is the sim's own. The machine has one simulated device, or
// ATTUNE_SIM_DEVICES=N identical ones (a box of N GPUs of one kind, for multi-device tests). What
// ran where is observable for such tests: ATTUNE_SIM_TRACE=FILE makes each execute() append
// "device=I problem=P config=C regime=R" to FILE (one O_APPEND write, so workers in several
// processes may share it). ATTUNE_SIM_SLOW_DEVICE and ATTUNE_SIM_CRASH_DEVICE make one device
// of the box slower in wall time or fault once (sim_backend.cpp says how). One thread at a time.
#pragma once

#include <map>
#include <memory>

#include "backends/backend.h"

namespace attune {

struct SimProblem;

class SimBackend : public Backend {
 public:
  SimBackend();
  ~SimBackend() override;

  std::string name() const override { return "sim"; }
  Result<DeviceFingerprint> fingerprint() override;
  Result<std::vector<DeviceFingerprint>> devices() override;
  Status select_device(int index) override;
  int device_index() const override { return device_; }
  std::vector<ProblemInfo> problems() const override;
  Result<Problem> resolve(const std::string& spec) const override;
  Result<Space> space(const Problem& problem) const override;
  std::optional<std::string> can_implement(const Problem& problem,
                                           const Config& config) const override;
  Outcome execute(const Problem& problem, const Config& config, Regime regime) override;
  // Sim candidates take microseconds; a hang is known within two seconds.
  double default_timeout_s() const override { return 2.0; }

  // The landscape's noise-free time for a config (rank regime), and the problem's optimum over
  // the legal, non-faulting configs: what a search should find.
  Result<double> true_time_us(const Problem& problem, const Config& config, Regime regime) const;
  Result<std::pair<Config, double>> optimum(const Problem& problem) const;

  // The built-in ops (core/op.h) the sim has no model of; asked for one, it says so. Every other
  // registered op is offered, with its signature's sizes (the sim models no dtype or flag).
  static const std::vector<std::string>& unsimulated_ops();

 private:
  Result<const SimProblem*> find(const Problem& problem) const;
  std::map<std::string, std::unique_ptr<SimProblem>> problems_;  // by op
  // The assembled layer (core/layer_problem.h): not offered or named by spec, resolved from a
  // layer problem's text; its time is the sum of its steps' deploy times (the sim models no
  // cache or launch effects between kernels).
  std::unique_ptr<SimProblem> layer_;
  // Drift for testing the anchor protocol: ATTUNE_SIM_DRIFT="FROM:TO:FACTOR" makes this process's
  // timed executions number FROM..TO-1 (counting from 0) FACTOR times slower, as a clock drop
  // would; ATTUNE_SIM_TWO_LEVEL="FACTOR" makes every other one FACTOR times slower, as a kernel
  // with two performance levels reads.
  std::int64_t executions_ = 0;
  int device_ = 0;
};

}  // namespace attune
