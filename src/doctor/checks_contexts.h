// Whether this process, told to use one GPU, made CUDA contexts on others
// (issue #30 item 2). ORT and the CUDA libraries create a context on the
// current device of whatever thread touches CUDA, and that is GPU 0 unless the
// thread set its device: ORT #13697 (a context on GPU 0 with device_id=2),
// PR #3475 (worker threads on GPU 0). Each stray context costs hundreds of
// MiB on a GPU another process may own.
//
// After the end-to-end runs (and the --model runs), doctor.cc reads from
// NVML which GPUs list this process (ObserveContexts); CheckContexts turns
// that into the finding `health.contexts`. Both are pure over the NVML seam
// and testable with fakes. Thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "doctor/finding.h"
#include "gpu/gpu_info.h"
#include "gpu/nvml.h"

namespace ortgpu::doctor {

struct ContextObservation {
  // When set, nothing was read: one `skip` finding with this reason.
  std::string skip_reason;
  int cuda_index = 0;      // the --device checked
  int nvml_index = 0;      // its GPU in NVML order
  uint32_t own_pid = 0;    // this process (NVML lists host pids)
  bool in_container = false;
  int gpus = 0;            // GPUs NVML lists
  // This process's memory on its own GPU: nullopt when NVML does not list it
  // there (then NVML cannot see it anywhere: a container's pid namespace);
  // 0 with own_memory_known false when listed without a figure.
  std::optional<uint64_t> own_memory;
  bool own_memory_known = true;
  // Other GPUs that list this process.
  struct Held {
    int nvml_index = 0;
    std::string name;
    std::optional<uint64_t> memory;  // nullopt: listed, memory not reported
  };
  std::vector<Held> elsewhere;
  std::vector<std::string> unread;  // "GPU 2: <NVML error>" for lists NVML would not give
};

// Reads the observation from NVML (every GPU it lists); `nvml_index` is the
// --device GPU's NVML index (HealthObservation's).
ContextObservation ObserveContexts(gpu::Nvml& nvml, const gpu::DriverInfo& info, int cuda_index, int nvml_index,
                                   uint32_t own_pid, bool in_container);

// Adds `health.contexts`: pass when this process holds memory only on its
// own GPU; warn naming each other GPU it holds memory on, with the
// CUDA_VISIBLE_DEVICES that prevents it; skip when NVML cannot tell.
void CheckContexts(const ContextObservation& obs, Report& report);

}  // namespace ortgpu::doctor
