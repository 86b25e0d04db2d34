// Per-GPU execution series (several GPUs in one host, issue 30), in the
// server's Metrics registry, labelled by the GPU's CUDA ordinal and UUID
// (gpu_uuid, as nv_gpu_utilization's, so a dashboard joins the two):
//   ortgpu_gpu_exec_count{model,version,gpu,gpu_uuid}    counter, executions
//       (batches) that GPU's instances ran
//   ortgpu_gpu_inference_count{model,version,gpu,gpu_uuid}  counter, rows
//       they executed (padding included, as Triton's batch statistics)
//   ortgpu_gpu_compute_infer_duration_us{model,version,gpu,gpu_uuid}  counter,
//       cumulative time of those runs
// Triton's own nv_inference_* series keep their model and version labels
// (summed over GPUs); these split them by GPU, so dispatch balance and a slow
// GPU show. CPU instances add nothing here. Series of a version go when it
// unloads (Remove).
// Thread-safe; REQUIRES: `metrics` outlives it.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "sys/mutex.h"
#include "serve/metrics/metrics.h"
#include "serve/scheduler/model_stats.h"

namespace ortgpu::serve {

class GpuInstanceMetrics {
 public:
  explicit GpuInstanceMetrics(Metrics& metrics);
  // The UUID of each CUDA ordinal (VisibleGpus::uuids); a GPU without one
  // is labelled gpu_uuid="".
  void SetGpuUuids(std::vector<std::string> uuids);
  // One execution of `rows` rows on GPU `gpu` (nothing for gpu < 0).
  void RecordExecution(const std::string& model, const std::string& version, int gpu, int64_t rows,
                       const ExecutionTimes& times);
  // Removes the version's series (it unloaded).
  void Remove(const std::string& model, const std::string& version);

 private:
  struct Series {
    prometheus::Counter* exec_count;
    prometheus::Counter* rows;
    prometheus::Counter* infer_us;
  };
  prometheus::Family<prometheus::Counter>& exec_count_;
  prometheus::Family<prometheus::Counter>& rows_;
  prometheus::Family<prometheus::Counter>& infer_us_;
  Mutex mu_;
  std::vector<std::string> uuids_ GUARDED_BY(mu_);
  std::map<std::tuple<std::string, std::string, int>, Series> series_ GUARDED_BY(mu_);
};

}  // namespace ortgpu::serve
