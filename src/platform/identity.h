// Who owns a row that another process may later have to judge (a tuning run): the host, its boot,
// and the process by pid and start time, so that a pid reused after the owner died is not taken
// for the owner. Reads /proc and the host name; keeps no state, so it is safe from any thread.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>

namespace attune::platform {

struct ProcessIdentity {
  std::string host;              // gethostname(); "" where unknown
  std::string boot_id;           // /proc/sys/kernel/random/boot_id; "" where unknown
  std::int64_t pid = 0;          // 0: unknown
  std::int64_t start_ticks = 0;  // field 22 of /proc/PID/stat (clock ticks after boot); 0: unknown
};

// This process, read now (not cached: a forked child is another process).
ProcessIdentity current_process();

// This machine's host name; "" where it cannot be read.
std::string host_name();

// When the process `pid` started, in clock ticks after boot (field 22 of /proc/PID/stat);
// nullopt when no such process exists or it is a zombie (dead, only not reaped yet).
std::optional<std::int64_t> process_start_ticks(pid_t pid);

// Whether the owner may still run. False only when it is known to be gone: on this host, another
// boot (the machine restarted since), or this boot and no live process with that pid and start
// time. Another host, or an owner whose host, boot or pid is unknown, cannot be judged from here:
// true, so that a caller never takes over what may still be in use.
bool alive(const ProcessIdentity& owner);

}  // namespace attune::platform
