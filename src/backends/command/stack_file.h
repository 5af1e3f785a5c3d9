// The stack file: a program's providers, their commands, knobs, defaults, sample, throughput and
// output rules, read from YAML and checked whole before anything runs. Every error names the file
// and line. A loaded StackFile is an immutable value: safe to share between threads.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/config.h"
#include "core/error.h"
#include "core/space.h"

namespace attune::command {

struct SampleSpec {
  std::string file;   // absolute path of the records file (one record per line)
  int records = 0;    // how many records {sample} holds (default: every record in the file)
  int available = 0;  // records in the file
};

struct ThroughputSpec {
  enum class Kind { kRecordsPerSecond, kRegex };
  Kind kind = Kind::kRecordsPerSecond;  // default: records / wall time of the run
  std::string regex;                    // kRegex: group 1 of the first match on stdout
};

struct OutputSpec {
  bool from_stdout = true;               // default: the output is stdout
  std::string file;                      // else a file path template ("{workdir}/out.json")
  std::vector<std::string> json_fields;  // normalize: keep only these fields of each JSON record
};

struct Provider {
  std::string name;
  int line = 0;                            // where the provider starts in the stack file
  std::vector<std::string> command;        // argv templates with {knob}, {sample}, {workdir}
  std::map<std::string, std::string> env;  // value templates
  Space space;                             // the knobs, baseline = defaults, with constraints
  std::vector<std::vector<std::string>> option_text;  // per knob, the options as written
  SampleSpec sample;
  ThroughputSpec throughput;
  OutputSpec output;
  double timeout_s = 300;  // per run; default 300 s
  std::string stack_dir;   // commands run here; relative programs resolve here

  // The program argv[0] names (its template with the defaults filled in).
  std::string program() const;
  // Placeholder values of a config: every knob as written in the file, plus sample and workdir.
  std::map<std::string, std::string> vars(const Point& point, const std::string& sample,
                                          const std::string& workdir) const;
  // The knobs whose value differs from the defaults.
  int changed_knobs(const Point& point) const;
  // The point of a knob assignment given as text ("batch_size" -> "16"); missing knobs keep their
  // defaults. Unknown knobs or values are errors.
  Result<Point> overlay(const std::map<std::string, std::string>& knobs) const;
};

struct StackFile {
  std::string path;  // as the user named it
  std::string dir;   // absolute directory of the file: commands run here
  std::string name;
  std::vector<std::string> telltales;  // output text that means a crash
  std::vector<Provider> providers;

  const Provider* provider(const std::string& name) const;
  // The programs the providers run (argv[0] as written), for the host fingerprint.
  std::vector<std::string> programs() const;
};

// Reads and checks a stack file: unknown keys, knobs with no values, defaults outside a knob's
// values, unknown placeholders, a missing sample file or program are invalid_argument errors
// worded "PATH:LINE: what is wrong".
Result<StackFile> load_stack(const std::string& path);

// Fills "{name}" placeholders from vars; "{{" and "}}" stand for literal braces. An unknown name
// is an error naming it.
Result<std::string> substitute(const std::string& tmpl,
                               const std::map<std::string, std::string>& vars);

// Writes the first `records` lines of the sample file to `dest`.
Status write_sample(const SampleSpec& sample, int records, const std::string& dest);

}  // namespace attune::command
