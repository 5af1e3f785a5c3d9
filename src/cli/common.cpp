#include "cli/common.h"

#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <charconv>
#include <climits>

#include <spdlog/spdlog.h>

#include "backends/registry.h"
#include "platform/process.h"

namespace attune::cli {

std::unique_ptr<Store> open_store_or_report(const GlobalOptions& g, bool create_if_missing) {
  auto s = open_store(g.db, create_if_missing);
  if (!s) {
    bad_input(s.error().message());
    return nullptr;
  }
  return std::move(*s);
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

Result<std::pair<std::uint32_t, std::uint32_t>> parse_shard(const std::string& s) {
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
