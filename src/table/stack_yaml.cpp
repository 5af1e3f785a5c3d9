#include "table/stack_yaml.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <filesystem>

namespace attune::table {

namespace {

namespace fs = std::filesystem;

Error bad(const std::string& path, const YAML::Node& n, const std::string& what) {
  int line = n.Mark().is_null() ? 1 : n.Mark().line + 1;
  return Error::invalid_argument(fmt::format("{}:{}: {}", path, line, what));
}

std::optional<std::string> optional_scalar(const YAML::Node& n) {
  if (!n || n.IsNull()) return std::nullopt;
  return n.Scalar();
}

}  // namespace

const Row* stack_row(const Table& table, const StackProviderNotes& provider) {
  const OpTable* ops = table.find(provider.problem.op(), dtype_of(provider.problem));
  return ops ? match(*ops, provider.problem) : nullptr;
}

std::string stack_status(const Table& table, const StackProviderNotes& provider) {
  const Row* row = stack_row(table, provider);
  if (!row) return "baseline_failed";
  return row->config == row->baseline_config ? "baseline" : "tuned";
}

Result<std::string> to_stack_yaml(const Table& table, const StackNotes& r) {
  for (const auto& op : table.ops)
    for (const auto& row : op.rows) {
      if (!(row.median_us > 0) || row.median_us > row.baseline_us)
        return Error::invalid_argument(
            fmt::format("{}: {} is slower than its baseline", row.problem.name(), row.config));
      if (row.error.metric.empty() || !(row.error.value <= row.error.tolerance))
        return Error::invalid_argument(fmt::format("{}: {} did not pass the correctness gate",
                                                   row.problem.name(), row.config));
    }
  YAML::Emitter e;
  e.SetDoublePrecision(6);
  e << YAML::Comment("attune stack tune: the tuned knobs for this machine.") << YAML::Newline
    << YAML::Comment(
           "`attune stack run STACK --tuned THIS_FILE` applies them only where the "
           "fingerprint matches.")
    << YAML::Newline;
  e << YAML::BeginMap;
  e << YAML::Key << "stack" << YAML::Value << r.stack;
  e << YAML::Key << "attune_version" << YAML::Value << table.attune_version;
  e << YAML::Key << "seed" << YAML::Value << r.seed;
  e << YAML::Key << "repeats" << YAML::Value << r.repeats;

  const platform::HostFingerprint& f = r.host;
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
    const Row* row = stack_row(table, p);
    e << YAML::BeginMap;
    e << YAML::Key << "name" << YAML::Value << p.name;
    e << YAML::Key << "status" << YAML::Value << stack_status(table, p);
    e << YAML::Key << "knobs" << YAML::Value << YAML::Flow << YAML::BeginMap;
    for (const auto& [k, v] : p.knobs)
      e << YAML::Key << k << YAML::Value << YAML::DoubleQuoted << v;
    e << YAML::EndMap;
    e << YAML::Key << "config" << YAML::Value << (row ? row->config : p.baseline_config);
    e << YAML::Key << "records" << YAML::Value << p.records;
    if (!row) {
      e << YAML::Key << "baseline_failure" << YAML::Value << p.baseline_failure;
    } else {
      // Throughput, as the stack file speaks: the rows hold microseconds per record.
      e << YAML::Key << "baseline_records_per_second" << YAML::Value << 1e6 / row->baseline_us;
      e << YAML::Key << "tuned_records_per_second" << YAML::Value << 1e6 / row->median_us;
      e << YAML::Key << "speedup" << YAML::Value << row->baseline_us / row->median_us;
    }
    e << YAML::Key << "evaluated" << YAML::Value << p.evaluated;
    e << YAML::Key << "rejected" << YAML::Value << YAML::BeginSeq;
    for (const StackRejection& c : p.rejected) {
      e << YAML::BeginMap;
      e << YAML::Key << "config" << YAML::Value << c.config;
      e << YAML::Key << "reason" << YAML::Value << c.reason;
      e << YAML::Key << "detail" << YAML::Value << c.detail;
      e << YAML::EndMap;
    }
    e << YAML::EndSeq;
    e << YAML::EndMap;
  }
  e << YAML::EndSeq << YAML::EndMap;
  return std::string(e.c_str()) + "\n";
}

const TunedProvider* TunedStack::provider(const std::string& name) const {
  for (const auto& p : providers)
    if (p.name == name) return &p;
  return nullptr;
}

Result<TunedStack> load_tuned_stack(const std::string& path) {
  TunedStack t;
  t.path = path;
  std::error_code ec;
  if (!fs::is_regular_file(path, ec))
    return Error::invalid_argument(path + (fs::is_directory(path, ec)
                                               ? ": the tuned file is a directory; give its .yaml"
                                               : ":1: the tuned file does not exist"));
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
      std::vector<platform::GpuInfo> gpus;
      for (const auto& g : f["gpus"]) {
        platform::GpuInfo info;
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

}  // namespace attune::table
