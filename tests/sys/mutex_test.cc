// sys/mutex.h: the annotated Mutex, MutexLock, SharedMutex and CondVar behave
// as the std types they wrap (what they let clang check is
// tests/sys/thread_safety_check.py's job).
#include "sys/mutex.h"

#include <chrono>
#include <thread>

#include <gtest/gtest.h>

namespace ortgpu {
namespace {

class Flag {
 public:
  void Set() EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    set_ = true;
    cv_.SignalAll();
  }
  void Wait() EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    while (!set_) cv_.Wait(&mu_);
  }
  bool WaitFor(std::chrono::milliseconds timeout) EXCLUDES(mu_) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    MutexLock lock(&mu_);
    while (!set_) {
      if (!cv_.WaitUntil(&mu_, deadline)) return set_;
    }
    return true;
  }
  // Gives the lock back, sets the flag, and takes the lock again.
  bool SetWhileUnlocked() EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    lock.Unlock();
    Set();
    lock.Lock();
    return set_;
  }

 private:
  Mutex mu_;
  CondVar cv_;
  bool set_ GUARDED_BY(mu_) = false;
};

TEST(MutexTest, CondVarWakesTheWaiter) {
  Flag flag;
  std::thread setter([&] { flag.Set(); });
  flag.Wait();
  setter.join();
  EXPECT_TRUE(flag.WaitFor(std::chrono::milliseconds(0)));
}

TEST(MutexTest, WaitUntilReturnsFalseWhenTheDeadlinePasses) {
  Flag flag;
  EXPECT_FALSE(flag.WaitFor(std::chrono::milliseconds(1)));
}

TEST(MutexTest, MutexLockCanGiveTheLockBackAndTakeItAgain) {
  Flag flag;
  EXPECT_TRUE(flag.SetWhileUnlocked());
}

TEST(MutexTest, SharedMutexLetsReadersShare) {
  SharedMutex mu;
  ReaderMutexLock first(&mu);
  bool second_read = false;
  std::thread reader([&] {
    ReaderMutexLock second(&mu);
    second_read = true;
  });
  reader.join();  // would deadlock were the reader lock exclusive
  EXPECT_TRUE(second_read);
}

}  // namespace
}  // namespace ortgpu
