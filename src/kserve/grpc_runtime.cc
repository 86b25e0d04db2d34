#include "kserve/grpc_runtime.h"

#include <absl/synchronization/mutex.h>

namespace ortgpu::kserve {

void ConfigureGrpcRuntime() { absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore); }

}  // namespace ortgpu::kserve
