// The host's CPU and memory as Linux reports them (/proc/stat, /proc/meminfo),
// read through the FileSystem seam: serve's nv_cpu_utilization and
// nv_cpu_memory_*_bytes gauges (Triton's names), which `ortgpu perf` reads to
// say whether the CPU or the GPU limited a step. Pure parsing plus one read;
// thread-safe.
#pragma once

#include <cstdint>
#include <string_view>

#include "status/expected.h"
#include "sys/file_system.h"

namespace ortgpu {

// The first ("cpu") line of /proc/stat, in clock ticks since boot, over every
// core. Idle is idle + iowait; busy is the rest of user, nice, system, irq,
// softirq and steal (guest time is already inside user and nice).
struct CpuTimes {
  uint64_t busy = 0;
  uint64_t total = 0;
};
// InvalidArgument when the text has no "cpu " line with at least four numbers.
Expected<CpuTimes> ParseProcStat(std::string_view text);

// The share of the host's CPU time that was busy between two readings,
// 0.0 .. 1.0; 0 when no time passed (or the counters went back).
double CpuBusyFraction(const CpuTimes& before, const CpuTimes& after);

struct HostMemory {
  uint64_t total_bytes = 0;
  uint64_t used_bytes = 0;  // MemTotal - MemAvailable
};
// InvalidArgument without MemTotal and MemAvailable.
Expected<HostMemory> ParseMeminfo(std::string_view text);

// Reads /proc/stat and /proc/meminfo through `fs`.
Expected<CpuTimes> ReadCpuTimes(const FileSystem& fs);
Expected<HostMemory> ReadHostMemory(const FileSystem& fs);

}  // namespace ortgpu
