// ServerCore: the ModelServer the HTTP front end talks to. It owns the model
// repository view, every loaded model version (sessions, queue, workers,
// statistics) and the model-control policy:
//
//   none      load the repository once at start; never change it.
//   poll      also rescan every poll_interval_ms (and on Rescan()): new
//             versions are loaded and become the routed ones before the old
//             ones are drained and unloaded, so requests in flight never fail.
//             Versions the policy no longer wants leave only once a wanted
//             one is READY; a version whose last load failed is retried on
//             every rescan (a folder caught half-copied recovers by itself).
//   explicit  load only startup_models; LoadModel/UnloadModel do the rest.
//             A load may carry Triton's parameters (a config in JSON, the
//             model's files): they apply to that load (LoadOverride); the
//             record keeps the override its serving versions came from, so
//             its private folder lives until they are unloaded or replaced.
//
// Each version goes LOADING -> READY (after its warm-up ran) or UNAVAILABLE
// (with the reason), and UNLOADING when it leaves. A failed reload of a READY
// version leaves it READY, serving what was loaded before, with the failure
// as its reason in RepositoryIndex. A broken model never stops the others,
// and a load that throws (std::bad_alloc on absurd config sizes) only makes
// its version UNAVAILABLE.
//
// Threads: every method may be called from any thread. State is guarded by
// mu_ (held only for lookups and swaps, never across loading or running);
// control_mu_ serialises loads, unloads and rescans. Loading runs on the
// caller's thread (Create, LoadModel, Rescan) or the poll thread.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "gpu/nvml.h"
#include "serve/model_server.h"
#include "serve/version_slot.h"
#include "serve/repository/load_override.h"
#include "serve/repository/model_loader.h"
#include "serve/repository/model_repository.h"
#include "sys/mutex.h"

namespace ortgpu::serve {

enum class ModelControlMode { kNone, kPoll, kExplicit };
std::string_view ModelControlModeName(ModelControlMode m);  // "none", "poll", "explicit"
Expected<ModelControlMode> ParseModelControlMode(std::string_view name);

struct ServerOptions {
  // Triton layout folder (--model-repository). Ignored when model_file is set.
  std::string repository;
  // One ONNX file served as model "<stem>" version 1 (--model PATH).
  std::string model_file;
  // With model_file: its config.pbtxt (--config FILE.pbtxt); "" for none.
  std::string model_config_file;
  ModelControlMode model_control = ModelControlMode::kNone;
  // poll: how often the repository is rescanned.
  int64_t poll_interval_ms = 5000;
  // explicit: models loaded at start ("*" loads every model).
  std::vector<std::string> startup_models;
  // Instance kind for KIND_AUTO, --require-gpu, auto-complete defaults.
  LoaderOptions loader;
  // The most bytes of outputs one inference may return (output_limit.h);
  // 0: no cap. --max-output-bytes.
  uint64_t max_output_bytes = uint64_t{1} << 30;
  // Where a load's file: parameters are written (a private folder per load,
  // removed on unload, replacement and exit); "": $TMPDIR or /tmp.
  std::string load_temp_root;
  // The GPU memory plan (repository/memory_plan.h): --gpu-memory-plan,
  // --gpu-memory-margin, where measured profiles are kept.
  MemoryPlanOptions memory_plan;
};

struct ServerDeps {
  SessionFactory session_factory = RealSessionFactory();
  // The models' shared weights (config parameter share_weights); null:
  // never shared.
  WeightsFactory weights_factory = RealWeightsFactory();
  // null: a ProfilePlacementChecker over session_factory.
  const PlacementChecker* placement = nullptr;
  const Clock* clock = &RealClock();
  SchedulerObserver* observer = nullptr;  // e.g. the Prometheus metrics; nullable
  // The runs of precision conversions (model_precision.h); null: ORT's.
  PrecisionEngineFactory precision_engines;
  // NVML for the memory plan and the memory each load and unload measures
  // (the core's own instance, used by its loading thread only); null:
  // gpu::NewNvml(). One that does not load means no plan and no NVML figures.
  std::function<std::unique_ptr<gpu::Nvml>()> nvml_factory;
  // Device memory of GPU instances (LoaderDeps::device_memory); null: the
  // CUDA runtime's.
  std::shared_ptr<DeviceMemory> device_memory;
  // Wraps each instance's runner (LoaderDeps::wrap_runner), so a test can
  // see or fail what runs on it; null: none.
  std::function<std::unique_ptr<InstanceRunner>(std::unique_ptr<InstanceRunner>)> wrap_runner;
};

class ServerCore : public ModelServer {
 public:
  // Loads what the mode says and, in poll mode, starts the poll thread.
  // Fails only when the repository (or model file) does not exist; models
  // that fail to load are UNAVAILABLE with their reason.
  // REQUIRES: deps.clock, deps.placement and deps.observer outlive the server.
  static Expected<std::unique_ptr<ServerCore>> Create(ServerOptions options, ServerDeps deps = {});
  ~ServerCore() override;

  // Stops the poll thread, refuses new requests, finishes queued ones and
  // unloads everything. Idempotent: a call racing the first one returns only
  // once the first has finished.
  void Shutdown();

  // Synchronises loaded versions with the repository now (what the poll
  // thread does each interval). Returns the first repository read error.
  Status Rescan();

  // Warnings met while reading configs (unknown or ignored fields), oldest first.
  std::vector<std::string> Warnings() const;

  // Statistics of one version, for tests and logs; null when not loaded.
  std::shared_ptr<const LoadedModel> FindLoaded(const std::string& model, const std::string& version) const;

  bool IsLive() const override;
  bool IsReady() const override;
  Expected<ModelMetadata> Metadata(const std::string& model, const std::string& version) const override;
  Expected<bool> IsModelReady(const std::string& model, const std::string& version) const override;
  Expected<inference::ModelConfig> ModelConfig(const std::string& model, const std::string& version) const override;
  Expected<std::vector<StatsSnapshot>> Statistics(const std::string& model, const std::string& version) const override;
  // The labels read at load (LoadedModel::labels); no disk read per request.
  Expected<std::vector<std::string>> OutputLabels(const std::string& model, const std::string& version,
                                                  const std::string& output) const override;
  std::vector<ModelVersionStatus> RepositoryIndex(bool ready_only) const override;
  using ModelServer::LoadModel;
  Status LoadModel(const std::string& model, const ModelLoadParameters& parameters) override;
  Status UnloadModel(const std::string& model) override;
  void Infer(InferRequest request, InferCallback done) override;
  // The repository root (or the --model file's folder), as given and absolute.
  std::vector<std::string> ClientTextRoots() const override;

 private:
  struct ModelRecord {
    bool loaded = true;        // false: explicitly unloaded or never loaded
    std::string config_text;   // as last read, to notice edits
    bool has_config = false;
    std::string error;         // model-level failure (bad config.pbtxt, no versions)
    std::map<int64_t, VersionSlot> versions;
    // The load parameters the serving versions were loaded with; null: the
    // repository's config and files.
    std::shared_ptr<const LoadOverride> load_override;
  };

  ServerCore(ServerOptions options, ServerDeps deps, ModelRepository repository);
  // Brings one model in line with the repository. `force` reloads versions
  // already loaded; versions not READY, or whose last reload failed, are
  // always (re)tried. `load_override` (null: none) replaces the
  // repository's config or folder; it becomes the record's once a version
  // loaded from it serves. REQUIRES: control_mu_ held, mu_ not held.
  Status SyncModel(const std::string& name, bool force, std::shared_ptr<const LoadOverride> load_override = nullptr)
      REQUIRES(control_mu_) EXCLUDES(mu_);
  // SyncModel's steps. The model's source (the repository's folder or the
  // override's); a model the repository no longer has is unloaded and
  // forgotten here (its error returned).
  Expected<ModelSource> ReadSource(const std::string& name, const LoadOverride* load_override)
      REQUIRES(control_mu_) EXCLUDES(mu_);
  // The parsed config of `source` (its warnings logged once per config
  // text) and what makes it unusable ("" when nothing does).
  std::string ParseConfigOf(const std::string& name, const ModelSource& source, inference::ModelConfig& config)
      EXCLUDES(mu_);
  // Records the source's config on the model's record; returns whether the
  // config changed and fills `settled` with the versions that need no load.
  bool RecordSource(const std::string& name, const ModelSource& source, const std::string& config_error,
                    std::set<int64_t>& settled) EXCLUDES(mu_);
  // Loads one version and records the outcome on its slot; the override the
  // serving versions came from before, when this load replaced it, goes to
  // `retired_override`.
  Status LoadOne(const std::string& name, const ModelSource& source, const inference::ModelConfig& config,
                 int64_t version, const std::shared_ptr<const LoadOverride>& load_override,
                 std::shared_ptr<const LoadOverride>& retired_override) REQUIRES(control_mu_) EXCLUDES(mu_);
  // Versions the policy no longer wants leave once a wanted one is READY.
  void RetireUnwanted(const std::string& name, const std::vector<int64_t>& wanted)
      REQUIRES(control_mu_) EXCLUDES(mu_);
  // Loads one version; a thrown std::exception becomes the returned error.
  Expected<std::shared_ptr<LoadedModel>> LoadVersion(const ModelSource& source, const inference::ModelConfig& config,
                                                     int64_t version) const REQUIRES(control_mu_);
  void ShutdownOnce();
  void UnloadAll(const std::string& name, const std::string& reason) REQUIRES(control_mu_) EXCLUDES(mu_);
  // Drops `leaving` (stopped versions) and, for those that held GPU memory,
  // logs and reports (SchedulerObserver::OnUnloadMemory) what their GPUs
  // hold after and how much the unload gave back. REQUIRES: control_mu_.
  void ReleaseUnloaded(std::vector<std::shared_ptr<LoadedModel>>& leaving) REQUIRES(control_mu_);
  // What the READY versions hold on GPU `gpu` (the plan's "already loaded").
  uint64_t ReadyModelsMemory(int gpu) const;
  void PollLoop();
  // The routed version: `version` or, for "", the highest READY one.
  // REQUIRES: mu_ held.
  Expected<std::shared_ptr<LoadedModel>> Resolve(const std::string& model, const std::string& version) const
      REQUIRES(mu_);
  void Warn(const std::string& message);

  const ServerOptions options_;
  const ServerDeps deps_;
  const ModelRepository repository_;
  std::unique_ptr<PlacementChecker> owned_placement_;
  // Used only under control_mu_ (loads, unloads); null when NVML did not load.
  std::unique_ptr<gpu::Nvml> nvml_ GUARDED_BY(control_mu_);
  std::unique_ptr<MemoryPlanner> planner_;
  std::atomic<bool> shutting_down_{false};
  std::once_flag shutdown_once_;

  Mutex control_mu_ ACQUIRED_BEFORE(mu_);
  mutable Mutex mu_;
  std::map<std::string, ModelRecord> models_ GUARDED_BY(mu_);
  std::vector<std::string> warnings_ GUARDED_BY(mu_);

  Mutex poll_mu_;
  CondVar poll_cv_;  // poll_stop_ set
  bool poll_stop_ GUARDED_BY(poll_mu_) = false;
  std::thread poll_thread_;
};

}  // namespace ortgpu::serve
