// What gRPC's runtime is set to before ortgpu serves or sends a gRPC call.
//
// Debian builds Abseil without NDEBUG, which leaves Abseil's mutex deadlock
// detection on: every absl::Mutex lock, and gRPC 1.51 takes several per call
// (gpr_mu is an absl::Mutex), looks the mutex up in a process-wide graph of
// lock orders under a global lock, and aborts the process when two locks
// were ever taken in both orders. That is about a sixth of a gRPC call's
// instructions on each side (docs/BENCHMARKS.md) and a lock every thread
// shares. ortgpu takes no absl::Mutex of its own, and release builds of
// Abseil run without the check, so it is switched off.
#pragma once

namespace ortgpu::kserve {

// Turns Abseil's mutex deadlock detection off. Idempotent; call it before
// the first gRPC server, channel or call (a mutex already in the graph is
// not harmed, only no longer checked).
void ConfigureGrpcRuntime();

}  // namespace ortgpu::kserve
