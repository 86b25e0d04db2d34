// The GPU memory plan of `ortgpu serve` (docs/MEMORY.md): before a model
// version allocates anything on a GPU, what it will need there is compared
// with what the GPU has free less a margin (--gpu-memory-margin, 10% of the
// GPU's memory by default); a load that does not fit is refused, the
// version UNAVAILABLE with a message naming the numbers and what would fit
// (fewer instances, a smaller max_batch_size, fp16), and the models already
// READY keep serving.
//
// What a load needs comes from, in this order:
//  1. the memory profile measured at an earlier load of the same model file
//     with the same settings (model_memory.h; kept as JSON under the profile
//     folder, <model cache>/memory/<key>.json): exact for the same shape,
//     predicted for another instance count or batch size
//     (ort/memory_profile.h's PredictPeak);
//  2. else an estimate from the weights alone: the initializer bytes of the
//     model file times the copies its sessions hold. Activations are not
//     known before a run, so with more than one instance the loader checks
//     again after instance 0's warm-up, from what instance 0 measured, before
//     it makes the others (JudgePlan with the measured figure per instance).
//
// JudgePlan is pure. MemoryPlanner holds the options, reads the GPUs'
// memory through NVML and keeps the profiles; it is used by the server
// core's loading thread only (loads are serialised), and its Nvml is used by
// no other thread.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "gpu/nvml.h"
#include "gpu/nvml_locate.h"
#include "model_config.pb.h"
#include "ort/memory_profile.h"
#include "ort/session_options.h"
#include "serve/repository/shared_weights.h"
#include "serve/scheduler/batch_policy.h"
#include "status/expected.h"
#include "sys/environment.h"

namespace ortgpu::serve {

struct MemoryPlanOptions {
  // serve --gpu-memory-plan on|off: off loads without checking (ORT's own
  // out-of-memory error then makes the version UNAVAILABLE, as before).
  bool enabled = true;
  // serve --gpu-memory-margin PCT: the share of each GPU's memory the plan
  // keeps free, for what it does not see (other processes' growth, CUDA
  // library workspaces allocated later, fragmentation).
  double margin_percent = 10;
  // Where measured profiles are kept; "": not kept (every plan without a
  // profile estimates).
  std::string profile_dir;
};

// "10", "10%" or "12.5%" -> 10, 12.5; InvalidArgument for anything outside 0..90.
Expected<double> ParseMarginPercent(const std::string& text);

// The sessions one instance of a model holds and the most rows each runs,
// as the loader makes them (version_load.cc): with one session per batch
// size (`per_size_sessions`) each of `sizes` but the largest gets its own
// and the main session runs the largest; with CUDA graphs every size gets a
// graph session and the main one runs unpadded runs only (1 row); otherwise
// one session runs every size. With `own_sessions` (CUDA graphs, or
// worker_sessions "own") each of `workers` has its own set; otherwise the
// workers share one. `sizes` empty: one session of 1 row (no batching).
std::vector<int64_t> SessionRowsFor(const std::vector<int64_t>& sizes, bool per_size_sessions, bool graphs,
                                    int workers, bool own_sessions);

// The bytes of the initializers of the ONNX file at `model_path` (each
// one's shape times its element size; external data is counted by shape,
// not read). Errors: the file cannot be read or is no ONNX model.
Expected<uint64_t> InitializerBytes(const std::string& model_path);

// One GPU's memory now (NVML): for a MIG instance, the instance's own.
struct GpuMemoryState {
  uint64_t total = 0;
  uint64_t free = 0;
  bool mig = false;  // a MIG instance (the message says so)
};

// What one load needs on one GPU: `fixed` once (a shared copy of the
// weights, other) plus `per_instance` for each of `instances`.
struct PlanRequest {
  std::string model;
  int64_t version = 0;
  int gpu = 0;
  int instances = 1;
  uint64_t fixed = 0;
  uint64_t per_instance = 0;
  // Where the figures come from, for the message ("the memory profile of
  // its load of 2026-12-03", "its weights alone (no profile yet)").
  std::string basis;
  // The per-instance need at a smaller max_batch_size, for "what would fit"
  // (null: not offered), and the max_batch_size now.
  std::function<uint64_t(int64_t max_batch_size)> per_instance_at;
  int64_t max_batch_size = 0;
  // float16 is worth suggesting (the model is not already converted).
  bool suggest_fp16 = true;
  // What the models already READY on this GPU were measured to hold there
  // (part of the GPU's used memory; said in the message).
  uint64_t ready_models = 0;
  // "the other 3 instances" when the check comes after instance 0 ("" for
  // the whole load).
  std::string what;
};

struct PlanVerdict {
  bool fits = true;
  uint64_t need = 0;
  uint64_t available = 0;  // free less the margin
  // The refusal (empty when it fits): the need and its basis, free, total,
  // the margin, the READY models, what would fit, and that nothing was
  // allocated.
  std::string message;
};

// Whether `request` fits `gpu` with `margin_percent` kept free.
PlanVerdict JudgePlan(const PlanRequest& request, const GpuMemoryState& gpu, double margin_percent);

class MemoryPlanner {
 public:
  // `nvml` may be null (and is not owned: it must outlive the planner);
  // the planner is active only when it is loaded and options.enabled.
  // `cuda_uuids[i]` is CUDA ordinal i's UUID ("" or absent: unknown;
  // VisibleGpus::uuids), how each GPU is found in NVML (NvmlPlaceOf).
  MemoryPlanner(MemoryPlanOptions options, gpu::Nvml* nvml, std::vector<std::string> cuda_uuids = {},
                const Environment& env = RealEnvironment());
  bool active() const { return options_.enabled && nvml_ != nullptr; }
  const MemoryPlanOptions& options() const { return options_; }
  gpu::Nvml* nvml() const { return nvml_; }

  // Where NVML reads GPU `gpu` (CUDA ordinal): NvmlPlaceOf with its UUID.
  // Unavailable without NVML; NotFound as NvmlPlaceOf.
  Expected<gpu::NvmlPlace> Place(int gpu) const;
  // GPU `gpu`'s memory now (CUDA ordinal): a MIG instance's own total and
  // free, else the whole GPU's (gpu::MemoryAt). Unavailable when NVML cannot
  // say, NotFound when it does not list the device.
  Expected<GpuMemoryState> State(int gpu) const;

  // The profile stored under `key`, or nullopt (none, or unreadable: then
  // logged).
  std::optional<MemoryProfile> FindProfile(const std::string& key) const;
  // Stores `profile` under `key` (a file written whole, then renamed);
  // a folder that cannot be written is logged, not an error.
  void StoreProfile(const std::string& key, const MemoryProfile& profile) const;

  // What the READY models hold on a GPU (set by the server core; null: 0).
  std::function<uint64_t(int gpu)> ready_models;

 private:
  MemoryPlanOptions options_;
  gpu::Nvml* nvml_;
  std::vector<std::string> cuda_uuids_;
  const Environment& env_;
};

// A load as the plan sees it before any session exists.
struct LoadLayout {
  std::map<int, int> gpu_instances;  // GPU (CUDA ordinal) -> the model's instances there
  // The config sets max_batch_size; otherwise its completion from the model
  // decides it at load, and the plan takes the profile's measured sessions.
  bool sizes_known = false;
  BatchPolicy policy;  // BatchPolicyFor(config) when sizes_known
  bool per_size_sessions = false;
  bool graphs = false;
  int workers = 1;
  // Each worker has sessions of its own (CUDA graphs, worker_sessions
  // "own"); otherwise the workers share the instance's sessions, and each
  // session may hold `workers` runs at once.
  bool own_sessions = false;
  int RunsPerSession() const { return own_sessions ? 1 : std::max(workers, 1); }
  ShareWeights share = ShareWeights::kAuto;
  bool suggest_fp16 = true;  // the model is not converted to float16 already
  // The session rows of one instance at max_batch_size `b` (the policy
  // with b, SessionRowsFor); at the policy's own when b is 0.
  std::vector<int64_t> SessionRows(int64_t max_batch_size = 0) const;
  std::set<int> gpus() const;
};

// The layout of a load of `config` (not yet completed; `sets_max_batch_size`
// when its text gives max_batch_size) with `gpu_instances`, by the loader's
// rules (BatchPolicyFor, session_per_batch_size, CUDA graphs when
// `graphs_requested` and the batches are padded, workers_per_instance).
LoadLayout LayoutOf(const inference::ModelConfig& config, bool sets_max_batch_size,
                    const std::map<int, int>& gpu_instances, ShareWeights share, bool graphs_requested,
                    bool suggest_fp16);

// What a model's memory profile depends on besides its file (see
// MemoryProfileKey): the ORT version, the GPU's name, the optimisation
// level, sharing, graphs, `precision` and its I/O, the CUDA options.
std::string PlanSettings(const SessionOptions& base, const LoadLayout& layout, const MemoryPlanner& planner,
                         const std::string& precision, bool fp16_io);

// gpu_mem_limit "plan": a session's arena bound, what the profile predicts
// for its rows (with `runs` runs at once: the workers that share it) plus
// `margin_percent` of it, rounded up to a MiB.
uint64_t ArenaLimitFor(const MemoryProfile& profile, int64_t rows, double margin_percent, int runs = 1);

// The plan of a whole load before it allocates, on each GPU it uses: from
// `profile` when there is one, else from the weights of the file at
// `model_path`. OK when it fits everywhere (or the planner is inactive);
// ResourceExhausted with JudgePlan's message for the first GPU where it
// does not, that GPU in `*refused_gpu` (when given; the loader then loads
// on the other GPUs, as for any GPU that fails). Logs the plan either way.
Status PlanLoad(const MemoryPlanner& planner, const std::string& model, int64_t version, const std::string& model_path,
                const LoadLayout& layout, const std::optional<MemoryProfile>& profile, int* refused_gpu = nullptr);

// After instance 0 warmed on `gpu`, measured at `per_instance` there, of
// which `activations` are its sessions' activations (their arenas beyond
// their own weights): do the `remaining` instances still to be made there
// fit, each holding `per_instance` plus, when its workers share its
// sessions, another `activations` per further worker? OK or
// ResourceExhausted as PlanLoad.
Status PlanRemainingInstances(const MemoryPlanner& planner, const std::string& model, int64_t version, int gpu,
                              int remaining, uint64_t per_instance, uint64_t activations, const LoadLayout& layout);

// The name of a model's memory profile: a digest of the model file (and its
// external data) and of `settings` (provider, GPU, ORT version, CUDA
// options, sharing, graphs, precision: what changes the memory but not the
// instance count or batch sizes, which the plan predicts). Errors: the file
// cannot be read.
Expected<std::string> MemoryProfileKey(const std::string& model_path, const std::string& settings);

}  // namespace ortgpu::serve
