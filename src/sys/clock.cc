#include "sys/clock.h"

#include <chrono>

namespace ortgpu {
namespace {

class SteadyClock final : public Clock {
 public:
  int64_t NowNanos() const override {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }
};

}  // namespace

void Clock::WaitUntil(std::condition_variable& cv, std::unique_lock<std::mutex>& lock, int64_t deadline_ns) const {
  cv.wait_until(lock, std::chrono::steady_clock::time_point(
                             std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                 std::chrono::nanoseconds(deadline_ns))));
}

const Clock& RealClock() {
  static const SteadyClock clock;
  return clock;
}

}  // namespace ortgpu
