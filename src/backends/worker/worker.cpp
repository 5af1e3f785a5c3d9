#include "backends/worker/worker.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

extern char** environ;

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
    if (req.is_discarded() || !req.contains("problem") || !req.contains("config") || !req.contains("regime")) {
      o = Outcome::failed(Verdict::kLaunchFailed, "worker: malformed request");
    } else {
      auto problem = backend.resolve(req["problem"].get<std::string>());
      auto config = Config::parse(req["config"].get<std::string>());
      auto regime = regime_from_string(req["regime"].get<std::string>());
      if (!problem || !config || !regime)
        o = Outcome::failed(Verdict::kLaunchFailed, "worker: request names an unknown problem, config or regime");
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

WorkerRunner::~WorkerRunner() { stop(false); }

bool WorkerRunner::start(std::string* error) {
  int in[2], out[2], err[2];
  if (::pipe2(in, O_CLOEXEC) || ::pipe2(out, O_CLOEXEC) || ::pipe2(err, O_CLOEXEC)) {
    *error = std::string("pipe: ") + std::strerror(errno);
    return false;
  }
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, in[0], 0);
  posix_spawn_file_actions_adddup2(&fa, out[1], 1);
  posix_spawn_file_actions_adddup2(&fa, err[1], 2);
  std::vector<char*> args;
  for (auto& a : argv_) args.push_back(a.data());
  args.push_back(nullptr);
  pid_t pid = -1;
  int rc = posix_spawn(&pid, argv_[0].c_str(), &fa, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  ::close(in[0]);
  ::close(out[1]);
  ::close(err[1]);
  if (rc != 0) {
    ::close(in[1]);
    ::close(out[0]);
    ::close(err[0]);
    *error = fmt::format("cannot start worker {}: {}", argv_[0], std::strerror(rc));
    return false;
  }
  pid_ = pid;
  to_child_ = in[1];
  from_child_ = out[0];
  err_child_ = err[0];
  ::fcntl(err_child_, F_SETFL, O_NONBLOCK);
  out_buf_.clear();
  err_tail_.clear();
  ++started_;
  return true;
}

void WorkerRunner::stop(bool kill_first) {
  if (pid_ < 0) return;
  if (kill_first) ::kill(pid_, SIGKILL);
  for (int* fd : {&to_child_, &from_child_, &err_child_}) {
    if (*fd >= 0) ::close(*fd);
    *fd = -1;
  }
  int status = 0;
  ::waitpid(pid_, &status, 0);
  pid_ = -1;
}

std::string WorkerRunner::reap() {
  int status = 0;
  pid_t r = ::waitpid(pid_, &status, 0);
  for (int* fd : {&to_child_, &from_child_, &err_child_}) {
    if (*fd >= 0) ::close(*fd);
    *fd = -1;
  }
  pid_ = -1;
  if (r < 0) return "worker vanished";
  if (WIFSIGNALED(status))
    return fmt::format("worker killed by signal {} ({})", WTERMSIG(status), strsignal(WTERMSIG(status)));
  if (WIFEXITED(status)) return fmt::format("worker exited with status {}", WEXITSTATUS(status));
  return "worker ended";
}

Outcome WorkerRunner::run(const Problem& problem, const Config& config, Regime regime) {
  using clock = std::chrono::steady_clock;
  if (pid_ < 0) {
    std::string error;
    if (!start(&error)) return Outcome::failed(Verdict::kLaunchFailed, error);
  }
  nlohmann::json req = {{"problem", problem.text()}, {"config", config.text()}, {"regime", to_string(regime)}};
  const auto deadline = clock::now() + std::chrono::duration<double>(timeout_s_);
  bool sent = write_all(to_child_, req.dump() + "\n");
  char chunk[4096];
  while (sent) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock::now()).count();
    if (left <= 0) {
      stop(true);
      return Outcome::failed(Verdict::kTimeout,
                     fmt::format("killed after {:.3g} s without an answer (deadline)", timeout_s_));
    }
    pollfd fds[2] = {{from_child_, POLLIN, 0}, {err_child_, POLLIN, 0}};
    int n = ::poll(fds, 2, static_cast<int>(std::min<long long>(left, 1000)));
    if (n < 0 && errno != EINTR) break;
    if (n <= 0) continue;
    if (fds[1].revents & POLLIN) {
      ssize_t r = ::read(err_child_, chunk, sizeof chunk);
      if (r > 0) {
        err_tail_.append(chunk, static_cast<std::size_t>(r));
        if (err_tail_.size() > 2048) err_tail_.erase(0, err_tail_.size() - 2048);
      }
    }
    if (fds[0].revents & (POLLIN | POLLHUP | POLLERR)) {
      ssize_t r = ::read(from_child_, chunk, sizeof chunk);
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) break;  // EOF: the worker died
      out_buf_.append(chunk, static_cast<std::size_t>(r));
      auto nl = out_buf_.find('\n');
      if (nl == std::string::npos) continue;
      std::string line = out_buf_.substr(0, nl);
      out_buf_.erase(0, nl + 1);
      auto j = nlohmann::json::parse(line, nullptr, false);
      auto o = j.is_discarded() ? Result<Outcome>(Error::corrupt("not JSON")) : outcome_from_json(j);
      if (!o) {
        stop(true);
        return Outcome::failed(Verdict::kCrashed, "worker answered garbage: " + o.error().message());
      }
      return *o;
    }
  }
  // The worker died (or its pipe broke) before answering.
  if (err_child_ >= 0) {
    ssize_t r;
    while ((r = ::read(err_child_, chunk, sizeof chunk)) > 0) err_tail_.append(chunk, static_cast<std::size_t>(r));
  }
  std::string why = reap();
  std::string tail = err_tail_;
  while (!tail.empty() && (tail.back() == '\n' || tail.back() == ' ')) tail.pop_back();
  if (auto nl = tail.rfind('\n'); nl != std::string::npos) tail = tail.substr(nl + 1);
  return Outcome::failed(Verdict::kCrashed, tail.empty() ? why : why + ": " + tail);
}

}  // namespace attune
