// GpuDevice and DriverInfo: what ortgpu knows about the NVIDIA driver and the
// GPUs of this machine, merged from the CUDA driver API (GpuDriver) and NVML
// (Nvml). Either source may be missing: libcuda without NVML (some
// containers), NVML without a working cuInit (CUDA_VISIBLE_DEVICES=-1).
//
// Plain values; ProbeDriver* call the interfaces from one thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "gpu/cuda_driver.h"
#include "gpu/nvml.h"
#include "status/expected.h"

namespace ortgpu::gpu {

struct GpuDevice {
  // CUDA ordinal (what ORT's device_id means), -1 when CUDA does not see the
  // device (hidden by CUDA_VISIBLE_DEVICES, or cuInit failed).
  int index = -1;
  // NVML index (PCI order), -1 when NVML is unavailable.
  int nvml_index = -1;
  std::string name;
  std::string uuid;        // "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx"
  std::string pci_bus_id;  // NVML's form "00000000:18:00.0" when known, else CUDA's
  int cc_major = 0;
  int cc_minor = 0;
  uint64_t memory_total = 0;  // bytes
  std::optional<uint64_t> memory_used;  // bytes, NVML only
  std::optional<uint64_t> memory_free;
  std::optional<unsigned> utilization_gpu;  // percent, NVML only
  std::optional<unsigned> utilization_memory;
  bool mig_enabled = false;  // MIG mode currently on (NVML)
  bool mig_pending = false;  // MIG mode after the next reset
  bool seen_by_cuda = false;
  bool seen_by_nvml = false;

  // 90 for compute capability 9.0, 120 for 12.0.
  int ComputeCapability() const { return cc_major * 10 + cc_minor; }
};

struct DriverInfo {
  std::string libcuda_path;   // empty when libcuda did not load
  std::string nvml_path;      // empty when NVML did not load
  std::string driver_version;  // "580.159.03" (NVML); empty when unknown
  int cuda_driver_version = 0;  // 13000: highest CUDA the driver supports; 0 when unknown
  std::vector<GpuDevice> devices;  // CUDA-visible first in CUDA order, then NVML-only ones
  // Why each source is missing or partial; OK when it worked.
  Status cuda_load_status;   // dlopen of libcuda
  Status cuda_init_status;   // cuInit / device enumeration
  Status nvml_status;        // dlopen + nvmlInit + enumeration

  bool cuda_usable() const { return cuda_load_status.ok() && cuda_init_status.ok(); }
  bool nvml_usable() const { return nvml_status.ok(); }
  // Devices CUDA can run on (index >= 0).
  int CudaDeviceCount() const;
};

// Queries both sources and merges devices by UUID. Never fails: what could
// not be learned is recorded in the *_status fields.
DriverInfo ProbeDriverSources(GpuDriver& driver, Nvml& nvml);

// ProbeDriverSources, failing with Unavailable (both reasons in the message)
// when neither libcuda nor NVML works.
Expected<DriverInfo> ProbeDriver(GpuDriver& driver, Nvml& nvml);

// Whether two UUIDs name the same device: CUDA prints a MIG instance's UUID
// with the GPU- prefix ("GPU-5f1c..."), NVML with MIG- ("MIG-5f1c..."), so
// only the part after the first '-' is compared.
bool SameDeviceUuid(const std::string& a, const std::string& b);

// "141.0 GiB" style, for findings.
std::string FormatBytes(uint64_t bytes);

}  // namespace ortgpu::gpu
