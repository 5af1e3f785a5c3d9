// attune queue: the fleet's work items by state, host and device (docs/fleet.md), from --db.
#include <map>
#include <tuple>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/common.h"

namespace attune::cli {

namespace {

struct QueueFlags {
  std::string state;  // only items in this state; "": all
  bool list = false;  // one line per item, not only the counts
};

// "host:pid" of the item's (last) holder; "-" when none.
std::string holder(const WorkItem& w) {
  if (w.holder_host.empty()) return "-";
  return fmt::format("{}:{}", w.holder_host, w.holder_pid);
}

int run_queue(const GlobalOptions& g, const QueueFlags& f) {
  static const std::vector<std::string> kStates = {"queued", "leased", "done", "failed"};
  if (!f.state.empty() && std::find(kStates.begin(), kStates.end(), f.state) == kStates.end())
    return bad_input("--state '" + f.state + "' is not one of queued, leased, done, failed");
  auto store = open_store_or_report(g, false, /*read_only_ok=*/true);
  if (!store) return kExitBadInput;
  auto items = store->work_items();
  if (!items) return failed(items.error().message());
  std::vector<WorkItem> shown;
  for (auto& w : *items)
    if (f.state.empty() || w.state == f.state) shown.push_back(std::move(w));

  // Counts by (state, holder host, device the item is for).
  std::map<std::tuple<std::string, std::string, std::string>, std::int64_t> groups;
  for (const auto& w : shown)
    groups[{w.state, w.holder_host.empty() ? "-" : w.holder_host, w.device}] += 1;
  if (g.json) {
    nlohmann::json j;
    j["groups"] = nlohmann::json::array();
    for (const auto& [k, n] : groups)
      j["groups"].push_back({{"state", std::get<0>(k)},
                             {"host", std::get<1>(k)},
                             {"device", std::get<2>(k)},
                             {"items", n}});
    j["items"] = nlohmann::json::array();
    for (const auto& w : shown)
      j["items"].push_back({{"id", w.id},
                            {"state", w.state},
                            {"device", w.device},
                            {"backend", w.backend},
                            {"problem", w.problem},
                            {"name", w.problem_name},
                            {"attempts", w.attempts},
                            {"holder", holder(w)},
                            {"holder_device", w.holder_device},
                            {"lease_until", w.lease_until},
                            {"run", w.run_id},
                            {"created_at", w.created_at},
                            {"finished_at", w.finished_at},
                            {"message", w.message}});
    fmt::print("{}\n", j.dump(2));
    return kExitOk;
  }
  if (shown.empty()) {
    fmt::print("no work items{}\n", f.state.empty() ? "" : " " + f.state);
    return kExitOk;
  }
  fmt::print("{:<8} {:<24} {:<34} {:>6}\n", "state", "host", "device", "items");
  for (const auto& [k, n] : groups)
    fmt::print("{:<8} {:<24} {:<34} {:>6}\n", std::get<0>(k), std::get<1>(k), std::get<2>(k), n);
  if (f.list) {
    fmt::print("\n{:>6} {:<8} {:<30} {:>8} {:<24} {:<27} {}\n", "id", "state", "problem",
               "attempts", "holder", "lease until", "message");
    for (const auto& w : shown)
      fmt::print("{:>6} {:<8} {:<30} {:>8} {:<24} {:<27} {}\n", w.id, w.state,
                 printable(w.problem_name.empty() ? w.problem : w.problem_name), w.attempts,
                 holder(w), w.lease_until.empty() ? "-" : w.lease_until, printable(w.message));
  }
  return kExitOk;
}

}  // namespace

Command add_queue_command(CLI::App& app, GlobalOptions& g) {
  auto* sub = app.add_subcommand(
      "queue", "the fleet's work items (attune tune --enqueue) by state, host and device");
  auto f = std::make_shared<QueueFlags>();
  sub->add_option("--state", f->state, "only items in this state: queued, leased, done, failed");
  sub->add_flag("--list", f->list, "one line per item after the counts");
  return {sub, [&g, f] { return run_queue(g, *f); }};
}

}  // namespace attune::cli
