#include "sys/host_allocator.h"

#include <malloc.h>

namespace ortgpu {

HostAllocatorSettings ConfigureHostAllocator(const Environment& env) {
  HostAllocatorSettings s;
  const auto tunables = env.Get("GLIBC_TUNABLES");
  if (tunables && tunables->find("glibc.malloc.") != std::string::npos) {
    s.summary = "host allocator: left as GLIBC_TUNABLES sets it (" + *tunables + ")";
    return s;
  }
  // Setting either threshold also ends glibc's dynamic adjustment of both,
  // so both are set.
  if (mallopt(M_MMAP_THRESHOLD, static_cast<int>(kServeMmapThreshold)) != 1 ||
      mallopt(M_TRIM_THRESHOLD, static_cast<int>(kServeTrimThreshold)) != 1) {
    s.summary = "host allocator: glibc refused the thresholds; freed request memory goes back to the kernel eagerly";
    return s;
  }
  s.applied = true;
  s.mmap_threshold = kServeMmapThreshold;
  s.trim_threshold = kServeTrimThreshold;
  s.summary = "host allocator: freed blocks below " + std::to_string(kServeMmapThreshold >> 20) +
              " MiB are kept for reuse (the heaps are trimmed above " + std::to_string(kServeTrimThreshold >> 20) +
              " MiB free); GLIBC_TUNABLES=glibc.malloc.* overrides this";
  return s;
}

bool ReleaseFreeHostMemory() { return malloc_trim(0) == 1; }

}  // namespace ortgpu
