#include "gpu/gpu_info.h"

#include <cstdio>

namespace ortgpu::gpu {
namespace {

void ProbeCuda(GpuDriver& driver, DriverInfo& info) {
  info.cuda_load_status = driver.Load();
  if (!info.cuda_load_status.ok()) {
    info.cuda_init_status = FailedPrecondition("libcuda not loaded");
    return;
  }
  info.libcuda_path = driver.LibraryPath();
  // cuDriverGetVersion works before cuInit, so the version is known even
  // when cuInit fails (the case doctor most needs to explain).
  if (auto v = driver.DriverVersion(); v.ok()) info.cuda_driver_version = *v;
  info.cuda_init_status = driver.Init();
  if (!info.cuda_init_status.ok()) return;
  auto count = driver.DeviceCount();
  if (!count.ok()) {
    info.cuda_init_status = count.status();
    return;
  }
  for (int i = 0; i < *count; ++i) {
    auto props = driver.Device(i);
    if (!props.ok()) {
      info.cuda_init_status = props.status().WithContext("CUDA device " + std::to_string(i));
      return;
    }
    GpuDevice d;
    d.index = i;
    d.name = props->name;
    d.uuid = props->uuid;
    d.pci_bus_id = props->pci_bus_id;
    d.cc_major = props->cc_major;
    d.cc_minor = props->cc_minor;
    d.memory_total = props->total_memory;
    d.seen_by_cuda = true;
    info.devices.push_back(std::move(d));
  }
}

void MergeNvmlDevice(const NvmlDevice& n, DriverInfo& info) {
  GpuDevice* target = nullptr;
  for (auto& d : info.devices) {
    if (!d.uuid.empty() && d.uuid == n.uuid) target = &d;
  }
  if (target == nullptr) {
    info.devices.push_back(GpuDevice{});
    target = &info.devices.back();
    target->name = n.name;
    target->uuid = n.uuid;
    target->cc_major = n.cc_major;
    target->cc_minor = n.cc_minor;
    target->memory_total = n.memory.total;
  }
  target->nvml_index = static_cast<int>(n.index);
  target->seen_by_nvml = true;
  if (!n.pci_bus_id.empty()) target->pci_bus_id = n.pci_bus_id;
  if (target->memory_total == 0) target->memory_total = n.memory.total;
  target->memory_used = n.memory.used;
  target->memory_free = n.memory.free;
  target->utilization_gpu = n.utilization_gpu;
  target->utilization_memory = n.utilization_memory;
  target->mig_enabled = n.mig_current.value_or(false);
  target->mig_pending = n.mig_pending.value_or(false);
}

void ProbeNvml(Nvml& nvml, DriverInfo& info) {
  info.nvml_status = nvml.Load();
  if (!info.nvml_status.ok()) return;
  info.nvml_path = nvml.LibraryPath();
  if (auto v = nvml.DriverVersion(); v.ok()) info.driver_version = *v;
  if (info.cuda_driver_version == 0) {
    if (auto v = nvml.CudaDriverVersion(); v.ok()) info.cuda_driver_version = *v;
  }
  auto count = nvml.DeviceCount();
  if (!count.ok()) {
    info.nvml_status = count.status();
    return;
  }
  for (unsigned i = 0; i < *count; ++i) {
    auto d = nvml.Device(i);
    if (!d.ok()) {
      info.nvml_status = d.status().WithContext("NVML device " + std::to_string(i));
      return;
    }
    MergeNvmlDevice(*d, info);
  }
}

}  // namespace

int DriverInfo::CudaDeviceCount() const {
  int n = 0;
  for (const auto& d : devices) n += d.index >= 0;
  return n;
}

DriverInfo ProbeDriverSources(GpuDriver& driver, Nvml& nvml) {
  DriverInfo info;
  ProbeCuda(driver, info);
  ProbeNvml(nvml, info);
  return info;
}

Expected<DriverInfo> ProbeDriver(GpuDriver& driver, Nvml& nvml) {
  DriverInfo info = ProbeDriverSources(driver, nvml);
  if (!info.cuda_load_status.ok() && !info.nvml_status.ok()) {
    return Unavailable("no NVIDIA driver found: " + info.cuda_load_status.message() + "; " +
                       info.nvml_status.message());
  }
  return info;
}

bool SameDeviceUuid(const std::string& a, const std::string& b) {
  auto body = [](const std::string& u) {
    const size_t dash = u.find('-');
    return dash == std::string::npos ? u : u.substr(dash + 1);
  };
  return !a.empty() && !b.empty() && body(a) == body(b);
}

std::string FormatBytes(uint64_t bytes) {
  char buf[32];
  const double gib = static_cast<double>(bytes) / (1024.0 * 1024.0 * 1024.0);
  if (gib >= 1.0) {
    std::snprintf(buf, sizeof(buf), "%.1f GiB", gib);
  } else {
    std::snprintf(buf, sizeof(buf), "%.0f MiB", static_cast<double>(bytes) / (1024.0 * 1024.0));
  }
  return buf;
}

}  // namespace ortgpu::gpu
