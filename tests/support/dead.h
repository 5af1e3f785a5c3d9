// Whether a process is gone, for tests that kill trees of processes. Thread-safe.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <fstream>
#include <string>
#include <thread>

namespace attune::testing {

// Gone or a zombie: the orphan's new parent may reap it late (or never, in a container whose
// init does not reap), so a zombie counts as dead. A SIGKILLed process dies when next scheduled,
// so it is given up to 5 s to get there, looked at every 10 ms.
inline bool dead(pid_t pid) {
  for (int i = 0; i < 500; ++i) {
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string line;
    if (!std::getline(stat, line)) return true;
    auto close = line.rfind(')');
    if (close != std::string::npos && close + 2 < line.size() && line[close + 2] == 'Z')
      return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

}  // namespace attune::testing
