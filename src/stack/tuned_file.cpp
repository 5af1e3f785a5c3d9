#include "stack/tuned_file.h"

#include <fmt/format.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <fstream>

#ifndef ATTUNE_VERSION
#define ATTUNE_VERSION "unknown"
#endif

namespace attune::stack {

namespace {

namespace fs = std::filesystem;

const char* status_of(const ProviderResult& p) {
  if (!p.baseline_ok) return "baseline_failed";
  return p.winner.order == p.baseline.order ? "baseline" : "tuned";
}

// A provider without knobs has one config, whose canonical text is empty.
std::string shown(const std::string& label) { return label.empty() ? "(no knobs)" : label; }

std::string join_changed(const ProviderResult& p) {
  std::string out;
  for (std::size_t i = 0; i < p.winner.knobs.size(); ++i)
    if (p.winner.point[i] != p.baseline.point[i])
      out += fmt::format("{}{}={}", out.empty() ? "" : ", ", p.winner.knobs[i].first,
                         p.winner.knobs[i].second);
  return out.empty() ? "none" : out;
}

Error bad(const std::string& path, const YAML::Node& n, const std::string& what) {
  int line = n.Mark().is_null() ? 1 : n.Mark().line + 1;
  return Error::invalid_argument(fmt::format("{}:{}: {}", path, line, what));
}

std::optional<std::string> optional_scalar(const YAML::Node& n) {
  if (!n || n.IsNull()) return std::nullopt;
  return n.Scalar();
}

}  // namespace

std::string tuned_yaml(const TuneResult& r) {
  YAML::Emitter e;
  e.SetDoublePrecision(6);
  e << YAML::Comment("attune stack tune: the tuned knobs for this machine.") << YAML::Newline
    << YAML::Comment(
           "`attune stack run STACK --tuned THIS_FILE` applies them only where the "
           "fingerprint matches.")
    << YAML::Newline;
  e << YAML::BeginMap;
  e << YAML::Key << "stack" << YAML::Value << r.stack;
  e << YAML::Key << "attune_version" << YAML::Value << ATTUNE_VERSION;
  e << YAML::Key << "seed" << YAML::Value << r.seed;
  e << YAML::Key << "repeats" << YAML::Value << r.repeats;

  const HostFingerprint& f = r.fingerprint;
  e << YAML::Key << "fingerprint" << YAML::Value << YAML::BeginMap;
  e << YAML::Key << "cpu_model" << YAML::Value;
  if (f.cpu_model)
    e << *f.cpu_model;
  else
    e << YAML::Null;
  e << YAML::Key << "logical_cpus" << YAML::Value;
  if (f.logical_cpus)
    e << *f.logical_cpus;
  else
    e << YAML::Null;
  e << YAML::Key << "gpus" << YAML::Value;
  if (!f.gpus) {
    e << YAML::Null;
  } else {
    e << YAML::BeginSeq;
    for (const auto& g : *f.gpus)
      e << YAML::Flow << YAML::BeginMap << YAML::Key << "name" << YAML::Value << g.name << YAML::Key
        << "memory_mib" << YAML::Value << g.memory_mib << YAML::EndMap;
    e << YAML::EndSeq;
  }
  e << YAML::Key << "tools" << YAML::Value << YAML::BeginMap;
  for (const auto& [tool, version] : f.tools) {
    e << YAML::Key << tool << YAML::Value;
    if (version)
      e << *version;
    else
      e << YAML::Null;
  }
  e << YAML::EndMap << YAML::EndMap;

  e << YAML::Key << "providers" << YAML::Value << YAML::BeginSeq;
  for (const auto& p : r.providers) {
    e << YAML::BeginMap;
    e << YAML::Key << "name" << YAML::Value << p.name;
    e << YAML::Key << "status" << YAML::Value << status_of(p);
    e << YAML::Key << "knobs" << YAML::Value << YAML::Flow << YAML::BeginMap;
    for (const auto& [k, v] : p.winner.knobs)
      e << YAML::Key << k << YAML::Value << YAML::DoubleQuoted << v;
    e << YAML::EndMap;
    e << YAML::Key << "config" << YAML::Value << p.winner.label;
    e << YAML::Key << "records" << YAML::Value << p.records;
    if (!p.baseline_ok) {
      e << YAML::Key << "baseline_failure" << YAML::Value
        << std::string(to_string(*p.baseline.rejection)) + ": " + p.baseline.detail;
    } else {
      e << YAML::Key << "baseline_records_per_second" << YAML::Value << p.baseline.throughput;
      e << YAML::Key << "tuned_records_per_second" << YAML::Value << p.winner.throughput;
      e << YAML::Key << "speedup" << YAML::Value << p.speedup();
    }
    e << YAML::Key << "evaluated" << YAML::Value << p.candidates.size();
    e << YAML::Key << "rejected" << YAML::Value << YAML::BeginSeq;
    for (const CandidateResult* c : p.rejected()) {
      e << YAML::BeginMap;
      e << YAML::Key << "config" << YAML::Value << c->label;
      e << YAML::Key << "reason" << YAML::Value << std::string(to_string(*c->rejection));
      e << YAML::Key << "detail" << YAML::Value << c->detail;
      e << YAML::EndMap;
    }
    e << YAML::EndSeq;
    e << YAML::EndMap;
  }
  e << YAML::EndSeq << YAML::EndMap;
  return std::string(e.c_str()) + "\n";
}

Status write_tuned(const TuneResult& result, const std::string& path) {
  std::error_code ec;
  fs::path p(path);
  if (p.has_parent_path()) fs::create_directories(p.parent_path(), ec);
  if (ec) return Error::io("cannot create " + p.parent_path().string() + ": " + ec.message());
  std::string tmp = path + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << tuned_yaml(result);
    out.flush();
    if (!out) return Error::io("cannot write " + tmp);
  }
  fs::rename(tmp, path, ec);
  if (ec) {
    fs::remove(tmp, ec);
    return Error::io("cannot write " + path);
  }
  return Status::success();
}

nlohmann::json tuned_json(const TuneResult& r, const std::string& tuned_path) {
  const HostFingerprint& f = r.fingerprint;
  nlohmann::json fp = {
      {"cpu_model", f.cpu_model ? nlohmann::json(*f.cpu_model) : nlohmann::json()},
      {"logical_cpus", f.logical_cpus ? nlohmann::json(*f.logical_cpus) : nlohmann::json()},
      {"gpus", nlohmann::json()},
      {"tools", nlohmann::json::object()}};
  if (f.gpus) {
    fp["gpus"] = nlohmann::json::array();
    for (const auto& g : *f.gpus)
      fp["gpus"].push_back({{"name", g.name}, {"memory_mib", g.memory_mib}});
  }
  for (const auto& [tool, version] : f.tools)
    fp["tools"][tool] = version ? nlohmann::json(*version) : nlohmann::json();
  nlohmann::json providers = nlohmann::json::array();
  for (const auto& p : r.providers) {
    nlohmann::json rejected = nlohmann::json::array();
    for (const CandidateResult* c : p.rejected())
      rejected.push_back(
          {{"config", c->label}, {"reason", to_string(*c->rejection)}, {"detail", c->detail}});
    nlohmann::json knobs = nlohmann::json::object();
    for (const auto& [k, v] : p.winner.knobs) knobs[k] = v;
    providers.push_back(
        {{"provider", p.name},
         {"problem", p.problem.name()},
         {"structural_key", p.problem.structural_key()},
         {"status", status_of(p)},
         {"records", p.records},
         {"baseline",
          {{"config", p.baseline.label}, {"records_per_second", p.baseline.throughput}}},
         {"tuned",
          {{"config", p.winner.label},
           {"knobs", knobs},
           {"records_per_second", p.winner.throughput}}},
         {"speedup", p.speedup()},
         {"evaluated", p.candidates.size()},
         {"rejected", rejected}});
  }
  return {
      {"stack", r.stack},
      {"fingerprint", fp},
      {"device", r.fingerprint.device()},
      {"run", {{"id", r.run_id}, {"strategy", "grid"}, {"seed", r.seed}, {"repeats", r.repeats}}},
      {"tuned_file", tuned_path},
      {"providers", providers}};
}

std::string format_report(const TuneResult& r) {
  const HostFingerprint& f = r.fingerprint;
  std::string gpus = !f.gpus ? "absent" : f.gpus->empty() ? "none" : "";
  if (f.gpus)
    for (const auto& g : *f.gpus)
      gpus += fmt::format("{}{} ({} MiB)", gpus.empty() ? "" : ", ", g.name, g.memory_mib);
  std::string out = fmt::format(
      "stack {} on {} ({} logical CPUs), GPU: {}; seed {}, {} timed runs per candidate\n", r.stack,
      f.cpu_model.value_or("CPU model absent"),
      f.logical_cpus ? std::to_string(*f.logical_cpus) : "absent", gpus, r.seed, r.repeats);
  for (const auto& p : r.providers) {
    out +=
        fmt::format("provider {}: {} config(s) evaluated over {} records, {} rejected, status {}\n",
                    p.name, p.candidates.size(), p.records, p.rejected().size(), status_of(p));
    if (!p.baseline_ok) {
      out += fmt::format("  baseline  {}  FAILED {}: {}\n", shown(p.baseline.label),
                         to_string(*p.baseline.rejection), p.baseline.detail);
      out += "  ships its defaults; nothing else was run (no reference output)\n";
      continue;
    }
    out += fmt::format("  baseline  {}  {:.4g} records/s\n", shown(p.baseline.label),
                       p.baseline.throughput);
    out += fmt::format("  tuned     {}  {:.4g} records/s  speedup {:.2f}x  (changed: {})\n",
                       shown(p.winner.label), p.winner.throughput, p.speedup(), join_changed(p));
    for (const CandidateResult* c : p.rejected())
      out += fmt::format("  rejected  {}  {}: {}\n", shown(c->label), to_string(*c->rejection),
                         c->detail);
  }
  return out;
}

const TunedProvider* TunedFile::provider(const std::string& name) const {
  for (const auto& p : providers)
    if (p.name == name) return &p;
  return nullptr;
}

Result<TunedFile> load_tuned(const std::string& path) {
  TunedFile t;
  t.path = path;
  std::error_code ec;
  if (!fs::is_regular_file(path, ec))
    return Error::invalid_argument(path + ":1: the tuned file does not exist");
  try {
    YAML::Node root = YAML::LoadFile(path);
    if (!root.IsMap())
      return bad(path, root, "a tuned file is a map (written by attune stack tune)");
    if (!root["stack"] || !root["stack"].IsScalar())
      return bad(path, root, "the tuned file names no stack");
    t.stack = root["stack"].Scalar();
    YAML::Node f = root["fingerprint"];
    if (!f || !f.IsMap()) return bad(path, root, "the tuned file has no fingerprint");
    t.fingerprint.cpu_model = optional_scalar(f["cpu_model"]);
    if (f["logical_cpus"] && !f["logical_cpus"].IsNull()) {
      int n = 0;
      if (!YAML::convert<int>::decode(f["logical_cpus"], n))
        return bad(path, f["logical_cpus"], "logical_cpus must be a whole number");
      t.fingerprint.logical_cpus = n;
    }
    if (f["gpus"] && !f["gpus"].IsNull()) {
      if (!f["gpus"].IsSequence()) return bad(path, f["gpus"], "gpus must be a list or ~ (absent)");
      std::vector<GpuInfo> gpus;
      for (const auto& g : f["gpus"]) {
        GpuInfo info;
        if (!g.IsMap() || !g["name"] || !g["memory_mib"] ||
            !YAML::convert<std::uint64_t>::decode(g["memory_mib"], info.memory_mib))
          return bad(path, g, "a gpu is {name: ..., memory_mib: N}");
        info.name = g["name"].Scalar();
        gpus.push_back(std::move(info));
      }
      t.fingerprint.gpus = std::move(gpus);
    }
    if (f["tools"]) {
      if (!f["tools"].IsMap())
        return bad(path, f["tools"], "tools must be a map of program -> version");
      for (auto it = f["tools"].begin(); it != f["tools"].end(); ++it)
        t.fingerprint.tools[it->first.Scalar()] = optional_scalar(it->second);
    }
    YAML::Node ps = root["providers"];
    if (!ps || !ps.IsSequence()) return bad(path, root, "the tuned file has no providers list");
    for (const auto& p : ps) {
      TunedProvider tp;
      tp.line = p.Mark().line + 1;
      if (!p.IsMap() || !p["name"] || !p["knobs"] || !p["knobs"].IsMap())
        return bad(path, p, "a provider entry needs name and knobs");
      tp.name = p["name"].Scalar();
      for (auto it = p["knobs"].begin(); it != p["knobs"].end(); ++it) {
        if (!it->second.IsScalar())
          return bad(path, it->second, "a knob value must be a single value");
        tp.knobs[it->first.Scalar()] = it->second.Scalar();
      }
      t.providers.push_back(std::move(tp));
    }
  } catch (const YAML::Exception& e) {
    int line = e.mark.is_null() ? 1 : e.mark.line + 1;
    return Error::invalid_argument(fmt::format("{}:{}: not valid YAML: {}", path, line, e.msg));
  }
  return t;
}

}  // namespace attune::stack
