// Where NVML reads one CUDA device. CUDA and NVML number GPUs differently
// (CUDA_VISIBLE_DEVICES renumbers CUDA's; NVML keeps PCI order), and a MIG
// instance is a CUDA device of its own but, to NVML, a slice of its GPU with
// its own memory. The UUID names the device in both: CUDA prints it as
// "GPU-<x>" (a MIG instance too), NVML as "GPU-<x>" for a GPU and "MIG-<x>"
// for a MIG instance (SameDeviceUuid compares them).
//
// Functions over the Nvml seam; they call it, so the caller serialises as for
// any Nvml use (nvml.h).
#pragma once

#include <optional>
#include <string>

#include "gpu/nvml.h"
#include "status/expected.h"

namespace ortgpu::gpu {

// Where NVML reads one CUDA device: the NVML index of its GPU and, for a MIG
// instance, which one (as Health(index) listed it when located).
struct NvmlPlace {
  unsigned index = 0;
  std::optional<NvmlMigInstance> mig;
};

// Finds the device whose UUID is `uuid` as CUDA prints it ("GPU-..." also for
// a MIG instance; SameDeviceUuid compares): a whole GPU (Device(i).uuid),
// else a MIG instance of a GPU in MIG mode (Health(i).mig_instances; GPUs
// whose MIG mode is known to be off are not asked). NotFound when none
// matches (an empty `uuid` matches none); DeviceCount's error when NVML
// lists no GPUs.
Expected<NvmlPlace> LocateByUuid(Nvml& nvml, const std::string& uuid);

// The memory a load can use at `place`, read now: the MIG instance's own
// total, used and free (read again from Health(place.index)), else the
// GPU's (Memory(place.index)). For a MIG instance NotFound when the GPU no
// longer lists it, Unavailable when NVML gives no figure for it.
Expected<NvmlMemory> MemoryAt(Nvml& nvml, const NvmlPlace& place);

}  // namespace ortgpu::gpu
