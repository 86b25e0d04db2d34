// Layer 2b of `ortgpu doctor` (issue #13): whether "runs on the GPU" also
// means "runs at the GPU's speed". The checked GPU's state through NVML
// (persistence and compute mode, ECC errors, memory repair, the PCIe link,
// MIG, other processes, what limited the clocks during the end-to-end run)
// and the host-device path (a short pinned and pageable copy test against
// what the link should give).
//
// A pure function of a HealthObservation that doctor.cc fills from the NVML
// and driver seams (or a test writes by hand). What NVML could not tell (an
// old driver without the entry point, a GeForce without ECC) is a `skip`
// finding with the reason and gpu = false, never a failure. Thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "doctor/finding.h"
#include "gpu/cuda_driver.h"
#include "gpu/nvml.h"

namespace ortgpu::doctor {

struct HealthObservation {
  // When set, nothing was observed: one health.gpu skip with this reason.
  std::string skip_reason;
  int cuda_index = 0;       // the --device checked
  int nvml_index = 0;       // its GPU in NVML order (nvidia-smi -i)
  std::string name;         // "NVIDIA H200"
  std::string cuda_uuid;    // the device as CUDA names it (a MIG instance's UUID under MIG)
  uint64_t memory_total = 0;
  bool mig_enabled = false;
  std::optional<std::string> cuda_visible_devices;
  bool in_container = false;
  uint32_t own_pid = 0;     // this process; NVML lists host pids
  gpu::NvmlHealth health;   // read before this process made a CUDA context
  // Clock samples taken while the end-to-end CUDA runs ran; empty with the
  // reason when none ran.
  std::vector<gpu::NvmlClockSample> load_samples;
  std::string load_skip_reason;
  std::optional<gpu::CopyBandwidth> copies;
  std::string copy_skip_reason;  // why there are no copies
};

// Adds the health.* findings.
void CheckHealth(const HealthObservation& obs, Report& report);

// The data rate of one direction of a PCIe link in GB/s (1e9 bytes/s) after
// line encoding: per lane 0.25 (Gen1, 8b/10b), 0.5 (Gen2), 0.985 (Gen3,
// 128b/130b), 1.969 (Gen4), 3.938 (Gen5), 7.563 (Gen6, FLIT); 0 for an
// unknown generation. Copies reach ~80-90% of it (packet headers).
double PcieLinkGbps(unsigned generation, unsigned width);

// The clock event reasons of `bits` that slow a busy GPU down, by name
// ("SW power cap", "HW slowdown" ...); GPU idle, application clocks, sync
// boost and display clock are left out.
std::vector<std::string> LimitingClockReasons(uint64_t bits);

}  // namespace ortgpu::doctor
