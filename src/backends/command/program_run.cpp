#include "backends/command/program_run.h"

#include <fmt/format.h>
#include <signal.h>

#include <array>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>

#include "core/hash.h"

namespace attune::command {

namespace {

constexpr std::array<std::pair<Rejection, std::string_view>, 6> kNames = {{
    {Rejection::kCrash, "crash"},
    {Rejection::kSignal, "signal"},
    {Rejection::kTimeout, "timeout"},
    {Rejection::kTelltale, "telltale"},
    {Rejection::kOutputChanged, "output_changed"},
    {Rejection::kNoThroughput, "no_throughput"},
}};

nlohmann::json keep_fields(const nlohmann::json& j, const std::vector<std::string>& fields) {
  if (j.is_array()) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& e : j) out.push_back(keep_fields(e, fields));
    return out;
  }
  if (!j.is_object()) return j;
  // An array of [field, value] pairs keeps the order json_fields gives.
  nlohmann::json out = nlohmann::json::array();
  for (const auto& f : fields) out.push_back({f, j.contains(f) ? j.at(f) : nlohmann::json()});
  return out;
}

std::string tail(const std::string& s) {
  std::string t = s.size() > 200 ? s.substr(s.size() - 200) : s;
  for (char& c : t)
    if (c == '\n' || c == '\r') c = ' ';
  return t;
}

}  // namespace

std::string_view to_string(Rejection r) {
  for (const auto& [k, n] : kNames)
    if (k == r) return n;
  return "crash";
}

std::optional<Rejection> rejection_from_string(std::string_view s) {
  for (const auto& [k, n] : kNames)
    if (n == s) return k;
  return std::nullopt;
}

Verdict verdict_of(Rejection r) {
  switch (r) {
    case Rejection::kTimeout:
      return Verdict::kTimeout;
    case Rejection::kOutputChanged:
      return Verdict::kWrongOutput;
    default:
      return Verdict::kCrashed;
  }
}

Outcome rejected(Rejection r, const std::string& detail) {
  Outcome o = Outcome::failed(verdict_of(r), std::string(to_string(r)) + ": " + detail);
  if (r == Rejection::kOutputChanged) o.check = ErrorCheck{kDigestCheck, 1, 0};
  return o;
}

std::optional<std::pair<Rejection, std::string>> rejection_of(const std::string& message) {
  auto colon = message.find(": ");
  if (colon == std::string::npos) return std::nullopt;
  auto r = rejection_from_string(std::string_view(message).substr(0, colon));
  if (!r) return std::nullopt;
  return std::make_pair(*r, message.substr(colon + 2));
}

Result<std::string> normalize_output(const Provider& provider, const std::string& output) {
  std::string text = output;
  if (provider.output.from_stdout && provider.throughput.kind == ThroughputSpec::Kind::kRegex) {
    std::regex re(provider.throughput.regex);
    std::istringstream in(output);
    std::string line;
    text.clear();
    while (std::getline(in, line))
      if (!std::regex_search(line, re)) text += line + "\n";
  }
  if (provider.output.json_fields.empty()) return text;

  nlohmann::json doc = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!doc.is_discarded()) return keep_fields(doc, provider.output.json_fields).dump();
  std::string out;
  std::istringstream in(text);
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    ++n;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_discarded())
      return Error::invalid_argument(
          fmt::format("output line {} is not JSON: '{}'", n, tail(line)));
    out += keep_fields(j, provider.output.json_fields).dump() + "\n";
  }
  return out;
}

std::string first_difference(const std::string& got, const std::string& baseline) {
  if (got == baseline) return "";
  auto cut = [](std::string line) {
    if (line.size() > 80) line = line.substr(0, 77) + "...";
    return line;
  };
  std::istringstream a(got), b(baseline);
  std::string la, lb;
  for (int n = 1;; ++n) {
    bool ha = static_cast<bool>(std::getline(a, la));
    bool hb = static_cast<bool>(std::getline(b, lb));
    if (!ha && !hb) return "they differ only in line endings";
    if (!hb) return fmt::format("line {}: '{}' is extra (the baseline ends before it)", n, cut(la));
    if (!ha) return fmt::format("line {}: missing (the baseline has '{}')", n, cut(lb));
    if (la != lb) return fmt::format("line {}: '{}', the baseline has '{}'", n, cut(la), cut(lb));
  }
}

Result<RunOutcome> run_once(const RunRequest& req) {
  const Provider& p = *req.provider;
  auto vars = p.vars(req.point, req.sample, req.workdir);
  platform::ProcessSpec spec;
  for (const auto& t : p.command) {
    ATTUNE_ASSIGN(std::string arg, substitute(t, vars));
    spec.argv.push_back(std::move(arg));
  }
  for (const auto& [k, t] : p.env) {
    ATTUNE_ASSIGN(spec.env[k], substitute(t, vars));
  }
  // A relative program path is written relative to the stack file; the run starts there too.
  auto program = platform::resolve_program(spec.argv[0], p.stack_dir);
  if (program) spec.argv[0] = *program;
  spec.cwd = p.stack_dir;
  spec.timeout = std::chrono::milliseconds(static_cast<long long>(p.timeout_s * 1000));

  RunOutcome out;
  ATTUNE_ASSIGN(out.process, platform::run_process(spec));
  const platform::ProcessResult& r = out.process;
  if (!r.spawned) {
    out.rejection = Rejection::kCrash;
    out.detail = r.spawn_error;
    return out;
  }
  if (r.timed_out) {
    out.rejection = Rejection::kTimeout;
    out.detail =
        fmt::format("no exit within timeout_s {}; its process group was killed", p.timeout_s);
    return out;
  }
  if (r.signaled) {
    out.rejection = Rejection::kSignal;
    const char* name = ::sigabbrev_np(r.signal);
    out.detail = fmt::format("killed by signal {} (SIG{})", r.signal, name ? name : "?");
    return out;
  }
  for (const auto& t : req.telltales) {
    const char* where = r.out.find(t) != std::string::npos   ? "stdout"
                        : r.err.find(t) != std::string::npos ? "stderr"
                                                             : nullptr;
    if (!where) continue;
    out.rejection = Rejection::kTelltale;
    out.detail = fmt::format("telltale '{}' in {} (exit code {})", t, where, r.exit_code);
    return out;
  }
  if (r.exit_code != 0) {
    out.rejection = Rejection::kCrash;
    out.detail = fmt::format("exit code {}; stderr: '{}'", r.exit_code, tail(r.err));
    return out;
  }

  if (p.throughput.kind == ThroughputSpec::Kind::kRegex) {
    std::smatch m;
    std::regex re(p.throughput.regex);
    double value = 0;
    bool found = std::regex_search(r.out, m, re) && m.size() > 1;
    if (found) {
      try {
        value = std::stod(m[1].str());
      } catch (...) {
        found = false;
      }
    }
    if (!found || !(value > 0)) {
      out.rejection = Rejection::kNoThroughput;
      out.detail =
          "throughput regex '" + p.throughput.regex + "' found no positive number on stdout";
      return out;
    }
    out.throughput = value;
  } else {
    out.throughput = r.wall_s > 0 ? req.records / r.wall_s : 0;
  }

  std::string output;
  if (p.output.from_stdout) {
    output = r.out;
  } else {
    ATTUNE_ASSIGN(std::string file, substitute(p.output.file, vars));
    std::ifstream in(file, std::ios::binary);
    if (!in) {
      out.rejection = Rejection::kOutputChanged;
      out.detail = "it wrote no output file " + file;
      return out;
    }
    std::ostringstream s;
    s << in.rdbuf();
    output = s.str();
  }
  auto normalized = normalize_output(p, output);
  if (!normalized) {
    out.rejection = Rejection::kOutputChanged;
    out.detail = normalized.error().message();
    return out;
  }
  out.digest = hex64(fnv1a64(*normalized));
  out.normalized = std::move(*normalized);
  return out;
}

}  // namespace attune::command
