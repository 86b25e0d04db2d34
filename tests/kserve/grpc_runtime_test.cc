#include "kserve/grpc_runtime.h"

#include <absl/synchronization/mutex.h>
#include <gtest/gtest.h>

#include <cstdlib>

namespace ortgpu::kserve {
namespace {

// Two mutexes taken in both orders, one after the other: no deadlock, but a
// cycle in Abseil's lock-order graph.
void TakeTwoMutexesInBothOrders() {
  absl::Mutex a;
  absl::Mutex b;
  {
    absl::MutexLock la(&a);
    absl::MutexLock lb(&b);
  }
  {
    absl::MutexLock lb(&b);
    absl::MutexLock la(&a);
  }
}

// Debian's Abseil checks lock order on every absl::Mutex (a process-wide
// graph under a global lock) and aborts on a cycle. The control: with the
// check on, the cycle aborts the process, so the test below can fail.
TEST(GrpcRuntimeDeathTest, WithDeadlockDetectionOnACycleAborts) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kAbort);
        TakeTwoMutexesInBothOrders();
      },
      "deadlock");
}

// Issue 25 (this test ended in SUCCEED(), so an abort was its only way to
// fail): once configured, the same cycle runs to the end of the process.
TEST(GrpcRuntimeDeathTest, Issue25OnceConfiguredALockOrderCycleDoesNotAbort) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kAbort);
        ConfigureGrpcRuntime();
        ConfigureGrpcRuntime();  // idempotent
        TakeTwoMutexesInBothOrders();
        std::exit(0);
      },
      ::testing::ExitedWithCode(0), "");
}

}  // namespace
}  // namespace ortgpu::kserve
