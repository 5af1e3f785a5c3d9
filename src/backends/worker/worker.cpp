#include "backends/worker/worker.h"

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>

namespace attune {

namespace {

bool write_all(int fd, const std::string& s) {
  std::size_t off = 0;
  while (off < s.size()) {
    ssize_t n = ::write(fd, s.data() + off, s.size() - off);
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    off += static_cast<std::size_t>(n);
  }
  return true;
}

}  // namespace

int serve_worker(Backend& backend, int in_fd, int out_fd) {
  std::string buf;
  char chunk[4096];
  while (true) {
    std::size_t nl;
    while ((nl = buf.find('\n')) == std::string::npos) {
      ssize_t n = ::read(in_fd, chunk, sizeof chunk);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return 0;  // the scheduler closed the pipe: done
      buf.append(chunk, static_cast<std::size_t>(n));
    }
    std::string line = buf.substr(0, nl);
    buf.erase(0, nl + 1);
    Outcome o;
    auto req = nlohmann::json::parse(line, nullptr, false);
    if (req.is_discarded() || !req.contains("problem") || !req.contains("config") ||
        !req.contains("regime")) {
      o = Outcome::failed(Verdict::kLaunchFailed, "worker: malformed request");
    } else {
      auto problem = backend.resolve(req["problem"].get<std::string>());
      auto config = Config::parse(req["config"].get<std::string>());
      auto regime = regime_from_string(req["regime"].get<std::string>());
      if (!problem || !config || !regime)
        o = Outcome::failed(Verdict::kLaunchFailed,
                            "worker: request names an unknown problem, config or regime");
      else
        o = backend.execute(*problem, *config, *regime);
    }
    nlohmann::json j = o;
    if (!write_all(out_fd, j.dump() + "\n")) return 1;
  }
}

WorkerRunner::WorkerRunner(std::vector<std::string> argv, double timeout_s)
    : argv_(std::move(argv)), timeout_s_(timeout_s) {
  // A worker dying mid-write must not kill the scheduler.
  ::signal(SIGPIPE, SIG_IGN);
}

WorkerRunner::~WorkerRunner() {
  stop(false);
}

bool WorkerRunner::start(std::string* error) {
  platform::ProcessSpec spec;
  spec.argv = argv_;
  auto child = platform::Child::spawn(spec, platform::Stdin::kPipe);
  if (!child) {
    *error = child.error().kind() == Error::Kind::kNotFound
                 ? fmt::format("cannot start worker {}: {}", argv_[0], child.error().message())
                 : child.error().message();
    return false;
  }
  worker_.emplace(std::move(*child));
  out_buf_.clear();
  err_tail_.clear();
  ++started_;
  return true;
}

// An idle worker ends by itself once its stdin closes; one that does not within this long is
// killed (it cannot be doing anything the scheduler still wants).
constexpr auto kWorkerExitGrace = std::chrono::seconds(10);

void WorkerRunner::stop(bool kill_first) {
  if (!worker_) return;
  if (kill_first) worker_->kill_group();
  worker_->close_stdin();
  if (!worker_->wait_until(std::chrono::steady_clock::now() + kWorkerExitGrace))
    worker_->kill_group();
  worker_.reset();  // reaps it, and kills whatever it left in its group
}

std::string WorkerRunner::reap() {
  const int status = worker_->wait();
  const bool vanished = worker_->vanished();
  worker_.reset();
  if (vanished) return "worker vanished";
  if (WIFSIGNALED(status))
    return fmt::format("worker killed by signal {} ({})", WTERMSIG(status),
                       strsignal(WTERMSIG(status)));
  if (WIFEXITED(status)) return fmt::format("worker exited with status {}", WEXITSTATUS(status));
  return "worker ended";
}

Outcome WorkerRunner::run(const Problem& problem, const Config& config, Regime regime) {
  const unsigned kills = platform::programs_killed();
  bool died = false;
  Outcome first = attempt(problem, config, regime, &died);
  // Killed by attune itself (Ctrl-C): nothing to confirm, the caller stops.
  if (!died || platform::programs_killed() != kills) return first;
  spdlog::warn("{} {}: {}; running it again in a fresh worker to confirm the crash", problem.name(),
               config.text(), first.message);
  Outcome again = attempt(problem, config, regime, &died);
  if (died) {
    again.message = first.message + "; a fresh worker died on it again: " + again.message;
    return again;
  }
  const std::string was = "the first run's worker died (" + first.message + ")";
  if (again.verdict == Verdict::kOk)
    again.message = was + "; it passed on a rerun in a fresh worker";
  else
    again.message += " (on a rerun in a fresh worker; " + was + ")";
  return again;
}

Outcome WorkerRunner::attempt(const Problem& problem, const Config& config, Regime regime,
                              bool* died) {
  using clock = std::chrono::steady_clock;
  *died = false;
  if (!worker_) {
    std::string error;
    if (!start(&error)) return Outcome::failed(Verdict::kLaunchFailed, error);
  }
  nlohmann::json req = {
      {"problem", problem.text()}, {"config", config.text()}, {"regime", to_string(regime)}};
  const auto deadline = clock::now() + std::chrono::duration<double>(timeout_s_);
  bool sent = write_all(worker_->stdin_fd(), req.dump() + "\n");
  const int from_child = worker_->stdout_fd(), err_child = worker_->stderr_fd();
  char chunk[4096];
  while (sent) {
    auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock::now()).count();
    if (left <= 0) {
      stop(true);
      return Outcome::failed(
          Verdict::kTimeout,
          fmt::format("killed after {:.3g} s without an answer (deadline)", timeout_s_));
    }
    pollfd fds[2] = {{from_child, POLLIN, 0}, {err_child, POLLIN, 0}};
    int n = ::poll(fds, 2, static_cast<int>(std::min<long long>(left, 1000)));
    if (n < 0 && errno != EINTR) break;
    if (n <= 0) continue;
    if (fds[1].revents & POLLIN) {
      ssize_t r = ::read(err_child, chunk, sizeof chunk);
      if (r > 0) {
        err_tail_.append(chunk, static_cast<std::size_t>(r));
        if (err_tail_.size() > 2048) err_tail_.erase(0, err_tail_.size() - 2048);
      }
    }
    if (fds[0].revents & (POLLIN | POLLHUP | POLLERR)) {
      ssize_t r = ::read(from_child, chunk, sizeof chunk);
      if (r < 0 && (errno == EINTR || errno == EAGAIN)) continue;
      if (r <= 0) break;  // EOF: the worker died
      out_buf_.append(chunk, static_cast<std::size_t>(r));
      auto nl = out_buf_.find('\n');
      if (nl == std::string::npos) continue;
      std::string line = out_buf_.substr(0, nl);
      out_buf_.erase(0, nl + 1);
      auto j = nlohmann::json::parse(line, nullptr, false);
      auto o =
          j.is_discarded() ? Result<Outcome>(Error::corrupt("not JSON")) : outcome_from_json(j);
      if (!o) {
        stop(true);
        return Outcome::failed(Verdict::kCrashed,
                               "worker answered garbage: " + o.error().message());
      }
      return *o;
    }
  }
  // The worker died (or its pipe broke) before answering.
  {
    ssize_t r;
    while ((r = ::read(err_child, chunk, sizeof chunk)) > 0)
      err_tail_.append(chunk, static_cast<std::size_t>(r));
  }
  *died = true;
  std::string why = reap();
  std::string tail = err_tail_;
  while (!tail.empty() && (tail.back() == '\n' || tail.back() == ' ')) tail.pop_back();
  if (auto nl = tail.rfind('\n'); nl != std::string::npos) tail = tail.substr(nl + 1);
  return Outcome::failed(Verdict::kCrashed, tail.empty() ? why : why + ": " + tail);
}

}  // namespace attune
