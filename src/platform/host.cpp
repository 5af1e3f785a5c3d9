#include "platform/host.h"

#include <fmt/format.h>
#include <sys/utsname.h>

#include <cctype>
#include <fstream>
#include <sstream>

#include "platform/process.h"

namespace attune::platform {

namespace {

std::string trim(const std::string& s) {
  std::size_t b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return "";
  std::size_t e = s.find_last_not_of(" \t\r\n");
  return s.substr(b, e - b + 1);
}

std::string first_line(const std::string& text) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line))
    if (!trim(line).empty()) return trim(line);
  return "";
}

std::optional<std::vector<GpuInfo>> probe_gpus(const std::string& nvidia_smi) {
  auto program = resolve_program(nvidia_smi, ".");
  if (!program) return std::nullopt;
  ProcessSpec spec;
  spec.argv = {*program, "--query-gpu=name,memory.total", "--format=csv,noheader,nounits"};
  spec.timeout = std::chrono::seconds(20);
  auto r = run_process(spec);
  if (!r || !r->spawned || r->timed_out || r->signaled || r->exit_code != 0) return std::nullopt;
  std::vector<GpuInfo> gpus;
  std::istringstream in(r->out);
  std::string line;
  while (std::getline(in, line)) {
    if (trim(line).empty()) continue;
    auto comma = line.rfind(',');
    if (comma == std::string::npos) return std::nullopt;  // not the format we asked for
    GpuInfo g;
    g.name = trim(line.substr(0, comma));
    try {
      g.memory_mib = std::stoull(trim(line.substr(comma + 1)));
    } catch (...) {
      return std::nullopt;
    }
    gpus.push_back(std::move(g));
  }
  return gpus;
}

std::optional<std::string> probe_version(const std::string& program, const std::string& dir) {
  auto path = resolve_program(program, dir);
  if (!path) return std::nullopt;
  ProcessSpec spec;
  spec.argv = {*path, "--version"};
  spec.cwd = dir;
  spec.timeout = std::chrono::seconds(10);
  auto r = run_process(spec);
  if (!r || !r->spawned || r->timed_out || r->signaled || r->exit_code != 0) return std::nullopt;
  std::string line = first_line(r->out);
  if (line.empty()) line = first_line(r->err);  // some tools (python2, java) answer on stderr
  if (line.empty()) return std::nullopt;
  return line;
}

std::string show(const std::optional<std::string>& s) {
  return s ? "'" + *s + "'" : "absent";
}

std::string show_gpus(const std::optional<std::vector<GpuInfo>>& g) {
  if (!g) return "absent";
  if (g->empty()) return "none";
  std::string out;
  for (const auto& x : *g)
    out += fmt::format("{}{} ({} MiB)", out.empty() ? "" : ", ", x.name, x.memory_mib);
  return out;
}

}  // namespace

HostFingerprint probe_host(const std::vector<std::string>& programs, const std::string& dir,
                           const ProbeOptions& options) {
  HostFingerprint f;
  std::ifstream in(options.cpuinfo);
  std::string line;
  int processors = 0;
  while (std::getline(in, line)) {
    auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string key = trim(line.substr(0, colon));
    if (key == "processor") ++processors;
    if (key == "model name" && !f.cpu_model) f.cpu_model = trim(line.substr(colon + 1));
  }
  if (processors > 0) f.logical_cpus = processors;
  f.gpus = probe_gpus(options.nvidia_smi);
  for (const auto& program : programs)
    if (!f.tools.count(program)) f.tools[program] = probe_version(program, dir);
  return f;
}

std::string HostFingerprint::slug() const {
  std::string base =
      gpus && !gpus->empty() ? gpus->front().name : cpu_model.value_or("unknown-cpu");
  std::string s;
  for (char c : base) {
    unsigned char u = static_cast<unsigned char>(c);
    if (std::isalnum(u))
      s += static_cast<char>(std::tolower(u));
    else if (!s.empty() && s.back() != '-')
      s += '-';
  }
  while (!s.empty() && s.back() == '-') s.pop_back();
  if (logical_cpus) s += fmt::format("-{}cpu", *logical_cpus);
  return s;
}

DeviceFingerprint HostFingerprint::device() const {
  DeviceFingerprint d;
  d.backend = "host";
  d.name = cpu_model.value_or("absent");
  std::uint64_t gpu_mib = 0;
  if (gpus)
    for (const auto& g : *gpus) {
      d.name += " / " + g.name;
      gpu_mib += g.memory_mib;
    }
  struct utsname u;
  if (::uname(&u) == 0) d.arch = u.machine;
  d.sm_count = logical_cpus.value_or(0);
  d.memory_bytes = gpu_mib * 1024 * 1024;
  d.extra["cpu_model"] = cpu_model.value_or("absent");
  d.extra["logical_cpus"] = logical_cpus ? std::to_string(*logical_cpus) : "absent";
  d.extra["gpus"] = show_gpus(gpus);
  for (const auto& [tool, version] : tools) d.extra["tool:" + tool] = version.value_or("absent");
  return d;
}

std::vector<std::string> fingerprint_differences(const HostFingerprint& recorded,
                                                 const HostFingerprint& here) {
  std::vector<std::string> out;
  if (recorded.cpu_model != here.cpu_model)
    out.push_back("cpu_model: " + show(recorded.cpu_model) + " recorded, " + show(here.cpu_model) +
                  " here");
  if (recorded.logical_cpus != here.logical_cpus) {
    auto n = [](const std::optional<int>& v) {
      return v ? std::to_string(*v) : std::string("absent");
    };
    out.push_back("logical_cpus: " + n(recorded.logical_cpus) + " recorded, " +
                  n(here.logical_cpus) + " here");
  }
  if (recorded.gpus != here.gpus)
    out.push_back("gpus: " + show_gpus(recorded.gpus) + " recorded, " + show_gpus(here.gpus) +
                  " here");
  for (const auto& [tool, version] : recorded.tools) {
    auto it = here.tools.find(tool);
    std::optional<std::string> now = it == here.tools.end() ? std::nullopt : it->second;
    if (it == here.tools.end() || now != version)
      out.push_back("tool " + tool + ": " + show(version) + " recorded, " + show(now) + " here");
  }
  for (const auto& [tool, version] : here.tools)
    if (!recorded.tools.count(tool))
      out.push_back("tool " + tool + ": not recorded, " + show(version) + " here");
  return out;
}

}  // namespace attune::platform
