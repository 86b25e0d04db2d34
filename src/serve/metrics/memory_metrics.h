// The memory plan's gauges (docs/MEMORY.md), in the server's Metrics registry:
//   ortgpu_model_gpu_memory_bytes{model,version,kind}   what a loaded version
//       holds on its GPUs, measured at load: kind weights, arena_in_use,
//       arena_reserved, other (when NVML attributed it) and total
//   ortgpu_model_unload_gpu_memory_bytes{model,version,gpu,kind}  at the
//       version's last unload: kind after (the process's device memory once
//       it was gone) and released (how much less than before)
// The first describes the load that serves (a reload replaces it, an unload
// removes it); the second stays after the unload, as its record.
// Thread-safe; REQUIRES: `metrics` outlives it.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "serve/metrics/metrics.h"
#include "serve/scheduler/scheduler_observer.h"
#include "sys/mutex.h"

namespace ortgpu::serve {

class MemoryMetrics {
 public:
  explicit MemoryMetrics(Metrics& metrics);
  // Sets the version's series, replacing those of its previous load.
  void Record(const std::string& model, const std::string& version, const MemoryFigures& figures);
  // Removes the version's load series (it unloaded).
  void Remove(const std::string& model, const std::string& version);
  // Sets the version's unload series for `memory.gpu`.
  void RecordUnload(const std::string& model, const std::string& version, const UnloadMemory& memory);

 private:
  void RemoveLocked(std::vector<prometheus::Gauge*>& gauges);

  prometheus::Family<prometheus::Gauge>& loaded_;
  prometheus::Family<prometheus::Gauge>& unloaded_;
  Mutex mu_;
  std::map<std::pair<std::string, std::string>, std::vector<prometheus::Gauge*>> series_ GUARDED_BY(mu_);
};

}  // namespace ortgpu::serve
