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

const Clock& RealClock() {
  static const SteadyClock clock;
  return clock;
}

}  // namespace ortgpu
