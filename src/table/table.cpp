#include "table/table.h"

#include <algorithm>
#include <limits>
#include <map>
#include <set>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/config.h"
#include "core/files.h"
#include "core/json_number.h"

namespace attune::table {

using nlohmann::json;

namespace {

std::string_view to_string(MatchPolicy::Kind k) {
  return k == MatchPolicy::Kind::kExact ? "exact" : "bucketed";
}

// The problem without its bucket axis: what a bucket row's other attributes must equal.
Problem without(const Problem& p, const std::string& axis) {
  auto attrs = p.attrs();
  attrs.erase(axis);
  return Problem(p.op(), std::move(attrs));
}

std::string row_name(const OpTable& t, std::size_t i) {
  const Row& r = t.rows[i];
  std::string where = r.problem.text();
  if (r.bucket) where += fmt::format(" {}=[{}, {}]", r.bucket->axis, r.bucket->lo, r.bucket->hi);
  return fmt::format("{} {} row {} ({})", t.op, t.dtype, i + 1, where);
}

Status validate_row(const OpTable& t, std::size_t i) {
  const Row& r = t.rows[i];
  auto bad = [&](const std::string& why) {
    return Error::invalid_argument(row_name(t, i) + ": " + why);
  };
  if (r.problem.op() != t.op)
    return bad(fmt::format("its problem's op is '{}', not '{}'", r.problem.op(), t.op));
  if (dtype_of(r.problem) != t.dtype)
    return bad(fmt::format("its problem's dtype is not '{}'", t.dtype));
  if (!known_backend(r.backend)) return bad(fmt::format("unknown backend '{}'", r.backend));
  if (r.config.empty()) return bad("no config");
  if (auto c = Config::parse(r.config); !c) return bad("config: " + c.error().message());
  if (!(r.median_us > 0) || !(r.baseline_us > 0)) return bad("times must be positive");
  if (r.median_us > r.baseline_us)
    return bad(fmt::format("slower than its baseline ({} us > {} us)", r.median_us, r.baseline_us));
  if (r.error.metric.empty() || !(r.error.value <= r.error.tolerance))
    return bad("did not pass the correctness gate (error above tolerance or not recorded)");
  const bool bucketed = t.match.kind == MatchPolicy::Kind::kBucketed;
  if (bucketed != r.bucket.has_value())
    return bad(bucketed ? "no bucket in a bucketed table" : "a bucket in an exact table");
  if (r.bucket) {
    const Bucket& b = *r.bucket;
    if (b.axis != t.match.axis)
      return bad(fmt::format("bucket axis '{}' is not the table's '{}'", b.axis, t.match.axis));
    if (r.problem.attr(b.axis))
      return bad(fmt::format("a bucket row's problem must not fix '{}'", b.axis));
    if (b.lo > b.hi) return bad("bucket lo > hi");
    if (b.points.empty()) return bad("a bucket with no measured points");
    if (!std::is_sorted(b.points.begin(), b.points.end()) || b.points.front() < b.lo ||
        b.points.back() > b.hi)
      return bad("bucket points must be ascending and inside [lo, hi]");
    if (!(r.max_regret >= 0)) return bad("negative regret");
    if (!b.point_us.empty() || !b.baseline_point_us.empty()) {
      if (b.point_us.size() != b.points.size() || b.baseline_point_us.size() != b.points.size())
        return bad("bucket point times must give one time per point");
      for (std::size_t i = 0; i < b.points.size(); ++i) {
        if (!(b.point_us[i] > 0) || !(b.baseline_point_us[i] > 0))
          return bad("bucket point times must be positive");
        if (b.point_us[i] > b.baseline_point_us[i])
          return bad(fmt::format("slower than its baseline at {}={} ({} us > {} us)", b.axis,
                                 b.points[i], b.point_us[i], b.baseline_point_us[i]));
      }
    }
  }
  return Status::success();
}

Status validate_op(const OpTable& t) {
  if (t.op.empty() || t.dtype.empty())
    return Error::invalid_argument("an op table without op or dtype");
  if (t.match.kind == MatchPolicy::Kind::kBucketed &&
      (t.match.axis.empty() || t.match.rule.empty()))
    return Error::invalid_argument(fmt::format(
        "{} {}: a bucketed table must name its axis and its bucket rule", t.op, t.dtype));
  for (std::size_t i = 0; i < t.rows.size(); ++i) ATTUNE_TRY(validate_row(t, i));
  // No two rows may answer the same query.
  std::map<std::string, std::vector<std::size_t>> by_key;
  for (std::size_t i = 0; i < t.rows.size(); ++i) by_key[t.rows[i].problem.text()].push_back(i);
  for (const auto& [key, idx] : by_key) {
    if (idx.size() < 2) continue;
    if (t.match.kind == MatchPolicy::Kind::kExact)
      return Error::invalid_argument(
          fmt::format("{} and row {} are duplicates", row_name(t, idx[1]), idx[0] + 1));
    for (std::size_t x = 0; x < idx.size(); ++x)
      for (std::size_t y = x + 1; y < idx.size(); ++y) {
        const Bucket &a = *t.rows[idx[x]].bucket, &b = *t.rows[idx[y]].bucket;
        if (a.lo <= b.hi && b.lo <= a.hi)
          return Error::invalid_argument(
              fmt::format("{} overlaps row {}", row_name(t, idx[y]), idx[x] + 1));
      }
  }
  return Status::success();
}

json row_json(const Row& r) {
  json j{
      {"problem", r.problem.text()},
      {"structural_key", r.problem.structural_key()},
      {"backend", r.backend},
      {"config", r.config},
      {"median_us", r.median_us},
      {"baseline_us", r.baseline_us},
      {"baseline_config", r.baseline_config},
      {"speedup", r.median_us > 0 ? r.baseline_us / r.median_us : 0.0},
      {"error",
       {{"metric", r.error.metric}, {"value", r.error.value}, {"tolerance", r.error.tolerance}}}};
  if (r.bucket) {
    j["bucket"] = {{"axis", r.bucket->axis},
                   {"lo", r.bucket->lo},
                   {"hi", r.bucket->hi},
                   {"points", r.bucket->points}};
    if (!r.bucket->point_us.empty()) {
      j["bucket"]["point_us"] = r.bucket->point_us;
      j["bucket"]["baseline_point_us"] = r.bucket->baseline_point_us;
    }
    j["max_regret"] = r.max_regret;
  }
  return j;
}

Result<Row> row_from_json(const json& j) {
  Row r;
  auto p = Problem::parse(j.at("problem").get<std::string>());
  if (!p) return Error::invalid_argument("row problem: " + p.error().message());
  r.problem = *p;
  if (j.contains("structural_key") &&
      j.at("structural_key").get<std::string>() != r.problem.structural_key())
    return Error::invalid_argument(
        fmt::format("row {}: its structural_key does not match its problem", r.problem.text()));
  r.backend = j.at("backend").get<std::string>();
  r.config = j.at("config").get<std::string>();
  r.median_us = j.at("median_us").get<double>();
  r.baseline_us = j.at("baseline_us").get<double>();
  r.baseline_config = j.value("baseline_config", "");
  const json& e = j.at("error");
  r.error = ErrorCheck{e.at("metric").get<std::string>(), e.at("value").get<double>(),
                       e.at("tolerance").get<double>()};
  if (j.contains("bucket")) {
    const json& b = j.at("bucket");
    constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
    Bucket bucket{b.at("axis").get<std::string>(), 0, 0, {}};
    ATTUNE_ASSIGN(bucket.lo, json_whole_number(b.at("lo"), "bucket lo", 0, kMax));
    ATTUNE_ASSIGN(bucket.hi, json_whole_number(b.at("hi"), "bucket hi", 0, kMax));
    if (!b.at("points").is_array())
      return Error::invalid_argument("bucket points must be a list of sizes");
    for (const json& point : b.at("points")) {
      ATTUNE_ASSIGN(std::int64_t v, json_whole_number(point, "a bucket point", 0, kMax));
      bucket.points.push_back(v);
    }
    r.bucket = std::move(bucket);
    if (b.contains("point_us")) r.bucket->point_us = b.at("point_us").get<std::vector<double>>();
    if (b.contains("baseline_point_us"))
      r.bucket->baseline_point_us = b.at("baseline_point_us").get<std::vector<double>>();
    r.max_regret = j.value("max_regret", 0.0);
  }
  return r;
}

}  // namespace

const OpTable* Table::find(std::string_view op, std::string_view dtype) const {
  for (const auto& t : ops)
    if (t.op == op && t.dtype == dtype) return &t;
  return nullptr;
}

std::string dtype_of(const Problem& problem) {
  const std::string* dtype = problem.attr("dtype");
  return dtype ? *dtype : std::string(kNoDtype);
}

bool known_backend(std::string_view backend) {
  return backend == "cuda" || backend == "sim";
}

const Row* match(const OpTable& ops, const Problem& problem) {
  if (ops.match.kind == MatchPolicy::Kind::kExact) {
    for (const auto& r : ops.rows)
      if (r.problem.op() == problem.op() && r.problem.attrs() == problem.attrs()) return &r;
    return nullptr;
  }
  auto v = problem.int_attr(ops.match.axis);
  if (!v) return nullptr;
  const Problem rest = without(problem, ops.match.axis);
  for (const auto& r : ops.rows)
    if (r.problem.attrs() == rest.attrs() && r.problem.op() == rest.op() && r.bucket->lo <= *v &&
        *v <= r.bucket->hi)
      return &r;
  return nullptr;
}

Status validate(const Table& table) {
  if (table.version != kVersion)
    return Error::invalid_argument(
        fmt::format("table version {} is not {} (this attune reads version {})", table.version,
                    kVersion, kVersion));
  if (table.device.backend.empty() || table.device.name.empty())
    return Error::invalid_argument("the table names no device fingerprint");
  std::set<std::pair<std::string, std::string>> seen;
  for (const auto& t : table.ops) {
    if (!seen.emplace(t.op, t.dtype).second)
      return Error::invalid_argument(fmt::format("two op tables for {} {}", t.op, t.dtype));
    ATTUNE_TRY(validate_op(t));
  }
  return Status::success();
}

std::string to_json_text(const Table& table) {
  json ops = json::array();
  for (const auto& t : table.ops) {
    json match{{"policy", to_string(t.match.kind)}};
    if (t.match.kind == MatchPolicy::Kind::kBucketed) {
      match["axis"] = t.match.axis;
      match["rule"] = t.match.rule;
    }
    json rows = json::array();
    for (const auto& r : t.rows) rows.push_back(row_json(r));
    ops.push_back({{"op", t.op}, {"dtype", t.dtype}, {"match", match}, {"rows", rows}});
  }
  json device = table.device;
  json j{{"format", kFormat},
         {"version", table.version},
         {"attune_version", table.attune_version},
         {"created_at", table.created_at},
         {"device", device},
         {"device_key", table.device.key()},
         {"key_fields", {"backend", "name", "arch", "sm_count", "memory_bytes"}},
         {"ops", ops}};
  return j.dump(2) + "\n";
}

Result<Table> parse_table(std::string_view text) {
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded())
    return Error::invalid_argument("not a complete JSON document (truncated or not JSON)");
  if (!j.is_object() || !j.contains("format") || !j["format"].is_string() ||
      j["format"].get<std::string>() != kFormat)
    return Error::invalid_argument(
        fmt::format("not an attune table (no \"format\": \"{}\")", kFormat));
  Table t;
  try {
    ATTUNE_ASSIGN(std::int64_t version, json_whole_number(j.at("version"), "version", 0, 1 << 20));
    t.version = static_cast<int>(version);
    if (t.version > kVersion)
      return Error::invalid_argument(
          fmt::format("table version {} was written by a newer attune (this one reads {})",
                      t.version, kVersion));
    t.attune_version = j.value("attune_version", "");
    t.created_at = j.value("created_at", "");
    ATTUNE_ASSIGN(t.device, device_from_json(j.at("device")));
    if (j.contains("device_key") && j.at("device_key").get<std::string>() != t.device.key())
      return Error::invalid_argument(
          "device_key does not match the device fingerprint's key fields");
    if (!j.at("ops").is_array()) return Error::invalid_argument("\"ops\" must be a list");
    for (const json& o : j.at("ops")) {
      OpTable ot;
      ot.op = o.at("op").get<std::string>();
      ot.dtype = o.at("dtype").get<std::string>();
      const json& m = o.at("match");
      const std::string policy = m.at("policy").get<std::string>();
      if (policy == "bucketed") {
        ot.match.kind = MatchPolicy::Kind::kBucketed;
        ot.match.axis = m.at("axis").get<std::string>();
        ot.match.rule = m.at("rule").get<std::string>();
      } else if (policy != "exact") {
        return Error::invalid_argument(fmt::format(
            "{} {}: unknown match policy '{}' (exact or bucketed)", ot.op, ot.dtype, policy));
      }
      if (!o.at("rows").is_array())
        return Error::invalid_argument(
            fmt::format("{} {}: \"rows\" must be a list", ot.op, ot.dtype));
      for (const json& r : o.at("rows")) {
        ATTUNE_ASSIGN(Row row, row_from_json(r));
        ot.rows.push_back(std::move(row));
      }
      t.ops.push_back(std::move(ot));
    }
  } catch (const json::exception& e) {
    return Error::invalid_argument(std::string("malformed table: ") + e.what());
  }
  ATTUNE_TRY(validate(t));
  return t;
}

Result<Table> load_table(const std::string& path) {
  ATTUNE_ASSIGN(std::string text, read_text_file(path, "table"));
  auto t = parse_table(text);
  if (!t) return t.error().with_context(path);
  return t;
}

Status save_table(const Table& table, const std::string& path) {
  ATTUNE_TRY(validate(table));
  return write_text_file(path, to_json_text(table));
}

}  // namespace attune::table
