// GPU gauges for /metrics: nv_gpu_utilization, nv_gpu_memory_total_bytes and
// nv_gpu_memory_used_bytes (label gpu_uuid), read from NVML.
//
// SampleGpuMetrics reads every device once. GpuMetricsPoller owns an Nvml and
// a thread that samples every `interval` until Stop() or destruction; when
// NVML cannot be loaded (no driver: a CPU-only machine) it never starts a
// thread and the gauges are simply absent.
//
// Thread-safety: Nvml is not thread-safe, so the poller's thread is the only
// one that touches its Nvml. Stop() and running() may be called from any
// thread, concurrently: the first Stop() joins the thread, the others wait
// for it to finish.
// REQUIRES: `metrics` outlives the poller.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <thread>

#include "gpu/nvml.h"
#include "serve/metrics/metrics.h"
#include "status/status.h"
#include "sys/mutex.h"

namespace ortgpu::serve {

// Sets the gauges of every NVML device. REQUIRES: nvml.Load() succeeded.
// Returns the first device error (other devices are still sampled).
Status SampleGpuMetrics(gpu::Nvml& nvml, Metrics& metrics);

struct GpuPollerOptions {
  std::chrono::milliseconds interval{1000};
};

class GpuMetricsPoller {
 public:
  // Loads NVML and, when that works, samples once and starts the thread.
  GpuMetricsPoller(std::unique_ptr<gpu::Nvml> nvml, Metrics& metrics, GpuPollerOptions options = {});
  ~GpuMetricsPoller();  // Stop()
  GpuMetricsPoller(const GpuMetricsPoller&) = delete;
  GpuMetricsPoller& operator=(const GpuMetricsPoller&) = delete;

  // Whether NVML loaded and the thread runs (false once Stop() began);
  // load_status() says why not.
  bool running() const { return running_.load(std::memory_order_acquire); }
  const Status& load_status() const { return load_status_; }

  // Ends the thread. Idempotent.
  void Stop();

 private:
  void Loop();

  std::unique_ptr<gpu::Nvml> nvml_;
  Metrics& metrics_;
  const GpuPollerOptions options_;
  Status load_status_;
  Mutex mu_;
  CondVar cv_;  // stop_ set
  bool stop_ GUARDED_BY(mu_) = false;
  std::atomic<bool> running_{false};
  std::once_flag stop_once_;  // the one Stop() that joins thread_
  std::thread thread_;        // written by the constructor only
};

}  // namespace ortgpu::serve
