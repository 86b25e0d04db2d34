// How the process's host allocator (glibc malloc) keeps the memory it frees.
//
// glibc gives memory back to the kernel eagerly by default: a block of
// 128 KiB or more is its own mmap until the first such block is freed, and
// after that the heaps are trimmed (madvise(MADV_DONTNEED)) whenever more
// than twice the largest block freed sits free at their top. A server that
// allocates and frees a request's bytes on every call (gRPC's read slices,
// the ModelInferRequest's raw contents, an HTTP body, a JSON response) then
// takes fresh page faults for every page of every request, and the trims'
// madvise calls shoot down the TLBs of every core running the process: on
// the build machine's CPU instances, 45-67 minor faults per 602 KB request
// and 266-396 µs of server CPU time per request against 216-250 µs without
// them (scripts/host_allocator_bench.sh, docs/BENCHMARKS.md).
//
// ConfigureHostAllocator sets glibc's mmap threshold to its maximum (32 MiB)
// and its trim threshold to 256 MiB, which turns the eager release off: freed
// blocks are reused by the next request, the resident size settles at the
// peak the load needs, and blocks of more than 32 MiB are still mapped and
// unmapped on their own. glibc's GLIBC_TUNABLES (glibc.malloc.*), when the
// user sets them, win: nothing is changed then.
#pragma once

#include <cstddef>
#include <string>

#include "sys/environment.h"

namespace ortgpu {

struct HostAllocatorSettings {
  bool applied = false;   // false: the user's GLIBC_TUNABLES set malloc, or mallopt refused
  size_t mmap_threshold = 0;
  size_t trim_threshold = 0;
  std::string summary;    // one line for the log: what was done and why
};

inline constexpr size_t kServeMmapThreshold = size_t{32} << 20;   // glibc's maximum on 64-bit
inline constexpr size_t kServeTrimThreshold = size_t{256} << 20;

// Applies the thresholds above unless env's GLIBC_TUNABLES names a
// glibc.malloc tunable. Call it once, early, from a command (ortgpu serve);
// later calls apply the same values again.
HostAllocatorSettings ConfigureHostAllocator(const Environment& env);

// Gives the heaps' free memory back to the kernel now (glibc's
// malloc_trim(0): the whole free pages inside every heap, and the main
// heap's free top; a thread heap's free top is kept, at most the 64 MiB of
// its last segment). For after a large release, such as a model version's
// unload, whose sessions' host memory would otherwise stay with the process.
// Takes each heap's lock in turn: not for a request's path. True when
// something was given back.
bool ReleaseFreeHostMemory();

}  // namespace ortgpu
