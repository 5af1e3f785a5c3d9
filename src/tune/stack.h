// `attune stack tune` on the one Tuner: the command backend serves a stack's providers (one
// Problem each), the Tuner runs its strategy over them with patience, shards, answers from the
// store and the drift anchor, and the result becomes a Table with its stack notes (the tuned
// file, table/stack_yaml.h) and a report. One tune_stack call at a time per Store.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "backends/command/command_backend.h"
#include "table/stack_yaml.h"
#include "tune/tuner.h"

namespace attune {

struct StackTuneOptions {
  command::CommandOptions command;  // sample and timed runs per candidate
  // The Tuner's options. A stack's defaults: strategy random (the whole grid in an order the
  // seed shuffles, the baseline first, so drift over a long sweep does not line up with one
  // knob), patience 0 (every config is tried, as a grid sweep), recorded as "stack tune".
  TuneOptions tuning = [] {
    TuneOptions o;
    o.strategy = "random";
    o.patience = 0;
    o.command = "stack tune";
    return o;
  }();
  std::function<void(const std::string&)> log;  // one line per candidate; may be empty
};

struct StackTune {
  TuneReport report;        // the Tuner's, one problem per provider in the stack's order
  table::Table table;       // one row per provider whose baseline passed: its winner
  table::StackNotes notes;  // the rest of the tuned file
  // Per provider: the knobs the shipped config changes, as written ("batch_size=8, dtype=bf16"),
  // or "none".
  std::vector<std::string> changed;
  // Every provider's baseline ran clean.
  bool ok() const;
};

// Checks the options (sample, repeats, strategy, shard) before anything runs or is stored.
Status check_stack_tune_options(const command::StackFile& stack, const StackTuneOptions& options);

Result<StackTune> tune_stack(const command::StackFile& stack, const platform::HostFingerprint& host,
                             Store& store, const StackTuneOptions& options);

// The human report: per provider baseline -> tuned, speedup, winning knobs, rejections.
std::string format_stack_report(const StackTune& result);
// The same as JSON (the --json report), with the tuned file's path.
nlohmann::json stack_json(const StackTune& result, const std::string& tuned_path);

}  // namespace attune
