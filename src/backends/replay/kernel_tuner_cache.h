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

// One measured config, for writing attune's own measurements as a Kernel Tuner cache.
struct ExportRow {
  Config config;
  Verdict verdict = Verdict::kOk;
  std::optional<double> time_us;  // when ok
  std::vector<double> samples_us;
};
// A Kernel Tuner cache (JSON) of these rows. Knobs come from the configs (all must name the same
// knobs in the same order); each knob's options are the values seen, numbers in ascending order.
// Verdicts without a Kernel Tuner string are written as RuntimeFailedConfig.
Result<std::string> write_kernel_tuner_cache(const std::string& device_name,
                                             const std::string& kernel_name,
                                             const std::string& problem_size,
                                             const std::vector<ExportRow>& rows);

// Parses a cache's JSON text. Any defect (not JSON, missing or unknown top-level fields, configs
// that do not match the declared knobs, unknown failure strings) is one invalid_argument line.
Result<RecordedSpace> parse_kernel_tuner_cache(std::string_view json_text);
// Reads a file whole, gunzipping it when it is gzip-compressed; a truncated gzip stream is an
// error.
Result<std::string> read_maybe_gzipped(const std::string& path);
Result<RecordedSpace> load_kernel_tuner_cache(const std::string& path);

}  // namespace attune::replay
