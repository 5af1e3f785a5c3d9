// Backend: how candidates are built and run (sim, cuda, cublaslt, replay, command). A small
// interface in the manner of CUTLASS's Operation: describe the device and problems, refuse
// impossible configs before any build (the refusal is data), then execute. A backend enumerates
// the devices it can run on and is pointed at one by index (`--device N`) before it fingerprints
// or executes anything. execute() runs inside an isolated worker process whenever isolated() is
// true, so a crash or hang there costs only that worker. A Backend object is used from one thread
// at a time.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/device.h"
#include "core/error.h"
#include "core/measurement.h"
#include "core/problem.h"
#include "core/space.h"

namespace attune {

struct ProblemInfo {
  Problem problem;
  std::string description;
};

class Backend {
 public:
  virtual ~Backend() = default;

  virtual std::string name() const = 0;
  // A backend option (key=value from the command line, passed on to its workers too), such as
  // the user-kernel spec. invalid_argument when no part of the backend takes the key.
  virtual Status configure(const std::string& key, const std::string&) {
    return Error::invalid_argument("the " + name() + " backend takes no option '" + key + "'");
  }
  // The selected device's fingerprint.
  virtual Result<DeviceFingerprint> fingerprint() = 0;
  // The devices this backend can run on, in the order `--device N` indexes them. The default
  // serves backends with exactly one device: the one fingerprint() describes.
  virtual Result<std::vector<DeviceFingerprint>> devices() {
    ATTUNE_ASSIGN(DeviceFingerprint d, fingerprint());
    return std::vector<DeviceFingerprint>{d};
  }
  // Makes device `index` (into devices()) the one fingerprint() describes and execute() runs on;
  // called before either. An index out of range is refused with no_such_device(). Until it is
  // called the backend uses its default device (cuda: $ATTUNE_DEVICE, else 0; others 0).
  virtual Status select_device(int index) {
    if (index != 0) return no_such_device(index, 1);
    return Status::success();
  }
  // The index of the device in use: what a worker is told to select so its candidates run there.
  virtual int device_index() const { return 0; }
  // Problems this backend offers by name (`attune problems --backend B`).
  virtual std::vector<ProblemInfo> problems() const = 0;
  // A problem name this backend offers, or a problem spec ("op:key=value,...") it can serve.
  virtual Result<Problem> resolve(const std::string& spec) const = 0;
  // The knobs of the kernel family serving this problem; the baseline config first.
  virtual Result<Space> space(const Problem& problem) const = 0;
  // A reason the config cannot be implemented, decided without building it; nullopt if it can.
  virtual std::optional<std::string> can_implement(const Problem&, const Config&) const {
    return std::nullopt;
  }
  // The regimes execute() measures in: rank (warm; what the search ranks by) and deploy (the
  // production path; what tables use). A backend that offers only deploy (a whole program, timed
  // as it runs) has each candidate measured once, in deploy, and ranked by that time.
  virtual std::vector<Regime> regimes() const { return {Regime::kRank, Regime::kDeploy}; }
  // Builds, runs, checks and times one candidate. Faults inside are real (the process may die).
  virtual Outcome execute(const Problem& problem, const Config& config, Regime regime) = 0;

  // Called in the scheduler for configs about to be run, so builds can proceed ahead of the GPU
  // (compile threads, on-disk cache). Never required for correctness.
  virtual void prepare(const Problem&, const Config&) {}
  // How many upcoming configs the tuner should hand to prepare(); 0: none.
  virtual int prefetch_depth() const { return 0; }
  // Builds handed to prepare() that have not started are dropped: the search that wanted them
  // ended (its time share ran out, or its patience), and they would hold up the next one's.
  virtual void drop_prepared() {}

  // Whether the baseline's own output is the reference every candidate is checked against (a
  // whole program has no independent reference): when the baseline fails, nothing else of the
  // problem can be checked, so the tuner stops the problem there.
  virtual bool baseline_is_reference() const { return false; }
  // For such a backend: whether this problem's reference is lost in this run (the store answered
  // the baseline, and running it again for its output failed). What execute() returned since is
  // not the candidate's doing, so the tuner records none of it and stops the problem.
  virtual bool reference_lost(const Problem&) const { return false; }

  // Whether execute() must run in a worker process (false only for backends that cannot fault,
  // such as replay of recorded results).
  virtual bool isolated() const { return true; }
  // Deadline for one candidate in a worker, before it is killed and recorded as timeout.
  virtual double default_timeout_s() const { return 30.0; }

 protected:
  // The one line an index out of range gets, naming how many devices there are.
  Error no_such_device(int index, int count) const {
    const std::string which = "device " + std::to_string(index);
    if (count <= 0)
      return Error::invalid_argument("the " + name() + " backend sees no device, so no " + which);
    const std::string range = count == 1 ? "index 0" : "indexes 0.." + std::to_string(count - 1);
    return Error::invalid_argument("the " + name() + " backend has " + std::to_string(count) +
                                   (count == 1 ? " device (" : " devices (") + range + "), not " +
                                   which + "; attune device --list shows them");
  }
};

}  // namespace attune
