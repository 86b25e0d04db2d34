// Resources: what a benchmark costs besides time: the process's peak
// resident memory and CPU time (getrusage), and GPU memory through a small
// probe interface so tests and GPU-less machines need no NVML.
// Probes are used from one thread (the benchmark's driver thread).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

namespace ortgpu::bench {

// Process-wide CPU time (user + system) and peak RSS at one moment.
struct ProcessUsage {
  double cpu_s = 0;
  double peak_rss_mb = 0;  // high-water mark since the process started
};
ProcessUsage CurrentProcessUsage();

// GPU memory in use, as NVML reports it.
class GpuMemoryProbe {
 public:
  virtual ~GpuMemoryProbe() = default;
  // Bytes used now: this process's when NVML can attribute memory to it,
  // else the whole device's (source() says which). nullopt when unknown.
  virtual std::optional<uint64_t> UsedBytes() = 0;
  // "process", "device" or "n/a: <why>".
  virtual std::string source() const = 0;
};

// The NVML-backed probe for device `device_index` (NVML numbering). When
// NVML cannot load (no driver) it returns a probe whose UsedBytes() is
// nullopt and whose source() says why. Never null.
std::unique_ptr<GpuMemoryProbe> NewNvmlMemoryProbe(unsigned device_index);

// A probe that knows nothing (the CPU provider). Never null.
std::unique_ptr<GpuMemoryProbe> NewNullMemoryProbe();

}  // namespace ortgpu::bench
