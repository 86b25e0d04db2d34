#include "serve/repository/model_memory.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "ort/arena_stats.h"

namespace ortgpu::serve {

namespace {

// The entries of CUDA_VISIBLE_DEVICES ("2,3" -> {"2", "3"}), spaces trimmed;
// empty when it is unset or empty.
std::vector<std::string> VisibleEntries(const Environment& env) {
  std::vector<std::string> out;
  const auto visible = env.Get("CUDA_VISIBLE_DEVICES");
  if (!visible || visible->empty()) return out;
  size_t pos = 0;
  while (true) {
    const size_t comma = visible->find(',', pos);
    std::string part = visible->substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    const size_t first = part.find_first_not_of(' ');
    part = first == std::string::npos ? "" : part.substr(first, part.find_last_not_of(' ') - first + 1);
    out.push_back(part);
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  return out;
}

// An NVML index as CUDA_VISIBLE_DEVICES writes one ("3"); nullopt for
// anything else (a UUID).
std::optional<unsigned> IndexEntry(const std::string& part) {
  char* end = nullptr;
  const long v = std::strtol(part.c_str(), &end, 10);
  if (part.empty() || *end != '\0' || v < 0) return std::nullopt;
  return static_cast<unsigned>(v);
}

}  // namespace

unsigned NvmlIndexOf(int ordinal, const Environment& env) {
  const std::vector<std::string> entries = VisibleEntries(env);
  std::vector<unsigned> indices;
  for (const auto& part : entries) {
    const auto index = IndexEntry(part);
    if (!index) return static_cast<unsigned>(std::max(ordinal, 0));
    indices.push_back(*index);
  }
  if (ordinal >= 0 && static_cast<size_t>(ordinal) < indices.size()) return indices[static_cast<size_t>(ordinal)];
  return static_cast<unsigned>(std::max(ordinal, 0));
}

Expected<gpu::NvmlPlace> NvmlPlaceOf(gpu::Nvml& nvml, int ordinal, const std::string& uuid, const Environment& env) {
  if (!uuid.empty()) {
    auto place = gpu::LocateByUuid(nvml, uuid);
    if (place.ok()) return place;
  }
  const std::vector<std::string> entries = VisibleEntries(env);
  if (ordinal >= 0 && static_cast<size_t>(ordinal) < entries.size()) {
    const std::string& entry = entries[static_cast<size_t>(ordinal)];
    if (!IndexEntry(entry)) {
      auto place = gpu::LocateByUuid(nvml, entry);
      if (!place.ok()) {
        return NotFound("CUDA device " + std::to_string(ordinal) + " is CUDA_VISIBLE_DEVICES's entry '" + entry +
                        "', which NVML does not list: " + place.status().message());
      }
      return place;
    }
  }
  return gpu::NvmlPlace{NvmlIndexOf(ordinal, env), std::nullopt};
}

std::string ModelMemory::Describe() const {
  std::string out;
  for (const auto& d : devices) {
    if (!out.empty()) out += "; ";
    if (d.gpu) {
      out += "GPU " + std::to_string(d.device) + " " + d.split.Describe();
    } else {
      // Host memory: the arenas only (NVML sees no host memory).
      out += fmt::format("CPU arenas {} reserved ({} in use), weights {}", FormatMiB(static_cast<double>(d.split.arena_reserved)),
                         FormatMiB(static_cast<double>(d.split.arena_in_use)), FormatMiB(static_cast<double>(d.split.weights)));
    }
  }
  if (profile) out += "; per session " + profile->session.Describe();
  if (!unavailable.empty()) out += (out.empty() ? "" : "; ") + std::string("not measured: ") + unavailable;
  return out;
}

std::string ModelMemory::DescribeByBatch() const {
  std::map<int64_t, double> largest;
  for (const auto& p : by_batch) largest[p.batch] = std::max(largest[p.batch], p.bytes);
  std::string out;
  for (const auto& [batch, bytes] : largest) out += (out.empty() ? "" : ", ") + fmt::format("{}: {}", batch, FormatMiB(bytes));
  return out;
}

uint64_t ModelMemory::GpuTotal(int device) const {
  for (const auto& d : devices) {
    if (d.gpu && d.device == device) return d.split.total();
  }
  return 0;
}

std::vector<MemoryUsage> ModelMemory::Usage() const {
  std::vector<MemoryUsage> out;
  for (const auto& d : devices) {
    const std::string type = d.gpu ? "GPU" : "CPU";
    out.push_back({type, d.device, d.split.total()});
    out.push_back({type + "_WEIGHTS", d.device, d.split.weights});
    out.push_back({type + "_ARENA_RESERVED", d.device, d.split.arena_reserved});
    out.push_back({type + "_ARENA_IN_USE", d.device, d.split.arena_in_use});
    if (d.split.other) out.push_back({type + "_OTHER", d.device, *d.split.other});
  }
  return out;
}

MemoryRecorder::MemoryRecorder(gpu::Nvml* nvml, std::vector<std::string> cuda_uuids, const Environment& env)
    : nvml_(nvml), cuda_uuids_(std::move(cuda_uuids)), env_(env) {}

GpuUse ReadGpuUse(gpu::Nvml* nvml, int gpu, const std::string& uuid, const Environment& env) {
  GpuUse b;
  if (nvml == nullptr) return b;
  // A device NVML does not list is left unknown rather than read on another GPU.
  auto place = NvmlPlaceOf(*nvml, gpu, uuid, env);
  if (!place.ok()) return b;
  // Processes are listed per GPU (a MIG instance's process on its GPU).
  auto mine = nvml->ProcessMemoryUsed(place->index, static_cast<uint32_t>(getpid()));
  if (mine.ok()) b.process = *mine;
  // No context on the device yet: this process holds nothing there.
  if (!mine.ok() && mine.status().code() == Code::kNotFound) b.process = 0;
  auto device = gpu::MemoryAt(*nvml, *place);
  if (device.ok()) b.device = device->used;
  return b;
}

MemoryRecorder::Baseline MemoryRecorder::Read(int gpu) const {
  const bool known = gpu >= 0 && static_cast<size_t>(gpu) < cuda_uuids_.size();
  return ReadGpuUse(nvml_, gpu, known ? cuda_uuids_[static_cast<size_t>(gpu)] : "", env_);
}

void MemoryRecorder::Begin(const std::set<int>& gpus) {
  for (int g : gpus) before_[g] = Read(g);
}

void MemoryRecorder::SessionCreated(const Session& session) {
  auto stats = ReadArenaStats(session);
  // A new session at the address of one destroyed earlier replaces its entry.
  own_weights_[&session] = stats.ok() ? stats->in_use : 0;
}

void MemoryRecorder::Warmed(const Session& session, int64_t rows) {
  auto stats = ReadArenaStats(session);
  if (!stats.ok()) return;
  MutexLock lock(&mu_);
  warmed_.push_back({rows, static_cast<double>(stats->reserved)});
}

void MemoryRecorder::AddSessions(bool gpu, int device, std::shared_ptr<const InstanceSessions> sessions,
                                 int64_t main_rows, bool first) {
  if (sessions == nullptr || !seen_.insert(sessions.get()).second) return;
  if (sessions->main != nullptr) sessions_.push_back({gpu, device, sessions, sessions->main.get(), main_rows, first});
  for (const auto& [rows, s] : sessions->by_batch_rows) sessions_.push_back({gpu, device, sessions, s.get(), rows, first});
}

void MemoryRecorder::AddInstance(bool gpu, int device) { ++instances_[{gpu, device}]; }

void MemoryRecorder::SharedWeights(bool gpu, int device, uint64_t bytes) { shared_[{gpu, device}] += bytes; }

MemoryRecorder::InstanceBytes MemoryRecorder::FirstInstanceBytes() const {
  InstanceBytes out;
  for (const auto& e : sessions_) {
    if (!e.first) continue;
    auto stats = ReadArenaStats(*e.session);
    if (!stats.ok()) continue;
    auto own = own_weights_.find(e.session);
    const uint64_t weights = own == own_weights_.end() ? 0 : own->second;
    out.total += stats->reserved;
    out.activations += stats->reserved > weights ? stats->reserved - weights : 0;
  }
  return out;
}

ModelMemory MemoryRecorder::Finish() {
  ModelMemory out;
  std::map<std::pair<bool, int>, MemoryOnDevice> devices;
  std::vector<MemoryPoint> points;
  std::vector<int64_t> first_rows;
  std::optional<std::pair<bool, int>> first_device;
  for (const auto& e : sessions_) {
    auto stats = ReadArenaStats(*e.session);
    if (!stats.ok()) {
      if (out.unavailable.empty()) out.unavailable = stats.status().message();
      continue;
    }
    const auto key = std::make_pair(e.gpu, e.device);
    MemoryOnDevice& d = devices[key];
    d.gpu = e.gpu;
    d.device = e.device;
    auto own = own_weights_.find(e.session);
    const uint64_t weights = own != own_weights_.end() ? own->second : 0;
    d.split.weights += weights;
    d.split.arena_reserved += stats->reserved > weights ? stats->reserved - weights : 0;
    d.split.arena_in_use += stats->in_use > weights ? stats->in_use - weights : 0;
    if (e.first && e.gpu) {
      if (!first_device) first_device = key;
      if (*first_device == key) {
        points.push_back({e.rows, static_cast<double>(stats->reserved)});
        first_rows.push_back(e.rows);
      }
    }
  }
  for (const auto& [key, bytes] : shared_) {
    MemoryOnDevice& d = devices[key];
    d.gpu = key.first;
    d.device = key.second;
    d.split.weights += bytes;
  }
  for (auto& [key, d] : devices) {
    if (!d.gpu) continue;
    auto before = before_.find(d.device);
    if (before == before_.end()) continue;
    const Baseline after = Read(d.device);
    // This process's figure when NVML attributes memory to it, else the
    // device's (a dedicated GPU; other processes' allocations meanwhile
    // would count too).
    std::optional<uint64_t> grown;
    if (after.process && *after.process > 0 && before->second.process) {
      grown = *after.process > *before->second.process ? *after.process - *before->second.process : 0;
    } else if (after.device && before->second.device) {
      grown = *after.device > *before->second.device ? *after.device - *before->second.device : 0;
    }
    if (!grown) continue;
    const uint64_t counted = d.split.weights + d.split.arena_reserved;
    d.split.other = *grown > counted ? *grown - counted : 0;
  }
  for (auto& [key, d] : devices) out.devices.push_back(d);
  if (first_device) {
    MutexLock lock(&mu_);
    // One session that ran several sizes: its arena after each is a point too.
    points.insert(points.end(), warmed_.begin(), warmed_.end());
    out.by_batch = points;
    auto fit = FitMemory(points);
    if (fit.ok()) {
      MemoryProfile p;
      p.session = *fit;
      const auto shared = shared_.find(*first_device);
      p.shared_weights = shared != shared_.end() ? shared->second : 0;
      for (const auto& d : out.devices) {
        if (std::make_pair(d.gpu, d.device) == *first_device) {
          p.other = d.split.other.value_or(0);
          p.measured_total = d.split.total();
        }
      }
      p.measured_shape.session_rows = first_rows;
      p.measured_shape.instances = std::max(1, instances_[*first_device]);
      out.profile = p;
    }
  }
  return out;
}

}  // namespace ortgpu::serve
