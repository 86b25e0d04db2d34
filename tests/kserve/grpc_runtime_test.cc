#include "kserve/grpc_runtime.h"

#include <absl/synchronization/mutex.h>
#include <gtest/gtest.h>

namespace ortgpu::kserve {
namespace {

// Debian's Abseil checks lock order on every absl::Mutex (a process-wide
// graph under a global lock) and aborts on a cycle. Once configured, two
// mutexes taken in both orders, one after the other (no deadlock), pass
// without a check.
TEST(GrpcRuntimeTest, MutexDeadlockDetectionIsOff) {
  ConfigureGrpcRuntime();
  ConfigureGrpcRuntime();  // idempotent
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
  SUCCEED();
}

}  // namespace
}  // namespace ortgpu::kserve
