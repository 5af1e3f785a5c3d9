#include "cli/common.h"

#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <charconv>
#include <climits>
#include <cstdlib>
#include <optional>

#include <fmt/format.h>

#include <spdlog/spdlog.h>

#include "backends/registry.h"
#include "core/files.h"
#include "platform/process.h"

namespace attune::cli {

std::unique_ptr<Store> open_store_or_report(const GlobalOptions& g, bool create_if_missing,
                                            bool read_only_ok) {
  auto s = open_store(g.db, create_if_missing, read_only_ok);
  if (!s) {
    bad_input(s.error().message());
    return nullptr;
  }
  return std::move(*s);
}

bool output_is_free_or_report(const GlobalOptions& g, std::string_view flag, const std::string& out,
                              std::initializer_list<std::string_view> inputs) {
  if (out.empty()) return true;
  if (const std::string db = store_file(g.db); !db.empty() && same_file(out, db)) {
    bad_input(fmt::format("{} {} is the tuning database (--db {}); refusing to overwrite it", flag,
                          out, g.db));
    return false;
  }
  for (std::string_view in : inputs)
    if (!in.empty() && same_file(out, std::string(in))) {
      bad_input(fmt::format("{} {} is also what this command reads ({}); refusing to overwrite it",
                            flag, out, in));
      return false;
    }
  return true;
}

Result<std::vector<DeviceFingerprint>> devices_named(Store& store, const std::string& device,
                                                     const std::string& db) {
  ATTUNE_ASSIGN(std::vector<DeviceFingerprint> devices, store.devices());
  if (devices.empty())
    return Error::invalid_argument("no measurements in " + db +
                                   " (run attune tune first, or pass --db)");
  std::vector<DeviceFingerprint> chosen;
  for (const auto& d : devices)
    if (device.empty() || d.key() == device || d.slug() == device) chosen.push_back(d);
  if (chosen.empty()) {
    std::string known;
    for (const auto& d : devices)
      known += fmt::format("{}{} ({})", known.empty() ? "" : ", ", d.key(), d.name);
    return Error::invalid_argument(
        fmt::format("--device {}: no such device in {} (it has: {})", device, db, known));
  }
  return chosen;
}

int exit_for(const Error& e) {
  return e.kind() == Error::Kind::kInvalidArgument ? bad_input(e.message()) : failed(e.message());
}

std::unique_ptr<Backend> open_backend_or_report(const std::string& name, int device) {
  std::string chosen = name;
  if (chosen.empty()) {
    std::string why;
    chosen = default_backend(&why);
    if (!why.empty()) spdlog::warn("{}; using the '{}' backend", why, chosen);
  }
  auto b = make_backend(chosen);
  if (!b) {
    bad_input(b.error().message());
    return nullptr;
  }
  if (!select_device_or_report(**b, device)) return nullptr;
  return std::move(*b);
}

namespace {

// An environment variable as a count or index; nullopt when unset, an error when not a number.
Result<std::optional<std::uint32_t>> env_number(const char* name) {
  const char* v = std::getenv(name);
  if (!v || !*v) return std::optional<std::uint32_t>{};
  std::uint32_t n = 0;
  const std::string_view text(v);
  auto r = std::from_chars(text.data(), text.data() + text.size(), n);
  if (r.ec != std::errc() || r.ptr != text.data() + text.size())
    return Error::invalid_argument(fmt::format("--shard auto: ${}='{}' is not a number", name, v));
  return std::optional<std::uint32_t>(n);
}

// --shard auto[/n]: the index the cluster's scheduler gave this task (a SLURM array's
// SLURM_ARRAY_TASK_ID less SLURM_ARRAY_TASK_MIN, or a Kubernetes indexed Job's
// JOB_COMPLETION_INDEX) and the count (n, else SLURM_ARRAY_TASK_COUNT, else ATTUNE_SHARD_COUNT).
Result<std::pair<std::uint32_t, std::uint32_t>> scheduler_shard(const std::string& s) {
  std::optional<std::uint32_t> index, count;
  if (s.size() > 5) {
    std::uint32_t n = 0;
    auto r = std::from_chars(s.data() + 5, s.data() + s.size(), n);
    if (s[4] != '/' || r.ec != std::errc() || r.ptr != s.data() + s.size() || n == 0)
      return Error::invalid_argument("--shard '" + s +
                                     "' must be auto or auto/n (n tasks in all), e.g. auto/16");
    count = n;
  }
  ATTUNE_ASSIGN(std::optional<std::uint32_t> slurm_id, env_number("SLURM_ARRAY_TASK_ID"));
  ATTUNE_ASSIGN(std::optional<std::uint32_t> k8s_index, env_number("JOB_COMPLETION_INDEX"));
  std::string from;
  if (slurm_id) {
    ATTUNE_ASSIGN(std::optional<std::uint32_t> min, env_number("SLURM_ARRAY_TASK_MIN"));
    if (min && *min > *slurm_id)
      return Error::invalid_argument(
          "--shard auto: $SLURM_ARRAY_TASK_ID is below "
          "$SLURM_ARRAY_TASK_MIN");
    index = *slurm_id - min.value_or(0);
    from = "SLURM_ARRAY_TASK_ID";
    if (!count) {
      ATTUNE_ASSIGN(count, env_number("SLURM_ARRAY_TASK_COUNT"));
    }
  } else if (k8s_index) {
    index = *k8s_index;
    from = "JOB_COMPLETION_INDEX";
  } else {
    return Error::invalid_argument(
        "--shard auto: neither $SLURM_ARRAY_TASK_ID (a SLURM job array) nor "
        "$JOB_COMPLETION_INDEX (a Kubernetes indexed Job) is set; give --shard i/n");
  }
  if (!count) {
    ATTUNE_ASSIGN(count, env_number("ATTUNE_SHARD_COUNT"));
  }
  if (!count || *count == 0)
    return Error::invalid_argument(fmt::format(
        "--shard auto: ${} gives this task's index but nothing gives the number of tasks; give "
        "--shard auto/n or set $ATTUNE_SHARD_COUNT",
        from));
  if (*index >= *count)
    return Error::invalid_argument(fmt::format(
        "--shard auto: task {} (from ${}) is not below the {} tasks", *index, from, *count));
  return std::make_pair(*index, *count);
}

}  // namespace

Result<std::pair<std::uint32_t, std::uint32_t>> parse_shard(const std::string& s) {
  if (s.rfind("auto", 0) == 0) return scheduler_shard(s);
  auto slash = s.find('/');
  std::uint32_t i = 0, n = 0;
  bool ok = slash != std::string::npos;
  if (ok) {
    auto a = std::from_chars(s.data(), s.data() + slash, i);
    auto b = std::from_chars(s.data() + slash + 1, s.data() + s.size(), n);
    ok = a.ec == std::errc() && a.ptr == s.data() + slash && b.ec == std::errc() &&
         b.ptr == s.data() + s.size();
  }
  if (!ok || n == 0 || i >= n)
    return Error::invalid_argument("--shard '" + s + "' must be i/n with 0 <= i < n, e.g. 0/4");
  return std::make_pair(i, n);
}

void add_device_option(CLI::App* sub, int* device, const std::string& what) {
  auto index = [](std::string& text) -> std::string {
    int v = -1;
    auto r = std::from_chars(text.data(), text.data() + text.size(), v);
    if (text.empty() || r.ec != std::errc() || r.ptr != text.data() + text.size() || v < 0)
      return "'" + text + "' is not a device index (0, 1, ...: see attune device --list)";
    return "";
  };
  sub->add_option("--device", *device, "index (attune device --list) of the device " + what)
      ->check(CLI::Validator(index, "INDEX"))
      ->default_str("");  // -1 is "not given", not a value to show
}

bool select_device_or_report(Backend& backend, int index) {
  if (index < 0) return true;
  if (auto st = backend.select_device(index); !st.ok()) {
    bad_input(st.error().message());
    return false;
  }
  return true;
}

std::string self_executable() {
  char buf[PATH_MAX];
  ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return "attune";
  return std::string(buf, static_cast<std::size_t>(n));
}

std::atomic<bool> g_interrupted{false};

namespace {

// CLOCK_MONOTONIC nanoseconds of the first signal (clock_gettime is async-signal-safe).
std::atomic<long long> g_first_signal_ns{0};
// `timeout`, a terminal and job schedulers signal attune and then its whole process group, so one
// request can arrive twice in quick succession: only a signal this long after the first one is a
// second request.
constexpr long long kSameRequestNs = 1'000'000'000;

long long monotonic_ns() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<long long>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

extern "C" void on_interrupt(int sig) {
  const long long now = monotonic_ns();
  long long first = 0;
  if (!g_first_signal_ns.compare_exchange_strong(first, now)) {
    if (now - first < kSameRequestNs) return;
    ::signal(sig, SIG_DFL);
    ::raise(sig);
    return;
  }
  g_interrupted.store(true);
  platform::kill_running_programs();
}

}  // namespace

void install_interrupt_handlers() {
  struct sigaction sa {};
  sa.sa_handler = on_interrupt;
  sigemptyset(&sa.sa_mask);
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) sigaddset(&sa.sa_mask, sig);
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) ::sigaction(sig, &sa, nullptr);
}

}  // namespace attune::cli
