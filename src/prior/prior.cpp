#include "prior/prior.h"

#include <xgboost/c_api.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <numeric>
#include <set>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "core/hash.h"

namespace attune::prior {

using nlohmann::json;

namespace {

constexpr float kMissing = std::numeric_limits<float>::quiet_NaN();
// A failed config trains as this much slower (in log units, ~2x) than the slowest ok one seen
// in its context: the prior steers away from it without one failure dominating the scale.
constexpr double kFailurePenalty = 0.7;

std::string xgb_error(const std::string& what) {
  return what + ": " + XGBGetLastError();
}

struct BoosterDeleter {
  void operator()(void* h) const {
    if (h) XGBoosterFree(h);
  }
};
using Booster = std::unique_ptr<void, BoosterDeleter>;
struct DMatrixDeleter {
  void operator()(void* h) const {
    if (h) XGDMatrixFree(h);
  }
};
using DMatrix = std::unique_ptr<void, DMatrixDeleter>;

Result<DMatrix> make_matrix(const std::vector<float>& data, std::size_t nrow, std::size_t ncol) {
  DMatrixHandle h = nullptr;
  if (XGDMatrixCreateFromMat(data.data(), nrow, ncol, kMissing, &h) != 0)
    return Error::internal(xgb_error("creating an XGBoost matrix"));
  return DMatrix(h);
}

// The order of the model's feature columns. XGBoost takes, of two splits with the same gain,
// the one on the earlier column, and with few problems behind a prior a device's features and a
// problem's often part its rows alike: on bench/spaces, the rope prior for rope_h200_4x1024 had
// rows of one other H200 problem (a decode step) and of the same prefill problem on an H100, and
// in plain name order ("ctx:device.id" before "ctx:problem.seq") it learned the device, so it
// predicted the decode step's optimum for the prefill (the search needed 20 evaluations to within
// 2% over seeds 100..119, against 2 with the device last;
// bench/results/search_replay-2026-12-06d.md). So the device's features come last: the rows'
// problem wins a tie, the device still parts rows of one problem measured on two devices.
struct SchemaLess {
  bool device_last;
  bool operator()(const std::string& a, const std::string& b) const {
    if (device_last) {
      const bool da = a.starts_with("ctx:device."), db = b.starts_with("ctx:device.");
      if (da != db) return db;
    }
    return a < b;
  }
};
SchemaLess schema_less(bool device_last) {
  return SchemaLess{device_last};
}

}  // namespace

Context make_context(const Problem& problem, const DeviceFingerprint& device) {
  Context c;
  c.key = problem.structural_key() + "|" + device.key();
  for (const auto& [k, v] : problem.attrs()) {
    // "4096x4096" -> k.0, k.1; a plain number -> k; words are not features.
    std::vector<double> nums;
    std::size_t start = 0;
    bool numeric = !v.empty();
    while (numeric && start <= v.size()) {
      std::size_t x = v.find('x', start);
      std::string part = v.substr(start, x == std::string::npos ? std::string::npos : x - start);
      char* end = nullptr;
      double d = part.empty() ? 0 : std::strtod(part.c_str(), &end);
      // A hash that reads as a number ("8147e10293847561": digits, one 'e', digits) overflows to
      // inf, which no model takes: only finite numbers are features.
      if (part.empty() || *end != '\0' || !std::isfinite(d))
        numeric = false;
      else
        nums.push_back(d);
      if (x == std::string::npos) break;
      start = x + 1;
    }
    if (!numeric) continue;
    if (nums.size() == 1)
      c.features.emplace_back("problem." + k, nums[0]);
    else {
      double product = 1;
      for (std::size_t i = 0; i < nums.size(); ++i) {
        c.features.emplace_back("problem." + k + "." + std::to_string(i), nums[i]);
        product *= nums[i];
      }
      // The size as a whole (elements, work items): a tree splits on one feature at a time, and
      // which config wins often follows the total work (how many blocks fill the device) more
      // than any one dimension.
      c.features.emplace_back("problem." + k + ".product", product);
    }
  }
  // The device's identity, as a number a tree can split on: rows from two devices with no
  // numeric facts (replayed spaces) would otherwise look like one noisy device to the model.
  c.features.emplace_back("device.id",
                          static_cast<double>(fnv1a64(device.key()) % 1000003) / 1000003.0);
  if (device.sm_count) c.features.emplace_back("device.sm_count", device.sm_count);
  if (device.memory_bytes)
    c.features.emplace_back("device.memory_gib",
                            static_cast<double>(device.memory_bytes) / (1 << 30));
  if (device.l2_bytes)
    c.features.emplace_back("device.l2_mib", static_cast<double>(device.l2_bytes) / (1 << 20));
  return c;
}

double feature_value(const Value& v) {
  if (v.is_int() || v.is_real()) return v.as_real();
  return static_cast<double>(fnv1a64(v.as_word()) % 1000003) / 1000003.0;
}

double knob_value(const Space& space, std::size_t knob, std::uint32_t option) {
  return feature_value(space.knobs()[knob].options[option]);
}

Row make_row(const Config& config, const Context& context, Verdict verdict,
             std::optional<double> time_us) {
  Row r;
  r.context = context.key;
  for (const auto& [name, v] : config.entries()) r.knobs.emplace_back(name, feature_value(v));
  r.context_features = context.features;
  r.ok = verdict == Verdict::kOk && time_us && *time_us > 0;
  r.log_us = r.ok ? std::log(*time_us) : 0;
  return r;
}

Row make_row(const Space& space, const Point& point, const Context& context, Verdict verdict,
             std::optional<double> time_us) {
  Row r;
  r.context = context.key;
  for (std::size_t k = 0; k < point.size(); ++k)
    r.knobs.emplace_back(space.knobs()[k].name, knob_value(space, k, point[k]));
  r.context_features = context.features;
  r.ok = verdict == Verdict::kOk && time_us && *time_us > 0;
  r.log_us = r.ok ? std::log(*time_us) : 0;
  return r;
}

struct Prior::State {
  PriorOptions o;
  std::vector<Row> reservoir;
  std::uint64_t seen = 0;
  std::size_t since_fit = 0;
  std::size_t next_refit = 0;
  std::vector<std::string> schema;  // feature names of the trained model, in schema_less order
  // The schema's order: the device's features last (version 2 of the reservoir), or plain name
  // order (version 1, a checkpoint saved before; its next fit takes version 2's).
  bool device_last = true;
  Booster booster;
  bool quarantined = false;
  double calibration = 0;
  std::uint64_t generation = 0;

  std::size_t feature(const std::string& name) const {
    auto it = std::lower_bound(schema.begin(), schema.end(), name, schema_less(device_last));
    return it != schema.end() && *it == name ? static_cast<std::size_t>(it - schema.begin())
                                             : schema.size();
  }

  void fill(float* row, const std::vector<std::pair<std::string, double>>& knobs, std::size_t depth,
            const std::vector<std::pair<std::string, double>>& ctx) const {
    std::fill(row, row + schema.size(), kMissing);
    for (std::size_t k = 0; k < depth && k < knobs.size(); ++k) {
      std::size_t f = feature("knob:" + knobs[k].first);
      if (f < schema.size()) row[f] = static_cast<float>(knobs[k].second);
    }
    for (const auto& [name, v] : ctx) {
      std::size_t f = feature("ctx:" + name);
      if (f < schema.size()) row[f] = static_cast<float>(v);
    }
  }

  bool held_back(const Row& r) const {
    std::uint64_t h = fnv1a64(r.context) ^ o.seed;
    for (const auto& [n, v] : r.knobs) h = mix64(h ^ fnv1a64(n) ^ bits(v));
    return static_cast<double>(h % 1000) < o.holdout * 1000.0;
  }
  static std::uint64_t bits(double v) {
    std::uint64_t b;
    std::memcpy(&b, &v, sizeof b);
    return b;
  }
};

Prior::Prior(PriorOptions options) : s_(std::make_unique<State>()) {
  s_->o = options;
  s_->next_refit = options.first_refit;
}
Prior::~Prior() = default;
Prior::Prior(Prior&&) noexcept = default;
Prior& Prior::operator=(Prior&&) noexcept = default;

std::size_t Prior::rows() const {
  return s_->reservoir.size();
}
bool Prior::trained() const {
  return s_->booster != nullptr;
}
bool Prior::quarantined() const {
  return s_->quarantined;
}
double Prior::calibration() const {
  return s_->calibration;
}
std::uint64_t Prior::generation() const {
  return s_->generation;
}

void Prior::add(Row row) {
  State& s = *s_;
  ++s.seen;
  if (s.reservoir.size() < s.o.reservoir) {
    s.reservoir.push_back(std::move(row));
  } else {
    std::uint64_t j = mix64(s.o.seed ^ (s.seen * 0x9e3779b97f4a7c15ULL)) % s.seen;
    if (j < s.o.reservoir) s.reservoir[j] = std::move(row);
  }
  ++s.since_fit;
  if (s.next_refit && s.since_fit >= s.next_refit && s.reservoir.size() >= s.o.min_rows) {
    // A refit that fails leaves the previous model in place; the next one is tried later.
    (void)fit();
    s.next_refit *= 2;
    s.since_fit = 0;
  }
}

Status Prior::fit() {
  State& s = *s_;
  s.since_fit = 0;
  if (s.reservoir.size() < s.o.min_rows) return Status::success();  // stays as it is (cold)

  std::set<std::string, SchemaLess> names(schema_less(true));
  for (const auto& r : s.reservoir) {
    for (const auto& k : r.knobs) names.insert("knob:" + k.first);
    for (const auto& c : r.context_features) names.insert("ctx:" + c.first);
  }
  s.schema.assign(names.begin(), names.end());
  s.device_last = true;
  const std::size_t ncol = s.schema.size();

  // Per context, the failure target; per (context, depth, prefix), the best target below it.
  std::map<std::string, double> worst;
  for (const auto& r : s.reservoir)
    if (r.ok) {
      auto [it, fresh] = worst.emplace(r.context, r.log_us);
      if (!fresh) it->second = std::max(it->second, r.log_us);
    }
  auto target = [&](const Row& r) {
    if (r.ok) return r.log_us;
    auto it = worst.find(r.context);
    return (it == worst.end() ? 0.0 : it->second) + kFailurePenalty;
  };
  struct Group {
    const Row* row;
    std::size_t depth;
    double y;
  };
  // Keyed by a hash of (context, prefix values): collisions would only merge two groups' targets.
  std::unordered_map<std::uint64_t, Group> groups;
  std::vector<std::uint64_t> order;  // first-seen order, so training is deterministic
  std::vector<const Row*> held;
  for (const auto& r : s.reservoir) {
    if (s.held_back(r)) {
      held.push_back(&r);
      continue;
    }
    double y = target(r);
    std::uint64_t key = fnv1a64(r.context);
    for (std::size_t d = 1; d <= r.knobs.size(); ++d) {
      key = mix64(key ^ State::bits(r.knobs[d - 1].second) ^ d);
      auto [it, fresh] = groups.emplace(key, Group{&r, d, y});
      if (fresh)
        order.push_back(key);
      else if (y < it->second.y)
        it->second = Group{&r, d, y};
    }
  }
  if (groups.empty()) return Status::success();
  std::vector<float> data(groups.size() * ncol);
  std::vector<float> labels;
  labels.reserve(groups.size());
  for (std::size_t i = 0; i < order.size(); ++i) {
    const Group& g = groups.at(order[i]);
    s.fill(&data[i * ncol], g.row->knobs, g.depth, g.row->context_features);
    labels.push_back(static_cast<float>(g.y));
  }
  ATTUNE_ASSIGN(DMatrix train, make_matrix(data, groups.size(), ncol));
  if (XGDMatrixSetFloatInfo(train.get(), "label", labels.data(), labels.size()) != 0)
    return Error::internal(xgb_error("setting labels"));
  BoosterHandle raw = nullptr;
  DMatrixHandle mats[] = {train.get()};
  if (XGBoosterCreate(mats, 1, &raw) != 0) return Error::internal(xgb_error("creating a booster"));
  Booster booster(raw);
  const std::pair<const char*, std::string> params[] = {
      {"objective", "reg:squarederror"},
      {"tree_method", "hist"},
      {"nthread", "1"},  // deterministic, and polite to a shared machine
      {"seed", std::to_string(s.o.seed % 2147483647)},
      {"max_depth", std::to_string(s.o.max_depth)},
      {"eta", std::to_string(s.o.learning_rate)},
      {"min_child_weight", "1"},
      {"max_bin", "64"},  // knob values are few and discrete; fewer bins train faster
      {"verbosity", "0"},
  };
  for (const auto& [k, v] : params)
    if (XGBoosterSetParam(raw, k, v.c_str()) != 0)
      return Error::internal(xgb_error(std::string("setting ") + k));
  for (int it = 0; it < s.o.trees; ++it)
    if (XGBoosterUpdateOneIter(raw, it, train.get()) != 0)
      return Error::internal(xgb_error("training the prior"));
  s.booster = std::move(booster);
  ++s.generation;

  // Calibration: rank correlation between predicted and measured times on held-back ok rows.
  std::vector<const Row*> check;
  for (const Row* r : held)
    if (r->ok) check.push_back(r);
  s.calibration = 0;
  if (check.size() >= 8) {
    std::vector<float> hd(check.size() * ncol);
    for (std::size_t k = 0; k < check.size(); ++k)
      s.fill(&hd[k * ncol], check[k]->knobs, check[k]->knobs.size(), check[k]->context_features);
    ATTUNE_ASSIGN(DMatrix hm, make_matrix(hd, check.size(), ncol));
    bst_ulong const* shape = nullptr;
    bst_ulong dim = 0;
    float const* out = nullptr;
    const char* cfg =
        R"({"type": 0, "training": false, "iteration_begin": 0, "iteration_end": 0, "strict_shape": false})";
    if (XGBoosterPredictFromDMatrix(s.booster.get(), hm.get(), cfg, &shape, &dim, &out) != 0)
      return Error::internal(xgb_error("predicting held-back rows"));
    std::vector<double> pred(out, out + check.size()), actual;
    for (const Row* r : check) actual.push_back(r->log_us);
    s.calibration = spearman(pred, actual);
  }
  s.quarantined = !(s.calibration >= s.o.min_calibration);
  return Status::success();
}

namespace {
std::optional<std::vector<double>> predict_with(const Prior::State& s, const Space& space,
                                                const std::vector<Point>& prefixes,
                                                const Context& context) {
  if (!s.booster || prefixes.empty()) return std::nullopt;
  const std::size_t ncol = s.schema.size();
  std::vector<float> data(prefixes.size() * ncol);
  std::vector<std::pair<std::string, double>> knobs;
  for (std::size_t i = 0; i < prefixes.size(); ++i) {
    knobs.clear();
    for (std::size_t k = 0; k < prefixes[i].size(); ++k)
      knobs.emplace_back(space.knobs()[k].name, knob_value(space, k, prefixes[i][k]));
    s.fill(&data[i * ncol], knobs, knobs.size(), context.features);
  }
  auto m = make_matrix(data, prefixes.size(), ncol);
  if (!m) return std::nullopt;
  bst_ulong const* shape = nullptr;
  bst_ulong dim = 0;
  float const* out = nullptr;
  const char* cfg =
      R"({"type": 0, "training": false, "iteration_begin": 0, "iteration_end": 0, "strict_shape": false})";
  if (XGBoosterPredictFromDMatrix(s.booster.get(), m->get(), cfg, &shape, &dim, &out) != 0)
    return std::nullopt;
  return std::vector<double>(out, out + prefixes.size());
}

std::vector<double> scores_with(const Prior::State& s, const Space& space, const Point& prefix,
                                const std::vector<std::uint32_t>& options, const Context& context) {
  std::vector<double> uniform(options.size(), 1.0);
  if (!s.booster || s.quarantined || options.empty()) return uniform;
  std::vector<Point> ps;
  for (std::uint32_t o : options) {
    ps.push_back(prefix);
    ps.back().push_back(o);
  }
  auto pred = predict_with(s, space, ps, context);
  if (!pred) return uniform;
  double best = *std::min_element(pred->begin(), pred->end());
  std::vector<double> out;
  for (double p : *pred) out.push_back(std::exp(-(p - best) / s.o.temperature));
  return out;
}
}  // namespace

std::optional<std::vector<double>> Prior::predict(const Space& space,
                                                  const std::vector<Point>& prefixes,
                                                  const Context& context) const {
  return predict_with(*s_, space, prefixes, context);
}

std::vector<double> Prior::child_scores(const Space& space, const Point& prefix,
                                        const std::vector<std::uint32_t>& options,
                                        const Context& context) const {
  return scores_with(*s_, space, prefix, options, context);
}

std::function<std::vector<double>(const Point&, const std::vector<std::uint32_t>&)> Prior::scorer(
    const Space& space, const Context& context) const {
  // Bound to the State, which a move of the Prior carries along unchanged.
  const State* state = s_.get();
  return [state, space, context](const Point& prefix, const std::vector<std::uint32_t>& options) {
    return scores_with(*state, space, prefix, options, context);
  };
}

std::size_t Prior::problems_like(const Space& space, const Context& context) const {
  std::set<std::string> contexts;
  for (const auto& r : s_->reservoir) {
    if (r.context == context.key || r.knobs.size() != space.depth()) continue;
    bool same = true;
    for (std::size_t k = 0; same && k < r.knobs.size(); ++k)
      same = r.knobs[k].first == space.knobs()[k].name;
    if (same) contexts.insert(r.context);
  }
  return contexts.size();
}

std::function<std::vector<double>(const std::vector<Point>&)> Prior::predictor(
    const Space& space, const Context& context) const {
  const State* state = s_.get();
  const bool enough = problems_like(space, context) >= state->o.min_problems_to_predict;
  return [state, space, context, enough](const std::vector<Point>& points) -> std::vector<double> {
    if (!enough || !state->booster || state->quarantined) return {};
    auto pred = predict_with(*state, space, points, context);
    return pred ? std::move(*pred) : std::vector<double>{};
  };
}

Result<Checkpoint> Prior::save() const {
  const State& s = *s_;
  Checkpoint c;
  if (s.booster) {
    bst_ulong len = 0;
    const char* buf = nullptr;
    if (XGBoosterSaveModelToBuffer(s.booster.get(), R"({"format": "json"})", &len, &buf) != 0)
      return Error::internal(xgb_error("saving the prior"));
    c.model.assign(buf, len);
  }
  json rows = json::array();
  for (const auto& r : s.reservoir)
    rows.push_back({{"c", r.context},
                    {"k", r.knobs},
                    {"x", r.context_features},
                    {"ok", r.ok},
                    {"y", r.log_us}});
  // The refit schedule is not saved: it belongs to the search that loads the prior.
  json res = {
      {"version", s.device_last ? 2 : 1}, {"schema", s.schema}, {"seen", s.seen}, {"rows", rows}};
  c.reservoir = res.dump();
  c.rows = static_cast<std::int64_t>(s.reservoir.size());
  c.calibration = s.calibration;
  c.quarantined = s.quarantined;
  return c;
}

Result<Prior> Prior::load(const Checkpoint& c, PriorOptions options) {
  Prior p(options);
  State& s = *p.s_;
  json j = json::parse(c.reservoir.empty() ? "{}" : c.reservoir, nullptr, false);
  const int version = j.is_object() ? j.value("version", 0) : 0;
  if (j.is_discarded() || (version != 1 && version != 2))
    return Error::corrupt("prior checkpoint: the reservoir is not a version-1 or -2 JSON document");
  s.device_last = version == 2;
  try {
    s.schema = j.at("schema").get<std::vector<std::string>>();
    s.seen = j.at("seen").get<std::uint64_t>();
    for (const auto& r : j.at("rows")) {
      Row row;
      row.context = r.at("c").get<std::string>();
      row.knobs = r.at("k").get<std::vector<std::pair<std::string, double>>>();
      row.context_features = r.at("x").get<std::vector<std::pair<std::string, double>>>();
      row.ok = r.at("ok").get<bool>();
      row.log_us = r.at("y").get<double>();
      s.reservoir.push_back(std::move(row));
    }
  } catch (const json::exception& e) {
    return Error::corrupt(std::string("prior checkpoint: ") + e.what());
  }
  if (!std::is_sorted(s.schema.begin(), s.schema.end(), schema_less(s.device_last)))
    return Error::corrupt("prior checkpoint: the feature schema is not sorted");
  if (!c.model.empty()) {
    BoosterHandle raw = nullptr;
    if (XGBoosterCreate(nullptr, 0, &raw) != 0)
      return Error::internal(xgb_error("creating a booster"));
    Booster b(raw);
    if (XGBoosterLoadModelFromBuffer(raw, c.model.data(), c.model.size()) != 0)
      return Error::corrupt(xgb_error("prior checkpoint: the model does not load"));
    XGBoosterSetParam(raw, "nthread", "1");
    s.booster = std::move(b);
    s.generation = 1;
  }
  s.calibration = c.calibration;
  s.quarantined = c.quarantined;
  return p;
}

}  // namespace attune::prior
