// The tuned stack file (tuned/<device-slug>.yaml): a Table of a stack's providers rendered as the
// YAML `attune stack run` reads. The rows (one per provider whose baseline passed: the winning
// config, its time and the baseline's, in microseconds per record) come from the Table; what only
// a stack tune knows (the host's fingerprint in full, knobs as written, rejections with their
// reasons) from StackNotes. Pure functions, except the loader, which reads the file named.
// Thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "core/error.h"
#include "platform/host.h"
#include "table/table.h"

namespace attune::table {

struct StackRejection {
  std::string config;  // canonical config text
  std::string reason;  // crash, signal, timeout, telltale, output_changed, no_throughput
  std::string detail;
};

struct StackProviderNotes {
  std::string name;
  Problem problem;  // a row of the table answers it unless the baseline failed
  int records = 0;
  std::string baseline_config;
  // The shipped config's knobs as the stack file writes them (the row's, else the baseline's).
  std::vector<std::pair<std::string, std::string>> knobs;
  std::string baseline_failure;  // "REASON: DETAIL" when the baseline failed; "" otherwise
  std::int64_t evaluated = 0;
  std::vector<StackRejection> rejected;  // in the space's enumeration order
};

struct StackNotes {
  std::string stack;
  std::uint64_t seed = 0;
  int repeats = 0;
  platform::HostFingerprint host;  // the table's device is host.device()
  std::vector<StackProviderNotes> providers;
};

// The table's row for a provider, or nullptr (its baseline failed).
const Row* stack_row(const Table& table, const StackProviderNotes& provider);
// "tuned", "baseline" (no change was faster and passed) or "baseline_failed".
std::string stack_status(const Table& table, const StackProviderNotes& provider);

// The YAML text. An error when a row is slower than its baseline or did not pass the gate (a
// tuned file never ships such a row).
Result<std::string> to_stack_yaml(const Table& table, const StackNotes& notes);

// What `stack run` needs from a tuned file.
struct TunedProvider {
  std::string name;
  std::map<std::string, std::string> knobs;  // the winning knobs as written
  int line = 0;
};

struct TunedStack {
  std::string path;
  std::string stack;
  platform::HostFingerprint fingerprint;
  std::vector<TunedProvider> providers;
  const TunedProvider* provider(const std::string& name) const;
};

// Reads a tuned file; a malformed one is an invalid_argument error worded "PATH:LINE: what is
// wrong".
Result<TunedStack> load_tuned_stack(const std::string& path);

}  // namespace attune::table
