#include "backends/command/stack_file.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "core/expr.h"
#include "platform/process.h"

namespace attune::command {

namespace {

namespace fs = std::filesystem;

bool is_word(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](unsigned char c) {
    return std::isalnum(c) || c == '_' || c == '-' || c == '.';
  });
}

// Builds "PATH:LINE: message" errors for one file.
class Reader {
 public:
  explicit Reader(std::string path) : path_(std::move(path)) {}

  Error at(const YAML::Mark& mark, const std::string& what) const {
    int line = mark.is_null() ? 1 : mark.line + 1;
    return Error::invalid_argument(fmt::format("{}:{}: {}", path_, line, what));
  }
  Error at(const YAML::Node& node, const std::string& what) const { return at(node.Mark(), what); }

  Status keys(const YAML::Node& map, const std::vector<std::string>& allowed,
              const std::string& where) const {
    if (!map.IsMap()) return at(map, where + " must be a map");
    for (auto it = map.begin(); it != map.end(); ++it) {
      std::string key = it->first.Scalar();
      if (std::find(allowed.begin(), allowed.end(), key) == allowed.end()) {
        std::string list;
        for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
        return at(it->first, "unknown key '" + key + "' in " + where + " (allowed: " + list + ")");
      }
    }
    return Status::success();
  }

  Result<std::string> scalar(const YAML::Node& n, const std::string& what) const {
    if (!n.IsScalar()) return at(n, what + " must be a single value");
    return n.Scalar();
  }
  Result<double> number(const YAML::Node& n, const std::string& what) const {
    if (n.IsScalar()) {
      try {
        std::size_t used = 0;
        double d = std::stod(n.Scalar(), &used);
        if (used == n.Scalar().size()) return d;
      } catch (...) {
      }
    }
    return at(n, what + " must be a number");
  }
  Result<bool> boolean(const YAML::Node& n, const std::string& what) const {
    bool b = false;
    if (n.IsScalar() && YAML::convert<bool>::decode(n, b)) return b;
    return at(n, what + " must be true or false");
  }
  Result<std::vector<std::string>> scalars(const YAML::Node& n, const std::string& what) const {
    if (!n.IsSequence()) return at(n, what + " must be a list");
    std::vector<std::string> out;
    for (const auto& e : n) {
      if (!e.IsScalar()) return at(e, what + " must hold single values");
      out.push_back(e.Scalar());
    }
    return out;
  }

 private:
  std::string path_;
};

// Canonical text of a knob value as the config and database store it: "1.0" and "1" are one value.
std::string canonical(const std::string& written) {
  return Value::parse(written).text();
}

Result<int> count_records(const std::string& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) return Error::io("cannot read '" + file + "'");
  int n = 0;
  std::string line;
  while (std::getline(in, line))
    if (!line.empty() && line != "\r") ++n;
  return n;
}

Result<Provider> read_provider(const Reader& r, const YAML::Node& p, const std::string& dir,
                               std::set<std::string>& names) {
  Provider out;
  out.line = p.Mark().line + 1;
  out.stack_dir = dir;
  ATTUNE_TRY(r.keys(p,
                    {"name", "command", "env", "knobs", "defaults", "sample", "throughput",
                     "output", "timeout_s", "constraints"},
                    "a provider"));
  if (!p["name"]) return r.at(p, "a provider has no 'name'");
  ATTUNE_ASSIGN(out.name, r.scalar(p["name"], "name"));
  if (!is_word(out.name))
    return r.at(p["name"],
                "provider name '" + out.name + "' must be letters, digits, '_', '-' or '.'");
  if (!names.insert(out.name).second)
    return r.at(p["name"], "provider '" + out.name + "' is declared twice");
  const std::string where = "provider '" + out.name + "'";

  // Knobs, in file order, with their options as written.
  std::vector<Knob> knobs;
  std::vector<int> knob_lines;
  if (p["knobs"]) {
    const YAML::Node k = p["knobs"];
    if (!k.IsMap()) return r.at(k, where + ": knobs must be a map of knob -> list of values");
    for (auto it = k.begin(); it != k.end(); ++it) {
      Knob knob;
      knob.name = it->first.Scalar();
      // A copy: it->second refers into a temporary proxy, too short-lived for a range-for.
      const YAML::Node values = it->second;
      if (!values.IsSequence())
        return r.at(values, where + ": knob '" + knob.name + "' must be a list of values");
      if (values.size() == 0)
        return r.at(it->first, where + ": knob '" + knob.name + "' has no values");
      std::vector<std::string> written;
      std::set<std::string> seen;
      for (const auto& v : values) {
        if (!v.IsScalar() || v.Scalar().empty())
          return r.at(v,
                      where + ": knob '" + knob.name + "' values must be single, non-empty values");
        if (!seen.insert(canonical(v.Scalar())).second)
          return r.at(v, where + ": knob '" + knob.name + "' lists '" + v.Scalar() + "' twice");
        written.push_back(v.Scalar());
        knob.options.push_back(Value::parse(v.Scalar()));
      }
      out.option_text.push_back(std::move(written));
      knob_lines.push_back(it->first.Mark().line);
      knobs.push_back(std::move(knob));
    }
  }

  // Defaults: one value per knob, among its values.
  std::set<std::string> defaulted;
  if (p["defaults"]) {
    const YAML::Node d = p["defaults"];
    if (!d.IsMap()) return r.at(d, where + ": defaults must be a map of knob -> value");
    for (auto it = d.begin(); it != d.end(); ++it) {
      std::string name = it->first.Scalar();
      auto k =
          std::find_if(knobs.begin(), knobs.end(), [&](const Knob& x) { return x.name == name; });
      if (k == knobs.end())
        return r.at(it->first, where + ": defaults name '" + name + "', which is not a knob");
      ATTUNE_ASSIGN(std::string value, r.scalar(it->second, "default of '" + name + "'"));
      std::size_t idx = static_cast<std::size_t>(k - knobs.begin());
      const auto& written = out.option_text[idx];
      auto o = std::find_if(written.begin(), written.end(),
                            [&](const std::string& w) { return canonical(w) == canonical(value); });
      if (o == written.end()) {
        std::string list;
        for (const auto& w : written) list += (list.empty() ? "" : ", ") + w;
        return r.at(it->second, where + ": default '" + value + "' of knob '" + name +
                                    "' is not among its values [" + list + "]");
      }
      k->baseline = static_cast<std::size_t>(o - written.begin());
      defaulted.insert(name);
    }
  }
  for (std::size_t i = 0; i < knobs.size(); ++i) {
    if (defaulted.count(knobs[i].name)) continue;
    YAML::Mark mark;
    mark.line = knob_lines[i];
    return r.at(mark,
                where + ": knob '" + knobs[i].name + "' has no default (add it to 'defaults')");
  }

  std::vector<Constraint> constraints;
  if (p["constraints"]) {
    if (!p["constraints"].IsSequence())
      return r.at(p["constraints"], where + ": constraints must be a list");
    for (const auto& c : p["constraints"]) {
      ATTUNE_ASSIGN(std::string text, r.scalar(c, "a constraint"));
      auto parsed = parse_constraint(text, knobs);
      if (!parsed) return r.at(c, where + ": " + parsed.error().message());
      constraints.push_back(std::move(*parsed));
    }
  }
  const YAML::Mark knobs_mark = p["knobs"] ? p["knobs"].Mark() : p.Mark();
  auto space = Space::make(std::move(knobs), std::move(constraints));
  if (!space) return r.at(knobs_mark, where + ": " + space.error().message());
  out.space = std::move(*space);

  // Placeholders: every knob, the sample and the workdir. Checked with dummy values here.
  std::map<std::string, std::string> dummy{{"sample", "s"}, {"workdir", "w"}};
  for (const auto& k : out.space.knobs()) {
    if (k.name == "sample" || k.name == "workdir")
      return r.at(knobs_mark, where + ": a knob cannot be named '" + k.name +
                                  "' (it is a placeholder attune fills)");
    dummy[k.name] = "v";
  }
  auto check_template = [&](const YAML::Node& n, const std::string& text) -> Status {
    auto s = substitute(text, dummy);
    if (!s) return r.at(n, where + ": " + s.error().message());
    return Status::success();
  };

  if (!p["command"]) return r.at(p, where + " has no 'command'");
  ATTUNE_ASSIGN(out.command, r.scalars(p["command"], where + ": command"));
  if (out.command.empty()) return r.at(p["command"], where + ": command is empty");
  for (std::size_t i = 0; i < out.command.size(); ++i)
    ATTUNE_TRY(check_template(p["command"][i], out.command[i]));

  if (p["env"]) {
    const YAML::Node e = p["env"];
    if (!e.IsMap()) return r.at(e, where + ": env must be a map of NAME -> value");
    for (auto it = e.begin(); it != e.end(); ++it) {
      ATTUNE_ASSIGN(std::string value, r.scalar(it->second, "env " + it->first.Scalar()));
      ATTUNE_TRY(check_template(it->second, value));
      out.env[it->first.Scalar()] = value;
    }
  }

  if (!p["sample"]) return r.at(p, where + " has no 'sample' ({file: ..., records: N})");
  const YAML::Node s = p["sample"];
  ATTUNE_TRY(r.keys(s, {"file", "records"}, where + " sample"));
  if (!s["file"]) return r.at(s, where + ": sample has no 'file'");
  ATTUNE_ASSIGN(std::string sample_file, r.scalar(s["file"], "sample file"));
  fs::path sf(sample_file);
  if (sf.is_relative()) sf = fs::path(dir) / sf;
  std::error_code ec;
  if (!fs::is_regular_file(sf, ec))
    return r.at(s["file"], where + ": sample file '" + sample_file + "' " +
                               (fs::is_directory(sf, ec) ? "is a directory" : "does not exist") +
                               " (" + sf.lexically_normal().string() + ")");
  out.sample.file = sf.lexically_normal().string();
  auto available = count_records(out.sample.file);
  if (!available) return r.at(s["file"], where + ": " + available.error().message());
  out.sample.available = *available;
  out.sample.records = *available;
  if (s["records"]) {
    ATTUNE_ASSIGN(double n, r.number(s["records"], "records"));
    if (n < 1 || n != static_cast<int>(n))
      return r.at(s["records"], where + ": records must be a positive whole number");
    if (n > *available)
      return r.at(s["records"], fmt::format("{}: records asks for {} but '{}' holds {}", where,
                                            static_cast<int>(n), sample_file, *available));
    out.sample.records = static_cast<int>(n);
  }
  if (out.sample.records < 1)
    return r.at(s["file"], where + ": sample file '" + sample_file + "' holds no records");

  if (p["throughput"]) {
    const YAML::Node t = p["throughput"];
    if (t.IsScalar()) {
      if (t.Scalar() != "records_per_second")
        return r.at(t, where + ": throughput must be records_per_second or {regex: \"...\"}");
    } else {
      ATTUNE_TRY(r.keys(t, {"regex"}, where + " throughput"));
      if (!t["regex"]) return r.at(t, where + ": throughput needs 'regex'");
      ATTUNE_ASSIGN(out.throughput.regex, r.scalar(t["regex"], "throughput regex"));
      try {
        std::regex re(out.throughput.regex);
        if (re.mark_count() < 1)
          return r.at(t["regex"], where +
                                      ": throughput regex needs a group around the number, "
                                      "as in \"rps=([0-9.]+)\"");
      } catch (const std::regex_error& e) {
        return r.at(t["regex"], where + ": throughput regex does not compile: " + e.what());
      }
      out.throughput.kind = ThroughputSpec::Kind::kRegex;
    }
  }

  if (p["output"]) {
    const YAML::Node o = p["output"];
    ATTUNE_TRY(r.keys(o, {"stdout", "file", "normalize"}, where + " output"));
    bool use_stdout = false;
    if (o["stdout"]) {
      ATTUNE_ASSIGN(use_stdout, r.boolean(o["stdout"], "output stdout"));
    }
    if (o["file"]) {
      ATTUNE_ASSIGN(out.output.file, r.scalar(o["file"], "output file"));
    }
    if (use_stdout == !out.output.file.empty())
      return r.at(o, where + ": output must be either {stdout: true} or {file: \"...\"}");
    if (!out.output.file.empty()) ATTUNE_TRY(check_template(o["file"], out.output.file));
    out.output.from_stdout = use_stdout;
    if (o["normalize"]) {
      const YAML::Node n = o["normalize"];
      ATTUNE_TRY(r.keys(n, {"json_fields"}, where + " output normalize"));
      if (!n["json_fields"]) return r.at(n, where + ": normalize needs json_fields");
      ATTUNE_ASSIGN(out.output.json_fields, r.scalars(n["json_fields"], "json_fields"));
      if (out.output.json_fields.empty())
        return r.at(n["json_fields"], where + ": json_fields is empty");
    }
  }

  if (p["timeout_s"]) {
    ATTUNE_ASSIGN(out.timeout_s, r.number(p["timeout_s"], "timeout_s"));
    if (!(out.timeout_s > 0)) return r.at(p["timeout_s"], where + ": timeout_s must be positive");
  }

  // The program must exist: checked with the defaults filled in.
  auto program = platform::resolve_program(out.program(), dir);
  if (!program) return r.at(p["command"][0], where + ": " + program.error().message());
  return out;
}

}  // namespace

std::string Provider::program() const {
  auto s = substitute(command.at(0), vars(space.baseline(), "", ""));
  return s ? *s : command.at(0);
}

std::map<std::string, std::string> Provider::vars(const Point& point,
                                                  const std::string& sample_path,
                                                  const std::string& workdir) const {
  std::map<std::string, std::string> v{{"sample", sample_path}, {"workdir", workdir}};
  const auto& knobs = space.knobs();
  for (std::size_t i = 0; i < knobs.size() && i < point.size(); ++i)
    v[knobs[i].name] = option_text[i][point[i]];
  return v;
}

int Provider::changed_knobs(const Point& point) const {
  Point base = space.baseline();
  int n = 0;
  for (std::size_t i = 0; i < point.size(); ++i) n += point[i] != base[i];
  return n;
}

Result<Point> Provider::overlay(const std::map<std::string, std::string>& knobs) const {
  Point p = space.baseline();
  for (const auto& [name, value] : knobs) {
    auto i = space.index_of(name);
    if (!i)
      return Error::invalid_argument("provider '" + this->name + "' has no knob '" + name + "'");
    const auto& written = option_text[*i];
    auto o = std::find_if(written.begin(), written.end(),
                          [&](const std::string& w) { return canonical(w) == canonical(value); });
    if (o == written.end())
      return Error::invalid_argument("provider '" + this->name + "': knob '" + name +
                                     "' has no value '" + value + "'");
    p[*i] = static_cast<std::uint32_t>(o - written.begin());
  }
  if (!space.prefix_legal(p))
    return Error::invalid_argument("provider '" + this->name + "': knobs '" +
                                   space.config(p).text() + "' break a constraint");
  return p;
}

std::vector<std::string> StackFile::programs() const {
  std::vector<std::string> out;
  for (const auto& p : providers) out.push_back(p.program());
  return out;
}

const Provider* StackFile::provider(const std::string& n) const {
  for (const auto& p : providers)
    if (p.name == n) return &p;
  return nullptr;
}

Result<std::string> substitute(const std::string& tmpl,
                               const std::map<std::string, std::string>& vars) {
  std::string out;
  for (std::size_t i = 0; i < tmpl.size(); ++i) {
    char c = tmpl[i];
    if ((c == '{' || c == '}') && i + 1 < tmpl.size() && tmpl[i + 1] == c) {
      out += c;
      ++i;
      continue;
    }
    if (c == '}')
      return Error::invalid_argument("'" + tmpl + "' has a '}' without '{' (write '}}')");
    if (c != '{') {
      out += c;
      continue;
    }
    std::size_t end = tmpl.find('}', i);
    if (end == std::string::npos)
      return Error::invalid_argument("'" + tmpl + "' has a '{' without '}' (write '{{')");
    std::string name = tmpl.substr(i + 1, end - i - 1);
    auto it = vars.find(name);
    if (it == vars.end()) {
      std::string list;
      for (const auto& [k, v] : vars) list += (list.empty() ? "" : ", ") + k;
      return Error::invalid_argument("'" + tmpl + "' names placeholder {" + name +
                                     "}, which is not a knob, sample or workdir (known: " + list +
                                     ")");
    }
    out += it->second;
    i = end;
  }
  return out;
}

Status write_sample(const SampleSpec& sample, int records, const std::string& dest) {
  std::ifstream in(sample.file, std::ios::binary);
  if (!in) return Error::io("cannot read sample file '" + sample.file + "'");
  std::ofstream out(dest, std::ios::binary | std::ios::trunc);
  if (!out) return Error::io("cannot write '" + dest + "'");
  std::string line;
  int n = 0;
  while (n < records && std::getline(in, line)) {
    if (line.empty() || line == "\r") continue;
    out << line << '\n';
    ++n;
  }
  out.flush();
  if (!out) return Error::io("cannot write '" + dest + "'");
  return Status::success();
}

Result<StackFile> load_stack(const std::string& path) {
  Reader r(path);
  StackFile out;
  out.path = path;
  std::error_code ec;
  if (!fs::is_regular_file(path, ec))
    return Error::invalid_argument(path + (fs::is_directory(path, ec)
                                               ? ": the stack file is a directory; give its .yaml"
                                               : ":1: the stack file does not exist"));
  out.dir = fs::absolute(fs::path(path)).parent_path().lexically_normal().string();
  try {
    YAML::Node root = YAML::LoadFile(path);
    if (!root.IsMap())
      return r.at(root, "a stack file is a map with keys stack, telltales, providers");
    ATTUNE_TRY(r.keys(root, {"stack", "telltales", "providers"}, "the stack file"));
    if (!root["stack"]) return r.at(root, "the stack file has no 'stack' (its name)");
    ATTUNE_ASSIGN(out.name, r.scalar(root["stack"], "stack"));
    if (!is_word(out.name))
      return r.at(root["stack"],
                  "stack name '" + out.name + "' must be letters, digits, '_', '-' or '.'");
    if (root["telltales"]) {
      ATTUNE_ASSIGN(out.telltales, r.scalars(root["telltales"], "telltales"));
      for (std::size_t i = 0; i < out.telltales.size(); ++i)
        if (out.telltales[i].empty()) return r.at(root["telltales"][i], "a telltale is empty");
    }
    if (!root["providers"] || !root["providers"].IsSequence() || root["providers"].size() == 0)
      return r.at(root["providers"] ? root["providers"] : root,
                  "providers must be a non-empty list");
    std::set<std::string> names;
    for (const auto& p : root["providers"]) {
      ATTUNE_ASSIGN(Provider provider, read_provider(r, p, out.dir, names));
      out.providers.push_back(std::move(provider));
    }
  } catch (const YAML::Exception& e) {
    return r.at(e.mark, "not valid YAML: " + e.msg);
  }
  return out;
}

}  // namespace attune::command
