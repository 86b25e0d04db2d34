// GPU gauges for /metrics: nv_gpu_utilization, nv_gpu_memory_total_bytes and
// nv_gpu_memory_used_bytes (label gpu_uuid), read from NVML; and the host's
// nv_cpu_utilization and nv_cpu_memory_*_bytes (Triton's names), read from
// /proc through the FileSystem seam, so that `ortgpu perf` can say whether
// the GPU or the CPU limited a load.
//
// SampleGpuMetrics reads every device once. GpuMetricsPoller owns an Nvml and
// a thread that samples every `interval` until Stop() or destruction; when
// NVML cannot be loaded (no driver: a CPU-only machine) the GPU gauges are
// simply absent, and with no host file system either it starts no thread.
// The CPU gauge is the busy share between two samples: it appears from the
// second sample on.
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
#include <optional>
#include <thread>

#include "gpu/nvml.h"
#include "serve/metrics/metrics.h"
#include "status/status.h"
#include "sys/file_system.h"
#include "sys/host_cpu.h"
#include "sys/mutex.h"

namespace ortgpu::serve {

// Sets the gauges of every NVML device. REQUIRES: nvml.Load() succeeded.
// Returns the first device error (other devices are still sampled).
Status SampleGpuMetrics(gpu::Nvml& nvml, Metrics& metrics);

struct GpuPollerOptions {
  std::chrono::milliseconds interval{1000};
  // The host's /proc for the CPU and memory gauges; null: none.
  const FileSystem* host = nullptr;
};

class GpuMetricsPoller {
 public:
  // Loads NVML (`nvml` may be null: no GPU gauges) and, when that works or
  // options.host is set, samples once and starts the thread.
  GpuMetricsPoller(std::unique_ptr<gpu::Nvml> nvml, Metrics& metrics, GpuPollerOptions options = {});
  ~GpuMetricsPoller();  // Stop()
  GpuMetricsPoller(const GpuMetricsPoller&) = delete;
  GpuMetricsPoller& operator=(const GpuMetricsPoller&) = delete;

  // Whether the thread runs (false once Stop() began).
  bool running() const { return running_.load(std::memory_order_acquire); }
  // Whether NVML loaded (the GPU gauges are set); load_status() says why not.
  bool gpus() const { return load_status_.ok(); }
  const Status& load_status() const { return load_status_; }

  // Ends the thread. Idempotent.
  void Stop();

 private:
  void Loop();
  // One round: the GPUs (when NVML loaded) and the host (when given); the
  // first failure of each kind is logged once.
  void Sample();

  std::unique_ptr<gpu::Nvml> nvml_;
  Metrics& metrics_;
  const GpuPollerOptions options_;
  Status load_status_;
  std::optional<CpuTimes> last_cpu_;  // the previous host sample; the poller's thread only
  bool gpu_warned_ = false, host_warned_ = false;  // the poller's thread only
  Mutex mu_;
  CondVar cv_;  // stop_ set
  bool stop_ GUARDED_BY(mu_) = false;
  std::atomic<bool> running_{false};
  std::once_flag stop_once_;  // the one Stop() that joins thread_
  std::thread thread_;        // written by the constructor only
};

}  // namespace ortgpu::serve
