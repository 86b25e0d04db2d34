// FakeNvml: a scripted gpu::Nvml for tests. Fill `devices` (index = position),
// `driver_version`, per-device process memory, MIG instances
// (AddMigInstance), or set `load_status` to make NVML missing.
#pragma once

#include <algorithm>
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
  // ProcessMemoryUsed(index, any pid) fails with this status when set
  // (Unavailable: listed without a figure; anything else: the list unread).
  std::map<unsigned, Status> process_list_status;
  // Health(index) returns health[index] (a healthy H200 unless set).
  std::map<unsigned, gpu::NvmlHealth> health;
  // SampleClocks(index) returns these in turn, then repeats the last one
  // (an H200 at full clock with no event reason when empty).
  std::vector<gpu::NvmlClockSample> clock_samples;
  int clock_sample_calls = 0;

  // What a healthy H200 reports (nvidia-smi -q on the test machine).
  static gpu::NvmlHealth HealthyH200() {
    gpu::NvmlHealth h;
    h.persistence_mode = true;
    h.compute_mode = gpu::kNvmlComputeModeDefault;
    h.ecc_current = true;
    h.ecc_pending = true;
    h.ecc_uncorrected_volatile = 0;
    h.ecc_uncorrected_aggregate = 0;
    h.not_checked["retired_pages"] = "nvmlDeviceGetRetiredPages: not supported on this GPU";
    h.remapped_rows_correctable = 0;
    h.remapped_rows_uncorrectable = 0;
    h.row_remap_pending = false;
    h.row_remap_failure = false;
    h.pcie_gen = 5;
    h.pcie_gen_max = 5;
    h.pcie_gen_gpu_max = 5;
    h.pcie_width = 16;
    h.pcie_width_max = 16;
    h.processes = std::vector<gpu::NvmlProcess>{};
    return h;
  }
  static gpu::NvmlClockSample FullClock() {
    gpu::NvmlClockSample s;
    s.event_reasons = 0;
    s.sm_clock_mhz = 1980;
    s.sm_clock_max_mhz = 1980;
    s.power_mw = 250000;
    s.power_limit_mw = 700000;
    s.temperature_c = 40;
    s.pcie_gen = 5;
    s.pcie_width = 16;
    return s;
  }

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

  // Turns MIG mode on for device `gpu` (AddDevice first) and lists a MIG
  // instance there with its own memory, as Health(gpu).mig_instances. The
  // reference is valid until the next instance is added.
  gpu::NvmlMigInstance& AddMigInstance(unsigned gpu, const std::string& uuid, uint64_t total, uint64_t used) {
    devices.at(gpu).mig_current = true;
    devices.at(gpu).mig_pending = true;
    auto it = health.find(gpu);
    if (it == health.end()) it = health.emplace(gpu, HealthyH200()).first;
    if (!it->second.mig_instances) it->second.mig_instances.emplace();
    gpu::NvmlMigInstance m;
    m.uuid = uuid;
    m.memory_total = total;
    m.memory_used = used;
    m.memory_free = total - used;
    it->second.mig_instances->push_back(m);
    return it->second.mig_instances->back();
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
    if (auto st = process_list_status.find(index); st != process_list_status.end()) return st->second;
    auto it = process_memory.find({index, pid});
    if (it == process_memory.end()) return NotFound("process holds no CUDA context");
    return it->second;
  }
  Expected<gpu::NvmlHealth> Health(unsigned index) override {
    if (!loaded_) return FailedPrecondition("NVML is not initialised");
    if (index >= devices.size()) return InvalidArgument(gpu::NvmlErrorText(2));
    auto it = health.find(index);
    return it != health.end() ? it->second : HealthyH200();
  }
  Expected<gpu::NvmlClockSample> SampleClocks(unsigned index) override {
    if (!loaded_) return FailedPrecondition("NVML is not initialised");
    if (index >= devices.size()) return InvalidArgument(gpu::NvmlErrorText(2));
    const size_t at = static_cast<size_t>(clock_sample_calls++);
    if (clock_samples.empty()) return FullClock();
    return clock_samples[std::min(at, clock_samples.size() - 1)];
  }

 private:
  bool loaded_ = false;
};

}  // namespace ortgpu::testing
