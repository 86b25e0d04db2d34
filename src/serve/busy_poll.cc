#include "serve/busy_poll.h"

#include <algorithm>

namespace ortgpu::serve {

BusyPoll::BusyPoll(std::chrono::nanoseconds window, const Clock& clock, std::chrono::nanoseconds crowd_hold, int seats)
    : window_ns_(std::max<int64_t>(0, window.count())),
      crowd_hold_ns_(crowd_hold.count() > 0 ? crowd_hold.count() : 10 * window_ns_),
      seats_(std::max(1, seats)),
      clock_(clock) {}

void BusyPoll::RequestStarted() {
  const int now_in_flight = in_flight_.fetch_add(1, std::memory_order_relaxed) + 1;
  if (!enabled() || now_in_flight < 2) return;
  const bool was_crowded = Crowded();
  crowded_until_ns_.store(clock_.NowNanos() + crowd_hold_ns_, std::memory_order_relaxed);
  if (!was_crowded && seated() > 0) WakeParked();
}

void BusyPoll::RequestFinished() { in_flight_.fetch_sub(1, std::memory_order_relaxed); }

void BusyPoll::Activity() {
  if (enabled()) last_activity_ns_.store(clock_.NowNanos(), std::memory_order_relaxed);
}

bool BusyPoll::Crowded() const { return clock_.NowNanos() < crowded_until_ns_.load(std::memory_order_relaxed); }

bool BusyPoll::ShouldPoll() const {
  if (!enabled() || stopping_.load(std::memory_order_relaxed)) return false;
  const int64_t now = clock_.NowNanos();
  return now - last_activity_ns_.load(std::memory_order_relaxed) < window_ns_ &&
         now >= crowded_until_ns_.load(std::memory_order_relaxed);
}

BusyPoll::Seat BusyPoll::TakeSeat() {
  int taken = seated_.load(std::memory_order_acquire);
  while (taken < seats_) {
    if (seated_.compare_exchange_weak(taken, taken + 1, std::memory_order_acq_rel)) {
      return taken == 0 ? Seat::kFirst : Seat::kJoined;
    }
  }
  return Seat::kNone;
}

void BusyPoll::ReleaseSeat() {
  if (seated_.fetch_sub(1, std::memory_order_acq_rel) == 1) WakeParked();
}

void BusyPoll::Park() {
  MutexLock lock(&mu_);
  while (seated() > 0 && !Crowded() && !stopping_.load(std::memory_order_relaxed)) {
    parked_cv_.Wait(&mu_);
  }
}

void BusyPoll::Stop() {
  stopping_.store(true, std::memory_order_relaxed);
  WakeParked();
}

void BusyPoll::WakeParked() {
  // Taken so that a thread between its check and its wait cannot miss this.
  MutexLock lock(&mu_);
  parked_cv_.SignalAll();
}

}  // namespace ortgpu::serve
