// What one loaded model version holds in memory (docs/MEMORY.md), measured
// while it loads: each session's own weights when it is created, instance
// 0's arena at each batch size it warmed, every arena at the end of the
// warm-up, the shared weights, and the process's device memory before and
// after as NVML sees it. ModelMemory is the result: per device, the split
// (weights, arena in use and reserved, other, total: ort/memory_profile.h's
// MemorySplit) and, for the first GPU, the profile later loads of the same
// model and settings are planned from (the line through instance 0's
// sessions, the shared weights, other).
//
// MemoryRecorder is used by the loading thread; Warmed may also be called
// from the instance workers' warm-up (it takes a lock). The Nvml it is given
// is used only by that thread, between Begin and Finish.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "gpu/nvml.h"
#include "gpu/nvml_locate.h"
#include "ort/memory_profile.h"
#include "ort/session.h"
#include "serve/scheduler/instance_runner.h"
#include "serve/scheduler/model_stats.h"
#include "sys/environment.h"
#include "sys/mutex.h"

namespace ortgpu::serve {

// The memory of a model version on one device.
struct MemoryOnDevice {
  bool gpu = true;  // false: the CPU (host memory: its arenas, no NVML figure)
  int device = 0;   // CUDA ordinal
  MemorySplit split;
};

struct ModelMemory {
  std::vector<MemoryOnDevice> devices;
  // From instance 0 on the first GPU (nullopt for CPU-only models, or when
  // no arena could be read); what the plan predicts later loads from.
  std::optional<MemoryProfile> profile;
  // Instance 0's sessions on that GPU: each one's arena (its own weights
  // included) by the most rows it ran, as measured at the end of the
  // warm-up (and after each size when one session ran them all).
  std::vector<MemoryPoint> by_batch;
  // Why the arenas could not be read ("" when they were).
  std::string unavailable;
  // "GPU 0 1.20 GiB: weights ..., arena ..., other ...; per session 100.0 MiB
  // + 10.0 MiB per row (through batch 1 and 32; batch 8 off by +1.0%)", the
  // line the start-up summary and the READY log print; "" when nothing was
  // measured.
  std::string Describe() const;
  // "1: 110.0 MiB, 2: 120.0 MiB, ..." (by_batch, the largest per size); ""
  // when none.
  std::string DescribeByBatch() const;
  // The total on GPU `device` (0 when the model has nothing there).
  uint64_t GpuTotal(int device) const;
  // The statistics extension's memory_usage: per device the total ("GPU" or
  // "CPU", the device id) and its parts ("GPU_WEIGHTS", "GPU_ARENA_RESERVED",
  // "GPU_ARENA_IN_USE", "GPU_OTHER" when measured).
  std::vector<MemoryUsage> Usage() const;
};

// The NVML index of CUDA device `ordinal` from CUDA_VISIBLE_DEVICES alone:
// the ordinal's entry when that is a list of indices ("2,3"), else the
// ordinal (NVML numbers GPUs in PCI order, as CUDA does with
// CUDA_DEVICE_ORDER=PCI_BUS_ID). A list of UUIDs ("GPU-...,MIG-...") cannot
// be mapped without asking NVML: it gives the ordinal here, and callers that
// have NVML use NvmlPlaceOf, which maps it.
unsigned NvmlIndexOf(int ordinal, const Environment& env = RealEnvironment());

// Where NVML reads CUDA device `ordinal`, whose UUID as CUDA reports it is
// `uuid` ("" when unknown; VisibleGpus::Uuid): the GPU or MIG instance NVML
// lists with that UUID (gpu::LocateByUuid); else the device the ordinal's
// entry of CUDA_VISIBLE_DEVICES names, by UUID or by NVML index; else the GPU
// at NVML index `ordinal`. NotFound when that entry is a UUID NVML does not
// list: no GPU is guessed then.
Expected<gpu::NvmlPlace> NvmlPlaceOf(gpu::Nvml& nvml, int ordinal, const std::string& uuid,
                                     const Environment& env = RealEnvironment());

// A GPU's memory as NVML attributes it: this process's (nullopt where NVML
// cannot attribute memory to processes, e.g. in a container; 0 when the
// process has no context there yet; on a MIG instance, what it holds on the
// whole GPU) and the whole device's used memory (a MIG instance's own).
struct GpuUse {
  std::optional<uint64_t> process;
  std::optional<uint64_t> device;
  // The process's figure when known and non-zero, else the device's.
  std::optional<uint64_t> Best() const { return process && *process > 0 ? process : device; }
};
// GPU `gpu` (CUDA ordinal) with CUDA's UUID `uuid` ("" unknown), found as
// NvmlPlaceOf finds it. `nvml` may be null; nothing is known then, nor when
// NvmlPlaceOf finds no device.
GpuUse ReadGpuUse(gpu::Nvml* nvml, int gpu, const std::string& uuid = "",
                  const Environment& env = RealEnvironment());

class MemoryRecorder {
 public:
  // `nvml` may be null (no process figures: `other` is not measured).
  // `cuda_uuids[i]` is CUDA ordinal i's UUID ("" or absent: unknown;
  // VisibleGpus::uuids), how each GPU is found in NVML (ReadGpuUse).
  explicit MemoryRecorder(gpu::Nvml* nvml, std::vector<std::string> cuda_uuids = {},
                          const Environment& env = RealEnvironment());

  // Before the model's first session: the process's (or, where NVML cannot
  // attribute memory to it, the device's) memory on each GPU of `gpus`.
  void Begin(const std::set<int>& gpus);
  // A session was created: its arena holds its own weights now.
  void SessionCreated(const Session& session);
  // Instance 0's session that runs `rows` rows has just run them (a point of
  // the line when one session runs several sizes).
  void Warmed(const Session& session, int64_t rows);
  // The sessions of one instance (or of one worker, with CUDA graphs); the
  // main session runs at most `main_rows` rows, the others their own size.
  // `first` marks instance 0's (the profile's shape). The same sessions
  // added twice (workers sharing them) count once.
  void AddSessions(bool gpu, int device, std::shared_ptr<const InstanceSessions> sessions, int64_t main_rows,
                   bool first);
  // An instance on GPU `device` (counted for the profile's shape).
  void AddInstance(bool gpu, int device);
  // A copy of the weights the sessions of a device share.
  void SharedWeights(bool gpu, int device, uint64_t bytes);
  // What instance 0's sessions hold in their arenas now (their own weights
  // included), and of that, what is beyond each session's own weights: the
  // activations of the runs it made.
  struct InstanceBytes {
    uint64_t total = 0;
    uint64_t activations = 0;
  };
  InstanceBytes FirstInstanceBytes() const;
  // Reads every arena and NVML, and makes the split of each device and the
  // profile.
  ModelMemory Finish();

 private:
  using Baseline = GpuUse;
  struct SessionEntry {
    bool gpu = true;
    int device = 0;
    std::shared_ptr<const InstanceSessions> owner;
    const Session* session = nullptr;
    int64_t rows = 1;
    bool first = false;
  };
  Baseline Read(int gpu) const;

  gpu::Nvml* nvml_;
  std::vector<std::string> cuda_uuids_;
  const Environment& env_;
  std::map<int, Baseline> before_;
  std::map<const Session*, uint64_t> own_weights_;
  std::vector<SessionEntry> sessions_;
  std::set<const InstanceSessions*> seen_;
  std::map<std::pair<bool, int>, int> instances_;
  std::map<std::pair<bool, int>, uint64_t> shared_;
  Mutex mu_;
  std::vector<MemoryPoint> warmed_ GUARDED_BY(mu_);
};

}  // namespace ortgpu::serve
