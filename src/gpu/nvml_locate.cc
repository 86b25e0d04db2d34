#include "gpu/nvml_locate.h"

#include <vector>

#include "gpu/gpu_info.h"

namespace ortgpu::gpu {

Expected<NvmlPlace> LocateByUuid(Nvml& nvml, const std::string& uuid) {
  ORTGPU_ASSIGN_OR_RETURN(const unsigned count, nvml.DeviceCount());
  // Whole GPUs first: Device() is cheap, Health() makes a dozen queries.
  std::vector<bool> mig_off(count, false);
  for (unsigned i = 0; i < count; ++i) {
    auto d = nvml.Device(i);
    if (!d.ok()) continue;
    if (SameDeviceUuid(d->uuid, uuid)) return NvmlPlace{i, std::nullopt};
    mig_off[i] = d->mig_current == false;
  }
  for (unsigned i = 0; i < count; ++i) {
    if (mig_off[i]) continue;
    auto h = nvml.Health(i);
    if (!h.ok() || !h->mig_instances) continue;
    for (const auto& m : *h->mig_instances) {
      if (SameDeviceUuid(m.uuid, uuid)) return NvmlPlace{i, m};
    }
  }
  return NotFound("NVML lists no GPU or MIG instance with UUID '" + uuid + "' (" + std::to_string(count) + " GPU" +
                  (count == 1 ? "" : "s") + " listed)");
}

Expected<NvmlMemory> MemoryAt(Nvml& nvml, const NvmlPlace& place) {
  if (!place.mig) return nvml.Memory(place.index);
  const std::string what =
      "MIG instance " + place.mig->uuid + " of GPU " + std::to_string(place.index) + " (NVML's numbering)";
  ORTGPU_ASSIGN_OR_RETURN(NvmlHealth h, nvml.Health(place.index));
  if (!h.mig_instances) {
    const auto why = h.not_checked.find("mig_instances");
    return Unavailable("NVML does not list the MIG instances of GPU " + std::to_string(place.index) +
                       (why != h.not_checked.end() ? ": " + why->second : std::string(" (MIG mode is off now)")));
  }
  for (const auto& m : *h.mig_instances) {
    if (!SameDeviceUuid(m.uuid, place.mig->uuid)) continue;
    if (m.memory_total == 0) return Unavailable("NVML gives no memory figure for " + what);
    return NvmlMemory{m.memory_total, m.memory_used, m.memory_free};
  }
  return NotFound(what + " is no longer listed (the GPU's MIG layout changed)");
}

}  // namespace ortgpu::gpu
