#include "platform/process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <mutex>

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
  int release() {
    int fd = fd_;
    fd_ = -1;
    return fd;
  }
  void reset(int fd = -1) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = fd;
  }

 private:
  int fd_ = -1;
};

Error sys_error(const std::string& what) {
  return Error::io(what + ": " + std::strerror(errno));
}

void close_fd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

// The process groups of the live Children, for kill_running_programs(); 0 marks a free slot.
// Lock-free atomics, so a signal handler may read them.
constexpr int kMaxGroups = 256;
std::atomic<pid_t> g_running[kMaxGroups];
static_assert(std::atomic<pid_t>::is_always_lock_free);

// A slot for the group, or -1 when all are taken (the group is then not killed on SIGINT).
int claim_slot(pid_t pgid) {
  for (int i = 0; i < kMaxGroups; ++i) {
    pid_t free = 0;
    if (g_running[i].compare_exchange_strong(free, pgid)) return i;
  }
  return -1;
}

// The sentinel: a process forked once per attune process that lists the live process groups and
// holds one end of a socket pair. The kernel closes attune's end when attune ends, however it
// ends (SIGKILL included); the sentinel then kills every group still listed and exits. It is what
// takes a Child's own children along: PR_SET_PDEATHSIG reaches the Child only.
struct SentinelMessage {
  std::int32_t add;  // 1: a group to guard; 0: one that is gone
  std::int32_t pgid;
};

// The sentinel's life. It was forked from a process that may have other threads, so it makes
// async-signal-safe calls only. Every signal stays blocked, as it was at the fork: the terminal's
// Ctrl-C or hangup is attune's to handle, and the sentinel must outlive attune to do its work.
[[noreturn]] void sentinel_main(int sock) {
  ::setpgid(0, 0);
  const int keep = ::fcntl(sock, F_DUPFD, 100);
  const int null = ::open("/dev/null", O_RDWR);
  for (int fd = 0; fd < 3; ++fd) ::dup2(null, fd);
  ::dup2(keep, 3);
  // Copies of attune's descriptors (a worker's stdin among them) must not be held open here.
#ifdef SYS_close_range
  if (::syscall(SYS_close_range, 4, ~0U, 0) != 0)
#endif
    for (int fd = 4; fd < 65536; ++fd) ::close(fd);
  pid_t groups[1024] = {};
  for (;;) {
    SentinelMessage m;
    ssize_t n = ::recv(3, &m, sizeof m, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n != static_cast<ssize_t>(sizeof m)) break;  // 0: attune is gone
    pid_t* free = nullptr;
    pid_t* found = nullptr;
    for (pid_t& g : groups) {
      if (g == m.pgid) found = &g;
      if (g == 0 && !free) free = &g;
    }
    if (!m.add && found) *found = 0;
    if (m.add && !found && free) *free = m.pgid;
  }
  for (pid_t g : groups)
    if (g > 0) ::kill(-g, SIGKILL);
  ::_exit(0);
}

// attune's side of the sentinel. Best effort: where it cannot be started, PR_SET_PDEATHSIG still
// ends each Child with attune.
class Sentinel {
 public:
  void guard(pid_t pgid) { send(1, pgid); }
  void release(pid_t pgid) { send(0, pgid); }

 private:
  void send(std::int32_t add, pid_t pgid) {
    std::lock_guard lock(mu_);
    // A forked copy of attune (a test, a daemon) starts its own: the copy's groups must die with
    // it.
    if (owner_ != ::getpid() && !start()) return;
    SentinelMessage m{add, pgid};
    if (::send(fd_, &m, sizeof m, MSG_NOSIGNAL) == sizeof m) return;
    // The sentinel was killed: a new one guards every live group again.
    if (start()) ::send(fd_, &m, sizeof m, MSG_NOSIGNAL);
  }

  bool start() {
    if (owner_ == ::getpid()) {
      if (pid_ > 0) ::waitpid(pid_, nullptr, WNOHANG);
    }
    if (fd_ >= 0) ::close(fd_);  // a dead sentinel's, or the one the forked copy inherited
    fd_ = -1;
    owner_ = ::getpid();
    int sv[2];
    if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) return false;
    sigset_t all, old;
    sigfillset(&all);
    ::pthread_sigmask(SIG_SETMASK, &all, &old);
    pid_t pid = ::fork();
    if (pid == 0) sentinel_main(sv[1]);
    ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
    ::close(sv[1]);
    if (pid < 0) {
      ::close(sv[0]);
      return false;
    }
    pid_ = pid;
    fd_ = sv[0];
    for (auto& slot : g_running) {
      SentinelMessage m{1, slot.load()};
      if (m.pgid > 0) ::send(fd_, &m, sizeof m, MSG_NOSIGNAL);
    }
    return true;
  }

  std::mutex mu_;
  pid_t owner_ = 0;  // the process that started the sentinel fd_ talks to
  pid_t pid_ = -1;
  int fd_ = -1;
};

Sentinel& sentinel() {
  static Sentinel* s = new Sentinel;  // never destroyed: Children may outlive static destruction
  return *s;
}

// A pipe whose ends are both above 2, so that the dup2() onto stdin/stdout/stderr in the child
// never overwrites one of them (attune may have been started with a standard descriptor closed).
Status make_pipe(Fd& read_end, Fd& write_end) {
  int p[2];
  if (::pipe2(p, O_CLOEXEC) != 0) return sys_error("pipe");
  for (int& fd : p)
    if (fd < 3) {
      int high = ::fcntl(fd, F_DUPFD_CLOEXEC, 3);
      ::close(fd);
      fd = high;
    }
  read_end.reset(p[0]);
  write_end.reset(p[1]);
  if (p[0] < 0 || p[1] < 0) return sys_error("pipe");
  return Status::success();
}

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

// The directories of this process's PATH (`fallback` where it is unset), an empty entry meaning
// ".".
std::vector<std::string> path_dirs(const char* fallback) {
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : fallback;
  std::vector<std::string> out;
  std::size_t pos = 0;
  while (pos <= dirs.size()) {
    std::size_t end = dirs.find(':', pos);
    if (end == std::string::npos) end = dirs.size();
    std::string d = dirs.substr(pos, end - pos);
    out.push_back(d.empty() ? "." : d);
    pos = end + 1;
  }
  return out;
}

// Signals a program starts with at their default action, whatever attune does with them.
constexpr int kDefaultSignals[] = {SIGPIPE, SIGINT,  SIGTERM, SIGQUIT, SIGHUP,
                                   SIGCHLD, SIGALRM, SIGUSR1, SIGUSR2};

// Everything the child needs between fork and exec, built before the fork: the child may only
// make async-signal-safe calls (no allocation), since another thread may hold malloc's lock.
struct ExecPlan {
  std::vector<std::string> argv_text, env_text, paths_text;
  std::vector<char*> argv, envp;
  std::vector<const char*> paths;  // where to try argv[0]: itself, or each PATH entry
  const char* cwd = nullptr;
  pid_t parent = 0;
  int in = -1, out = -1, err = -1;  // to become 0, 1, 2
  int report = -1;                  // the errno of a failed start goes here

  explicit ExecPlan(const ProcessSpec& spec) : argv_text(spec.argv) {
    for (char** e = environ; *e; ++e) {
      std::string kv(*e);
      if (!spec.env.count(kv.substr(0, kv.find('=')))) env_text.push_back(std::move(kv));
    }
    for (const auto& [k, v] : spec.env) env_text.push_back(k + "=" + v);
    for (auto& s : env_text) envp.push_back(s.data());
    envp.push_back(nullptr);
    for (auto& s : argv_text) argv.push_back(s.data());
    argv.push_back(nullptr);
    const std::string& name = spec.argv[0];
    if (name.find('/') != std::string::npos) {
      paths_text.push_back(name);
    } else {
      // As posix_spawnp and execvp do: this process's PATH, searched in the child.
      for (const auto& d : path_dirs("/bin:/usr/bin")) paths_text.push_back(d + "/" + name);
    }
    for (auto& p : paths_text) paths.push_back(p.c_str());
    if (!spec.cwd.empty()) cwd = spec.cwd.c_str();
  }
};

// The child's side of a spawn. Async-signal-safe calls only.
[[noreturn]] void exec_child(const ExecPlan& plan) {
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  for (int s : kDefaultSignals) ::sigaction(s, &dfl, nullptr);
  sigset_t none;
  sigemptyset(&none);
  int error = 0;
  // Its own process group, so a deadline kills the program and everything it started.
  ::setpgid(0, 0);
  // Death with the parent; the check closes the race with a parent that died before the prctl.
  if (::prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || ::getppid() != plan.parent) ::_exit(127);
  if (::dup2(plan.in, 0) < 0 || ::dup2(plan.out, 1) < 0 || ::dup2(plan.err, 2) < 0 ||
      (plan.cwd && ::chdir(plan.cwd) != 0)) {
    error = errno;
  } else {
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    // execvp's rules: a candidate that is not there is passed over; one that is there but may
    // not be run is remembered (EACCES) and the search goes on; any other failure ends it.
    bool denied = false;
    error = ENOENT;
    for (const char* path : plan.paths) {
      ::execve(path, plan.argv.data(), plan.envp.data());
      error = errno;
      if (error == EACCES) {
        denied = true;
        continue;
      }
      if (error != ENOENT && error != ENOTDIR && error != ESTALE && error != ENODEV) break;
    }
    if (denied && (error == ENOENT || error == ENOTDIR || error == ESTALE || error == ENODEV))
      error = EACCES;
  }
  while (::write(plan.report, &error, sizeof error) < 0 && errno == EINTR) {
  }
  ::_exit(127);
}

}  // namespace

Result<Child> Child::spawn(const ProcessSpec& spec, Stdin in) {
  if (spec.argv.empty()) return Error::invalid_argument("spawn: empty argv");
  Fd in_r, in_w, out_r, out_w, err_r, err_w, report_r, report_w;
  if (in == Stdin::kPipe) {
    if (Status s = make_pipe(in_r, in_w); !s) return s.error();
  } else {
    in_r.reset(::open("/dev/null", O_RDONLY | O_CLOEXEC));
    if (in_r.get() >= 0 && in_r.get() < 3) in_r.reset(::fcntl(in_r.get(), F_DUPFD_CLOEXEC, 3));
    if (in_r.get() < 0) return sys_error("/dev/null");
  }
  if (Status s = make_pipe(out_r, out_w); !s) return s.error();
  if (Status s = make_pipe(err_r, err_w); !s) return s.error();
  if (Status s = make_pipe(report_r, report_w); !s) return s.error();

  ExecPlan plan(spec);
  plan.parent = ::getpid();
  plan.in = in_r.get();
  plan.out = out_w.get();
  plan.err = err_w.get();
  plan.report = report_w.get();

  // All signals blocked across the fork: no handler of attune's may run in the child before exec.
  sigset_t all, old;
  sigfillset(&all);
  ::pthread_sigmask(SIG_SETMASK, &all, &old);
  pid_t pid = ::fork();
  if (pid == 0) exec_child(plan);
  const int fork_errno = errno;
  ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
  if (pid < 0) return Error::not_found(std::strerror(fork_errno));

  Child c;
  c.pid_ = pid;
  // Set from this side too, so that a kill_group() right after spawn finds the group.
  ::setpgid(pid, pid);
  c.slot_ = claim_slot(pid);
  sentinel().guard(pid);
  in_r.reset();
  out_w.reset();
  err_w.reset();
  report_w.reset();
  int error = 0;
  ssize_t n;
  while ((n = ::read(report_r.get(), &error, sizeof error)) < 0 && errno == EINTR) {
  }
  if (n == static_cast<ssize_t>(sizeof error)) {
    c.wait();
    return Error::not_found(std::strerror(error));  // c's destructor releases its slot
  }
  c.in_ = in_w.release();
  c.out_ = out_r.release();
  c.err_ = err_r.release();
  ::fcntl(c.out_, F_SETFL, O_NONBLOCK);
  ::fcntl(c.err_, F_SETFL, O_NONBLOCK);
  c.pidfd_ = open_pidfd(pid);
  return c;
}

Child::Child(Child&& o) noexcept
    : pid_(o.pid_),
      in_(o.in_),
      out_(o.out_),
      err_(o.err_),
      pidfd_(o.pidfd_),
      status_(o.status_),
      vanished_(o.vanished_),
      slot_(o.slot_) {
  o.pid_ = -1;
  o.in_ = o.out_ = o.err_ = o.pidfd_ = -1;
  o.slot_ = -1;
}

Child& Child::operator=(Child&& o) noexcept {
  if (this != &o) {
    release();
    std::swap(pid_, o.pid_);
    std::swap(in_, o.in_);
    std::swap(out_, o.out_);
    std::swap(err_, o.err_);
    std::swap(pidfd_, o.pidfd_);
    std::swap(status_, o.status_);
    std::swap(vanished_, o.vanished_);
    std::swap(slot_, o.slot_);
  }
  return *this;
}

Child::~Child() {
  release();
}

void Child::release() {
  if (pid_ > 0) {
    kill_group();
    wait();
    sentinel().release(pid_);
    if (slot_ >= 0) g_running[slot_].store(0);
  }
  for (int* fd : {&in_, &out_, &err_, &pidfd_}) close_fd(*fd);
  pid_ = -1;
  slot_ = -1;
}

void Child::close_stdin() {
  close_fd(in_);
}

void Child::kill_group() {
  if (pid_ > 0) ::kill(-pid_, SIGKILL);
}

std::optional<int> Child::try_wait() {
  if (status_ || pid_ <= 0) return status_;
  int status = 0;
  for (;;) {
    pid_t w = ::waitpid(pid_, &status, WNOHANG);
    if (w == pid_) return status_ = status;
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) {  // reaped by someone else (a waitpid(-1) elsewhere in the process)
      vanished_ = true;
      return status_ = 0;
    }
    return std::nullopt;
  }
}

std::optional<int> Child::wait_until(Clock::time_point deadline) {
  for (;;) {
    if (auto s = try_wait()) return s;
    auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) return std::nullopt;
    if (pidfd_ >= 0) {
      pollfd p{pidfd_, POLLIN, 0};
      ::poll(&p, 1, static_cast<int>(std::min<long long>(left + 1, 1 << 30)));
    } else {
      ::poll(nullptr, 0, static_cast<int>(std::min<long long>(left + 1, 10)));
    }
  }
}

int Child::wait() {
  if (status_ || pid_ <= 0) return status_.value_or(0);
  int status = 0;
  for (;;) {
    pid_t w = ::waitpid(pid_, &status, 0);
    if (w == pid_) return *(status_ = status);
    if (w < 0 && errno == EINTR) continue;
    vanished_ = true;
    return *(status_ = 0);
  }
}

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
  for (const auto& d : path_dirs("/usr/local/bin:/usr/bin:/bin")) {
    fs::path p = fs::path(d) / argv0;
    if (executable(p)) return fs::absolute(p).string();
  }
  return Error::invalid_argument("program '" + argv0 + "' is not found on PATH");
}

namespace {
std::atomic<unsigned> g_kills{0};
}  // namespace

unsigned programs_killed() {
  return g_kills.load();
}

void kill_running_programs() {
  g_kills.fetch_add(1);
  for (auto& slot : g_running) {
    pid_t pgid = slot.load();
    if (pgid > 0) ::kill(-pgid, SIGKILL);
  }
}

Result<ProcessResult> run_process(const ProcessSpec& spec) {
  ProcessResult r;
  if (spec.argv.empty()) return Error::invalid_argument("run_process: empty argv");
  const auto start = Clock::now();
  const auto deadline = start + spec.timeout;
  auto spawned = Child::spawn(spec, Stdin::kNull);
  if (!spawned) {
    if (spawned.error().kind() != Error::Kind::kNotFound) return spawned.error();
    r.spawn_error = "cannot run '" + spec.argv[0] + "': " + spawned.error().message();
    return r;
  }
  Child& child = *spawned;
  r.spawned = true;
  bool out_open = true, err_open = true;
  std::optional<int> status;
  auto exited = [&](std::optional<int> s) {
    status = s;
    if (status) r.wall_s = std::chrono::duration<double>(Clock::now() - start).count();
  };

  while (!status) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) {
      exited(child.try_wait());
      if (status) break;
      r.timed_out = true;
      child.kill_group();
      exited(child.wait());
      break;
    }
    pollfd fds[3];
    nfds_t n = 0;
    int i_out = -1, i_err = -1, i_pid = -1;
    if (out_open) {
      i_out = static_cast<int>(n);
      fds[n++] = {child.stdout_fd(), POLLIN, 0};
    }
    if (err_open) {
      i_err = static_cast<int>(n);
      fds[n++] = {child.stderr_fd(), POLLIN, 0};
    }
    if (child.exit_fd() >= 0) {
      i_pid = static_cast<int>(n);
      fds[n++] = {child.exit_fd(), POLLIN, 0};
    }
    long wait_ms = left.count();
    if (child.exit_fd() < 0) wait_ms = std::min<long>(wait_ms, 10);
    int p = ::poll(fds, n, static_cast<int>(std::min<long>(wait_ms, 1 << 30)));
    if (p < 0) {
      if (errno == EINTR) continue;
      Error e = sys_error("poll");
      child.kill_group();
      return e;
    }
    if (i_out >= 0 && fds[i_out].revents) out_open = drain(child.stdout_fd(), r.out);
    if (i_err >= 0 && fds[i_err].revents) err_open = drain(child.stderr_fd(), r.err);
    if (i_pid >= 0 && fds[i_pid].revents)
      exited(child.wait());
    else if (child.exit_fd() < 0)
      exited(child.try_wait());
  }

  // The program is gone; whatever it left running in its group goes too, which also closes the
  // pipes it held so the reads below end.
  // A process that left the group (setsid) could hold a pipe forever: give up after a second.
  child.kill_group();
  const auto drain_deadline = Clock::now() + std::chrono::seconds(1);
  while ((out_open || err_open) && Clock::now() < drain_deadline) {
    pollfd fds[2];
    nfds_t n = 0;
    if (out_open) fds[n++] = {child.stdout_fd(), POLLIN, 0};
    if (err_open) fds[n++] = {child.stderr_fd(), POLLIN, 0};
    if (::poll(fds, n, 100) < 0 && errno != EINTR) break;
    if (out_open) out_open = drain(child.stdout_fd(), r.out);
    if (err_open) err_open = drain(child.stderr_fd(), r.err);
  }
  if (!r.timed_out) {
    if (WIFEXITED(*status)) {
      r.exit_code = WEXITSTATUS(*status);
    } else if (WIFSIGNALED(*status)) {
      r.signaled = true;
      r.signal = WTERMSIG(*status);
    }
  }
  return r;
}

}  // namespace attune::platform
