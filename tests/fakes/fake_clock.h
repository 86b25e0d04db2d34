// FakeClock: a Clock whose time moves only when the test says so
// (Set/Advance). A thread blocked in WaitUntil wakes when the time reaches
// its deadline through Set/Advance (or when its condition variable is
// notified), never by itself: a test of a queue delay advances the clock
// instead of sleeping.
//
// Thread-safe. REQUIRES: a waiter's mutex and condition variable outlive any
// Advance/Set that runs while it waits (the owner of the waiting threads is
// not destroyed during Advance).
#pragma once

#include <algorithm>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <vector>

#include "sys/clock.h"

namespace ortgpu::testing {

class FakeClock final : public Clock {
 public:
  explicit FakeClock(int64_t start_ns = 1'000'000'000) : now_(start_ns) {}

  int64_t NowNanos() const override {
    std::lock_guard<std::mutex> lock(mu_);
    return now_;
  }

  void WaitUntil(std::condition_variable& cv, std::unique_lock<std::mutex>& lock, int64_t deadline_ns) const override {
    Waiter w{&cv, lock.mutex()};
    {
      std::lock_guard<std::mutex> guard(mu_);
      // Checked under mu_: an Advance either sees this waiter or came first.
      if (now_ >= deadline_ns) return;
      waiters_.push_back(w);
      ++waits_;
    }
    waits_cv_.notify_all();
    // The caller's mutex is held until cv.wait releases it, and Advance takes
    // it before notifying: the wake-up cannot fall between the two.
    cv.wait(lock);
    std::lock_guard<std::mutex> guard(mu_);
    auto it = std::find(waiters_.begin(), waiters_.end(), w);
    if (it != waiters_.end()) waiters_.erase(it);
  }

  void Advance(int64_t ns) { Set(NowNanos() + ns); }

  // Moves the time to `ns` (never backwards) and wakes every waiter.
  void Set(int64_t ns) {
    std::vector<Waiter> waiters;
    {
      std::lock_guard<std::mutex> guard(mu_);
      now_ = std::max(now_, ns);
      waiters = waiters_;
    }
    for (const Waiter& w : waiters) {
      std::lock_guard<std::mutex> guard(*w.mu);
      w.cv->notify_all();
    }
  }

  // Blocks until WaitUntil has blocked `n` times in all (each a thread that
  // found its deadline still ahead): how a test knows a worker is waiting.
  void AwaitWaits(int n) const {
    std::unique_lock<std::mutex> lock(mu_);
    waits_cv_.wait(lock, [&] { return waits_ >= n; });
  }

 private:
  struct Waiter {
    std::condition_variable* cv;
    std::mutex* mu;
    bool operator==(const Waiter& o) const { return cv == o.cv && mu == o.mu; }
  };
  mutable std::mutex mu_;
  mutable std::condition_variable waits_cv_;
  int64_t now_;                           // guarded by mu_
  mutable std::vector<Waiter> waiters_;   // guarded by mu_
  mutable int waits_ = 0;                 // guarded by mu_
};

}  // namespace ortgpu::testing
