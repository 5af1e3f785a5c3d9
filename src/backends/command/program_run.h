// One run of one provider with one assignment of its knobs, in a fresh work directory, classified
// (crash, signal, timeout, telltale, no throughput) with its throughput and normalised-output
// digest; and how such a rejection is written into a common Outcome (a Verdict, the reason in
// front of the message) and read back from one. Keeps no state: safe from any thread.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "backends/command/stack_file.h"
#include "core/error.h"
#include "core/measurement.h"
#include "core/verdict.h"
#include "platform/process.h"

namespace attune::command {

// The correctness gate's metric, as stored with each compared candidate: 1 when the normalised
// output's digest differs from the baseline's, 0 when it is the same.
inline constexpr const char* kDigestCheck = "output_digest_differs";

// Why a candidate is not eligible: the reason of its Verdict. Stored as the first word of the
// Outcome's message and written to tuned files by these names; never rename.
enum class Rejection {
  kCrash,          // exited non-zero, or could not be started
  kSignal,         // died by a signal
  kTimeout,        // passed the provider's timeout_s; its process group was killed
  kTelltale,       // printed a telltale (stdout or stderr), whatever its exit status
  kOutputChanged,  // its normalised output differs from the baseline's
  kNoThroughput,   // exited 0 but the throughput regex found no number on stdout
};

std::string_view to_string(Rejection r);
std::optional<Rejection> rejection_from_string(std::string_view s);
// How the tuning database stores a rejection: crash, signal, telltale and no_throughput are
// crashed; timeout is timeout; output_changed is wrong_output.
Verdict verdict_of(Rejection r);
// The Outcome of a rejected candidate: verdict_of(r), message "REASON: DETAIL" (an output that
// changed also carries the digest check that failed).
Outcome rejected(Rejection r, const std::string& detail);
// The reason and detail back from a message rejected() wrote; nullopt for any other message.
std::optional<std::pair<Rejection, std::string>> rejection_of(const std::string& message);

struct RunOutcome {
  std::optional<Rejection>
      rejection;           // nullopt: the run is clean (its output still to be compared)
  std::string detail;      // one line: "exit code 3", "telltale 'X' in stderr"
  double throughput = 0;   // records per second
  std::string digest;      // 16 hex digits of the normalised output
  std::string normalized;  // the normalised output itself, to show where it differs
  platform::ProcessResult process;
};

struct RunRequest {
  const Provider* provider = nullptr;
  Point point;
  std::vector<std::string> telltales;
  std::string sample;   // the sample file {sample} names (absolute)
  int records = 0;      // records in the sample
  std::string workdir;  // a fresh, empty directory {workdir} names (absolute)
};

// Runs once. The Result is an error only when attune itself fails (pipes, a bad template).
Result<RunOutcome> run_once(const RunRequest& request);

// The output as the correctness gate compares it. With json_fields, the output is read as one JSON
// document or as JSON lines and each object keeps only those fields (missing ones are null); an
// output that is not JSON is an error. On stdout, lines the throughput regex matches are dropped
// first (they carry timings, which differ on every run).
Result<std::string> normalize_output(const Provider& provider, const std::string& output);

// Where a normalised output first differs from the baseline's, for a person to read:
// "line 8: '{"id":8,"norm":8.14}', the baseline has '{"id":8,"norm":8.142857}'". Long lines are
// cut; "" when the two are equal.
std::string first_difference(const std::string& got, const std::string& baseline);

}  // namespace attune::command
