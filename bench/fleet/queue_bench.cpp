// bench/fleet: the work queue's own cost, apart from tuning. W worker processes (each with its
// own connection, as `attune worker`s on many hosts have) lease, renew once and finish items from
// one store until none is left; each item is what a worker pays the queue per item (lease +
// heartbeat + release). Prints the items per second over all workers and each operation's
// median and 99th-percentile latency.
//   queue_bench URL WORKERS ITEMS
// URL: a postgresql:// URL of an empty database (or an SQLite path). Results: bench/results/.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "store/store.h"

using namespace attune;
using Clock = std::chrono::steady_clock;

namespace {

double us_since(Clock::time_point t) {
  return std::chrono::duration<double, std::micro>(Clock::now() - t).count();
}

// One worker: leases until the queue is empty; writes "lease renew finish" latencies (us) per item
// to fd.
int work(const std::string& url, int fd) {
  auto store = open_store(url);
  if (!store) {
    std::fprintf(stderr, "%s\n", store.error().message().c_str());
    return 1;
  }
  const std::vector<std::string> devices{"bench-device"};
  std::string out;
  while (true) {
    auto t = Clock::now();
    auto item = (*store)->lease_work(devices, "bench-device", 30);
    const double lease = us_since(t);
    if (!item || !*item) break;
    t = Clock::now();
    auto renewed = (*store)->renew_lease((**item).id, (**item).lease_token, 30);
    const double renew = us_since(t);
    t = Clock::now();
    auto finished = (*store)->finish_work((**item).id, (**item).lease_token, "done", "", 0);
    const double finish = us_since(t);
    if (!renewed || !*renewed || !finished || !*finished) return 1;
    out +=
        std::to_string(lease) + " " + std::to_string(renew) + " " + std::to_string(finish) + "\n";
  }
  return write(fd, out.data(), out.size()) == static_cast<ssize_t>(out.size()) ? 0 : 1;
}

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<std::size_t>(p * static_cast<double>(v.size())))];
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: %s URL WORKERS ITEMS\n", argv[0]);
    return 2;
  }
  const std::string url = argv[1];
  const int workers = std::atoi(argv[2]), items = std::atoi(argv[3]);
  {
    auto store = open_store(url);
    if (!store) {
      std::fprintf(stderr, "%s\n", store.error().message().c_str());
      return 2;
    }
    for (int i = 0; i < items; ++i) {
      WorkItem w;
      w.device = "bench-device";
      w.backend = "sim";
      w.problem = "rmsnorm:rows=" + std::to_string(i + 1) + ",hidden=4096";
      w.options = "{}";
      if (!(*store)->enqueue(w)) return 1;
    }
  }
  std::vector<std::pair<pid_t, int>> children;
  const auto start = Clock::now();
  for (int i = 0; i < workers; ++i) {
    char path[] = "/tmp/queue-bench-XXXXXX";
    const int fd = mkstemp(path);
    unlink(path);
    const pid_t pid = fork();
    if (pid == 0) _exit(work(url, fd));
    children.emplace_back(pid, fd);
  }
  std::vector<double> lease, renew, finish;
  int failed = 0;
  for (auto [pid, fd] : children) {
    int status = 0;
    waitpid(pid, &status, 0);
    failed += !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    lseek(fd, 0, SEEK_SET);
    FILE* f = fdopen(fd, "r");
    double a, b, c;
    while (f && std::fscanf(f, "%lf %lf %lf", &a, &b, &c) == 3) {
      lease.push_back(a);
      renew.push_back(b);
      finish.push_back(c);
    }
    if (f) std::fclose(f);
  }
  const double seconds = us_since(start) / 1e6;
  std::vector<double> total(lease.size());
  for (std::size_t i = 0; i < total.size(); ++i) total[i] = lease[i] + renew[i] + finish[i];
  std::printf("workers %d items %zu failed_workers %d wall_s %.3f items_per_s %.1f\n", workers,
              lease.size(), failed, seconds, static_cast<double>(lease.size()) / seconds);
  std::printf(
      "per item (us): lease p50 %.0f p99 %.0f | renew p50 %.0f p99 %.0f | finish p50 %.0f "
      "p99 %.0f | all three p50 %.0f p99 %.0f\n",
      percentile(lease, 0.5), percentile(lease, 0.99), percentile(renew, 0.5),
      percentile(renew, 0.99), percentile(finish, 0.5), percentile(finish, 0.99),
      percentile(total, 0.5), percentile(total, 0.99));
  return failed ? 1 : 0;
}
