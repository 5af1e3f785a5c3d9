// The tuned file a stack tune writes (tuned/<device-slug>.yaml): the machine's fingerprint and,
// per provider, the winning knobs, baseline and tuned throughput, speedup and every rejected
// candidate with its reason; plus the same as a text report. Pure functions over values, except
// write_tuned and load_tuned, which touch only the file they name. Thread-safe.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/error.h"
#include "stack/fingerprint.h"
#include "stack/tune.h"

namespace attune::stack {

// The YAML text of a tune result.
std::string tuned_yaml(const TuneResult& result);
// Writes tuned_yaml to path (parent directories created; written to a temporary file and renamed
// so a reader never sees half a file).
Status write_tuned(const TuneResult& result, const std::string& path);
// The same as JSON (the --json report), with the tuned file's path.
nlohmann::json tuned_json(const TuneResult& result, const std::string& tuned_path);
// The human report: per provider baseline -> tuned, speedup, winning knobs, rejections.
std::string format_report(const TuneResult& result);

struct TunedProvider {
  std::string name;
  std::map<std::string, std::string> knobs;  // the winning knobs as written
  int line = 0;
};

struct TunedFile {
  std::string path;
  std::string stack;
  HostFingerprint fingerprint;
  std::vector<TunedProvider> providers;
  const TunedProvider* provider(const std::string& name) const;
};

// Reads what `stack run` needs from a tuned file; malformed files are invalid_argument errors
// worded "PATH:LINE: what is wrong".
Result<TunedFile> load_tuned(const std::string& path);

}  // namespace attune::stack
