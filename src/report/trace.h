// The evaluation trace `attune tune --trace FILE` writes: one CSV row per evaluated candidate in
// visit order, flushed row by row so that an interrupted or killed run leaves its trace. The
// columns extend bench/search_replay --traces' (docs/report.md, "The trace"), so the two
// concatenate. One thread at a time.
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <utility>

#include "core/error.h"
#include "tune/tuner.h"

namespace attune {

// "problem,strategy,seed,evaluation,config,verdict,time_us,best_us,replayed,new_best"
std::string trace_header();
// One row, without its newline. Text fields are quoted as RFC 4180 asks (configs hold commas);
// time_us is empty unless the candidate passed, best_us until one has.
std::string trace_row(const TuneEvent& event, const std::string& strategy, std::uint64_t seed);

class TraceWriter {
 public:
  // Creates (or empties) the file and writes the header; an io error naming the path and why
  // when it cannot.
  static Result<TraceWriter> open(const std::string& path, std::string strategy,
                                  std::uint64_t seed);
  // Appends the event's row and flushes it. A failed write (a full disk) is an io error; the
  // rows before it stay in the file.
  Status write(const TuneEvent& event);

 private:
  struct Close {
    void operator()(std::FILE* f) const { std::fclose(f); }
  };
  TraceWriter(std::unique_ptr<std::FILE, Close> file, std::string path, std::string strategy,
              std::uint64_t seed)
      : file_(std::move(file)),
        path_(std::move(path)),
        strategy_(std::move(strategy)),
        seed_(seed) {}

  std::unique_ptr<std::FILE, Close> file_;
  std::string path_;
  std::string strategy_;
  std::uint64_t seed_;
};

}  // namespace attune
