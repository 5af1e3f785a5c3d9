// attune export --format kernel-tuner --problem NAME [-o FILE]: attune's own measurements of one
// problem on one device as a Kernel Tuner cache, so Kernel Tuner (or attune import) can replay
// them. Other formats (tuned tables) are the table layer's and come with it.
#include <fstream>
#include <map>

#include <fmt/format.h>

#include "backends/replay/kernel_tuner_cache.h"
#include "cli/common.h"

namespace attune::cli {

namespace {

struct ExportFlags {
  std::string format;
  std::string problem;
  std::string device;  // a device key; default: the device with the most rows
  std::string out;
};

int run_export(const GlobalOptions& g, const ExportFlags& f) {
  if (f.format != "kernel-tuner")
    return bad_input("--format '" + f.format + "' is not available yet; this attune exports: kernel-tuner");
  if (f.problem.empty()) return bad_input("--format kernel-tuner needs --problem NAME (a cache holds one problem)");
  auto store = open_store_or_report(g, false);
  if (!store) return kExitBadInput;
  auto rec = store->find_problem(f.problem);
  if (!rec) return bad_input(rec.error().message());
  if (!*rec) return bad_input("no problem '" + f.problem + "' in " + g.db + " (see attune eval variants)");
  MeasurementQuery q;
  q.problem = (*rec)->key;
  q.device_key = f.device;
  auto rows = store->measurements(q);
  if (!rows) return bad_input(rows.error().message());
  if (rows->empty()) return failed("no measurements of '" + f.problem + "' to export");

  std::map<std::string, std::size_t> per_device;
  for (const auto& r : *rows) ++per_device[r.device_key];
  std::string device = f.device;
  if (device.empty())
    for (const auto& [k, n] : per_device)
      if (device.empty() || n > per_device[device]) device = k;
  // Per config: the deploy-regime row when there is one (what tables trust), else the newest.
  std::map<std::string, const MeasurementRow*> chosen;
  std::vector<std::string> order;
  for (const auto& r : *rows) {
    if (r.device_key != device) continue;
    auto [it, fresh] = chosen.emplace(r.config, &r);
    if (fresh) {
      order.push_back(r.config);
      continue;
    }
    const MeasurementRow* old = it->second;
    bool better = (r.regime == Regime::kDeploy && old->regime != Regime::kDeploy) ||
                  (r.regime == old->regime && r.id > old->id);
    if (better) it->second = &r;
  }
  std::vector<replay::ExportRow> out;
  for (const auto& text : order) {
    const MeasurementRow& r = *chosen[text];
    auto c = Config::parse(r.config);
    if (!c) return failed("stored config '" + r.config + "': " + c.error().message());
    replay::ExportRow e;
    e.config = *c;
    e.verdict = r.outcome.verdict;
    if (r.outcome.verdict == Verdict::kOk && r.outcome.measurement)
      e.time_us = r.outcome.measurement->median_us;
    else if (r.outcome.verdict == Verdict::kOk)
      e.verdict = Verdict::kLaunchFailed;  // an ok row without a time cannot be replayed as ok
    out.push_back(std::move(e));
  }
  std::string device_name = device;
  if (auto devices = store->devices())
    for (const auto& d : *devices)
      if (d.key() == device) device_name = d.name;
  const Problem& p = (*rec)->problem;
  const std::string* kernel = p.attr("kernel");
  const std::string* size = p.attr("problem_size");
  auto json = replay::write_kernel_tuner_cache(device_name, kernel ? *kernel : p.op(),
                                               size ? *size : p.text(), out);
  if (!json) return failed(json.error().message());
  if (f.out.empty() || f.out == "-") {
    fmt::print("{}\n", *json);
  } else {
    std::ofstream o(f.out);
    o << *json << "\n";
    if (!o) return bad_input("cannot write '" + f.out + "'");
    fmt::print(stderr, "wrote {} configs of {} on {} to {}\n", out.size(), p.name(), device_name, f.out);
  }
  return kExitOk;
}

}  // namespace

Command add_export_command(CLI::App& app, GlobalOptions& g) {
  auto* sub = app.add_subcommand("export", "write what was measured in another format");
  auto f = std::make_shared<ExportFlags>();
  sub->add_option("--format", f->format, "kernel-tuner (a Kernel Tuner cache file)")->required();
  sub->add_option("--problem", f->problem, "the problem to export (name or structural key)");
  sub->add_option("--device", f->device, "a device key (default: the device with the most measurements)");
  sub->add_option("-o,--output", f->out, "file to write (default: stdout)");
  return {sub, [&g, f] { return run_export(g, *f); }};
}

}  // namespace attune::cli
