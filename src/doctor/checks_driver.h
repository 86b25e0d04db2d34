// Layer 2 of `ortgpu doctor`: the NVIDIA driver. Whether libcuda and NVML
// load (and from where), whether cuInit works, the driver version and the
// highest CUDA it supports, one finding per GPU (name, UUID, PCI bus id,
// compute capability, memory, utilisation, MIG mode) and whether the driver
// is new enough for each GPU's architecture.
//
// On a machine without NVIDIA device nodes a missing driver is `skip` ("no
// NVIDIA driver on this machine"), not `fail`; with /dev/nvidia0 present it
// is a real `fail`. Every finding here has gpu = true. Not synchronised.
#pragma once

#include <string>
#include <vector>

#include "doctor/checks_host.h"
#include "doctor/finding.h"
#include "gpu/cuda_driver.h"
#include "gpu/gpu_info.h"
#include "gpu/nvml.h"

namespace ortgpu::doctor {

// What later layers need from layer 2.
struct DriverFacts {
  std::string driver_version;    // "580.159.03"; empty when NVML is unavailable
  int cuda_driver_version = 0;   // 13000; 0 when unknown
  std::vector<int> device_ccs;   // compute capability (90) of each CUDA-visible GPU, CUDA order
  bool gpu_usable = false;       // cuInit worked and a CUDA-visible GPU's arch is supported
  gpu::DriverInfo info;          // everything probed
};

// Probes `driver` and `nvml` (ProbeDriverSources) and adds the driver.*
// findings. `host` is layer 1's summary (device nodes, container,
// CUDA_VISIBLE_DEVICES).
DriverFacts CheckDriver(gpu::GpuDriver& driver, gpu::Nvml& nvml, const HostSummary& host,
                        Report& report);

// The same from an already probed DriverInfo.
DriverFacts CheckDriverInfo(const gpu::DriverInfo& info, const HostSummary& host, Report& report);

}  // namespace ortgpu::doctor
