#include "doctor/checks_contexts.h"

#include <fmt/format.h>

namespace ortgpu::doctor {
namespace {

constexpr const char* kId = "health.contexts";

Finding Skip(std::string seen) {
  Finding f = MakeFinding(kId, Layer::kHealth, Verdict::kSkip, "CUDA contexts on other GPUs not checked", /*gpu=*/false);
  f.seen = std::move(seen);
  f.why = "NVML cannot tell which GPUs this process holds memory on";
  return f;
}

std::string Memory(const std::optional<uint64_t>& bytes) {
  return bytes ? gpu::FormatBytes(*bytes) : std::string("memory not reported");
}

}  // namespace

ContextObservation ObserveContexts(gpu::Nvml& nvml, const gpu::DriverInfo& info, int cuda_index, int nvml_index,
                                   uint32_t own_pid, bool in_container) {
  ContextObservation obs;
  obs.cuda_index = cuda_index;
  obs.nvml_index = nvml_index;
  obs.own_pid = own_pid;
  obs.in_container = in_container;
  auto gpus = gpu::ProcessGpus(nvml, own_pid);
  if (!gpus.ok()) {
    obs.skip_reason = "nvmlDeviceGetCount: " + gpus.status().message();
    return obs;
  }
  obs.gpus = static_cast<int>(gpus->size());
  for (const auto& g : *gpus) {
    if (!g.error.empty()) {
      obs.unread.push_back(fmt::format("GPU {}: {}", g.index, g.error));
      continue;
    }
    if (static_cast<int>(g.index) == nvml_index) {
      if (g.listed) {
        obs.own_memory = g.memory.value_or(0);
        obs.own_memory_known = g.memory.has_value();
      }
      continue;
    }
    if (!g.listed) continue;
    ContextObservation::Held held;
    held.nvml_index = static_cast<int>(g.index);
    held.memory = g.memory;
    for (const auto& d : info.devices) {
      if (d.nvml_index == held.nvml_index) held.name = d.name;
    }
    obs.elsewhere.push_back(std::move(held));
  }
  return obs;
}

void CheckContexts(const ContextObservation& obs, Report& report) {
  if (!obs.skip_reason.empty()) return (void)report.Add(Skip(obs.skip_reason));
  if (!obs.own_memory && obs.elsewhere.empty()) {
    std::string seen = fmt::format("NVML does not list process {} on GPU {}, where it ran", obs.own_pid, obs.nvml_index);
    if (obs.in_container) seen += " (in a container NVML lists host pids, so it cannot see this one anywhere)";
    for (const auto& u : obs.unread) seen += "; " + u;
    return (void)report.Add(Skip(std::move(seen)));
  }
  Finding f = MakeFinding(kId, Layer::kHealth, Verdict::kPass, "CUDA contexts only on the GPU asked for", /*gpu=*/true);
  f.facts["gpu"] = std::to_string(obs.cuda_index);
  f.facts["nvml_index"] = std::to_string(obs.nvml_index);
  f.facts["gpus"] = std::to_string(obs.gpus);
  f.facts["own_memory"] = obs.own_memory && obs.own_memory_known ? std::to_string(*obs.own_memory) : "";
  std::string other_gpus;
  uint64_t other_memory = 0;
  for (const auto& h : obs.elsewhere) {
    other_gpus += (other_gpus.empty() ? "" : ",") + std::to_string(h.nvml_index);
    other_memory += h.memory.value_or(0);
  }
  f.facts["other_gpus"] = other_gpus;
  f.facts["other_gpus_memory"] = std::to_string(other_memory);

  const std::string own = obs.own_memory ? fmt::format("{} on GPU {} (device {}, where it was asked to run)",
                                                       obs.own_memory_known ? Memory(obs.own_memory) : "memory not reported",
                                                       obs.nvml_index, obs.cuda_index)
                                         : fmt::format("none listed on GPU {}", obs.nvml_index);
  if (obs.elsewhere.empty()) {
    f.seen = fmt::format("process {} holds {}; no other of the {} GPU(s) NVML lists holds a context of it", obs.own_pid,
                         own, obs.gpus);
    for (const auto& u : obs.unread) f.seen += "; not read: " + u;
    return (void)report.Add(std::move(f));
  }
  f.verdict = Verdict::kWarn;
  f.title = fmt::format("this process made a CUDA context on {} other GPU(s) ({})", obs.elsewhere.size(),
                        gpu::FormatBytes(other_memory));
  f.seen = fmt::format("process {} holds {}", obs.own_pid, own);
  for (const auto& h : obs.elsewhere) {
    f.seen += fmt::format(", and {} on GPU {}{}", Memory(h.memory), h.nvml_index, h.name.empty() ? "" : " (" + h.name + ")");
  }
  f.why = "a thread that touches CUDA without setting its device works on GPU 0: the context and whatever it "
          "allocates there (hundreds of MiB) take memory from that GPU's own models or tenants, and work meant "
          "for one GPU may run on another (ORT #13697, #3475)";
  f.fix = fmt::format(
      "hide the other GPUs from the process: CUDA_VISIBLE_DEVICES={} (it becomes device 0; `ortgpu serve` "
      "and bench take --device/gpus then relative to it); if the context comes from your own code, call "
      "cudaSetDevice({}) on every thread before any CUDA call",
      obs.nvml_index, obs.cuda_index);
  report.Add(std::move(f));
}

}  // namespace ortgpu::doctor
