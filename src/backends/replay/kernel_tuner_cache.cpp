#include "backends/replay/kernel_tuner_cache.h"

#include <zlib.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <unordered_set>

#include <nlohmann/json.hpp>

#include "core/hash.h"

namespace attune::replay {

using nlohmann::json;

std::size_t PointHash::operator()(const Point& p) const {
  std::uint64_t h = 0x9e3779b97f4a7c15ULL;
  for (std::uint32_t v : p) h = mix64(h ^ v);
  return static_cast<std::size_t>(h);
}

namespace {

// str(value) as Python writes it: Kernel Tuner's cache keys join these with ','.
std::optional<std::string> python_text(const json& v) {
  if (v.is_boolean()) return v.get<bool>() ? "True" : "False";
  if (v.is_number_integer()) return v.dump();
  if (v.is_number_float()) return v.dump();  // shortest round trip, "1.0" keeps its ".0"
  if (v.is_string()) return v.get<std::string>();
  return std::nullopt;
}

std::optional<Value> option_value(const json& v) {
  if (v.is_boolean()) return Value(std::string(v.get<bool>() ? "True" : "False"));
  if (v.is_number_integer()) return Value(v.get<std::int64_t>());
  if (v.is_number_float()) return Value(v.get<double>());
  if (v.is_string()) return Value(v.get<std::string>());
  return std::nullopt;
}

std::vector<std::string> split(std::string_view s, char sep) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (true) {
    std::size_t pos = s.find(sep, start);
    out.emplace_back(
        s.substr(start, pos == std::string_view::npos ? std::string_view::npos : pos - start));
    if (pos == std::string_view::npos) break;
    start = pos + 1;
  }
  return out;
}

std::string slug(std::string_view s) {
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c)) {
      out.push_back(static_cast<char>(std::tolower(c)));
    } else if (!out.empty() && out.back() != '-') {
      out.push_back('-');
    }
  }
  while (!out.empty() && out.back() == '-') out.pop_back();
  return out.empty() ? "unknown" : out;
}

Error bad(const std::string& what) {
  return Error::invalid_argument("kernel tuner cache: " + what);
}

// The recorded prefixes at every depth: legality of a prefix is membership, so enumeration
// yields exactly the recorded configs and never walks into a dead end.
struct PrefixIndex {
  std::vector<std::vector<Value>> options;  // per knob, to map an Assignment back to indices
  std::vector<std::string> names;
  std::vector<std::unordered_set<Point, PointHash>> prefixes;  // by depth (length - 1)

  bool recorded(const Assignment& a, std::size_t depth) const {
    Point p(depth + 1);
    for (std::size_t i = 0; i <= depth; ++i) {
      const Value& v = a[names[i]];
      const auto& opts = options[i];
      auto it = std::find(opts.begin(), opts.end(), v);
      if (it == opts.end()) return false;
      p[i] = static_cast<std::uint32_t>(it - opts.begin());
    }
    return prefixes[depth].count(p) > 0;
  }
};

}  // namespace

std::optional<Verdict> verdict_from_kernel_tuner(std::string_view failure) {
  if (failure == "InvalidConfig") return Verdict::kUnsupported;
  if (failure == "CompilationFailedConfig") return Verdict::kBuildFailed;
  if (failure == "RuntimeFailedConfig") return Verdict::kLaunchFailed;
  return std::nullopt;
}

std::optional<std::string> kernel_tuner_failure(Verdict verdict) {
  switch (verdict) {
    case Verdict::kUnsupported:
      return "InvalidConfig";
    case Verdict::kBuildFailed:
      return "CompilationFailedConfig";
    case Verdict::kOk:
      return std::nullopt;
    default:
      return "RuntimeFailedConfig";  // every fault after a successful build
  }
}

const RecordedResult* RecordedSpace::find(const Point& point) const {
  auto it = index.find(point);
  return it == index.end() ? nullptr : &results[it->second];
}

std::optional<double> RecordedSpace::optimum_us() const {
  std::optional<double> best;
  for (const auto& r : results)
    if (r.verdict == Verdict::kOk && (!best || r.time_us < *best)) best = r.time_us;
  return best;
}

Problem RecordedSpace::problem() const {
  return Problem("replay",
                 {{"kernel", kernel_name},
                  {"problem_size", problem_size},
                  {"recorded_on", slug(device_name)},
                  {"recording", digest}},
                 kernel_name + "@" + slug(device_name));
}

DeviceFingerprint RecordedSpace::device() const {
  DeviceFingerprint d;
  d.backend = "replay";
  d.name = device_name;
  d.extra["recorded_kernel"] = kernel_name;
  return d;
}

std::string RecordedSpace::compact_json() const {
  json j;
  j["device_name"] = device_name;
  j["kernel_name"] = kernel_name;
  // Problem size is kept as text ("4096x4096"); the parser reads a string back verbatim.
  j["problem_size"] = problem_size;
  j["objective"] = objective;
  json keys = json::array();
  json params = json::object();
  for (const auto& k : space.knobs()) {
    keys.push_back(k.name);
    json opts = json::array();
    for (const auto& v : k.options) {
      if (v.is_int())
        opts.push_back(v.as_int());
      else if (v.is_real())
        opts.push_back(v.as_real());
      else
        opts.push_back(v.as_word());
    }
    params[k.name] = opts;
  }
  j["tune_params_keys"] = keys;
  j["tune_params"] = params;
  json cache = json::object();
  for (std::size_t i = 0; i < points.size(); ++i) {
    json e = json::object();
    std::string key;
    for (std::size_t k = 0; k < space.depth(); ++k) {
      const json& opt = params[space.knobs()[k].name][points[i][k]];
      e[space.knobs()[k].name] = opt;
      if (k) key += ',';
      key += *python_text(opt);
    }
    const RecordedResult& r = results[i];
    if (r.verdict == Verdict::kOk) {
      e["time"] = r.time_us / 1000.0;
      if (!r.samples_us.empty()) {
        json t = json::array();
        for (double s : r.samples_us) t.push_back(s / 1000.0);
        e["times"] = t;
      }
    } else {
      e["time"] = r.failure;
    }
    cache[key] = std::move(e);
  }
  j["cache"] = std::move(cache);
  return j.dump();
}

std::string close_open_cache(std::string_view text) {
  // Python's str.strip(): the white space Kernel Tuner trims before looking at the end.
  auto blank = [](char c) {
    return c == ' ' || c == '\n' || c == '\r' || c == '\t' || c == '\f' || c == '\v';
  };
  while (!text.empty() && blank(text.front())) text.remove_prefix(1);
  while (!text.empty() && blank(text.back())) text.remove_suffix(1);
  std::string out(text);
  if (out.empty() || out.ends_with("}\n}") || out.ends_with("}}}")) return out;
  if (out.back() == ',') out.pop_back();
  out += "}\n}";
  return out;
}

Result<RecordedSpace> parse_kernel_tuner_cache(std::string_view json_text) {
  bool was_open = false;
  json j = json::parse(json_text.begin(), json_text.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) {
    // Kernel Tuner appends each config as it is measured and closes the file at the end, so a
    // run cut short leaves it open; Kernel Tuner itself resumes from such a file.
    std::string closed = close_open_cache(json_text);
    j = json::parse(closed, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded())
      return bad(
          "not valid JSON, also when closed as Kernel Tuner closes a cache left open "
          "(cut short inside a config, or not a cache file)");
    was_open = true;
  }
  if (!j.is_object()) return bad("the top level is not a JSON object");

  // Only what replay needs is required; every other field (Kernel Tuner adds some from version
  // to version) is ignored.
  static const char* const kRequired[] = {"device_name",      "kernel_name", "problem_size",
                                          "tune_params_keys", "tune_params", "cache"};
  for (const char* k : kRequired)
    if (!j.contains(k)) return bad(std::string("missing field '") + k + "'");

  RecordedSpace rs;
  if (!j["device_name"].is_string()) return bad("'device_name' must be a string");
  if (!j["kernel_name"].is_string()) return bad("'kernel_name' must be a string");
  rs.device_name = j["device_name"].get<std::string>();
  rs.kernel_name = j["kernel_name"].get<std::string>();
  const json& ps = j["problem_size"];
  if (ps.is_array()) {
    for (const auto& x : ps) {
      auto t = python_text(x);
      if (!t) return bad("'problem_size' entries must be numbers or strings");
      if (!rs.problem_size.empty()) rs.problem_size += 'x';
      rs.problem_size += *t;
    }
  } else if (auto t = python_text(ps)) {
    rs.problem_size = *t;
  } else {
    return bad("'problem_size' must be a number, a string or a list");
  }
  if (rs.problem_size.empty()) rs.problem_size = "none";
  rs.objective = "time";
  rs.was_open = was_open;
  if (j.contains("objective")) {
    // Kernel Tuner 1.x writes its objectives as a list (["time"]), older versions a string.
    const json& o = j["objective"];
    const json* one = o.is_array() && o.size() == 1 ? &o[0] : &o;
    if (!one->is_string() || one->get<std::string>() != "time")
      return bad("objective " + o.dump() +
                 " is not supported (replay serves recorded times: objective \"time\" or "
                 "[\"time\"])");
  }

  const json& keys = j["tune_params_keys"];
  const json& params = j["tune_params"];
  if (!keys.is_array() || keys.empty()) return bad("'tune_params_keys' must be a non-empty list");
  if (!params.is_object()) return bad("'tune_params' must be an object of knob -> options");
  if (params.size() != keys.size())
    return bad("'tune_params' has " + std::to_string(params.size()) +
               " knobs but "
               "'tune_params_keys' lists " +
               std::to_string(keys.size()));

  std::vector<Knob> knobs;
  std::vector<std::vector<std::string>> texts;  // python text per option, per knob
  for (const auto& k : keys) {
    if (!k.is_string()) return bad("'tune_params_keys' must hold knob names");
    std::string name = k.get<std::string>();
    if (!params.contains(name)) return bad("knob '" + name + "' has no options in 'tune_params'");
    const json& opts = params[name];
    if (!opts.is_array() || opts.empty())
      return bad("knob '" + name + "' must have a non-empty list of options");
    Knob knob;
    knob.name = name;
    std::vector<std::string> t;
    for (const auto& o : opts) {
      auto v = option_value(o);
      auto pt = python_text(o);
      if (!v || !pt) return bad("knob '" + name + "' has an option that is not a number or string");
      knob.options.push_back(*v);
      t.push_back(*pt);
    }
    knobs.push_back(std::move(knob));
    texts.push_back(std::move(t));
  }

  const json& cache = j["cache"];
  if (!cache.is_object()) return bad("'cache' must be an object of config key -> result");
  if (cache.empty()) return bad("'cache' records no configs");
  const std::size_t depth = knobs.size();
  for (const auto& [key, entry] : cache.items()) {
    std::vector<std::string> parts = split(key, ',');
    if (parts.size() != depth)
      return bad("config '" + key + "' has " + std::to_string(parts.size()) +
                 " values; the declared knobs are " + std::to_string(depth));
    if (!entry.is_object()) return bad("config '" + key + "' is not an object");
    Point p(depth);
    for (std::size_t k = 0; k < depth; ++k) {
      const auto& t = texts[k];
      auto it = std::find(t.begin(), t.end(), parts[k]);
      if (it == t.end())
        return bad("config '" + key + "': '" + parts[k] + "' is not an option of knob '" +
                   knobs[k].name + "'");
      p[k] = static_cast<std::uint32_t>(it - t.begin());
      if (entry.contains(knobs[k].name)) {
        auto et = python_text(entry[knobs[k].name]);
        if (!et || *et != parts[k])
          return bad("config '" + key + "': its field '" + knobs[k].name + "' is " +
                     entry[knobs[k].name].dump() + ", its key says " + parts[k]);
      }
    }
    RecordedResult r;
    // A failure: Kernel Tuner 1.x writes it as "__error__" (and no time), older versions in
    // place of the time.
    const json* failure = nullptr;
    if (entry.contains("__error__")) {
      failure = &entry["__error__"];
      if (!failure->is_string())
        return bad("config '" + key + "' has an '__error__' that is not a failure string");
    } else if (entry.contains("time") && entry["time"].is_string()) {
      failure = &entry["time"];
    }
    if (failure) {
      auto v = verdict_from_kernel_tuner(failure->get<std::string>());
      if (!v)
        return bad("config '" + key + "' has unknown failure '" + failure->get<std::string>() +
                   "' (known: InvalidConfig, CompilationFailedConfig, RuntimeFailedConfig)");
      r.verdict = *v;
      r.failure = failure->get<std::string>();
    } else if (!entry.contains("time")) {
      return bad("config '" + key + "' has no 'time' and no '__error__'");
    } else if (const json& time = entry["time"]; time.is_number()) {
      double ms = time.get<double>();
      if (!std::isfinite(ms) || ms <= 0)
        return bad("config '" + key + "' has time " + time.dump() + " (must be positive)");
      r.time_us = ms * 1000.0;
      if (entry.contains("times") && entry["times"].is_array())
        for (const auto& s : entry["times"])
          if (s.is_number()) r.samples_us.push_back(s.get<double>() * 1000.0);
    } else {
      return bad("config '" + key + "' has a 'time' that is neither a number nor a failure string");
    }
    if (!rs.index.emplace(p, rs.points.size()).second)
      return bad("config '" + key + "' is recorded twice");
    rs.points.push_back(std::move(p));
    rs.results.push_back(std::move(r));
  }

  // The problem attune recorded the space from (bench/spaces/record.py), if it did.
  if (j.contains("attune_recorded")) {
    const json& r = j["attune_recorded"];
    if (!r.is_object() || (r.contains("problem") && !r["problem"].is_string()))
      return bad("'attune_recorded' must be an object whose 'problem' is a string");
    if (r.contains("problem")) rs.attune_problem = r["problem"].get<std::string>();
  }

  // Baseline: the config attune started from when it recorded the space (`attune_baseline`, the
  // op's or the spec's default, so that a replay proposes what a real run proposes first), else
  // the first option of every knob if recorded with a time, else the first config recorded with
  // a time, else the first recorded config (a space where everything failed).
  std::optional<std::size_t> named;
  if (j.contains("attune_baseline")) {
    const json& b = j["attune_baseline"];
    if (!b.is_string()) return bad("'attune_baseline' must be a config key (\"v1,v2,...\")");
    auto it = cache.find(b.get<std::string>());
    if (it == cache.end())
      return bad("'attune_baseline' names config '" + b.get<std::string>() +
                 "', which the cache does not record");
    named = static_cast<std::size_t>(std::distance(cache.begin(), it));
  }
  Point first(depth, 0);
  std::size_t base = 0;
  auto fi = rs.index.find(first);
  if (named && rs.results[*named].verdict == Verdict::kOk) {
    base = *named;
  } else if (fi != rs.index.end() && rs.results[fi->second].verdict == Verdict::kOk) {
    base = fi->second;
  } else {
    for (std::size_t i = 0; i < rs.results.size(); ++i)
      if (rs.results[i].verdict == Verdict::kOk) {
        base = i;
        break;
      }
  }
  for (std::size_t k = 0; k < depth; ++k) knobs[k].baseline = rs.points[base][k];

  auto idx = std::make_shared<PrefixIndex>();
  idx->prefixes.resize(depth);
  for (const auto& k : knobs) {
    idx->options.push_back(k.options);
    idx->names.push_back(k.name);
  }
  for (const auto& p : rs.points)
    for (std::size_t d = 0; d < depth; ++d)
      idx->prefixes[d].insert(Point(p.begin(), p.begin() + static_cast<std::ptrdiff_t>(d) + 1));
  std::vector<Constraint> constraints;
  for (std::size_t d = 0; d < depth; ++d) {
    // A fork whose every option prefix is recorded needs no check.
    std::size_t parents = d == 0 ? 1 : idx->prefixes[d - 1].size();
    if (idx->prefixes[d].size() == parents * knobs[d].options.size()) continue;
    Constraint c;
    c.text = d + 1 == depth
                 ? "the config is recorded in the cache"
                 : "a recorded config starts with " + knobs[0].name + ".." + knobs[d].name;
    c.knobs.assign(idx->names.begin(), idx->names.begin() + static_cast<std::ptrdiff_t>(d) + 1);
    c.allows = [idx, d](const Assignment& a) { return idx->recorded(a, d); };
    constraints.push_back(std::move(c));
  }
  std::uint64_t h = fnv1a64(rs.kernel_name + "|" + rs.device_name + "|" + rs.problem_size);
  for (const auto& k : knobs) {
    h = mix64(h ^ fnv1a64(k.name));
    for (const auto& v : k.options) h = mix64(h ^ fnv1a64(v.text()));
  }
  for (std::size_t i = 0; i < rs.points.size(); ++i) {
    for (std::uint32_t x : rs.points[i]) h = mix64(h ^ x);
    // Times rounded to 1 ns, so a compact re-serialization keeps the digest.
    h = mix64(h ^ static_cast<std::uint64_t>(rs.results[i].verdict) ^
              (static_cast<std::uint64_t>(std::llround(rs.results[i].time_us * 1000.0)) << 8));
  }
  rs.digest = hex64(h).substr(0, 8);
  auto space = Space::make(std::move(knobs), std::move(constraints));
  if (!space) return space.error().with_context("kernel tuner cache");
  rs.space = std::move(space).value();
  return rs;
}

std::vector<std::int64_t> problem_size_numbers(std::string_view text) {
  std::vector<std::int64_t> out;
  for (const std::string& part : split(text, 'x')) {
    std::int64_t v = 0;
    auto [end, ec] = std::from_chars(part.data(), part.data() + part.size(), v);
    if (part.empty() || ec != std::errc() || end != part.data() + part.size() || v < 0) return {};
    out.push_back(v);
  }
  return out;
}

namespace {

// A knob option as Kernel Tuner's tune_params hold it. Words "True"/"False" are what the parser
// makes of Python booleans, so they go back as booleans.
json option_json(const Value& v) {
  if (v.is_int()) return v.as_int();
  if (v.is_real()) return v.as_real();
  if (v.as_word() == "True") return true;
  if (v.as_word() == "False") return false;
  return v.as_word();
}

// The store's "2026-11-30T14:53:54.123Z" as Kernel Tuner writes a timestamp,
// str(datetime.now(timezone.utc)): "2026-11-30 14:53:54.123000+00:00". Other text as it is.
std::string kernel_tuner_timestamp(std::string t) {
  if (t.size() < 20 || t[10] != 'T' || t.back() != 'Z') return t;
  t[10] = ' ';
  t.pop_back();
  auto dot = t.find('.');
  std::string fraction = dot == std::string::npos ? "" : t.substr(dot + 1);
  if (dot != std::string::npos) t.resize(dot);
  fraction.resize(6, '0');
  return t + "." + fraction + "+00:00";
}

// json.dumps(value, indent="") as Python writes it: one element per line, no indentation.
void dump_python_indented(const json& v, std::string& out) {
  if (v.is_array() && !v.empty()) {
    out += "[\n";
    for (std::size_t i = 0; i < v.size(); ++i) {
      if (i) out += ",\n";
      dump_python_indented(v[i], out);
    }
    out += "\n]";
  } else if (v.is_object() && !v.empty()) {
    out += "{\n";
    bool first = true;
    for (const auto& [k, e] : v.items()) {
      if (!first) out += ",\n";
      first = false;
      out += json(k).dump() + ": ";
      dump_python_indented(e, out);
    }
    out += "\n}";
  } else {
    out += v.dump();
  }
}

}  // namespace

Result<WrittenCache> write_kernel_tuner_cache(const CacheHeader& header,
                                              const std::vector<ExportRow>& rows) {
  if (rows.empty()) return Error::invalid_argument("no measurements to export");
  std::optional<Space> space = header.space;
  if (!space) {
    // The knobs and options the rows name: all rows must set the same knobs in the same order.
    std::vector<Knob> knobs;
    for (const auto& [name, v] : rows.front().config.entries()) knobs.push_back({name, {}, 0});
    for (const auto& r : rows) {
      const auto& e = r.config.entries();
      bool same = e.size() == knobs.size();
      for (std::size_t k = 0; same && k < e.size(); ++k) same = e[k].first == knobs[k].name;
      if (!same)
        return Error::invalid_argument("config '" + r.config.text() +
                                       "' does not set the knobs of '" +
                                       rows.front().config.text() + "'");
      for (std::size_t k = 0; k < e.size(); ++k) {
        auto& opts = knobs[k].options;
        if (std::find(opts.begin(), opts.end(), e[k].second) == opts.end())
          opts.push_back(e[k].second);
      }
    }
    for (auto& k : knobs) {
      bool numeric = std::all_of(k.options.begin(), k.options.end(),
                                 [](const Value& v) { return v.is_int() || v.is_real(); });
      if (numeric)
        std::stable_sort(k.options.begin(), k.options.end(),
                         [](const Value& a, const Value& b) { return a.as_real() < b.as_real(); });
    }
    auto made = Space::make(std::move(knobs));
    if (!made) return made.error().with_context("exporting");
    space = std::move(made).value();
  }

  // The header as process_cache writes it: json.dumps(header, indent="") in Kernel Tuner's field
  // order, cut before the empty cache's "}\n}" so configs can be appended. (nlohmann's json
  // sorts keys, which would put `cache` first.)
  json problem_size = header.problem_size.size() == 1 ? json(header.problem_size.front())
                      : header.problem_size.empty()   ? json(header.problem_size_text)
                                                      : json(header.problem_size);
  json keys = json::array();
  for (const auto& k : space->knobs()) keys.push_back(k.name);
  std::string text = "{\n";
  auto top = [&text](const char* name, const json& v) {
    text += json(name).dump() + ": ";
    dump_python_indented(v, text);
    text += ",\n";
  };
  top("device_name", header.device_name);
  top("kernel_name", header.kernel_name);
  top("problem_size", problem_size);
  top("tune_params_keys", keys);
  // tune_params by hand too: its knobs in Space order, every option of each.
  text += "\"tune_params\": {";
  for (std::size_t k = 0; k < space->depth(); ++k) {
    json opts = json::array();
    for (const auto& v : space->knobs()[k].options) opts.push_back(option_json(v));
    text += (k ? ",\n" : "\n") + json(space->knobs()[k].name).dump() + ": ";
    dump_python_indented(opts, text);
  }
  text += "\n},\n";
  top("objective", json::array({"time"}));  // Kernel Tuner 1.x writes its objectives as a list
  // The config attune starts every search from, when the space is known and it is among the
  // rows: a replay of the file then proposes it first, as a real run does. Kernel Tuner ignores
  // top-level fields it does not know (and wants "cache" last).
  if (header.space) {
    const Point base = space->baseline();
    bool recorded = std::any_of(rows.begin(), rows.end(), [&](const ExportRow& r) {
      auto p = space->point(r.config);
      return p && *p == base;
    });
    if (recorded) {
      std::string key;
      for (std::size_t k = 0; k < space->depth(); ++k)
        key += (k ? "," : "") + *python_text(option_json(space->knobs()[k].options[base[k]]));
      top("attune_baseline", key);
    }
  }
  text += "\"cache\": {";

  WrittenCache out;
  std::unordered_set<Point, PointHash> written;
  for (const auto& r : rows) {
    auto p = space->point(r.config);
    if (!p || !space->prefix_legal(*p)) {
      ++out.outside_space;
      continue;
    }
    if (!written.insert(*p).second) continue;  // the first row of a config wins
    // The config's key and fields as store_cache writes them: json.dumps of one entry, its
    // separators ", " and ": ", on a line of its own.
    std::string key, fields;
    for (std::size_t k = 0; k < space->depth(); ++k) {
      const json v = option_json(space->knobs()[k].options[(*p)[k]]);
      if (k) key += ',';
      key += *python_text(v);
      fields += (k ? ", " : "") + json(space->knobs()[k].name).dump() + ": " + v.dump();
    }
    auto field = [&fields](const char* name, const json& v) {
      fields += std::string(", \"") + name + "\": " + v.dump();
    };
    if (r.verdict == Verdict::kOk) {
      if (!r.time_us)
        return Error::invalid_argument("ok row '" + r.config.text() + "' has no time");
      // Milliseconds, as Kernel Tuner records them; written as a float, which Kernel Tuner's
      // get_best_config requires (an integer time is skipped as if failed).
      field("time", static_cast<double>(*r.time_us / 1000.0));
      if (!r.samples_us.empty()) {
        json t = json::array();
        for (double s : r.samples_us) t.push_back(s / 1000.0);
        field("times", t);
      }
    } else {
      field("__error__", *kernel_tuner_failure(r.verdict));
    }
    // attune keeps no per-candidate compile, verification, benchmark, strategy or framework
    // wall time, so these are 0, never made up (docs/kernel-tuner.md).
    for (const char* zero :
         {"compile_time", "verification_time", "benchmark_time", "strategy_time", "framework_time"})
      field(zero, 0);
    if (!r.measured_at.empty()) field("timestamp", kernel_tuner_timestamp(r.measured_at));
    text += "\n" + json(key).dump() + ": {" + fields + "},";
    ++out.configs;
  }
  if (out.configs == 0)
    return Error::invalid_argument("none of the " + std::to_string(rows.size()) +
                                   " measured configs is a legal config of the problem's space");
  // close_cache: the last entry's comma becomes the end of the cache and of the file.
  text.pop_back();
  text += "}\n}";
  if (header.space) out.space_configs = space->count();
  out.text = std::move(text);
  return out;
}

Result<std::string> read_maybe_gzipped(const std::string& path) {
  std::error_code ec;
  if (const auto type = std::filesystem::status(path, ec).type();
      type == std::filesystem::file_type::not_found)
    return Error::io(path + " does not exist");
  else if (type == std::filesystem::file_type::directory)
    return Error::invalid_argument(path + " is a directory, not a Kernel Tuner cache file");
  gzFile f = gzopen(path.c_str(), "rb");
  if (!f) return Error::io("cannot open '" + path + "'");
  std::string out;
  char buf[1 << 16];
  while (true) {
    int n = gzread(f, buf, sizeof buf);
    if (n < 0) {
      int code = 0;
      std::string msg = gzerror(f, &code);
      gzclose(f);
      return Error::invalid_argument("'" + path + "' is a damaged gzip file (" + msg + ")");
    }
    if (n == 0) break;
    out.append(buf, static_cast<std::size_t>(n));
  }
  int code = 0;
  const char* msg = gzerror(f, &code);
  std::string m = msg ? msg : "";
  int rc = gzclose(f);
  // A gzip stream cut short reads as a clean end with Z_BUF_ERROR pending.
  if (code != Z_OK && code != Z_STREAM_END)
    return Error::invalid_argument("'" + path + "' is a damaged gzip file (" + m + ")");
  if (rc == Z_BUF_ERROR) return Error::invalid_argument("'" + path + "' is a truncated gzip file");
  if (rc != Z_OK) return Error::io("reading '" + path + "' failed");
  return out;
}

Result<RecordedSpace> load_kernel_tuner_cache(const std::string& path) {
  ATTUNE_ASSIGN(std::string text, read_maybe_gzipped(path));
  auto rs = parse_kernel_tuner_cache(text);
  if (!rs) return rs.error().with_context(path);
  return rs;
}

}  // namespace attune::replay
