#include "report/failures.h"

#include <algorithm>
#include <map>
#include <tuple>

#include "core/config.h"

namespace attune {

namespace {

struct Failing {
  Config config;
  std::string message;
};

std::vector<std::pair<std::string, std::string>> shared_values(const std::vector<Failing>& fs) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& [name, value] : fs.front().config.entries()) {
    std::string t = value.text();
    bool all = std::all_of(fs.begin(), fs.end(), [&](const Failing& f) {
      const Value* v = f.config.get(name);
      return v && v->text() == t;
    });
    if (all) out.emplace_back(name, t);
  }
  return out;
}

void split(std::vector<Failing> fs, const std::string& key, Verdict v,
           std::vector<FailureGroup>& out) {
  auto shared = shared_values(fs);
  if (!shared.empty() || fs.size() == 1) {
    FailureGroup g{key, v, shared, {}, fs.front().message};
    for (const auto& f : fs) g.configs.push_back(f.config.text());
    out.push_back(std::move(g));
    return;
  }
  // The knob value covering the most configs; ties go to the first knob, then the first value.
  std::pair<std::string, std::string> pick;
  std::size_t best = 0;
  for (const auto& [name, _] : fs.front().config.entries()) {
    std::map<std::string, std::size_t> counts;
    std::vector<std::string> order;
    for (const auto& f : fs) {
      const Value* val = f.config.get(name);
      if (!val) continue;
      if (!counts[val->text()]++) order.push_back(val->text());
    }
    for (const auto& t : order)
      if (counts[t] > best) {
        best = counts[t];
        pick = {name, t};
      }
  }
  std::vector<Failing> in, rest;
  for (auto& f : fs) {
    const Value* val = f.config.get(pick.first);
    (val && val->text() == pick.second ? in : rest).push_back(std::move(f));
  }
  if (in.empty() || rest.empty()) {  // configs with no knobs in common at all
    FailureGroup g{key, v, {}, {}, (in.empty() ? rest : in).front().message};
    for (const auto& f : in.empty() ? rest : in) g.configs.push_back(f.config.text());
    out.push_back(std::move(g));
    return;
  }
  split(std::move(in), key, v, out);
  split(std::move(rest), key, v, out);
}

}  // namespace

std::vector<FailureGroup> group_failures(const std::vector<MeasurementRow>& rows) {
  // Newest row per (problem, backend, config) decides that config's verdict.
  std::map<std::tuple<std::string, std::string, std::string>, const MeasurementRow*> newest;
  for (const auto& r : rows) {
    auto& slot = newest[{r.problem_key, r.backend, r.config}];
    if (!slot || r.id > slot->id) slot = &r;
  }
  std::map<std::pair<std::string, Verdict>, std::vector<Failing>> by;
  for (const auto& [_, r] : newest) {
    if (r->outcome.verdict == Verdict::kOk) continue;
    auto c = Config::parse(r->config);
    if (!c) continue;
    by[{r->problem_key, r->outcome.verdict}].push_back({*c, r->outcome.message});
  }
  std::vector<FailureGroup> out;
  for (auto& [k, fs] : by) split(std::move(fs), k.first, k.second, out);
  return out;
}

}  // namespace attune
