#include "serve/metrics/gpu_metrics.h"

#include <spdlog/spdlog.h>

namespace ortgpu::serve {

Status SampleGpuMetrics(gpu::Nvml& nvml, Metrics& metrics) {
  auto count = nvml.DeviceCount();
  if (!count.ok()) return count.status();
  Status first = Status::Ok();
  for (unsigned i = 0; i < *count; ++i) {
    auto device = nvml.Device(i);
    if (!device.ok()) {
      if (first.ok()) first = device.status();
      continue;
    }
    // Utilisation may be NOT_SUPPORTED (some MIG/vGPU setups): report 0 then.
    const double util = device->utilization_gpu ? *device->utilization_gpu / 100.0 : 0.0;
    metrics.SetGpu(device->uuid, util, static_cast<int64_t>(device->memory.total),
                   static_cast<int64_t>(device->memory.used));
  }
  return first;
}

GpuMetricsPoller::GpuMetricsPoller(std::unique_ptr<gpu::Nvml> nvml, Metrics& metrics, GpuPollerOptions options)
    : nvml_(std::move(nvml)), metrics_(metrics), options_(options) {
  load_status_ = nvml_ ? nvml_->Load() : Unavailable("no NVML");
  if (!load_status_.ok() && options_.host == nullptr) return;  // nothing to sample
  Sample();
  thread_ = std::thread([this] { Loop(); });
  running_.store(true, std::memory_order_release);
}

void GpuMetricsPoller::Sample() {
  if (load_status_.ok()) {
    Status st = SampleGpuMetrics(*nvml_, metrics_);
    if (!st.ok() && !gpu_warned_) {  // once: a failing device would flood the log every second
      spdlog::warn("GPU metrics: {}", st.message());
      gpu_warned_ = true;
    }
  }
  if (options_.host == nullptr) return;
  auto cpu = ReadCpuTimes(*options_.host);
  auto memory = ReadHostMemory(*options_.host);
  if (cpu.ok()) {
    if (last_cpu_) metrics_.SetHostCpu(CpuBusyFraction(*last_cpu_, *cpu));
    last_cpu_ = *cpu;
  }
  if (memory.ok()) metrics_.SetHostMemory(static_cast<int64_t>(memory->total_bytes), static_cast<int64_t>(memory->used_bytes));
  if ((!cpu.ok() || !memory.ok()) && !host_warned_) {
    spdlog::warn("host CPU metrics: {}", (!cpu.ok() ? cpu.status() : memory.status()).message());
    host_warned_ = true;
  }
}

GpuMetricsPoller::~GpuMetricsPoller() { Stop(); }

void GpuMetricsPoller::Stop() {
  // call_once: two concurrent Stop() calls must not both join; the second
  // blocks until the first has joined, so every Stop() returns with the
  // thread ended.
  std::call_once(stop_once_, [this] {
    running_.store(false, std::memory_order_release);
    {
      MutexLock lock(&mu_);
      stop_ = true;
    }
    cv_.SignalAll();
    if (thread_.joinable()) thread_.join();
  });
}

void GpuMetricsPoller::Loop() {
  MutexLock lock(&mu_);
  while (true) {
    const auto next = std::chrono::steady_clock::now() + options_.interval;
    while (!stop_ && cv_.WaitUntil(&mu_, next)) {
    }
    if (stop_) return;
    lock.Unlock();
    Sample();
    lock.Lock();
  }
}

}  // namespace ortgpu::serve
