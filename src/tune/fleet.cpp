#include "tune/fleet.h"

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>

namespace attune {

std::string work_options_json(const TuneOptions& o, double timeout_s) {
  nlohmann::json j;
  j["strategy"] = o.strategy;
  j["seed"] = o.seed;
  j["patience"] = o.patience;
  if (o.max_candidates) j["max_candidates"] = *o.max_candidates;
  if (o.time_limit_s) j["time_limit_s"] = *o.time_limit_s;
  j["strategy_options"] = o.strategy_options;
  j["pins"] = o.pins;
  j["deploy_band"] = o.deploy_band;
  j["fresh_search"] = o.fresh_search;
  j["anchor_every"] = o.drift.anchor_every;
  j["backoff_s"] = o.drift.backoff_s;
  j["backoff_max_rounds"] = o.drift.max_rounds;
  j["backoff_max_wait_s"] = o.drift.max_wait_s;
  j["timeout_s"] = timeout_s;
  j["arguments"] = o.arguments;
  return j.dump();
}

Result<TuneOptions> work_options_from_json(const std::string& text, double* timeout_s) {
  auto j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object())
    return Error::invalid_argument("a work item's options are not a JSON object");
  TuneOptions o;
  try {
    o.strategy = j.value("strategy", o.strategy);
    o.seed = j.value("seed", o.seed);
    o.patience = j.value("patience", o.patience);
    if (j.contains("max_candidates")) o.max_candidates = j.at("max_candidates").get<std::int64_t>();
    if (j.contains("time_limit_s")) o.time_limit_s = j.at("time_limit_s").get<double>();
    o.strategy_options = j.value("strategy_options", o.strategy_options);
    o.pins = j.value("pins", o.pins);
    o.deploy_band = j.value("deploy_band", o.deploy_band);
    o.fresh_search = j.value("fresh_search", o.fresh_search);
    o.drift.anchor_every = j.value("anchor_every", o.drift.anchor_every);
    o.drift.backoff_s = j.value("backoff_s", o.drift.backoff_s);
    o.drift.max_rounds = j.value("backoff_max_rounds", o.drift.max_rounds);
    o.drift.max_wait_s = j.value("backoff_max_wait_s", o.drift.max_wait_s);
    o.arguments = j.value("arguments", o.arguments);
    *timeout_s = j.value("timeout_s", 0.0);
  } catch (const nlohmann::json::exception& e) {
    return Error::invalid_argument(std::string("a work item's options: ") + e.what());
  }
  return o;
}

namespace {

// Renews one lease from its own thread and connection every third of the lease. Sets halt()
// when the lease is lost (another worker took it: this one must stop at once) or *stop is set.
class Heartbeat {
 public:
  Heartbeat(std::unique_ptr<Store> connection, const WorkItem& item, double lease_s,
            const std::atomic<bool>* stop)
      : connection_(std::move(connection)),
        id_(item.id),
        token_(item.lease_token),
        lease_s_(lease_s),
        stop_(stop) {
    thread_ = std::thread([this] { beat(); });
  }
  ~Heartbeat() { end(); }
  Heartbeat(const Heartbeat&) = delete;
  Heartbeat& operator=(const Heartbeat&) = delete;

  void end() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      ended_ = true;
    }
    wake_.notify_all();
    if (thread_.joinable()) thread_.join();
  }
  const std::atomic<bool>* halt() const { return &halt_; }
  bool lost() const { return lost_; }

 private:
  void beat() {
    using clock = std::chrono::steady_clock;
    const auto period = std::chrono::duration<double>(lease_s_ / 3);
    auto last_ok = clock::now();
    auto next = last_ok + std::chrono::duration_cast<clock::duration>(period);
    std::unique_lock<std::mutex> lock(mutex_);
    while (!ended_) {
      // Looks at the stop flag often: a signal must reach the tuner promptly.
      wake_.wait_for(lock, std::chrono::milliseconds(50));
      if (ended_) break;
      if (stop_ && stop_->load()) halt_ = true;
      const auto now = clock::now();
      if (now < next) continue;
      auto renewed = connection_->renew_lease(id_, token_, lease_s_);
      if (renewed && *renewed) {
        last_ok = clock::now();
      } else if (renewed) {
        spdlog::warn("work item {}: its lease was taken by another worker; stopping it", id_);
        lost_ = true;
        halt_ = true;
        return;
      } else {
        spdlog::warn("work item {}: renewing its lease: {}", id_, renewed.error().message());
        if (clock::now() - last_ok > std::chrono::duration<double>(lease_s_)) {
          // Past its lease without a renewal: another worker may have it by now.
          lost_ = true;
          halt_ = true;
          return;
        }
      }
      next = clock::now() + std::chrono::duration_cast<clock::duration>(period);
    }
  }

  std::unique_ptr<Store> connection_;
  std::int64_t id_, token_;
  double lease_s_;
  const std::atomic<bool>* stop_;
  std::atomic<bool> halt_{false}, lost_{false};
  std::mutex mutex_;
  std::condition_variable wake_;
  bool ended_ = false;
  std::thread thread_;
};

}  // namespace

Result<std::string> FleetWorker::work_on(const WorkItem& item, const std::atomic<bool>* stop) {
  auto finish = [&](const std::string& state, const std::string& message,
                    std::int64_t run_id) -> Result<std::string> {
    ATTUNE_ASSIGN(bool ours, store_.finish_work(item.id, item.lease_token, state, message, run_id));
    return ours ? state : std::string("lost");
  };
  if (item.backend != backend_.name())
    return finish(
        "failed",
        fmt::format("queued for backend {}, leased by a {} worker", item.backend, backend_.name()),
        0);
  auto problem = backend_.resolve(item.problem);
  if (!problem) return finish("failed", problem.error().message(), 0);
  double timeout_s = 0;
  auto options = work_options_from_json(item.options, &timeout_s);
  if (!options) return finish("failed", options.error().message(), 0);

  ATTUNE_ASSIGN(std::unique_ptr<Store> beat_connection, connect_());
  Heartbeat heartbeat(std::move(beat_connection), item, options_.lease_s, stop);
  TuneOptions o = *options;
  o.interrupted = heartbeat.halt();
  std::unique_ptr<CandidateRunner> runner = make_runner_(timeout_s);
  Tuner tuner(store_, backend_, *runner);
  auto report = tuner.run({*problem}, o);
  heartbeat.end();
  if (heartbeat.lost()) return std::string("lost");
  if (stop && stop->load()) return finish("queued", "the worker was stopped", 0);
  if (!report) return finish("failed", report.error().message(), 0);
  const std::string stopped_by =
      report->problems.empty() ? std::string() : report->problems.front().stopped_by;
  return finish("done", stopped_by, report->run_id);
}

Result<FleetSummary> FleetWorker::run(const std::atomic<bool>* stop,
                                      const FleetObserver& observer) {
  FleetSummary summary;
  ATTUNE_ASSIGN(DeviceFingerprint device, backend_.fingerprint());
  ATTUNE_TRY(store_.put_device(device));
  const std::string key = device.key();
  const std::vector<std::string> answers_to{key, device_kind(device)};
  std::int64_t taken = 0;
  while (true) {
    if (stop && stop->load()) {
      summary.stopped = true;
      return summary;
    }
    if (options_.max_items > 0 && taken >= options_.max_items) return summary;
    ATTUNE_ASSIGN(std::optional<WorkItem> item,
                  store_.lease_work(answers_to, key, options_.lease_s));
    if (!item) {
      if (options_.drain) return summary;
      const auto until =
          std::chrono::steady_clock::now() + std::chrono::duration<double>(options_.poll_s);
      while (std::chrono::steady_clock::now() < until && !(stop && stop->load()))
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      continue;
    }
    ++taken;
    if (observer) observer(*item, "leased");
    ATTUNE_ASSIGN(std::string state, work_on(*item, stop));
    if (state == "done") ++summary.done;
    if (state == "failed") ++summary.failed;
    if (state == "lost") ++summary.lost;
    if (observer) observer(*item, state);
  }
}

}  // namespace attune
