// Reading Kernel Tuner cache files (JSON or .json.gz) into a RecordedSpace: the Space of the
// recorded configs and the result recorded for each. Pure functions over immutable values; a
// RecordedSpace is safe to share between threads once built.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/device.h"
#include "core/error.h"
#include "core/problem.h"
#include "core/space.h"
#include "core/verdict.h"

namespace attune::replay {

struct PointHash {
  std::size_t operator()(const Point& p) const;
};

// One recorded config's result. Kernel Tuner records milliseconds; attune keeps microseconds.
struct RecordedResult {
  Verdict verdict = Verdict::kOk;
  double time_us = 0;              // the recorded objective when verdict is ok
  std::vector<double> samples_us;  // "times", when recorded
  std::string failure;             // Kernel Tuner's failure string ("RuntimeFailedConfig") or ""
};

struct RecordedSpace {
  std::string device_name;   // "NVIDIA RTX A4000"
  std::string kernel_name;   // "convolution_kernel"
  std::string problem_size;  // "4096x4096"
  std::string objective;     // always "time" (the only objective replay supports)
  // The problem attune recorded the space from (`attune_recorded.problem`, e.g.
  // "attention_prefill:batch=2,...,seq=2048"); "" in a space recorded elsewhere.
  std::string attune_problem;
  bool was_open = false;  // the file was left open by a crash and closed as Kernel Tuner does
  // 8 hex digits over the recorded knobs, configs and results: two different recordings of one
  // kernel on one device are two problems, and re-importing the same file is idempotent.
  std::string digest;
  // The recorded configs only: enumeration yields exactly them (legality is a lookup of recorded
  // prefixes, checked at every fork, so no legal prefix is a dead end). Baseline: the first option
  // of each knob when that config is recorded with a time, else the first config recorded with a
  // time (file order), else the first recorded config.
  Space space;
  std::vector<Point> points;            // file order
  std::vector<RecordedResult> results;  // parallel to points

  // nullptr when the point was not recorded.
  const RecordedResult* find(const Point& point) const;
  // The fastest recorded time; nullopt when every config failed.
  std::optional<double> optimum_us() const;
  // What is computed: op "replay" with the kernel, problem size, the recording device and the
  // recording's digest (a recorded space is data measured on one device, so two devices' spaces
  // are two problems).
  Problem problem() const;
  DeviceFingerprint device() const;
  // A compact Kernel Tuner cache (knob values, time, times) that parses back to the same space:
  // what `attune import` stores as the problem's payload.
  std::string compact_json() const;

  std::unordered_map<Point, std::size_t, PointHash> index;  // point -> position in points
};

// Kernel Tuner's failure strings -> verdicts: InvalidConfig -> unsupported,
// CompilationFailedConfig -> build_failed, RuntimeFailedConfig -> launch_failed.
std::optional<Verdict> verdict_from_kernel_tuner(std::string_view failure);
// The inverse, for export: nullopt for verdicts Kernel Tuner has no string for.
std::optional<std::string> kernel_tuner_failure(Verdict verdict);

// ---- writing a cache Kernel Tuner 1.5 reads -------------------------------------------------
//
// The file is laid out as Kernel Tuner's own cache writer (util.py process_cache, store_cache,
// close_cache) leaves it: the header fields in its order, one line per config, `cache` last and
// the file ending in "}\n}". Kernel Tuner reopens a cache for appending by cutting those three
// characters off, and closes one left open by a crash by appending them; a file laid out any
// other way (sorted keys, `cache` not last) is corrupted by that repair ("JSONDecodeError: Extra
// data"). docs/kernel-tuner.md lists every field and which ones are zero-filled.

// One config's result.
struct ExportRow {
  Config config;
  Verdict verdict = Verdict::kOk;
  std::optional<double> time_us;   // when ok: the measurement's median
  std::vector<double> samples_us;  // the individual samples when known; "times" is written only
                                   // then (attune's store keeps a measurement's count, median,
                                   // min and max, not each sample)
  std::string measured_at;         // ISO 8601 UTC as the store writes it ("" unknown)
};

struct CacheHeader {
  std::string device_name;
  std::string kernel_name;
  // Kernel Tuner's problem_size: one size is written as a number, several as a list (Kernel
  // Tuner compares them with numpy, so a number and a one-element list match). Empty: the text
  // below is written as a string (Kernel Tuner writes "callable" for a problem size it computes).
  std::vector<std::int64_t> problem_size;
  std::string problem_size_text;
  // The problem's Space. Given: tune_params lists each knob's every option, and the configs are
  // counted against it. Unset: the knobs and options are those the rows name (numbers
  // ascending), and the space cannot be counted.
  std::optional<Space> space;
};

struct WrittenCache {
  std::string text;
  std::size_t configs = 0;                     // configs written
  std::optional<std::uint64_t> space_configs;  // the space's legal configs, when it is known
  std::size_t outside_space = 0;               // rows left out: not a legal config of the space
};

// "4096x4096" or "100000" (how a replay problem keeps its size) as numbers; empty when a part is
// not a non-negative integer.
std::vector<std::int64_t> problem_size_numbers(std::string_view text);

// A Kernel Tuner cache of these rows; the first row of a config wins. Verdicts without a Kernel
// Tuner string are written as RuntimeFailedConfig (kernel_tuner_failure()).
Result<WrittenCache> write_kernel_tuner_cache(const CacheHeader& header,
                                              const std::vector<ExportRow>& rows);

// Kernel Tuner's repair of a cache left open (util.py correct_open_cache): a file that does not
// end in "}\n}" or "}}}" after trimming white space was cut short while configs were being
// appended: its trailing comma is dropped and "}\n}" appended. Other text is returned trimmed.
std::string close_open_cache(std::string_view text);

// Parses a cache's JSON text as Kernel Tuner 1.5 reads it: a cache left open by a crash is closed
// as Kernel Tuner closes it (close_open_cache) and read; `objective` may be a string or a list of
// one, and must be "time" (replay serves recorded times); a failed config carries its failure
// string in `__error__` (Kernel Tuner 1.x) or in `time` (older caches); fields attune does not
// use, at the top level or in a config, are ignored, so a field a later Kernel Tuner adds does
// not break the import. Any defect (not JSON even once closed, a missing field, configs that do
// not match the declared knobs, an unknown failure string, a config with neither a time nor a
// failure) is one invalid_argument line.
Result<RecordedSpace> parse_kernel_tuner_cache(std::string_view json_text);
// Reads a file whole, gunzipping it when it is gzip-compressed; a truncated gzip stream is an
// error.
Result<std::string> read_maybe_gzipped(const std::string& path);
Result<RecordedSpace> load_kernel_tuner_cache(const std::string& path);

}  // namespace attune::replay
