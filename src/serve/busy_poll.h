// BusyPoll: when a front end's network threads poll for their next event
// instead of sleeping (serve --busy-poll-us; issue 29's latency with default
// flags).
//
// A thread woken from epoll_wait or a condition variable runs tens of
// microseconds late on a virtual machine; a thread that polls takes the next
// request, or a reply posted by an instance worker, at once, and costs a
// core while it does. The policy, measured in docs/BENCHMARKS.md ("default
// busy polling"):
//  - only after recent traffic: a thread polls while a handler ran within
//    the window (an idle server polls nothing);
//  - only while requests do not overlap: once two are in flight at once the
//    server is crowded for the next `crowd_hold` and no thread polls (every
//    thread has work then, and a polling one would take the CPU the others
//    and the clients need: 4 connections on 2 cores lost 27% of their
//    throughput with every thread polling);
//  - at most `seats` threads at a time (two by default): the threads holding
//    a seat poll; the others park until every seat is given up or the server
//    gets crowded, so a lone client costs two cores, not one per network
//    thread. One polling thread was measured slower than two on the 2-core
//    build machine (+57.7-85.6 against +34.5-44.9 us over in process): most
//    likely because a virtual CPU left idle halts, and waking it costs what
//    polling saved.
//
// Thread-safe. The clock is injected (tests/fakes/fake_clock.h).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

#include "serve/front_end_defaults.h"
#include "sys/clock.h"
#include "sys/mutex.h"
#include "sys/thread_annotations.h"

namespace ortgpu::serve {

class BusyPoll {
 public:
  // `window` 0: never poll (every call below is then cheap and ShouldPoll is
  // false). `crowd_hold` 0: ten windows.
  static constexpr int kDefaultSeats = 2;
  explicit BusyPoll(std::chrono::nanoseconds window, const Clock& clock = RealClock(),
                    std::chrono::nanoseconds crowd_hold = std::chrono::nanoseconds(0), int seats = kDefaultSeats);
  BusyPoll(const BusyPoll&) = delete;
  BusyPoll& operator=(const BusyPoll&) = delete;

  bool enabled() const { return window_ns_ > 0; }

  // A request was read (counted in flight until RequestFinished); with
  // another in flight the server is crowded for crowd_hold, and parked
  // threads are woken to take their share.
  void RequestStarted();
  void RequestFinished();
  // A handler just ran.
  void Activity();
  // Polling is worth it now: enabled, a handler ran within the window, and
  // the server is not crowded.
  bool ShouldPoll() const;
  bool Crowded() const;

  // Takes a seat when one is free: kNone when none is, kFirst when it was the
  // first taken (the caller makes the other threads leave the event loop and
  // park), kJoined otherwise. The caller keeps track of holding it.
  enum class Seat { kNone, kFirst, kJoined };
  Seat TakeSeat();
  // Gives a seat taken up; the last one given up wakes the parked threads.
  void ReleaseSeat() EXCLUDES(mu_);
  int seated() const { return seated_.load(std::memory_order_acquire); }
  // Blocks while a thread holds a seat and the server is neither crowded nor
  // stopping; returns at once otherwise.
  void Park() EXCLUDES(mu_);
  // Wakes every parked thread for good (the server stops).
  void Stop() EXCLUDES(mu_);

 private:
  void WakeParked() EXCLUDES(mu_);

  const int64_t window_ns_;
  const int64_t crowd_hold_ns_;
  const int seats_;
  const Clock& clock_;
  std::atomic<int64_t> last_activity_ns_{0};
  std::atomic<int64_t> crowded_until_ns_{0};
  std::atomic<int> in_flight_{0};
  std::atomic<int> seated_{0};
  std::atomic<bool> stopping_{false};
  Mutex mu_;
  CondVar parked_cv_;  // every seat was given up, the server got crowded, or it stops
};

}  // namespace ortgpu::serve
