#include "platform/identity.h"

#include <unistd.h>

#include <climits>
#include <fstream>
#include <sstream>
#include <vector>

namespace attune::platform {

namespace {

std::string first_line(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

}  // namespace

std::string host_name() {
  char buf[HOST_NAME_MAX + 1] = {};
  if (gethostname(buf, sizeof buf - 1) != 0) return "";
  return buf;
}

std::optional<std::int64_t> process_start_ticks(pid_t pid) {
  if (pid <= 0) return std::nullopt;
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat;
  if (!std::getline(in, stat)) return std::nullopt;
  // "pid (comm) state ppid ...": comm may hold spaces and ')', so fields count from the last ')'.
  const auto paren = stat.rfind(')');
  if (paren == std::string::npos) return std::nullopt;
  std::istringstream rest(stat.substr(paren + 1));
  std::vector<std::string> fields;  // fields[0] is field 3 (state)
  for (std::string f; fields.size() < 20 && rest >> f;) fields.push_back(f);
  if (fields.size() < 20) return std::nullopt;
  if (fields[0] == "Z" || fields[0] == "X") return std::nullopt;  // dead, not reaped yet
  try {
    return std::stoll(fields[19]);  // field 22: starttime
  } catch (...) {
    return std::nullopt;
  }
}

ProcessIdentity current_process() {
  ProcessIdentity id;
  id.host = host_name();
  id.boot_id = first_line("/proc/sys/kernel/random/boot_id");
  id.pid = getpid();
  id.start_ticks = process_start_ticks(getpid()).value_or(0);
  return id;
}

bool alive(const ProcessIdentity& owner) {
  const ProcessIdentity here = current_process();
  if (owner.host.empty() || here.host.empty() || owner.host != here.host) return true;
  if (owner.boot_id.empty() || here.boot_id.empty()) return true;
  if (owner.boot_id != here.boot_id) return false;  // the machine restarted since
  if (owner.pid <= 0 || owner.pid > INT_MAX) return true;
  const auto start = process_start_ticks(static_cast<pid_t>(owner.pid));
  if (!start) return false;
  return owner.start_ticks == 0 || *start == owner.start_ticks;
}

}  // namespace attune::platform
