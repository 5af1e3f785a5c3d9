// Fault isolation: candidates run in `attune candidate-worker` child processes fed over a pipe, one
// JSON line per request and per reply. A worker that dies is recorded as crashed (with its signal
// and the tail of its stderr) and replaced; one past its deadline is killed and recorded as
// timeout. A worker killed from outside (the OOM killer, a user) looks like a crash, so a worker
// death is believed only when a fresh worker dies on the same candidate again; a candidate that
// then passes, or fails another way, is reported as that, with the first death in its message. The
// scheduler and the Store never share a process with a candidate. Workers are platform Children:
// each in its own process group, dying with the scheduler. WorkerRunner is used from one thread at
// a time, the thread that lives as long as it does (see platform::Child).
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

#include "backends/runner.h"
#include "platform/process.h"

namespace attune {

// The worker side: answers requests from `in` on `out` until `in` closes. Returns an exit code.
int serve_worker(Backend& backend, int in_fd, int out_fd);

class WorkerRunner final : public CandidateRunner {
 public:
  // argv starts the worker, e.g. {"/usr/bin/attune", "candidate-worker", "--backend", "sim"}.
  WorkerRunner(std::vector<std::string> argv, double timeout_s);
  ~WorkerRunner() override;
  WorkerRunner(const WorkerRunner&) = delete;
  WorkerRunner& operator=(const WorkerRunner&) = delete;

  Outcome run(const Problem& problem, const Config& config, Regime regime) override;

  // The live worker's pid, or -1 when none is running (started lazily by run()).
  pid_t worker_pid() const { return worker_ ? worker_->pid() : -1; }
  // Workers started so far, the first included.
  int started() const { return started_; }
  void set_timeout(double s) { timeout_s_ = s; }

 private:
  // One attempt in the current (or a new) worker; *died: the worker died before answering.
  Outcome attempt(const Problem& problem, const Config& config, Regime regime, bool* died);
  bool start(std::string* error);
  void stop(bool kill_first);
  // The dead worker's exit status as words: "killed by signal 11 (Segmentation fault)".
  std::string reap();

  std::vector<std::string> argv_;
  double timeout_s_;
  std::optional<platform::Child> worker_;
  int started_ = 0;
  std::string out_buf_;
  std::string err_tail_;
};

}  // namespace attune
