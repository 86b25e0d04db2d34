// SchedulerMetrics: the SchedulerObserver that turns what the scheduler
// reports into the Prometheus series of Metrics (Triton's names), so the
// scheduler never sees Prometheus. The server (serve/server.h) hands it to
// ServerCore as ServerDeps::observer.
//
//   OnQueued          pending +1
//   OnSuccess         nv_inference_request_success, count (rows), durations; pending -1
//   OnFailure         nv_inference_request_failure{reason}; pending -1
//   OnBatch           nv_inference_exec_count; per GPU ortgpu_gpu_exec_count,
//                     ortgpu_gpu_inference_count, ortgpu_gpu_compute_infer_duration_us
//                     (gpu_instance_metrics.h)
//   OnModelPrecision  ortgpu_model_precision_info, ortgpu_model_accuracy_* (precision_metrics.h)
//   OnModelMemory     ortgpu_model_gpu_memory_bytes{kind} (memory_metrics.h)
//   OnUnloadMemory    ortgpu_model_unload_gpu_memory_bytes{gpu,kind}
//   OnVersionUnloaded removes the version's precision, accuracy and memory series
//   OnRejected        nv_inference_request_failure{reason}, except Unavailable:
//                     a version being swapped out refuses with Unavailable and
//                     ServerCore retries on its successor, so counting those
//                     would report failures that no client saw.
//
// Thread-safe (SchedulerObserver's contract): a short internal lock guards
// the pending counts. OnQueued arrives under the batcher's queue lock, so the
// lock order is batcher, then this adapter; it never calls the scheduler.
// REQUIRES: `metrics` outlives the adapter.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "serve/metrics/gpu_instance_metrics.h"
#include "serve/metrics/memory_metrics.h"
#include "serve/metrics/metrics.h"
#include "serve/metrics/precision_metrics.h"
#include "serve/scheduler/scheduler_observer.h"
#include "sys/mutex.h"

namespace ortgpu::serve {

class SchedulerMetrics : public SchedulerObserver {
 public:
  explicit SchedulerMetrics(Metrics& metrics)
      : metrics_(metrics), precision_(metrics), memory_(metrics), gpu_instances_(metrics) {}
  // The UUID of each CUDA ordinal, for the per-GPU series' gpu_uuid label.
  void SetGpuUuids(std::vector<std::string> uuids) { gpu_instances_.SetGpuUuids(std::move(uuids)); }

  void OnQueued(const std::string& model, const std::string& version, size_t queue_depth) override;
  void OnRejected(const std::string& model, const std::string& version, Code code) override;
  void OnBatch(const std::string& model, const std::string& version, int64_t batch_size,
               const ExecutionTimes& times, int device) override;
  void OnSuccess(const std::string& model, const std::string& version, int64_t rows, int64_t request_ns,
                 int64_t queue_ns, const ExecutionTimes& compute) override;
  void OnFailure(const std::string& model, const std::string& version, Code code) override;
  void OnModelPrecision(const std::string& model, const std::string& version,
                        const PrecisionFigures& figures) override;
  void OnModelMemory(const std::string& model, const std::string& version, const MemoryFigures& figures) override;
  void OnUnloadMemory(const std::string& model, const std::string& version, const UnloadMemory& memory) override;
  void OnVersionUnloaded(const std::string& model, const std::string& version) override;

  // Requests queued or executing for a version right now (what the gauge shows).
  int64_t pending(const std::string& model, const std::string& version) const;

 private:
  void AddPending(const std::string& model, const std::string& version, int64_t delta);

  Metrics& metrics_;
  PrecisionMetrics precision_;
  MemoryMetrics memory_;
  GpuInstanceMetrics gpu_instances_;
  mutable Mutex mu_;
  std::map<std::pair<std::string, std::string>, int64_t> pending_ GUARDED_BY(mu_);
};

}  // namespace ortgpu::serve
