// CandidateRunner: runs one candidate and returns its outcome, either in an isolated worker
// process (the default) or in-process for backends that cannot fault. One thread at a time.
#pragma once

#include "backends/backend.h"

namespace attune {

class CandidateRunner {
 public:
  virtual ~CandidateRunner() = default;
  virtual Outcome run(const Problem& problem, const Config& config, Regime regime) = 0;
};

class InProcessRunner final : public CandidateRunner {
 public:
  explicit InProcessRunner(Backend& backend) : backend_(backend) {}
  Outcome run(const Problem& p, const Config& c, Regime r) override {
    return backend_.execute(p, c, r);
  }

 private:
  Backend& backend_;
};

}  // namespace attune
