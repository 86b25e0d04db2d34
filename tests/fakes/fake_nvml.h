// FakeNvml: a scripted gpu::Nvml for tests. Fill `devices` (index = position),
// `driver_version`, per-device process memory, or set `load_status` to make
// NVML missing.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "gpu/nvml.h"

namespace ortgpu::testing {

class FakeNvml final : public gpu::Nvml {
 public:
  Status load_status;
  std::string library_path = "/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1";
  std::string driver_version = "580.159.03";
  int cuda_driver_version = 13000;
  std::vector<gpu::NvmlDevice> devices;
  // (device index, pid) -> bytes used.
  std::map<std::pair<unsigned, uint32_t>, uint64_t> process_memory;

  // Adds a device with used/free memory; its index is its position.
  gpu::NvmlDevice& AddDevice(const std::string& name, const std::string& uuid, int cc_major,
                        int cc_minor, uint64_t total, uint64_t used) {
    gpu::NvmlDevice d;
    d.index = static_cast<unsigned>(devices.size());
    d.name = name;
    d.uuid = uuid;
    d.pci_bus_id = "00000000:" + std::to_string(0x18 + devices.size()) + ":00.0";
    d.cc_major = cc_major;
    d.cc_minor = cc_minor;
    d.memory = {total, used, total - used};
    d.utilization_gpu = 0;
    d.utilization_memory = 0;
    devices.push_back(d);
    return devices.back();
  }

  Status Load() override {
    loaded_ = load_status.ok();
    return load_status;
  }
  std::string LibraryPath() const override { return loaded_ ? library_path : ""; }
  Expected<std::string> DriverVersion() override {
    if (!loaded_) return FailedPrecondition("NVML is not initialised");
    return driver_version;
  }
  Expected<int> CudaDriverVersion() override {
    if (!loaded_) return FailedPrecondition("NVML is not initialised");
    return cuda_driver_version;
  }
  Expected<unsigned> DeviceCount() override {
    if (!loaded_) return FailedPrecondition("NVML is not initialised");
    return static_cast<unsigned>(devices.size());
  }
  Expected<gpu::NvmlDevice> Device(unsigned index) override {
    if (!loaded_) return FailedPrecondition("NVML is not initialised");
    if (index >= devices.size()) return InvalidArgument(gpu::NvmlErrorText(2));
    return devices[index];
  }
  Expected<gpu::NvmlMemory> Memory(unsigned index) override {
    ORTGPU_ASSIGN_OR_RETURN(gpu::NvmlDevice d, Device(index));
    return d.memory;
  }
  Expected<uint64_t> ProcessMemoryUsed(unsigned index, uint32_t pid) override {
    if (!loaded_) return FailedPrecondition("NVML is not initialised");
    auto it = process_memory.find({index, pid});
    if (it == process_memory.end()) return NotFound("process holds no CUDA context");
    return it->second;
  }

 private:
  bool loaded_ = false;
};

}  // namespace ortgpu::testing
