// The one clock and sleep of the layers above: the tuner's drift back-off and the sampling time cap
// read time and wait through a Clock, so tests give them a FakeClock and run without real sleeping.
// system_clock() is thread-safe; a FakeClock is used from one thread at a time.
#pragma once

#include <chrono>
#include <vector>

namespace attune::platform {

class Clock {
 public:
  virtual ~Clock() = default;
  virtual std::chrono::steady_clock::time_point now() const = 0;
  virtual void sleep_for(std::chrono::duration<double> d) = 0;
};

// The process's steady clock and std::this_thread::sleep_for.
Clock& system_clock();

// Time that moves only when told: now() advances by sleep_for() (which returns at once) or
// advance(), and every sleep asked for is recorded in order.
class FakeClock final : public Clock {
 public:
  explicit FakeClock(std::chrono::steady_clock::time_point start = {}) : now_(start) {}

  std::chrono::steady_clock::time_point now() const override { return now_; }
  void sleep_for(std::chrono::duration<double> d) override;
  void advance(std::chrono::duration<double> d);
  const std::vector<std::chrono::duration<double>>& sleeps() const { return sleeps_; }

 private:
  std::chrono::steady_clock::time_point now_;
  std::vector<std::chrono::duration<double>> sleeps_;
};

}  // namespace attune::platform
