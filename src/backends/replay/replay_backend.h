// ReplayBackend: serves the results of a recorded, brute-forced space (a Kernel Tuner cache) as
// if it ran them. Nothing can fault, so isolated() is false. Each distinct config served counts
// as one evaluation, failed ones included. One thread at a time (the evaluation count mutates).
#pragma once

#include <memory>
#include <unordered_set>

#include "backends/backend.h"
#include "backends/replay/kernel_tuner_cache.h"

namespace attune::replay {

class ReplayBackend final : public Backend {
 public:
  explicit ReplayBackend(std::shared_ptr<const RecordedSpace> recorded, std::string name = "");
  // From a stored problem's payload (the compact cache `attune import kernel-tuner` writes).
  static Result<std::unique_ptr<ReplayBackend>> from_payload(const std::string& payload,
                                                             const std::string& name = "");

  std::string name() const override { return "replay"; }
  Result<DeviceFingerprint> fingerprint() override { return recorded_->device(); }
  std::vector<ProblemInfo> problems() const override;
  Result<Problem> resolve(const std::string& spec) const override;
  Result<Space> space(const Problem& problem) const override;
  std::optional<std::string> can_implement(const Problem&, const Config& config) const override;
  Outcome execute(const Problem& problem, const Config& config, Regime regime) override;
  bool isolated() const override { return false; }
  double default_timeout_s() const override { return 1.0; }

  const RecordedSpace& recorded() const { return *recorded_; }
  // Distinct configs served so far.
  std::size_t evaluations() const { return served_.size(); }

 private:
  bool same_problem(const Problem& p) const;
  std::shared_ptr<const RecordedSpace> recorded_;
  Problem problem_;
  std::unordered_set<Point, PointHash> served_;
};

// The outcome a recorded result replays as.
Outcome replay_outcome(const RecordedResult& r, Regime regime);

}  // namespace attune::replay
