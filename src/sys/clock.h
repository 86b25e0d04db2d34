// Clock: monotonic time, injectable so schedulers and statistics are tested
// without sleeping (tests/fakes/fake_clock.h). Thread-safe.
#pragma once

#include <cstdint>

namespace ortgpu {

class Clock {
 public:
  virtual ~Clock() = default;
  // Nanoseconds from an arbitrary fixed origin; never goes backwards.
  virtual int64_t NowNanos() const = 0;
};

// steady_clock. Never null.
const Clock& RealClock();

}  // namespace ortgpu
