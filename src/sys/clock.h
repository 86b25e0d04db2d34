// Clock: monotonic time, injectable so schedulers and statistics are tested
// without sleeping (tests/fakes/fake_clock.h). Thread-safe.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <mutex>

namespace ortgpu {

class Clock {
 public:
  virtual ~Clock() = default;
  // Nanoseconds from an arbitrary fixed origin; never goes backwards.
  virtual int64_t NowNanos() const = 0;
  // Blocks on `cv` (whose mutex `lock` holds, released while blocked) until
  // it is notified or NowNanos() reaches `deadline_ns`; may also return
  // spuriously, so callers re-check their condition. The default waits on
  // steady_clock, right for every clock whose NowNanos follows it; a clock
  // with its own time (FakeClock) overrides it so that moving the time wakes
  // the waiter.
  virtual void WaitUntil(std::condition_variable& cv, std::unique_lock<std::mutex>& lock, int64_t deadline_ns) const;
};

// steady_clock. Never null.
const Clock& RealClock();

}  // namespace ortgpu
