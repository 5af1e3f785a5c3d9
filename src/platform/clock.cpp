#include "platform/clock.h"

#include <thread>

namespace attune::platform {

namespace {
class SystemClock final : public Clock {
 public:
  std::chrono::steady_clock::time_point now() const override {
    return std::chrono::steady_clock::now();
  }
  void sleep_for(std::chrono::duration<double> d) override {
    if (d.count() > 0) std::this_thread::sleep_for(d);
  }
};
}  // namespace

Clock& system_clock() {
  static SystemClock clock;
  return clock;
}

void FakeClock::sleep_for(std::chrono::duration<double> d) {
  sleeps_.push_back(d);
  advance(d);
}

void FakeClock::advance(std::chrono::duration<double> d) {
  if (d.count() > 0) now_ += std::chrono::duration_cast<std::chrono::steady_clock::duration>(d);
}

}  // namespace attune::platform
