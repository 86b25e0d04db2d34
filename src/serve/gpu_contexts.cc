#include "serve/gpu_contexts.h"

#include <set>

#include <fmt/format.h>

#include "gpu/gpu_info.h"
#include "gpu/nvml_locate.h"
#include "serve/repository/model_memory.h"

namespace ortgpu::serve {

std::vector<std::string> StrayContexts(gpu::Nvml& nvml, const std::vector<ModelSummary>& models,
                                       const VisibleGpus* visible, uint32_t pid, const Environment& env) {
  auto count = nvml.DeviceCount();
  if (!count.ok()) return {};
  std::vector<gpu::NvmlDevice> devices;
  for (unsigned i = 0; i < *count; ++i) {
    auto d = nvml.Device(i);
    gpu::NvmlDevice device;
    if (d.ok()) device = *d;
    device.index = i;
    devices.push_back(std::move(device));
  }
  // The NVML index of each CUDA ordinal a READY model uses.
  std::set<unsigned> used;
  for (const auto& m : models) {
    // A load that failed may have made a context anywhere: nothing can be told.
    if (m.state != ModelState::kReady) return {};
    std::vector<int> ordinals = m.gpus;
    ordinals.insert(ordinals.end(), m.failed_gpus.begin(), m.failed_gpus.end());
    for (int ordinal : ordinals) {
      // A MIG instance's contexts are listed on its GPU.
      auto place = NvmlPlaceOf(nvml, ordinal, visible != nullptr ? visible->Uuid(ordinal) : "", env);
      // A GPU NVML does not list: which one it uses cannot be told.
      if (!place.ok()) return {};
      used.insert(place->index);
    }
  }
  std::vector<std::string> lines;
  std::string keep;
  for (unsigned i : used) keep += (keep.empty() ? "" : ",") + std::to_string(i);
  auto where = gpu::ProcessGpus(nvml, pid);
  if (!where.ok()) return {};
  for (const auto& held : *where) {
    if (!held.listed || used.count(held.index) || held.index >= devices.size()) continue;
    const gpu::NvmlDevice& d = devices[held.index];
    lines.push_back(fmt::format(
        "this process holds {} on GPU {} (NVML's numbering{}) where no model has an instance: a stray CUDA "
        "context, made by a thread that touched CUDA without making its GPU current (ORT #13697); it takes "
        "that GPU's memory from its other tenants{}",
        held.memory ? gpu::FormatBytes(*held.memory) : std::string("memory"), d.index, d.name.empty() ? "" : ", " + d.name,
        keep.empty() ? std::string()
                     : "; CUDA_VISIBLE_DEVICES=" + keep + " keeps the process on the GPUs its models use (renumber "
                                                          "instance_group gpus from 0 then)"));
  }
  return lines;
}

}  // namespace ortgpu::serve
