// ArenaStats: what ONNX Runtime's memory arena of one session holds on the
// session's device, as ORT's AllocatorGetStats reports it (the BFC arena's
// counters). ORT has no other way to say what a session costs in device
// memory (ORT issues #24993, #24323); this is what `ortgpu bench --memory`
// and serve's memory plan (docs/MEMORY.md) read.
//
// What the figures mean for a session:
//  - the session's own weights are in the arena: ORT reserves one block for
//    its initializers (BFCArena::Reserve counts it in InUse and
//    TotalAllocated), so InUse right after the session was created is its
//    weights; weights offered through SessionOptions::shared_initializers
//    are not in any arena (ortgpu allocated them);
//  - TotalAllocated is what the arena took from the device: weights plus
//    the chunks it keeps for activations, in use or free (an arena gives
//    free chunks back only when a run asks it to shrink);
//  - cuDNN and cuBLAS handles, the CUDA context and CUDA graph pools are
//    not in the arena: serve counts them as "other" (the process's device
//    memory as NVML sees it, less the arenas and shared weights).
//
// ReadArenaStats is safe while the session is idle or running (the arena
// takes its own lock); it is cheap (no device call).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "ort/session.h"
#include "status/expected.h"

namespace ortgpu {

struct ArenaStats {
  uint64_t in_use = 0;      // "InUse": bytes handed out now (the session's own weights included)
  uint64_t reserved = 0;    // "TotalAllocated": bytes the arena took from the device
  uint64_t max_in_use = 0;  // "MaxInUse": the most in use at once since the session was created
  uint64_t limit = 0;       // "Limit": the arena's bound (the CUDA EP's gpu_mem_limit); 0 when none was reported
  int64_t allocations = 0;  // "NumAllocs"
  int64_t extensions = 0;   // "NumArenaExtensions": times the arena grew
  int64_t shrinkages = 0;   // "NumArenaShrinkages": times it gave free chunks back
};

// The stats of AllocatorGetStats's key-value pairs (ORT's AllocatorStats
// names). nullopt when the allocator reported nothing (ORT leaves the pairs
// empty for allocators without statistics: no arena). A value that is not a
// number is InvalidArgument naming the key.
Expected<std::optional<ArenaStats>> ParseArenaStats(const std::map<std::string, std::string>& pairs);

// The arena of `session`'s device memory: the CUDA EP's arena on its
// device_id for a CUDA session, the CPU arena for a CPU session.
// Unavailable (saying why) when the session has no arena with statistics
// there (an EP without one, arena disabled, TensorRT).
Expected<ArenaStats> ReadArenaStats(const Session& session);

}  // namespace ortgpu
