// attune space: a user kernel's spec checked, its knobs and its configs counted (and listed),
// with no GPU and no CUDA plugin: what a laptop or CI can tell about a spec before a tune.
#include <cmath>

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>

#include "cli/common.h"
#include "cli/user_spec.h"

namespace attune::cli {

namespace {

struct SpaceFlags {
  std::string spec_file;
  std::string kernel_file;
  std::vector<std::string> problems;
  bool list = false;
};

// The knobs' full product as a number; it can pass 2^64, so it is a double that prints whole.
nlohmann::json count_json(double n) {
  if (n < 9007199254740992.0) return static_cast<std::uint64_t>(n);
  return n;
}
std::string count_text(double n) {
  return n < 9007199254740992.0 ? fmt::format("{}", static_cast<std::uint64_t>(n))
                                : fmt::format("{:.3g}", n);
}

std::string sizes_of(const user::UserKernelSpec& spec) {
  std::string out;
  for (const auto& [name, value] : spec.problem)
    out += fmt::format("{}{}={}", out.empty() ? "" : ",", name, value);
  return out.empty() ? "(no sizes)" : out;
}

int run_space(const GlobalOptions& g, const SpaceFlags& f) {
  if (f.spec_file.empty())
    return bad_input("attune space needs --spec FILE.yaml (the kernel's spec)");
  auto checked = check_user_spec(f.spec_file, f.kernel_file, f.problems);
  if (!checked) return bad_input(checked.error().message());
  const user::UserKernelSpec& spec = checked->spec;
  const Space& space = checked->space;
  for (const auto& w : spec.warnings) spdlog::warn("{}", w);
  const user::SpaceCensus c = user::census(spec, space, f.list);
  const double removed = c.cartesian - static_cast<double>(c.legal);
  const Config baseline = space.config(space.baseline());

  if (g.json) {
    nlohmann::json j;
    j["spec"] = spec.spec_path.string();
    j["source"] = spec.source_path.string();
    j["kernel"] = spec.kernel;
    j["problem"] = nlohmann::json::object();
    for (const auto& [name, value] : spec.problem) j["problem"][name] = value;
    j["knobs"] = nlohmann::json::array();
    for (const auto& k : spec.knobs) {
      nlohmann::json values = nlohmann::json::array();
      for (const auto& v : k.values)
        values.push_back(v.is_int() ? nlohmann::json(v.as_int()) : nlohmann::json(v.text()));
      j["knobs"].push_back(
          {{"name", k.name}, {"values", values}, {"default", values[k.default_index]}});
    }
    j["constraints"] = nlohmann::json::array();
    for (const auto& con : spec.constraints) j["constraints"].push_back(con.expr.text());
    j["cartesian"] = count_json(c.cartesian);
    j["removed_by_constraints"] = count_json(removed);
    j["legal"] = c.legal;
    j["unlaunchable"] = c.unlaunchable;
    j["configs"] = c.launchable();
    j["baseline"] = baseline.text();
    j["metrics"] = nlohmann::json::object();
    for (const auto& m : spec.metrics) j["metrics"][m.name] = m.expr.text();
    j["objective"] = {{"metric", spec.objective.metric.empty() ? "time" : spec.objective.metric},
                      {"higher_is_better", spec.objective.higher_is_better}};
    j["warnings"] = spec.warnings;
    if (f.list) {
      j["list"] = nlohmann::json::array();
      for (const auto& config : c.configs) j["list"].push_back(config.text());
      j["refused"] = nlohmann::json::array();
      for (const auto& [config, why] : c.refused)
        j["refused"].push_back({{"config", config.text()}, {"reason", why}});
    }
    fmt::print("{}\n", j.dump(2));
    return kExitOk;
  }

  if (f.list) {
    // One config a line, as a tune would try them (the baseline first): a list to diff or count.
    for (const auto& config : c.configs) fmt::print("{}\n", config.text());
    for (const auto& [config, why] : c.refused)
      spdlog::info("not launchable: {}: {}", config.text(), why);
    return kExitOk;
  }
  fmt::print("{}: kernel {} from {}\n", spec.spec_path.string(), spec.kernel,
             spec.source_path.string());
  fmt::print("problem   {}\n", sizes_of(spec));
  fmt::print("knobs     {}\n", spec.knobs.size());
  std::size_t width = 0;
  for (const auto& k : spec.knobs) width = std::max(width, k.name.size());
  for (const auto& k : spec.knobs) {
    std::string values;
    for (std::size_t i = 0; i < k.values.size(); ++i)
      values += fmt::format("{}{}{}{}", i ? ", " : "", i == k.default_index ? "[" : "",
                            k.values[i].text(), i == k.default_index ? "]" : "");
    fmt::print("  {:<{}}  {}\n", k.name, width, values);
  }
  for (const auto& con : spec.constraints) fmt::print("constraint {}\n", con.expr.text());
  fmt::print(
      "configs   {} to tune: {} in the knobs' product, {} removed by the constraints, {} "
      "more refused by the launch check before any build\n",
      c.launchable(), count_text(c.cartesian), count_text(removed), c.unlaunchable);
  fmt::print("baseline  {}\n", baseline.text().empty() ? "(no knobs)" : baseline.text());
  for (const auto& m : spec.metrics) fmt::print("metric    {} = {}\n", m.name, m.expr.text());
  if (spec.objective.metric.empty())
    fmt::print("objective time (lower is better)\n");
  else
    fmt::print(
        "objective {} ({} is better; ranked by time, of which it is a monotonic "
        "function)\n",
        spec.objective.metric, spec.objective.higher_is_better ? "higher" : "lower");
  return kExitOk;
}

}  // namespace

Command add_space_command(CLI::App& app, GlobalOptions& g) {
  auto* sub = app.add_subcommand(
      "space", "check a user kernel's spec and count (or --list) its configs; no GPU needed");
  auto f = std::make_shared<SpaceFlags>();
  sub->add_option("--spec", f->spec_file, "the YAML spec of your kernel (see examples/user-kernel)")
      ->required();
  sub->add_option("--kernel", f->kernel_file,
                  "the kernel's .cu file (default: the spec's source:)");
  sub->add_option("--problem", f->problems,
                  "problem sizes, n=123 or m=64,n=4096 (default: the spec's); repeatable");
  sub->add_flag("--list", f->list,
                "print every config a tune would try, one per line (the baseline first); with "
                "--json, as JSON with the refused ones and why");
  return {sub, [&g, f] { return run_space(g, *f); }};
}

}  // namespace attune::cli
