// FakeGpuDriver: a scripted gpu::GpuDriver for tests ("driver 470 with an RTX
// 4090", "libcuda missing", "cuInit fails with CUDA_ERROR_NO_DEVICE").
// Set the public fields, then hand it to the code under test.
#pragma once

#include <string>
#include <vector>

#include "gpu/cuda_driver.h"

namespace ortgpu::testing {

class FakeGpuDriver final : public gpu::GpuDriver {
 public:
  // Load() fails with this when set (e.g. the dlerror text).
  Status load_status;
  std::string library_path = "/usr/lib/x86_64-linux-gnu/libcuda.so.1";
  int driver_version = 13000;
  int init_error = 0;  // CUresult returned by cuInit; 0 = success
  std::vector<gpu::CudaDeviceProps> devices;
  // What MeasureCopyBandwidth returns: an H200 on PCIe 5 x16 by default.
  Expected<gpu::CopyBandwidth> copy_result = H200Copies();
  int copy_tests = 0;

  static gpu::CopyBandwidth H200Copies() {
    gpu::CopyBandwidth b;
    b.bytes = 64ull << 20;
    b.repetitions = 3;
    b.pinned_h2d = 55.1;
    b.pinned_d2h = 55.6;
    b.pageable_h2d = 19.8;
    b.pageable_d2h = 17.2;
    b.total_ms = 60;
    return b;
  }

  // Adds a device; its ordinal is its position.
  FakeGpuDriver& AddDevice(const std::string& name, const std::string& uuid, int cc_major,
                           int cc_minor, uint64_t total_memory) {
    gpu::CudaDeviceProps p;
    p.ordinal = static_cast<int>(devices.size());
    p.name = name;
    p.uuid = uuid;
    p.pci_bus_id = "0000:" + std::to_string(0x18 + devices.size()) + ":00.0";
    p.cc_major = cc_major;
    p.cc_minor = cc_minor;
    p.total_memory = total_memory;
    devices.push_back(p);
    return *this;
  }

  Status Load() override {
    loaded_ = load_status.ok();
    return load_status;
  }
  std::string LibraryPath() const override { return loaded_ ? library_path : ""; }
  Expected<int> DriverVersion() override {
    if (!loaded_) return FailedPrecondition("libcuda is not loaded");
    return driver_version;
  }
  Status Init() override {
    if (!loaded_) return FailedPrecondition("libcuda is not loaded");
    if (init_error != 0) return gpu::CudaCallError("cuInit", init_error, "");
    initialized_ = true;
    return Status::Ok();
  }
  Expected<int> DeviceCount() override {
    if (!initialized_) return gpu::CudaCallError("cuDeviceGetCount", 3, "");
    return static_cast<int>(devices.size());
  }
  Expected<gpu::CudaDeviceProps> Device(int ordinal) override {
    if (!initialized_) return gpu::CudaCallError("cuDeviceGet", 3, "");
    if (ordinal < 0 || ordinal >= static_cast<int>(devices.size())) {
      return gpu::CudaCallError("cuDeviceGet", 101, "invalid device ordinal");
    }
    return devices[static_cast<size_t>(ordinal)];
  }
  Expected<gpu::CopyBandwidth> MeasureCopyBandwidth(int ordinal, const gpu::CopyTestOptions&) override {
    if (!initialized_) return gpu::CudaCallError("cuDevicePrimaryCtxRetain", 3, "");
    if (ordinal < 0 || ordinal >= static_cast<int>(devices.size())) {
      return gpu::CudaCallError("cuDeviceGet", 101, "invalid device ordinal");
    }
    ++copy_tests;
    return copy_result;
  }

 private:
  bool loaded_ = false;
  bool initialized_ = false;
};

}  // namespace ortgpu::testing
