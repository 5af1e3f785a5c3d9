// The fleet's side of the Tuner: a work item's tune options as the JSON it is queued with, and
// the worker that leases items for its device from a shared Store, keeps the lease alive by
// heartbeat from a thread of its own (on its own connection), tunes each item through the same
// Tuner as `attune tune` (every result committed as it comes, a leased-again item continuing from
// what was stored) and marks it done. A FleetWorker is used from one thread; its heartbeat
// thread touches only its own connection and two atomics.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "backends/backend.h"
#include "backends/runner.h"
#include "store/store.h"
#include "tune/tuner.h"

namespace attune {

// What a queued item keeps of a tune's options: the strategy and its settings, seed, budget
// (patience, max_candidates, time_limit_s), pins, deploy band, drift policy, and the candidate
// timeout (timeout_s; 0: the backend's). The rest of TuneOptions is the worker's.
std::string work_options_json(const TuneOptions& options, double timeout_s);
// The options back; an item written by something else is invalid_argument naming the field.
Result<TuneOptions> work_options_from_json(const std::string& json, double* timeout_s);

struct FleetWorkerOptions {
  // A lease lasts this long unless renewed; the heartbeat renews it every third of it, so a
  // killed worker's item is free again at most lease_s after its last renewal.
  double lease_s = 30;
  double poll_s = 2;           // wait between looks at an empty queue
  bool drain = false;          // return once no item is free instead of waiting for more
  std::int64_t max_items = 0;  // return after this many items; 0: no limit
};

struct FleetSummary {
  std::int64_t done = 0, failed = 0, lost = 0;  // lost: the lease ran out under us
  bool stopped = false;                         // by the stop flag
};

// Called with each item when leased and again when it ends (state done, failed, queued or lost).
using FleetObserver = std::function<void(const WorkItem& item, const std::string& state)>;

class FleetWorker {
 public:
  // store: the worker's connection; connect: opens another to the same database (the heartbeat's);
  // backend: on the device the worker tunes (its fingerprint decides which items it takes);
  // make_runner: the candidate runner for one item, given its timeout (0: the backend's).
  FleetWorker(Store& store, std::function<Result<std::unique_ptr<Store>>()> connect,
              Backend& backend,
              std::function<std::unique_ptr<CandidateRunner>(double timeout_s)> make_runner,
              FleetWorkerOptions options)
      : store_(store),
        connect_(std::move(connect)),
        backend_(backend),
        make_runner_(std::move(make_runner)),
        options_(options) {}

  // Leases and tunes items until the queue is drained (options.drain), max_items are done, or
  // *stop is set: the item in flight then stops at its candidate boundary and is handed back
  // queued, so another worker continues it at once.
  Result<FleetSummary> run(const std::atomic<bool>* stop, const FleetObserver& observer = {});

 private:
  // One leased item, tuned to its end; what became of it (done, failed, queued, lost).
  Result<std::string> work_on(const WorkItem& item, const std::atomic<bool>* stop);

  Store& store_;
  std::function<Result<std::unique_ptr<Store>>()> connect_;
  Backend& backend_;
  std::function<std::unique_ptr<CandidateRunner>(double)> make_runner_;
  FleetWorkerOptions options_;
};

}  // namespace attune
