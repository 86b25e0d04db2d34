// Model loading: turns one version of a repository model into a running
// LoadedModel (completed config, one Session per instance, warm-up done,
// placement checked, DynamicBatcher started), or the Status that makes the
// version UNAVAILABLE. The server core calls it outside its locks; a failure
// affects only that version.
//
// The outside world enters through two seams: SessionFactory (creating ORT
// sessions) and PlacementChecker (--require-gpu), so tests can load "GPU"
// instances on a CPU-only machine. Functions are thread-safe; a LoadedModel
// is owned by the core and shared with requests in flight (shared_ptr).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "doctor/placement.h"
#include "ort/device_memory.h"
#include "ort/random_inputs.h"
#include "ort/session.h"
#include "serve/front_end_defaults.h"
#include "serve/model_server.h"
#include "serve/repository/model_config.h"
#include "serve/repository/instance_placement.h"
#include "serve/repository/memory_plan.h"
#include "serve/repository/model_memory.h"
#include "serve/repository/model_precision.h"
#include "serve/repository/model_repository.h"
#include "serve/repository/shared_weights.h"
#include "serve/scheduler/dynamic_batcher.h"
#include "serve/scheduler/model_stats.h"
#include "sys/clock.h"

namespace ortgpu::serve {

// Creates one session; the real one is Session::Load.
using SessionFactory =
    std::function<Expected<std::unique_ptr<Session>>(const std::string& model_path, const SessionOptions& options)>;
SessionFactory RealSessionFactory();


// Decides whether a GPU session keeps its compute on the GPU.
class PlacementChecker {
 public:
  virtual ~PlacementChecker() = default;
  // OK when no compute node fell back to the CPU (shape computation on the
  // CPU is fine); otherwise FailedPrecondition naming the nodes. `session`
  // is an instance's own session, `inputs` a valid run of it (the warm-up
  // sample as the model takes it). Thread-safe.
  virtual Status CheckGpuPlacement(const Session& session, const std::vector<Tensor>& inputs) const = 0;
};

// Profiles one run of the instance's session (ORT's run-level profile, no
// second session) and classifies the nodes with doctor/placement.h: by what
// they read in the graph ORT ran when the session saved it (the loader asks
// the first GPU session to, under require_gpu), else by element types.
class ProfilePlacementChecker : public PlacementChecker {
 public:
  Status CheckGpuPlacement(const Session& session, const std::vector<Tensor>& inputs) const override;
};

// The require_gpu verdict on a placement: OK when no compute node fell back
// to the CPU; FailedPrecondition naming the first nodes and what they read
// otherwise. `model` names the model in the message (the session's label).
Status RequireGpuVerdict(const doctor::PlacementSummary& summary, const std::string& model);

struct LoaderOptions {
  // Kind of instances for KIND_AUTO / KIND_MODEL groups and for models
  // without instance_group.
  InstanceKind default_instance_kind = InstanceKind::kGpu;
  // The GPUs instances may be placed on (instance_placement.h): a GPU
  // group without `gpus` (or a model without instance_group) gets its
  // instances on each, and a listed GPU outside them makes the model
  // UNAVAILABLE. nullopt: not known (tests, --cpu), GPU 0 by default.
  std::optional<VisibleGpus> visible_gpus;
  // Refuse models whose compute falls back to the CPU (also per model:
  // parameters { key: "require_gpu" value { string_value: "true" } }).
  bool require_gpu = false;
  CompletionOptions completion;
  // BatcherOptions::busy_poll_ns for every model (serve --busy-poll-us).
  int64_t busy_poll_ns = std::chrono::nanoseconds(kDefaultBusyPoll).count();
  // BatcherOptions::inline_max_run_ns for every model (serve --inline-max-us).
  int64_t inline_max_run_ns = kDefaultInlineMaxRunNs;
  // A model without model_warmup whose generated warm-up inputs all fail
  // (warmup_inputs.h) is READY with a warning by default, as Triton serves
  // models it did not warm up; true keeps it UNAVAILABLE (serve
  // --strict-warmup). require_gpu implies it: placement needs a run.
  bool strict_warmup = false;
  // Warm-up inputs by input name, used as given in every generated
  // candidate of a model that has such an input (serve --warmup-input
  // NAME=FILE.npy); as a request sends them, batch dim first when batching.
  std::map<std::string, Tensor> warmup_inputs;
  // Sizes for generated warm-up inputs (serve --warmup-shape NAME:DIMS, the
  // --shape grammar: an input's full shape or a symbolic dim's size); each
  // model takes the flags that name its inputs or dims.
  ShapeFlags warmup_shapes;
  // Where models converted for the precision parameter (fp16, mixed) are
  // kept between loads (serve --model-cache-dir; model_precision.h); "":
  // no cache, each load converts into a private temporary folder.
  std::string model_cache_dir;
};

struct LoaderDeps {
  SessionFactory session_factory;             // required
  const PlacementChecker* placement = nullptr;  // null: require_gpu only forbids CPU instances
  const Clock* clock = nullptr;               // required
  SchedulerObserver* observer = nullptr;      // nullable
  // Makes the shared weights of a model on a device (share_weights); null:
  // every session loads its own.
  WeightsFactory weights_factory;
  // Wraps each instance's runner before its warm-up, so a test can record
  // what runs on it (warm-up and requests alike); null: no wrapper.
  std::function<std::unique_ptr<InstanceRunner>(std::unique_ptr<InstanceRunner>)> wrap_runner;
  // The runs of a precision conversion and its accuracy check; null: ORT's
  // (RealPrecisionEngineFactory).
  PrecisionEngineFactory precision_engines;
  // NVML, for the process's device memory before and after the load
  // (LoadedModel::memory's "other"); null: not measured. Used only by the
  // loading thread (the server core's loads are serialised).
  gpu::Nvml* nvml = nullptr;
  // The GPU memory plan (memory_plan.h): checks a load before it allocates,
  // and keeps the profiles it measured; null: no plan.
  const MemoryPlanner* planner = nullptr;
  // Device memory of the GPU instances' runners (BatchRunner::
  // SetDeviceMemory), through which each thread that drives an instance
  // makes its GPU current; null: the CUDA runtime's on the session's
  // device_id. Tests give a FakeDeviceMemory to "GPU" instances that run
  // CPU sessions.
  std::shared_ptr<DeviceMemory> device_memory;
};

// A GPU whose instances failed to load or warm up (out of memory, a device
// that does not work): the model serves on its other GPUs without it.
struct GpuFailure {
  int gpu = 0;
  int instances = 0;   // the instances it was to have
  std::string reason;  // the failure's message
};

// "GPU 1 (2 instances) is not used: <reason>", joined with "; ".
std::string DescribeGpuFailures(const std::vector<GpuFailure>& failures);

// What the loader warmed up before the version became READY.
struct WarmupReport {
  // Batch sizes run on every instance (WarmupBatchSizes): every size the
  // batcher can execute, or with every_batch_size false a bounded subset.
  std::vector<int64_t> batch_sizes;
  bool every_batch_size = true;
  int instances = 0;
  // Time of all warm-up runs (model_warmup and batch sizes), every instance.
  int64_t ns = 0;
  // The generated candidate that ran ("variable dims 16, sr=16000"); "" with
  // the config's model_warmup.
  std::string generated;
  // Non-empty when no generated input ran: the model is READY without
  // having run, and this says which node failed and how to add a
  // model_warmup.
  std::string warning;
  // "3.1 s" (or "250 ms" below a second).
  std::string Took() const;
  // For the log: "warmed 16 batch sizes x 2 instances in 3.1 s" ("warm-up
  // 250 ms" without batch sizes).
  std::string Describe() const;
  // For the summary's WARMUP column: "3.1 s, 16 sizes" ("250 ms").
  std::string Brief() const;
};

struct LoadedModel {
  std::string name;
  int64_t version = 0;
  // Where the serving instances run, one entry per instance in load order
  // (the batcher runs workers_per_instance runners of each, consecutive).
  std::vector<InstanceSpec> instances;
  // GPUs the config placed instances on that failed while loading; their
  // instances are not in `instances` (failure isolation: the version is
  // READY on the GPUs that loaded). Empty when every GPU loaded.
  std::vector<GpuFailure> failed_gpus;
  inference::ModelConfig config;  // completed
  std::vector<TensorMetadata> inputs;   // as clients see them (batch dim -1 first when batching)
  std::vector<TensorMetadata> outputs;
  // What CompleteConfig filled in from the model ("max_batch_size 4 with
  // dynamic_batching", "inputs x, sr"), for the start-up summary.
  std::vector<std::string> completed;
  std::unique_ptr<ModelStats> stats;
  WarmupReport warmup;
  BatchPolicy batching;  // what the batcher runs with (padding resolved per instance kind)
  // Batch sizes with a session of their own on each GPU instance (see
  // InstanceSessions); empty when none.
  std::vector<int64_t> session_per_batch_size;
  // Worker threads per instance (config parameter workers_per_instance; 2 on
  // GPU instances with dynamic batching), and whether each has sessions of its
  // own (config parameter worker_sessions "own", or CUDA graphs) or they
  // share the instance's (the default).
  int workers_per_instance = 1;
  bool own_worker_sessions = false;
  // CUDA graphs: captured and replayed for every padded batch size (one
  // graph per size and worker; each worker then has sessions of its own,
  // since a session that replays graphs is not safe to run concurrently).
  bool cuda_graphs = false;
  // The GPU instances' batch runs take turns on their GPU (GpuTurn; config
  // parameter gpu_turns: auto = with CUDA graphs).
  bool gpu_turns = false;
  // What the sessions share, one line per device, for the log: "weights:
  // 161 initializers, 97.5 MB, one copy on GPU 0 shared by 6 sessions
  // (saved 488 MB)"; none with share_weights off, for a device with one
  // session, or for a model without weights.
  std::vector<std::string> weights;
  // The shared copies, one per device the model runs on (the sessions keep
  // them alive too; held here so they outlive every session of the model).
  std::vector<std::shared_ptr<const SharedInitializers>> shared_weights;
  // How batches are padded (DescribePadding, from instance 0's measured
  // costs): "batches run unpadded at 1 (1.21 ms), ...; preferred:
  // 32 (4.10 ms)"; empty without padding.
  std::string padding;
  // Set when the config asks for CUDA graphs that cannot be honoured (no
  // GPU instance, or batches that are not padded to fixed sizes).
  std::string cuda_graph_warning;
  // The precision it runs in and, when converted, how far from float32
  // (config parameter precision; model_precision.h).
  PrecisionOutcome precision;
  // A converted model kept outside the cache, removed with the version.
  std::shared_ptr<const void> converted_scratch;
  // What the version holds in memory, measured at the end of its warm-up
  // (model_memory.h): the split per device and the profile plans use.
  ModelMemory memory;
  // The labels of each output whose config names a label_filename, read
  // from the model's folder once, at load (as Triton does): classification
  // responses take them from here. An output whose file could not be read
  // keeps the reason instead; the version still loads, and only
  // classification requests on that output fail with it.
  struct OutputLabels {
    std::vector<std::string> labels;
    std::string error;  // "" when read
  };
  std::map<std::string, OutputLabels> labels;
  // Declared last: stopped (and joined) first on destruction.
  std::unique_ptr<DynamicBatcher> batcher;
};

// Loads `version` of `source` with the parsed (not yet completed) `config`.
// Instances are placed by PlaceInstances (instance_placement.h) over
// options.visible_gpus. A GPU instance that fails to load or warm up with a
// device's failure (ResourceExhausted, Unavailable, Internal) takes its
// GPU out: the load starts again without that GPU's instances, and the
// version is READY on the GPUs left, with LoadedModel::failed_gpus saying
// why (logged as a warning). Unlike Triton, which fails the whole model, a
// host with one bad GPU keeps serving; with no GPU left the load fails. The
// message of an error says which instance or step failed and why.
Expected<std::shared_ptr<LoadedModel>> LoadModelVersion(const ModelSource& source, const inference::ModelConfig& config,
                                                        int64_t version, const LoaderOptions& options,
                                                        const LoaderDeps& deps);

// Bounds on the warm-up, so that a config asking for absurd sizes makes its
// model UNAVAILABLE with a config error instead of exhausting the server's
// memory: the bytes all samples hold together (each `count` repetition
// included) and the runs of one model_warmup entry.
inline constexpr int64_t kMaxWarmupBytes = int64_t{4} << 30;  // 4 GiB
inline constexpr int64_t kMaxWarmupCount = 10000;

// The batcher's policy for a completed config: max_batch_size,
// dynamic_batching (preferred sizes, queue delay) and the ortgpu parameter
// pad_to_preferred_batch_size, which defaults to true when the model has GPU
// instances (`gpu_instances`) and false otherwise, and adaptive_padding
// (default true: pad only when it pays, BatchPolicy::adaptive_padding).
BatchPolicy BatchPolicyFor(const inference::ModelConfig& config, bool gpu_instances);

// Runs `runner` once at each of `sizes` rows, each batch the first row of
// `sample` repeated (one batch in memory at a time, within kMaxWarmupBytes).
// `instance` names the instance in the error ("instance 0 (GPU 0)"). The
// batches go through InstanceRunner::RunBatch, as the scheduler's do.
// `after_size` (optional) is called with each size once it ran.
Status WarmBatchSizes(InstanceRunner& runner, const std::vector<Tensor>& sample, const std::vector<int64_t>& sizes,
                      const std::string& instance, const Clock& clock,
                      const std::function<void(int64_t rows)>& after_size = {});

// Times `runner` at each of `sizes` (MeasureBatchCosts, each batch the
// first row of `sample` repeated; REQUIRES: warmed at those sizes) and gives
// the cost table to `target`, the SessionRunner `runner` runs (itself or
// inside a wrapper), whose batches the batcher then pads only when it pays.
Status MeasureInto(InstanceRunner& runner, SessionRunner& target, const std::vector<Tensor>& sample,
                   const std::vector<int64_t>& sizes, const std::string& instance, const Clock& clock);

// The warm-up requests of a completed config: its model_warmup samples
// (none without model_warmup: the loader then tries
// GenerateWarmupCandidates, warmup_inputs.h).
// `model_dir` holds warmup/<input_data_file>. InvalidArgument past the
// bounds above.
Expected<std::vector<std::vector<Tensor>>> WarmupSamples(const inference::ModelConfig& config,
                                                         const std::string& model_dir);

}  // namespace ortgpu::serve
