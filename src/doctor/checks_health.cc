#include "doctor/checks_health.h"

#include <algorithm>

#include <fmt/format.h>

#include "gpu/gpu_info.h"

namespace ortgpu::doctor {
namespace {

Finding Make(std::string id, Verdict v, std::string title) {
  return MakeFinding(std::move(id), Layer::kHealth, v, std::move(title), /*gpu=*/true);
}

// "not checked" never fails a run, not even with --require gpu: an old
// driver or a board without the feature is not a broken GPU.
Finding NotChecked(std::string id, std::string what, const HealthObservation& obs, const std::string& group) {
  Finding f = MakeFinding(std::move(id), Layer::kHealth, Verdict::kSkip, what + " not checked", /*gpu=*/false);
  for (const std::string& g : {group, group == "row_remap" ? std::string("retired_pages") : std::string()}) {
    auto it = obs.health.not_checked.find(g);
    if (it != obs.health.not_checked.end()) f.seen += (f.seen.empty() ? "" : "; ") + it->second;
  }
  if (f.seen.empty()) f.seen = "NVML reported nothing";
  f.why = "NVML cannot tell on this GPU or driver";
  return f;
}

std::string Smi(const HealthObservation& obs) { return "sudo nvidia-smi -i " + std::to_string(obs.nvml_index); }

void AddCommon(Finding& f, const HealthObservation& obs) {
  f.facts["gpu"] = std::to_string(obs.cuda_index);
  f.facts["nvml_index"] = std::to_string(obs.nvml_index);
}

void CheckPersistence(const HealthObservation& obs, Report& report) {
  const auto& h = obs.health;
  if (!h.persistence_mode) return (void)report.Add(NotChecked("health.persistence", "persistence mode", obs, "persistence_mode"));
  Finding f = Make("health.persistence", Verdict::kPass, "persistence mode on");
  f.seen = std::string("persistence mode ") + (*h.persistence_mode ? "enabled" : "disabled");
  f.facts["persistence_mode"] = *h.persistence_mode ? "on" : "off";
  if (!*h.persistence_mode) {
    f.verdict = Verdict::kWarn;
    f.title = "persistence mode off";
    f.why = "without it the driver tears the GPU's state down whenever no process holds it, so every "
            "process start (each serve restart, each doctor or bench run) pays driver initialisation "
            "again, often seconds, and clock and ECC settings can reset";
    f.fix = "sudo systemctl enable --now nvidia-persistenced   (or " + Smi(obs) +
            " -pm 1)" + (obs.in_container ? "; on the host, not in the container" : "");
  }
  AddCommon(f, obs);
  report.Add(std::move(f));
}

void CheckComputeMode(const HealthObservation& obs, Report& report) {
  const auto& h = obs.health;
  if (!h.compute_mode) return (void)report.Add(NotChecked("health.compute_mode", "compute mode", obs, "compute_mode"));
  Finding f = Make("health.compute_mode", Verdict::kPass, "compute mode Default: processes may share the GPU");
  const char* names[] = {"Default", "Exclusive Thread", "Prohibited", "Exclusive Process"};
  const int mode = *h.compute_mode;
  const std::string name = mode >= 0 && mode <= 3 ? names[mode] : "unknown (" + std::to_string(mode) + ")";
  f.seen = "compute mode " + name;
  f.facts["compute_mode"] = name;
  const std::string share_fix = Smi(obs) + " -c DEFAULT";
  if (mode == gpu::kNvmlComputeModeExclusiveProcess || mode == gpu::kNvmlComputeModeExclusiveThread) {
    size_t others = 0;
    if (h.processes) {
      for (const auto& p : *h.processes) others += p.pid != obs.own_pid;
    }
    f.verdict = others > 0 ? Verdict::kFail : Verdict::kWarn;
    f.title = "compute mode " + name + ": one process at a time";
    f.why = "only one process may hold a CUDA context on this GPU: a second `ortgpu serve`, a bench next to "
            "a server, or doctor run on a serving GPU fails with CUDA_ERROR_DEVICE_BUSY (\"CUDA-capable "
            "device(s) is/are busy or unavailable\")";
    if (others > 0) f.why += "; another process holds it now, so this process cannot use it";
    f.fix = "to share the GPU: " + share_fix + "; to keep it exclusive, run doctor and bench before serve starts";
  } else if (mode == gpu::kNvmlComputeModeProhibited) {
    f.verdict = Verdict::kFail;
    f.title = "compute mode Prohibited: no process may use CUDA here";
    f.why = "no CUDA context can be created on this GPU, so the CUDA EP cannot start";
    f.fix = share_fix;
  }
  AddCommon(f, obs);
  report.Add(std::move(f));
}

void CheckEcc(const HealthObservation& obs, Report& report) {
  const auto& h = obs.health;
  if (!h.ecc_current) return (void)report.Add(NotChecked("health.ecc", "ECC", obs, "ecc"));
  Finding f = Make("health.ecc", Verdict::kPass, "ECC on, no uncorrectable errors");
  f.seen = std::string("ECC ") + (*h.ecc_current ? "enabled" : "disabled");
  if (h.ecc_pending && *h.ecc_pending != *h.ecc_current) {
    f.seen += std::string(" (") + (*h.ecc_pending ? "enabled" : "disabled") + " after the next reboot)";
  }
  f.facts["ecc"] = *h.ecc_current ? "on" : "off";
  if (!*h.ecc_current) {
    f.verdict = Verdict::kWarn;
    f.title = "ECC off";
    f.why = "memory errors go undetected: a flipped bit silently changes weights or outputs";
    f.fix = Smi(obs) + " -e 1, then reboot (costs a few percent of memory and bandwidth)";
    AddCommon(f, obs);
    return (void)report.Add(std::move(f));
  }
  if (!h.ecc_uncorrected_volatile) {
    auto it = h.not_checked.find("ecc");
    f.seen += "; error counts not read: " + (it != h.not_checked.end() ? it->second : std::string("unknown"));
  } else {
    const uint64_t vol = *h.ecc_uncorrected_volatile;
    const uint64_t agg = h.ecc_uncorrected_aggregate.value_or(vol);
    f.seen += fmt::format("; uncorrectable errors: {} since the driver loaded, {} over the board's life", vol, agg);
    f.facts["uncorrected_volatile"] = std::to_string(vol);
    f.facts["uncorrected_aggregate"] = std::to_string(agg);
    if (vol > 0) {
      f.verdict = Verdict::kFail;
      f.title = fmt::format("{} uncorrectable ECC error(s) since the driver loaded", vol);
      f.why = "GPU memory was corrupted: the process that touched it lost its CUDA context (Xid 48/94/95 in "
              "the kernel log) and results computed meanwhile may be wrong";
      f.fix = "sudo dmesg | grep -i xid; drain the node, reset the GPU (" + Smi(obs) +
              " -r) and run NVIDIA's field diagnostics (dcgmi diag -r 3); if errors recur, replace the board";
    } else if (agg > 0) {
      f.verdict = Verdict::kWarn;
      f.title = fmt::format("{} uncorrectable ECC error(s) in the board's past", agg);
      f.why = "none since the driver loaded, but a board that had them is more likely to have them again";
      f.fix = "watch nvidia-smi -q -d ECC; run dcgmi diag -r 3 at the next maintenance window";
    }
  }
  AddCommon(f, obs);
  report.Add(std::move(f));
}

void CheckMemoryRepair(const HealthObservation& obs, Report& report) {
  const auto& h = obs.health;
  const bool rows = h.row_remap_pending.has_value();
  const bool pages = h.retired_pages_dbe.has_value();
  if (!rows && !pages) return (void)report.Add(NotChecked("health.memory_repair", "memory repair (row remapping, retired pages)", obs, "row_remap"));
  Finding f = Make("health.memory_repair", Verdict::kPass, "no memory repair pending");
  std::vector<std::string> seen;
  if (rows) {
    seen.push_back(fmt::format("remapped rows: {} for correctable, {} for uncorrectable errors; pending {}; "
                               "failure {}",
                               h.remapped_rows_correctable.value_or(0), h.remapped_rows_uncorrectable.value_or(0),
                               *h.row_remap_pending ? "yes" : "no", h.row_remap_failure.value_or(false) ? "yes" : "no"));
    f.facts["remapped_rows_uncorrectable"] = std::to_string(h.remapped_rows_uncorrectable.value_or(0));
    f.facts["row_remap_pending"] = *h.row_remap_pending ? "yes" : "no";
    f.facts["row_remap_failure"] = h.row_remap_failure.value_or(false) ? "yes" : "no";
  }
  if (pages) {
    seen.push_back(fmt::format("retired pages: {} double-bit, {} single-bit; pending {}", *h.retired_pages_dbe,
                               h.retired_pages_sbe.value_or(0), h.retired_pages_pending.value_or(false) ? "yes" : "no"));
    f.facts["retired_pages"] = std::to_string(*h.retired_pages_dbe + h.retired_pages_sbe.value_or(0));
    f.facts["retired_pages_pending"] = h.retired_pages_pending.value_or(false) ? "yes" : "no";
  }
  for (const auto& s : seen) f.seen += (f.seen.empty() ? "" : "; ") + s;
  const unsigned retired = h.retired_pages_dbe.value_or(0) + h.retired_pages_sbe.value_or(0);
  if (h.row_remap_failure.value_or(false)) {
    f.verdict = Verdict::kFail;
    f.title = "a memory row could not be remapped";
    f.why = "the GPU ran out of spare rows for a failing one: the bad memory stays in use";
    f.fix = "drain the node and replace the board (NVIDIA's guidance for a remapping failure)";
  } else if (h.row_remap_pending.value_or(false) || h.retired_pages_pending.value_or(false)) {
    f.verdict = Verdict::kWarn;
    f.title = "a memory repair waits for a GPU reset";
    f.why = "a failing row or page is retired only at the next reset; until then it can be used and fail again";
    f.fix = "stop the GPU's processes and reset it: " + Smi(obs) + " -r (or reboot)";
  } else if (retired >= 60) {
    f.verdict = Verdict::kWarn;
    f.title = fmt::format("{} retired memory pages, near the limit of 64", retired);
    f.why = "at the limit the board can no longer retire failing memory";
    f.fix = "plan to replace the board; run dcgmi diag -r 3";
  }
  AddCommon(f, obs);
  report.Add(std::move(f));
}

std::string LinkText(unsigned gen, unsigned width) { return fmt::format("Gen{} x{}", gen, width); }

// The link's generation under load: the highest seen during the end-to-end
// run, else the one read at rest.
std::optional<unsigned> LoadedGen(const HealthObservation& obs) {
  std::optional<unsigned> gen;
  for (const auto& s : obs.load_samples) {
    if (s.pcie_gen) gen = std::max(gen.value_or(0), *s.pcie_gen);
  }
  return gen;
}

void CheckPcie(const HealthObservation& obs, Report& report) {
  const auto& h = obs.health;
  if (!h.pcie_gen || !h.pcie_width || !h.pcie_gen_max || !h.pcie_width_max) {
    return (void)report.Add(NotChecked("health.pcie", "PCIe link", obs, "pcie"));
  }
  const std::optional<unsigned> loaded = LoadedGen(obs);
  const unsigned gen = std::max(*h.pcie_gen, loaded.value_or(0));
  const unsigned width = *h.pcie_width;
  const unsigned gen_max = *h.pcie_gen_max, width_max = *h.pcie_width_max;
  Finding f = Make("health.pcie", Verdict::kPass, "PCIe " + LinkText(gen, width) + ", the most this GPU and slot support");
  f.seen = "link now " + LinkText(*h.pcie_gen, width) + " at rest";
  if (loaded) f.seen += fmt::format(", Gen{} during the end-to-end run", *loaded);
  f.seen += "; maximum " + LinkText(gen_max, width_max) + " for this GPU in this slot";
  if (h.pcie_gen_gpu_max) f.seen += fmt::format("; the GPU itself supports Gen{}", *h.pcie_gen_gpu_max);
  f.facts["pcie_gen"] = std::to_string(gen);
  f.facts["pcie_width"] = std::to_string(width);
  f.facts["pcie_gen_max"] = std::to_string(gen_max);
  f.facts["pcie_width_max"] = std::to_string(width_max);
  if (h.pcie_gen_gpu_max) f.facts["pcie_gen_gpu_max"] = std::to_string(*h.pcie_gen_gpu_max);
  f.facts["link_gbps"] = fmt::format("{:.1f}", PcieLinkGbps(gen_max, width_max));
  if (width < width_max) {
    f.verdict = Verdict::kWarn;
    f.title = fmt::format("PCIe link trained at x{} of x{}", width, width_max);
    f.why = fmt::format("the GPU gets {:.0f}% of its host bandwidth ({:.1f} of {:.1f} GB/s): every input and output "
                        "crosses this link. A card in a narrower slot, a riser, or a bad seat",
                        100.0 * width / width_max, PcieLinkGbps(gen, width), PcieLinkGbps(gen, width_max));
    f.fix = "move the GPU to a full x" + std::to_string(width_max) + " slot or reseat it; check: sudo lspci -vv | grep -A30 NVIDIA | grep LnkSta";
  } else if (h.pcie_gen_gpu_max && gen_max < *h.pcie_gen_gpu_max) {
    f.verdict = Verdict::kWarn;
    f.title = fmt::format("the slot allows PCIe Gen{}, the GPU does Gen{}", gen_max, *h.pcie_gen_gpu_max);
    f.why = fmt::format("the link runs at {:.1f} GB/s instead of {:.1f} GB/s", PcieLinkGbps(gen_max, width_max),
                        PcieLinkGbps(*h.pcie_gen_gpu_max, width_max));
    f.fix = fmt::format("use a Gen{} slot, or raise the slot's PCIe speed in the BIOS (often set to Auto/Gen3)",
                        *h.pcie_gen_gpu_max);
  } else if (gen < gen_max) {
    if (loaded) {
      f.verdict = Verdict::kWarn;
      f.title = fmt::format("PCIe link at Gen{} under load, though it can do Gen{}", gen, gen_max);
      f.why = fmt::format("copies run at {:.1f} GB/s instead of {:.1f} GB/s", PcieLinkGbps(gen, width),
                          PcieLinkGbps(gen_max, width));
      f.fix = "check the BIOS PCIe speed and ASPM settings and the link (sudo lspci -vv | grep LnkSta); reseat the card";
    } else {
      f.verdict = Verdict::kInfo;
      f.title = fmt::format("PCIe link at Gen{} at rest (can do Gen{})", gen, gen_max);
      f.seen += "; an idle GPU lowers its link generation to save power: health.copy shows the rate under load";
    }
  }
  AddCommon(f, obs);
  report.Add(std::move(f));
}

void CheckMig(const HealthObservation& obs, Report& report) {
  const auto& h = obs.health;
  if (!obs.mig_enabled) {
    Finding f = Make("health.mig", Verdict::kPass, "MIG off: this process has the whole GPU");
    f.seen = "MIG mode disabled";
    f.facts["mig"] = "off";
    AddCommon(f, obs);
    return (void)report.Add(std::move(f));
  }
  if (!h.mig_instances) return (void)report.Add(NotChecked("health.mig", "MIG instances", obs, "mig_instances"));
  Finding f = Make("health.mig", Verdict::kInfo, "");
  f.facts["mig"] = "on";
  f.facts["mig_instances"] = std::to_string(h.mig_instances->size());
  const std::string cvd = obs.cuda_visible_devices.value_or("");
  const gpu::NvmlMigInstance* mine = nullptr;
  for (const auto& m : *h.mig_instances) {
    f.seen += (f.seen.empty() ? "" : ", ") + m.uuid + " (" + gpu::FormatBytes(m.memory_total) + ")";
    if (gpu::SameDeviceUuid(m.uuid, obs.cuda_uuid)) mine = &m;
  }
  f.seen = fmt::format("{} MIG instance(s): {}", h.mig_instances->size(), f.seen.empty() ? "none" : f.seen);
  if (obs.cuda_visible_devices) f.seen += "; CUDA_VISIBLE_DEVICES=\"" + cvd + "\"";
  const std::string list_fix = "nvidia-smi -L lists the MIG-... UUIDs; export CUDA_VISIBLE_DEVICES=MIG-<uuid>";
  if (h.mig_instances->empty()) {
    f.verdict = Verdict::kWarn;
    f.title = "MIG is on but the GPU has no MIG instance";
    f.why = "CUDA runs only on MIG instances: with none, no CUDA device exists on this GPU";
    f.fix = Smi(obs) + " mig -cgi <profile> -C (profiles: nvidia-smi mig -lgip), or turn MIG off: " + Smi(obs) + " -mig 0";
  } else if (mine != nullptr) {
    f.title = "this process runs on MIG instance " + mine->uuid;
    f.seen += fmt::format("; CUDA device {} is {}: {} of the GPU's {}", obs.cuda_index, mine->uuid,
                          gpu::FormatBytes(mine->memory_total), gpu::FormatBytes(obs.memory_total));
    f.facts["mig_instance"] = mine->uuid;
    f.facts["mig_instance_memory"] = std::to_string(mine->memory_total);
  } else {
    f.verdict = Verdict::kWarn;
    f.title = "MIG is on and this process sees none of its instances";
    f.why = "CUDA device " + std::to_string(obs.cuda_index) + " is not one of this GPU's MIG instances: the checks "
            "and the server run somewhere else than meant";
    f.fix = list_fix;
  }
  AddCommon(f, obs);
  report.Add(std::move(f));
}

void CheckProcesses(const HealthObservation& obs, Report& report) {
  const auto& h = obs.health;
  if (!h.processes) return (void)report.Add(NotChecked("health.processes", "other processes on the GPU", obs, "processes"));
  uint64_t others_memory = 0;
  std::vector<std::string> listed;
  for (const auto& p : *h.processes) {
    if (p.pid == obs.own_pid) continue;
    others_memory += p.used_memory.value_or(0);
    listed.push_back(fmt::format("pid {}{} ({})", p.pid, p.name.empty() ? "" : " " + p.name,
                                 p.used_memory ? gpu::FormatBytes(*p.used_memory) : "memory unknown"));
  }
  Finding f = Make("health.processes", Verdict::kPass, "no other process holds this GPU");
  f.facts["other_processes"] = std::to_string(listed.size());
  f.facts["other_processes_memory"] = std::to_string(others_memory);
  if (listed.empty()) {
    f.seen = "NVML lists no process with a CUDA context on it";
    AddCommon(f, obs);
    return (void)report.Add(std::move(f));
  }
  for (const auto& l : listed) f.seen += (f.seen.empty() ? "" : ", ") + l;
  if (obs.in_container) f.seen += " (NVML lists host pids; other containers' processes included)";
  const bool large = obs.memory_total > 0 && others_memory * 10 >= obs.memory_total;
  f.verdict = large ? Verdict::kWarn : Verdict::kInfo;
  f.title = fmt::format("{} other process(es) hold {} of GPU memory", listed.size(), gpu::FormatBytes(others_memory));
  f.why = "they share the GPU's memory and compute: model instances may not fit, and latency measured here "
          "includes their work";
  f.fix = "nvidia-smi shows them; stop them, or check another GPU (--device N, CUDA_VISIBLE_DEVICES)";
  AddCommon(f, obs);
  report.Add(std::move(f));
}

void CheckClocks(const HealthObservation& obs, Report& report) {
  if (obs.load_samples.empty()) {
    Finding f = MakeFinding("health.clocks", Layer::kHealth, Verdict::kSkip, "clocks under load not sampled", false);
    f.seen = obs.load_skip_reason.empty() ? "no end-to-end CUDA run" : obs.load_skip_reason;
    f.why = "clock event reasons mean something only while work runs; they are sampled during the end-to-end run";
    return (void)report.Add(std::move(f));
  }
  uint64_t reasons = 0;
  unsigned sm_max_seen = 0, sm_max = 0, temp = 0, power = 0, limit = 0;
  int busy = 0, with_reasons = 0;
  std::string why_unknown;
  for (const auto& s : obs.load_samples) {
    if (s.event_reasons) {
      ++with_reasons;
      if (!(*s.event_reasons & gpu::kClocksEventGpuIdle)) ++busy;
      reasons |= *s.event_reasons;
    }
    sm_max_seen = std::max(sm_max_seen, s.sm_clock_mhz.value_or(0));
    sm_max = std::max(sm_max, s.sm_clock_max_mhz.value_or(0));
    temp = std::max(temp, s.temperature_c.value_or(0));
    power = std::max(power, s.power_mw.value_or(0));
    limit = std::max(limit, s.power_limit_mw.value_or(0));
    if (auto it = s.not_checked.find("clock_event_reasons"); it != s.not_checked.end()) why_unknown = it->second;
  }
  Finding f = Make("health.clocks", Verdict::kPass, "");
  f.seen = fmt::format("{} sample(s) during the end-to-end run", obs.load_samples.size());
  if (sm_max > 0) f.seen += fmt::format("; SM clock up to {} of {} MHz", sm_max_seen, sm_max);
  if (limit > 0) f.seen += fmt::format("; power up to {:.0f} of {:.0f} W", power / 1000.0, limit / 1000.0);
  if (temp > 0) f.seen += fmt::format("; up to {} C", temp);
  const std::vector<std::string> limiting = LimitingClockReasons(reasons);
  std::string names;
  for (const auto& n : limiting) names += (names.empty() ? "" : ", ") + n;
  f.seen += with_reasons == 0 ? "; event reasons not read: " + why_unknown
                              : "; clock event reasons: " + (names.empty() ? std::string("none") : names);
  f.facts["samples"] = std::to_string(obs.load_samples.size());
  f.facts["sm_clock_max_seen_mhz"] = std::to_string(sm_max_seen);
  f.facts["sm_clock_max_mhz"] = std::to_string(sm_max);
  f.facts["event_reasons"] = fmt::format("0x{:x}", reasons);
  f.facts["limiting_reasons"] = names;
  const bool hw = reasons & (gpu::kClocksEventHwSlowdown | gpu::kClocksEventHwThermalSlowdown |
                             gpu::kClocksEventHwPowerBrakeSlowdown);
  const bool thermal = reasons & gpu::kClocksEventSwThermalSlowdown;
  const bool power_cap = reasons & gpu::kClocksEventSwPowerCap;
  if (hw) {
    f.verdict = Verdict::kWarn;
    f.title = "hardware slowdown during the run: " + names;
    f.why = "the GPU cut its clocks by half or more because of overheating or an external power-brake signal "
            "(a failing power supply or chassis): every run is slower than the GPU can go";
    f.fix = "check cooling and power: nvidia-smi -q -d PERFORMANCE,TEMPERATURE,POWER; sudo dmesg | grep -i xid; "
            "ask the host's operator about the chassis power brake";
  } else if (thermal) {
    f.verdict = Verdict::kWarn;
    f.title = "thermal slowdown during the run";
    f.why = "the GPU is too hot and lowered its clocks";
    f.fix = "check airflow and fans: nvidia-smi -q -d TEMPERATURE";
  } else if (power_cap) {
    f.verdict = Verdict::kWarn;
    f.title = fmt::format("at its power limit during the run ({:.0f} W)", limit / 1000.0);
    f.why = "the clocks drop to stay under the power limit; a limit set below the board's default costs speed";
    f.fix = "check the limit: nvidia-smi -q -d POWER; raise it to the default: " + Smi(obs) + " -pl <default W>";
  } else if (busy == 0 && with_reasons > 0) {
    f.verdict = Verdict::kInfo;
    f.title = "the GPU looked idle in every sample (the run was too short to load it)";
  } else if (sm_max > 0 && sm_max_seen * 10 < sm_max * 7) {
    f.verdict = Verdict::kWarn;
    f.title = fmt::format("SM clock reached only {} of {} MHz under load", sm_max_seen, sm_max);
    f.why = "a GPU held at low clocks runs every kernel slower (application clocks or a locked clock range)";
    f.fix = "check nvidia-smi -q -d CLOCK; reset locked clocks: " + Smi(obs) + " -rgc && " + Smi(obs) + " -rac";
  } else {
    f.title = sm_max > 0 ? fmt::format("no clock slowdown under load (SM up to {} of {} MHz)", sm_max_seen, sm_max)
                         : "no clock slowdown under load";
  }
  AddCommon(f, obs);
  report.Add(std::move(f));
}

void CheckCopies(const HealthObservation& obs, Report& report) {
  if (!obs.copies) {
    Finding f = MakeFinding("health.copy", Layer::kHealth, Verdict::kSkip, "host-device copy test not run", false);
    f.seen = obs.copy_skip_reason.empty() ? "not run" : obs.copy_skip_reason;
    f.why = "the copy test needs a usable GPU and the CUDA driver's memory entry points";
    return (void)report.Add(std::move(f));
  }
  const gpu::CopyBandwidth& c = *obs.copies;
  const auto& h = obs.health;
  Finding f = Make("health.copy", Verdict::kPass, "");
  f.seen = fmt::format("{} MiB x {}: pinned H2D {:.1f} GB/s, D2H {:.1f} GB/s; pageable H2D {:.1f} GB/s, "
                       "D2H {:.1f} GB/s ({:.0f} ms in all)",
                       c.bytes >> 20, c.repetitions, c.pinned_h2d, c.pinned_d2h, c.pageable_h2d, c.pageable_d2h,
                       c.total_ms);
  f.facts["bytes"] = std::to_string(c.bytes);
  f.facts["pinned_h2d_gbps"] = fmt::format("{:.2f}", c.pinned_h2d);
  f.facts["pinned_d2h_gbps"] = fmt::format("{:.2f}", c.pinned_d2h);
  f.facts["pageable_h2d_gbps"] = fmt::format("{:.2f}", c.pageable_h2d);
  f.facts["pageable_d2h_gbps"] = fmt::format("{:.2f}", c.pageable_d2h);
  f.facts["total_ms"] = fmt::format("{:.1f}", c.total_ms);
  const double pinned = std::max(c.pinned_h2d, c.pinned_d2h);
  double link = 0;
  if (h.pcie_gen_max && h.pcie_width_max) {
    link = PcieLinkGbps(*h.pcie_gen_max, *h.pcie_width_max);
    f.seen += fmt::format("; a PCIe {} link gives {:.1f} GB/s per direction",
                          LinkText(*h.pcie_gen_max, *h.pcie_width_max), link);
    f.facts["link_gbps"] = fmt::format("{:.1f}", link);
  }
  f.title = fmt::format("pinned copies {:.1f} GB/s", pinned);
  if (link > 0) f.title += fmt::format(" ({:.0f}% of the link)", 100 * pinned / link);
  // What the link gives as it trained: its width now, and its generation
  // under load (an idle link's lower generation is power saving).
  double link_now = link;
  if (h.pcie_width && h.pcie_gen_max) {
    link_now = PcieLinkGbps(LoadedGen(obs).value_or(*h.pcie_gen_max), *h.pcie_width);
  }
  if (link > 0 && pinned < 0.6 * link) {
    f.verdict = Verdict::kWarn;
    if (link_now < link && pinned >= 0.6 * link_now) {
      f.title = fmt::format("pinned copies reach {:.1f} GB/s, all the degraded PCIe link gives ({:.1f} of {:.1f} GB/s)",
                            pinned, link_now, link);
      f.why = "the link trained below its maximum (health.pcie): the copy path itself is fine";
      f.fix = "fix the link as health.pcie says";
    } else {
      f.title = fmt::format("pinned copies reach {:.1f} GB/s, {:.0f}% of what the link gives", pinned, 100 * pinned / link);
      f.why = "every input and output crosses this path: I/O-heavy models lose throughput. Common causes: a link "
              "trained below its maximum (health.pcie), this process on the other CPU socket than the GPU, "
              "an IOMMU in translation mode";
      f.fix = "nvidia-smi topo -m shows the GPU's NUMA node; run there: numactl --cpunodebind=N --membind=N ortgpu ...; "
              "with an IOMMU, boot with iommu=pt";
    }
  }
  AddCommon(f, obs);
  report.Add(std::move(f));

  const double pageable = std::max(c.pageable_h2d, c.pageable_d2h);
  if (pinned <= 0 || pageable <= 0) return;
  Finding p = Make("health.copy_pageable", Verdict::kPass, "");
  const double share = pageable / pinned;
  p.facts["pageable_share"] = fmt::format("{:.2f}", share);
  p.seen = fmt::format("pageable copies run at {:.0f}% of pinned ({:.1f} vs {:.1f} GB/s host to device)", 100 * share,
                       c.pageable_h2d, c.pinned_h2d);
  if (share < 0.5) {
    p.verdict = Verdict::kInfo;
    p.title = fmt::format("pageable copies at {:.0f}% of pinned: serving stages inputs in pinned memory", 100 * share);
    p.seen += ". A copy from pageable memory goes through the driver's own staging buffer. ortgpu serve copies "
              "each batch into page-locked buffers (ort/input_staging) and so pays the pinned rate; code that hands "
              "ORT pageable host tensors (no I/O binding) pays the pageable one on every input";
    p.why = "a server that copies requests from pageable memory moves its inputs at the lower rate";
    p.fix = "stage inputs in page-locked memory (cudaHostAlloc / ORT's CUDA_PINNED allocator, as ortgpu serve does)";
  } else {
    p.title = fmt::format("pageable copies at {:.0f}% of pinned", 100 * share);
  }
  AddCommon(p, obs);
  report.Add(std::move(p));
}

}  // namespace

double PcieLinkGbps(unsigned generation, unsigned width) {
  static constexpr double kPerLane[] = {0, 0.25, 0.5, 0.9846, 1.9692, 3.9385, 7.5630};
  if (generation == 0 || generation >= std::size(kPerLane)) return 0;
  return kPerLane[generation] * width;
}

std::vector<std::string> LimitingClockReasons(uint64_t bits) {
  struct Name {
    uint64_t bit;
    const char* name;
  };
  static constexpr Name kNames[] = {{gpu::kClocksEventSwPowerCap, "SW power cap"},
                                    {gpu::kClocksEventHwSlowdown, "HW slowdown"},
                                    {gpu::kClocksEventSwThermalSlowdown, "SW thermal slowdown"},
                                    {gpu::kClocksEventHwThermalSlowdown, "HW thermal slowdown"},
                                    {gpu::kClocksEventHwPowerBrakeSlowdown, "HW power brake"}};
  std::vector<std::string> out;
  for (const auto& n : kNames) {
    if (bits & n.bit) out.push_back(n.name);
  }
  return out;
}

void CheckHealth(const HealthObservation& obs, Report& report) {
  if (!obs.skip_reason.empty()) {
    Finding f = MakeFinding("health.gpu", Layer::kHealth, Verdict::kSkip, "GPU health not checked", false);
    f.seen = obs.skip_reason;
    f.why = "the health checks read the GPU through NVML and the CUDA driver";
    report.Add(std::move(f));
    return;
  }
  CheckPersistence(obs, report);
  CheckComputeMode(obs, report);
  CheckEcc(obs, report);
  CheckMemoryRepair(obs, report);
  CheckPcie(obs, report);
  CheckMig(obs, report);
  CheckProcesses(obs, report);
  CheckClocks(obs, report);
  CheckCopies(obs, report);
}

}  // namespace ortgpu::doctor
