#include "bench/resources.h"

#include <sys/resource.h>
#include <unistd.h>

#include "gpu/nvml.h"

namespace ortgpu::bench {

ProcessUsage CurrentProcessUsage() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  ProcessUsage u;
  u.cpu_s = static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
            static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e-6;
  u.peak_rss_mb = static_cast<double>(ru.ru_maxrss) / 1024.0;  // Linux: kilobytes
  return u;
}

namespace {

class NullProbe : public GpuMemoryProbe {
 public:
  explicit NullProbe(std::string why) : why_(std::move(why)) {}
  std::optional<uint64_t> UsedBytes() override { return std::nullopt; }
  std::string source() const override { return "n/a: " + why_; }

 private:
  std::string why_;
};

class NvmlProbe : public GpuMemoryProbe {
 public:
  NvmlProbe(std::unique_ptr<gpu::Nvml> nvml, unsigned index) : nvml_(std::move(nvml)), index_(index) {}
  std::optional<uint64_t> UsedBytes() override {
    // Inside containers NVML lists host pids, so this process is often not
    // found: fall back to the device-wide figure and say so.
    auto mine = nvml_->ProcessMemoryUsed(index_, static_cast<uint32_t>(getpid()));
    if (mine.ok()) {
      source_ = "process";
      return *mine;
    }
    auto dev = nvml_->Memory(index_);
    if (!dev.ok()) {
      source_ = "n/a: " + dev.status().message();
      return std::nullopt;
    }
    source_ = "device";
    return dev->used;
  }
  std::string source() const override { return source_; }

 private:
  std::unique_ptr<gpu::Nvml> nvml_;
  unsigned index_;
  std::string source_ = "device";
};

}  // namespace

std::unique_ptr<GpuMemoryProbe> NewNvmlMemoryProbe(unsigned device_index) {
  auto nvml = gpu::NewNvml();
  Status st = nvml->Load();
  if (!st.ok()) return std::make_unique<NullProbe>("NVML did not load: " + st.message());
  return std::make_unique<NvmlProbe>(std::move(nvml), device_index);
}

std::unique_ptr<GpuMemoryProbe> NewNullMemoryProbe() { return std::make_unique<NullProbe>("CPU provider"); }

}  // namespace ortgpu::bench
