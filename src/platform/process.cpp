#include "platform/process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>

extern char** environ;

namespace attune::platform {

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// Closes a descriptor when it goes out of scope.
class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() { reset(); }
  int get() const { return fd_; }
  void reset(int fd = -1) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = fd;
  }

 private:
  int fd_ = -1;
};

Error sys_error(const std::string& what) { return Error::io(what + ": " + std::strerror(errno)); }

// The process groups being run, for kill_running_programs(); 0 marks a free slot. Lock-free
// atomics, so a signal handler may read them.
std::atomic<pid_t> g_running[64];
static_assert(std::atomic<pid_t>::is_always_lock_free);

// Registers a running group for its lifetime (unregistered when there is no free slot).
class RunningGroup {
 public:
  explicit RunningGroup(pid_t pgid) {
    for (auto& slot : g_running) {
      pid_t free = 0;
      if (slot.compare_exchange_strong(free, pgid)) {
        slot_ = &slot;
        return;
      }
    }
  }
  ~RunningGroup() {
    if (slot_) slot_->store(0);
  }
  RunningGroup(const RunningGroup&) = delete;
  RunningGroup& operator=(const RunningGroup&) = delete;

 private:
  std::atomic<pid_t>* slot_ = nullptr;
};

// Reads what is available; false once the pipe reached end of file.
bool drain(int fd, std::string& into) {
  char buf[65536];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n > 0) {
      into.append(buf, static_cast<std::size_t>(n));
      continue;
    }
    if (n == 0) return false;
    if (errno == EINTR) continue;
    return errno == EAGAIN || errno == EWOULDBLOCK;
  }
}

// Polling a pidfd tells exactly when the program exits even while a child of it keeps the pipes
// open; kernels without pidfd_open (before 5.3) fall back to checking every 10 ms.
int open_pidfd(pid_t pid) {
#ifdef SYS_pidfd_open
  long fd = ::syscall(SYS_pidfd_open, pid, 0);
  if (fd >= 0) {
    ::fcntl(static_cast<int>(fd), F_SETFD, FD_CLOEXEC);
    return static_cast<int>(fd);
  }
#endif
  (void)pid;
  return -1;
}

}  // namespace

Result<std::string> resolve_program(const std::string& argv0, const std::string& dir) {
  auto executable = [](const fs::path& p) {
    std::error_code ec;
    return fs::is_regular_file(p, ec) && ::access(p.c_str(), X_OK) == 0;
  };
  if (argv0.empty()) return Error::invalid_argument("the command is empty");
  if (argv0.find('/') != std::string::npos) {
    fs::path p(argv0);
    if (p.is_relative()) p = fs::path(dir.empty() ? "." : dir) / p;
    p = p.lexically_normal();
    if (!executable(p))
      return Error::invalid_argument("program '" + argv0 +
                                     "' does not exist or is not executable (" + p.string() + ")");
    return fs::absolute(p).string();
  }
  const char* path = std::getenv("PATH");
  std::string paths = path ? path : "/usr/local/bin:/usr/bin:/bin";
  std::size_t pos = 0;
  while (pos <= paths.size()) {
    std::size_t end = paths.find(':', pos);
    if (end == std::string::npos) end = paths.size();
    std::string d = paths.substr(pos, end - pos);
    fs::path p = fs::path(d.empty() ? "." : d) / argv0;
    if (executable(p)) return fs::absolute(p).string();
    pos = end + 1;
  }
  return Error::invalid_argument("program '" + argv0 + "' is not found on PATH");
}

void kill_running_programs() {
  for (auto& slot : g_running) {
    pid_t pgid = slot.load();
    if (pgid > 0) ::kill(-pgid, SIGKILL);
  }
}

Result<ProcessResult> run_process(const ProcessSpec& spec) {
  ProcessResult r;
  if (spec.argv.empty()) return Error::invalid_argument("run_process: empty argv");

  int out_pipe[2], err_pipe[2];
  if (::pipe2(out_pipe, O_CLOEXEC) != 0) return sys_error("pipe");
  Fd out_r(out_pipe[0]), out_w(out_pipe[1]);
  if (::pipe2(err_pipe, O_CLOEXEC) != 0) return sys_error("pipe");
  Fd err_r(err_pipe[0]), err_w(err_pipe[1]);

  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&fa, out_w.get(), 1);
  posix_spawn_file_actions_adddup2(&fa, err_w.get(), 2);
  if (!spec.cwd.empty()) posix_spawn_file_actions_addchdir_np(&fa, spec.cwd.c_str());

  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  // Its own process group, so a timeout kills the program and everything it started.
  posix_spawnattr_setpgroup(&attr, 0);
  sigset_t none, defaults;
  sigemptyset(&none);
  sigemptyset(&defaults);
  for (int s : {SIGPIPE, SIGINT, SIGTERM, SIGQUIT, SIGHUP, SIGCHLD, SIGALRM, SIGUSR1, SIGUSR2})
    sigaddset(&defaults, s);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  posix_spawnattr_setflags(&attr,
                           POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);

  std::vector<std::string> env_text;
  for (char** e = environ; *e; ++e) {
    std::string kv(*e);
    std::string key = kv.substr(0, kv.find('='));
    if (!spec.env.count(key)) env_text.push_back(std::move(kv));
  }
  for (const auto& [k, v] : spec.env) env_text.push_back(k + "=" + v);
  std::vector<char*> envp;
  for (auto& s : env_text) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> argv_text = spec.argv;
  std::vector<char*> argv;
  for (auto& s : argv_text) argv.push_back(s.data());
  argv.push_back(nullptr);

  pid_t pid = 0;
  const auto start = Clock::now();
  const auto deadline = start + spec.timeout;
  int rc = spec.argv[0].find('/') != std::string::npos
               ? ::posix_spawn(&pid, argv[0], &fa, &attr, argv.data(), envp.data())
               : ::posix_spawnp(&pid, argv[0], &fa, &attr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  out_w.reset();
  err_w.reset();
  if (rc != 0) {
    r.spawn_error = "cannot run '" + spec.argv[0] + "': " + std::strerror(rc);
    return r;
  }
  r.spawned = true;
  RunningGroup running(pid);

  ::fcntl(out_r.get(), F_SETFL, O_NONBLOCK);
  ::fcntl(err_r.get(), F_SETFL, O_NONBLOCK);
  Fd pidfd(open_pidfd(pid));
  bool out_open = true, err_open = true, exited = false;
  int status = 0;

  auto reap = [&](bool block) {
    for (;;) {
      pid_t w = ::waitpid(pid, &status, block ? 0 : WNOHANG);
      if (w == pid) {
        exited = true;
        r.wall_s = std::chrono::duration<double>(Clock::now() - start).count();
        return;
      }
      if (w < 0 && errno == EINTR) continue;
      return;
    }
  };

  while (!exited) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) {
      reap(false);
      if (exited) break;
      r.timed_out = true;
      ::kill(-pid, SIGKILL);
      reap(true);
      r.wall_s = std::chrono::duration<double>(Clock::now() - start).count();
      break;
    }
    pollfd fds[3];
    nfds_t n = 0;
    int i_out = -1, i_err = -1, i_pid = -1;
    if (out_open) {
      i_out = static_cast<int>(n);
      fds[n++] = {out_r.get(), POLLIN, 0};
    }
    if (err_open) {
      i_err = static_cast<int>(n);
      fds[n++] = {err_r.get(), POLLIN, 0};
    }
    if (pidfd.get() >= 0) {
      i_pid = static_cast<int>(n);
      fds[n++] = {pidfd.get(), POLLIN, 0};
    }
    long wait_ms = left.count();
    if (pidfd.get() < 0) wait_ms = std::min<long>(wait_ms, 10);
    int p = ::poll(fds, n, static_cast<int>(std::min<long>(wait_ms, 1 << 30)));
    if (p < 0) {
      if (errno == EINTR) continue;
      ::kill(-pid, SIGKILL);
      reap(true);
      return sys_error("poll");
    }
    if (i_out >= 0 && fds[i_out].revents) out_open = drain(out_r.get(), r.out);
    if (i_err >= 0 && fds[i_err].revents) err_open = drain(err_r.get(), r.err);
    if (i_pid >= 0 && fds[i_pid].revents)
      reap(true);
    else if (pidfd.get() < 0)
      reap(false);
  }

  // The program is gone; whatever it left running in its group goes too, which also closes the
  // pipes it held so the reads below end.
  // A process that left the group (setsid) could hold a pipe forever: give up after a second.
  ::kill(-pid, SIGKILL);
  const auto drain_deadline = Clock::now() + std::chrono::seconds(1);
  while ((out_open || err_open) && Clock::now() < drain_deadline) {
    pollfd fds[2];
    nfds_t n = 0;
    if (out_open) fds[n++] = {out_r.get(), POLLIN, 0};
    if (err_open) fds[n++] = {err_r.get(), POLLIN, 0};
    if (::poll(fds, n, 100) < 0 && errno != EINTR) break;
    if (out_open) out_open = drain(out_r.get(), r.out);
    if (err_open) err_open = drain(err_r.get(), r.err);
  }
  if (!r.timed_out) {
    if (WIFEXITED(status)) {
      r.exit_code = WEXITSTATUS(status);
    } else if (WIFSIGNALED(status)) {
      r.signaled = true;
      r.signal = WTERMSIG(status);
    }
  }
  return r;
}

}  // namespace attune::platform
