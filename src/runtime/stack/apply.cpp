#include "runtime/stack/apply.h"

#include <fmt/format.h>
#include <stdlib.h>

#include <algorithm>
#include <filesystem>

#include "backends/command/command_backend.h"

namespace attune::runtime {

using command::Provider;
using command::RunOutcome;
using command::RunRequest;

namespace fs = std::filesystem;

bool StackRun::ok() const {
  return std::all_of(providers.begin(), providers.end(),
                     [](const ProviderRun& p) { return p.ok(); });
}

Status check_tuned(const StackFile& stack, const TunedStack& tuned) {
  if (tuned.stack != stack.name)
    return Error::invalid_argument(fmt::format("{}:1: tuned for stack '{}', not '{}' ({})",
                                               tuned.path, tuned.stack, stack.name, stack.path));
  for (const auto& tp : tuned.providers) {
    const Provider* p = stack.provider(tp.name);
    if (!p)
      return Error::invalid_argument(fmt::format("{}:{}: provider '{}' is not in {}", tuned.path,
                                                 tp.line, tp.name, stack.path));
    auto point = p->overlay(tp.knobs);
    if (!point)
      return Error::invalid_argument(fmt::format("{}:{}: {} (in {})", tuned.path, tp.line,
                                                 point.error().message(), stack.path));
  }
  return Status::success();
}

void remove_temporary_workdir(const StackRun& run) {
  std::error_code ec;
  if (run.temporary_workdir && !run.workdir_root.empty()) fs::remove_all(run.workdir_root, ec);
}

namespace {
Result<StackRun> run_providers(const StackFile& stack, const RunOptions& options, StackRun out);
}  // namespace

Result<StackRun> run_stack(const StackFile& stack, const platform::HostFingerprint& here,
                           const RunOptions& options) {
  StackRun out;
  if (options.tuned) {
    ATTUNE_TRY(check_tuned(stack, *options.tuned));
    out.tuned_given = true;
    out.mismatches = platform::fingerprint_differences(options.tuned->fingerprint, here);
    out.fingerprint_matched = out.mismatches.empty();
  }
  command::CommandOptions sampling;
  sampling.sample = options.sample;
  ATTUNE_TRY(command::check_options(stack, sampling));
  out.workdir_root = options.workdir_root;
  std::error_code ec;
  if (out.workdir_root.empty()) {
    std::string tmpl = (fs::temp_directory_path() / "attune-stack-run-XXXXXX").string();
    if (!::mkdtemp(tmpl.data())) return Error::io("cannot create a directory under " + tmpl);
    out.workdir_root = tmpl;
    out.temporary_workdir = true;
  } else {
    fs::create_directories(out.workdir_root, ec);
    if (ec) return Error::io("cannot create " + out.workdir_root + ": " + ec.message());
  }
  out.workdir_root = fs::absolute(out.workdir_root).string();
  const std::string root = out.workdir_root;
  const bool temporary = out.temporary_workdir;
  auto run = run_providers(stack, options, std::move(out));
  if (!run && temporary) {
    std::error_code ignored;
    fs::remove_all(root, ignored);
  }
  return run;
}

namespace {

Result<StackRun> run_providers(const StackFile& stack, const RunOptions& options, StackRun out) {
  std::error_code ec;

  for (const Provider& p : stack.providers) {
    ProviderRun pr;
    pr.name = p.name;
    Point point = p.space.baseline();
    const table::TunedProvider* tp = options.tuned ? options.tuned->provider(p.name) : nullptr;
    if (out.fingerprint_matched && tp) {
      ATTUNE_ASSIGN(point, p.overlay(tp->knobs));
      pr.tuned = true;
    }
    pr.label = p.space.config(point).text();
    pr.workdir = (fs::path(out.workdir_root) / p.name).string();
    fs::remove_all(pr.workdir, ec);
    fs::create_directories(pr.workdir, ec);
    if (ec) return Error::io("cannot create " + pr.workdir + ": " + ec.message());
    int records = options.sample.value_or(p.sample.records);
    std::string sample = (fs::path(out.workdir_root) /
                          (p.name + ".sample" + fs::path(p.sample.file).extension().string()))
                             .string();
    ATTUNE_TRY(command::write_sample(p.sample, records, sample));

    RunRequest req;
    req.provider = &p;
    req.point = point;
    req.telltales = stack.telltales;
    req.sample = sample;
    req.records = records;
    req.workdir = pr.workdir;
    ATTUNE_ASSIGN(RunOutcome o, command::run_once(req));
    if (options.interrupted && options.interrupted->load())
      return Error::internal("interrupted while running " + p.name);
    pr.failure = o.rejection;
    pr.detail = o.detail;
    pr.throughput = o.throughput;
    pr.process = std::move(o.process);
    out.providers.push_back(std::move(pr));
  }
  return out;
}

}  // namespace

}  // namespace attune::runtime
