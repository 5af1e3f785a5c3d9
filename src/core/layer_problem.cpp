#include "core/layer_problem.h"

#include <algorithm>
#include <map>

#include <fmt/format.h>

namespace attune {

namespace {

std::string encode(const std::string& text) {
  std::string out = text;
  std::replace(out.begin(), out.end(), ',', ';');
  return out;
}
std::string decode(const std::string& text) {
  std::string out = text;
  std::replace(out.begin(), out.end(), ';', ',');
  return out;
}
std::string key(std::size_t i, const char* field) {
  return fmt::format("s{:02}.{}", i, field);
}

}  // namespace

Result<Problem> layer_problem(const std::vector<LayerStep>& steps) {
  if (steps.empty()) return Error::invalid_argument("a layer problem needs at least one kernel");
  if (steps.size() > 99) return Error::invalid_argument("a layer problem holds at most 99 kernels");
  std::map<std::string, std::string> attrs;
  for (std::size_t i = 0; i < steps.size(); ++i) {
    const LayerStep& s = steps[i];
    const std::string problem = s.problem.text(), config = s.config.text();
    for (const std::string* t : {&s.role, &problem, &config})
      if (t->find(';') != std::string::npos)
        return Error::invalid_argument(
            fmt::format("layer step {} ('{}'): ';' is not allowed in '{}'", i, s.role, *t));
    if (s.role.empty() || s.role.find(',') != std::string::npos)
      return Error::invalid_argument(fmt::format("layer step {} has no role or a ',' in it", i));
    attrs[key(i, "role")] = s.role;
    attrs[key(i, "problem")] = encode(problem);
    // An empty config (no knobs) is written as "-", so every attribute has a value.
    attrs[key(i, "config")] = config.empty() ? "-" : encode(config);
  }
  return Problem(kLayerOp, std::move(attrs));
}

Result<std::vector<LayerStep>> layer_steps(const Problem& problem) {
  if (problem.op() != kLayerOp)
    return Error::invalid_argument("'" + problem.op() + "' is not a layer problem");
  std::vector<LayerStep> out;
  for (std::size_t i = 0;; ++i) {
    const std::string* role = problem.attr(key(i, "role"));
    const std::string* p = problem.attr(key(i, "problem"));
    const std::string* c = problem.attr(key(i, "config"));
    if (!role && !p && !c) break;
    if (!role || !p || !c)
      return Error::invalid_argument(
          fmt::format("layer problem: step {} lacks its role, problem or config", i));
    auto parsed = Problem::parse(decode(*p));
    if (!parsed)
      return Error::invalid_argument(
          fmt::format("layer problem, step {}: {}", i, parsed.error().message()));
    Config config;
    if (*c != "-") {
      auto cfg = Config::parse(decode(*c));
      if (!cfg)
        return Error::invalid_argument(
            fmt::format("layer problem, step {}: {}", i, cfg.error().message()));
      config = std::move(*cfg);
    }
    out.push_back(LayerStep{*role, std::move(*parsed), std::move(config)});
  }
  if (out.empty()) return Error::invalid_argument("a layer problem needs at least one kernel");
  if (out.size() * 3 != problem.attrs().size())
    return Error::invalid_argument("a layer problem has attributes other than its steps'");
  return out;
}

Result<Space> layer_space() {
  return Space::make({Knob{"run", {Value("graph")}, 0, KnobKind::kInPlace}});
}

}  // namespace attune
