#include "report/trace.h"

#include <cerrno>
#include <cstring>
#include <optional>

#include <fmt/format.h>

#include "core/csv.h"

namespace attune {

namespace {

// Shortest text that reads back as the same double; empty for none.
std::string number(const std::optional<double>& v) {
  return v ? fmt::format("{}", *v) : "";
}

}  // namespace

std::string trace_header() {
  return "problem,strategy,seed,evaluation,config,verdict,time_us,best_us,replayed,new_best";
}

std::string trace_row(const TuneEvent& e, const std::string& strategy, std::uint64_t seed) {
  return fmt::format("{},{},{},{},{},{},{},{},{},{}", csv_field(e.problem.name()),
                     csv_field(strategy), seed, e.evaluation, csv_field(e.result.config),
                     to_string(e.result.verdict), number(e.ranking_us), number(e.best_us),
                     e.result.replayed ? 1 : 0, e.new_best ? 1 : 0);
}

Result<TraceWriter> TraceWriter::open(const std::string& path, std::string strategy,
                                      std::uint64_t seed) {
  std::unique_ptr<std::FILE, Close> file(std::fopen(path.c_str(), "w"));
  if (!file)
    return Error::io(
        fmt::format("--trace {}: cannot write the file ({}); give a path in a "
                    "writable directory",
                    path, std::strerror(errno)));
  TraceWriter w(std::move(file), path, std::move(strategy), seed);
  const std::string header = trace_header() + "\n";
  if (std::fputs(header.c_str(), w.file_.get()) < 0 || std::fflush(w.file_.get()) != 0)
    return Error::io(
        fmt::format("--trace {}: cannot write the file ({})", path, std::strerror(errno)));
  return w;
}

Status TraceWriter::write(const TuneEvent& event) {
  const std::string row = trace_row(event, strategy_, seed_) + "\n";
  if (std::fputs(row.c_str(), file_.get()) < 0 || std::fflush(file_.get()) != 0)
    return Error::io(fmt::format("--trace {}: writing failed ({})", path_, std::strerror(errno)));
  return Status::success();
}

}  // namespace attune
