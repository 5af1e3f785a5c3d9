// attune worker: one of a fleet's workers. Leases work items queued for this host's device (by
// `attune tune --enqueue`) from a shared database, tunes each with the Tuner and marks it done,
// renewing its lease by heartbeat; a worker killed any way leaves its item to the next worker
// once the lease runs out. Started by the cluster's scheduler (docs/fleet.md), one per device.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "cli/common.h"
#include "cli/search_flags.h"
#include "tune/fleet.h"

namespace attune::cli {

namespace {

struct WorkerFlags {
  std::string backend;
  std::string devices;  // --devices 0,2: one worker process per device; "": the backend's default
  int device = -1;
  double lease_s = 30;
  double poll_s = 2;
  bool drain = false;
  std::int64_t max_items = 0;
};

Result<std::vector<int>> parse_devices(const std::string& text) {
  std::vector<int> out;
  std::size_t at = 0;
  while (at <= text.size()) {
    const auto comma = text.find(',', at);
    const std::string part =
        text.substr(at, comma == std::string::npos ? std::string::npos : comma - at);
    int v = -1;
    auto r = std::from_chars(part.data(), part.data() + part.size(), v);
    if (part.empty() || r.ec != std::errc() || r.ptr != part.data() + part.size() || v < 0)
      return Error::invalid_argument("--devices '" + text +
                                     "' must list device indices, e.g. 0,2 (attune device --list)");
    if (std::find(out.begin(), out.end(), v) != out.end())
      return Error::invalid_argument(fmt::format("--devices {} names device {} twice", text, v));
    out.push_back(v);
    if (comma == std::string::npos) break;
    at = comma + 1;
  }
  return out;
}

// One worker on one device, until the queue is drained, max_items are done or a signal.
int work(const GlobalOptions& g, const WorkerFlags& f, int device) {
  auto backend = open_backend_or_report(f.backend, device);
  if (!backend) return kExitBadInput;
  auto store = open_store_or_report(g, true);
  if (!store) return kExitBadInput;
  auto fingerprint = backend->fingerprint();
  if (!fingerprint) return failed(fingerprint.error().message());
  Backend& b = *backend;
  auto make_runner = [&b](double timeout_s) {
    SearchFlags flags;
    flags.timeout_s = timeout_s;
    return cli::make_runner(b, flags);
  };
  FleetWorkerOptions o;
  o.lease_s = f.lease_s;
  o.poll_s = f.poll_s;
  o.drain = f.drain;
  o.max_items = f.max_items;
  const std::string db = g.db;
  FleetWorker worker(
      *store, [db] { return open_store(db); }, b, make_runner, o);
  spdlog::info("worker on {} ({}, key {}) taking items from {}", fingerprint->name,
               device_kind(*fingerprint), fingerprint->key(), g.db);
  auto summary = worker.run(&g_interrupted, [](const WorkItem& item, const std::string& state) {
    spdlog::info("item {} ({}): {}", item.id,
                 item.problem_name.empty() ? item.problem : item.problem_name, state);
  });
  if (!summary) return failed(summary.error().message());
  fmt::print("{} done, {} failed, {} lost{}\n", summary->done, summary->failed, summary->lost,
             summary->stopped ? " (stopped)" : "");
  if (summary->stopped) return kExitInterrupted;
  return summary->failed > 0 ? kExitFailed : kExitOk;
}

int run_worker(const GlobalOptions& g, const WorkerFlags& f) {
  install_interrupt_handlers();
  if (!(f.lease_s > 0)) return bad_input("--lease must be > 0 seconds");
  if (f.poll_s < 0) return bad_input("--poll must be >= 0 seconds");
  if (f.max_items < 0) return bad_input("--max-items must be >= 0");
  if (f.devices.empty()) return work(g, f, f.device);
  if (f.device >= 0) return bad_input("--device and --devices go separately: give one of them");
  auto devices = parse_devices(f.devices);
  if (!devices) return bad_input(devices.error().message());
  if (devices->size() == 1) return work(g, f, devices->front());
  // One process per device, each a worker of its own (its own connection, backend and lease):
  // a device whose candidates crash its process takes no other device down with it.
  std::vector<pid_t> children;
  for (int d : *devices) {
    const pid_t pid = fork();
    if (pid < 0) return failed("cannot start a worker process for device " + std::to_string(d));
    if (pid == 0) _exit(work(g, f, d));
    children.push_back(pid);
  }
  int code = kExitOk;
  for (pid_t pid : children) {
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    const int c = WIFEXITED(status) ? WEXITSTATUS(status) : kExitFailed;
    if (c != kExitOk && code == kExitOk) code = c;
  }
  return code;
}

}  // namespace

Command add_worker_command(CLI::App& app, GlobalOptions& g) {
  auto* sub = app.add_subcommand(
      "worker",
      "one of a fleet's workers: tune the items queued (attune tune --enqueue) for this "
      "device from a shared --db (docs/fleet.md)");
  auto f = std::make_shared<WorkerFlags>();
  sub->add_option("--backend", f->backend, "sim, cuda, ... (default: the GPU backend, else sim)");
  sub->add_option("--devices", f->devices,
                  "device indices, e.g. 0,2: one worker per device (default: the backend's "
                  "default device)");
  add_device_option(sub, &f->device, "to work on (default: cuda $ATTUNE_DEVICE, else 0)");
  sub->add_option("--lease", f->lease_s,
                  "seconds a lease lasts without a heartbeat; a killed worker's item is taken "
                  "again after it")
      ->check(finite_number())
      ->capture_default_str();
  sub->add_option("--poll", f->poll_s, "seconds between looks at an empty queue")
      ->check(finite_number())
      ->capture_default_str();
  sub->add_flag("--drain", f->drain,
                "exit once no item is free for this device, instead of waiting for more");
  sub->add_option("--max-items", f->max_items, "exit after this many items (default: no limit)");
  return {sub, [&g, f] { return run_worker(g, *f); }};
}

}  // namespace attune::cli
