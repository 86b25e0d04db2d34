// Mutex, MutexLock, SharedMutex and CondVar: std::mutex, std::shared_mutex
// and std::condition_variable with the thread-safety annotations (sys/thread_annotations.h), so that clang
// checks that a GUARDED_BY(mu_) field is touched only with mu_ held and a
// REQUIRES(mu_) function is called only so (leveldb's port::Mutex and
// MutexLock). Same cost as the std types they wrap.
//
//   Mutex mu_;
//   int n_ GUARDED_BY(mu_) = 0;
//   void Add() EXCLUDES(mu_) { MutexLock lock(&mu_); ++n_; }
//
// A CondVar waits with a Mutex held; write the wait as a loop over the
// condition (a predicate lambda is not seen to run under the lock):
//
//   MutexLock lock(&mu_);
//   while (queue_.empty() && !stopping_) cv_.Wait(&mu_);
//
// Thread-safety: as std::mutex and std::condition_variable.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <shared_mutex>

#include "sys/clock.h"
#include "sys/thread_annotations.h"

namespace ortgpu {

class CondVar;

class CAPABILITY("mutex") Mutex {
 public:
  Mutex() = default;
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

  void Lock() ACQUIRE() { mu_.lock(); }
  void Unlock() RELEASE() { mu_.unlock(); }
  // Tells the analysis the mutex is held where it cannot see it (a callback
  // documented to run under the lock); checks nothing at run time.
  void AssertHeld() ASSERT_CAPABILITY(this) {}

 private:
  friend class CondVar;
  std::mutex mu_;
};

// Holds `mu` from construction to destruction; Unlock() and Lock() let a
// scope give it back for a while (to complete a request outside the lock).
class SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(Mutex* mu) ACQUIRE(mu) : mu_(mu) { mu_->Lock(); }
  ~MutexLock() RELEASE() {
    if (held_) mu_->Unlock();
  }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

  void Unlock() RELEASE() {
    mu_->Unlock();
    held_ = false;
  }
  void Lock() ACQUIRE() {
    mu_->Lock();
    held_ = true;
  }

 private:
  Mutex* const mu_;
  bool held_ = true;
};

// A reader-writer lock: many holders shared (ReaderMutexLock) or one
// exclusively (WriterMutexLock). A GUARDED_BY(mu_) field may be read under
// either and written only under the exclusive one.
class CAPABILITY("shared mutex") SharedMutex {
 public:
  SharedMutex() = default;
  SharedMutex(const SharedMutex&) = delete;
  SharedMutex& operator=(const SharedMutex&) = delete;

  void Lock() ACQUIRE() { mu_.lock(); }
  void Unlock() RELEASE() { mu_.unlock(); }
  void ReaderLock() ACQUIRE_SHARED() { mu_.lock_shared(); }
  void ReaderUnlock() RELEASE_SHARED() { mu_.unlock_shared(); }

 private:
  std::shared_mutex mu_;
};

class SCOPED_CAPABILITY ReaderMutexLock {
 public:
  explicit ReaderMutexLock(SharedMutex* mu) ACQUIRE_SHARED(mu) : mu_(mu) { mu_->ReaderLock(); }
  ~ReaderMutexLock() RELEASE() { mu_->ReaderUnlock(); }
  ReaderMutexLock(const ReaderMutexLock&) = delete;
  ReaderMutexLock& operator=(const ReaderMutexLock&) = delete;

 private:
  SharedMutex* const mu_;
};

class SCOPED_CAPABILITY WriterMutexLock {
 public:
  explicit WriterMutexLock(SharedMutex* mu) ACQUIRE(mu) : mu_(mu) { mu_->Lock(); }
  ~WriterMutexLock() RELEASE() { mu_->Unlock(); }
  WriterMutexLock(const WriterMutexLock&) = delete;
  WriterMutexLock& operator=(const WriterMutexLock&) = delete;

 private:
  SharedMutex* const mu_;
};

// A condition variable (absl::CondVar's shape): each Wait is given the Mutex
// the caller holds, gives it back while blocked and holds it again on
// return; each may return spuriously, so callers loop over their condition.
// Every wait on one CondVar uses the same Mutex.
class CondVar {
 public:
  CondVar() = default;
  CondVar(const CondVar&) = delete;
  CondVar& operator=(const CondVar&) = delete;

  void Wait(Mutex* mu) REQUIRES(mu) {
    std::unique_lock<std::mutex> lock(mu->mu_, std::adopt_lock);
    cv_.wait(lock);
    lock.release();
  }
  // False when `timeout` passed without a signal.
  template <class Rep, class Period>
  bool WaitFor(Mutex* mu, std::chrono::duration<Rep, Period> timeout) REQUIRES(mu) {
    std::unique_lock<std::mutex> lock(mu->mu_, std::adopt_lock);
    const bool signalled = cv_.wait_for(lock, timeout) == std::cv_status::no_timeout;
    lock.release();
    return signalled;
  }
  // False when `deadline` passed without a signal.
  template <class ClockType, class Duration>
  bool WaitUntil(Mutex* mu, std::chrono::time_point<ClockType, Duration> deadline) REQUIRES(mu) {
    std::unique_lock<std::mutex> lock(mu->mu_, std::adopt_lock);
    const bool signalled = cv_.wait_until(lock, deadline) == std::cv_status::no_timeout;
    lock.release();
    return signalled;
  }
  // Until signalled or `clock` reaches `deadline_ns` (Clock::WaitUntil, so a
  // FakeClock's time wakes it too).
  void WaitUntil(Mutex* mu, const Clock& clock, int64_t deadline_ns) REQUIRES(mu) {
    std::unique_lock<std::mutex> lock(mu->mu_, std::adopt_lock);
    clock.WaitUntil(cv_, lock, deadline_ns);
    lock.release();
  }
  void Signal() { cv_.notify_one(); }
  void SignalAll() { cv_.notify_all(); }

 private:
  std::condition_variable cv_;
};

}  // namespace ortgpu
