#include "serve/repository/version_load.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <utility>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "doctor/placement.h"
#include "ort/ort_status.h"
#include "serve/repository/contained_path.h"
#include "serve/repository/memory_plan.h"
#include "serve/repository/rejection_runner.h"
#include "serve/repository/shared_weights.h"
#include "serve/repository/warmup_inputs.h"
#include "serve/scheduler/batch_costs.h"
#include "ort/batching.h"
#include "ort/gpu_turn.h"
#include "sys/file_system.h"
#include "sys/mutex.h"

namespace ortgpu::serve {

std::string PlacementDir() {
  std::error_code ec;
  const auto dir = std::filesystem::temp_directory_path(ec) / "ortgpu-placement";
  std::filesystem::create_directories(dir, ec);
  return dir.string();
}

namespace {

// An instance's session options: its provider and device on top of `base`.
SessionOptions InstanceOptions(const SessionOptions& base, const InstanceSpec& spec) {
  SessionOptions so = base;
  if (spec.kind == InstanceKind::kGpu) {
    so.provider = Provider::kCuda;
    so.cuda_options["device_id"] = std::to_string(spec.gpu);
  } else {
    so.provider = Provider::kCpu;
    so.cuda_options.clear();
  }
  return so;
}

Expected<SessionOptions> BaseSessionOptions(const inference::ModelConfig& config) {
  SessionOptions so;
  so.log_id = config.name();
  ORTGPU_ASSIGN_OR_RETURN(so.optimization, GraphOptimizationLevel(config));
  for (const auto& a : config.optimization().execution_accelerators().gpu_execution_accelerator()) {
    if (a.name() != "cuda") continue;
    for (const auto& [k, v] : a.parameters()) so.cuda_options[k] = v;
  }
  // Only the sessions of padded batch sizes capture graphs (the loader sets
  // the option on those); the main session runs any shape.
  so.cuda_options.erase("enable_cuda_graph");
  const auto params = ConfigParameters(config);
  auto int_param = [&](const std::string& key, int& out) -> Status {
    auto it = params.find(key);
    if (it == params.end()) return Status::Ok();
    try {
      out = std::stoi(it->second);
    } catch (const std::exception&) {
      return InvalidArgument("parameter " + key + " is '" + it->second + "'; it must be an integer");
    }
    return Status::Ok();
  };
  ORTGPU_RETURN_IF_ERROR(int_param("intra_op_thread_count", so.intra_op_threads));
  ORTGPU_RETURN_IF_ERROR(int_param("inter_op_thread_count", so.inter_op_threads));
  return so;
}

// The workers that capture CUDA graphs warm up on their own threads at
// once; their cost tables are measured one worker at a time once all of
// them are warm, so no timed run shares the GPU with another worker's
// warm-up or timing (or waits for its turn behind one).
struct MeasureOneAtATime {
  Mutex mu;
  CondVar cv;          // warmed grew
  size_t workers = 0;  // set while the loader builds the runners, before any worker starts
  size_t warmed GUARDED_BY(mu) = 0;
};

// ModelInput and ModelOutput share the fields read here.
template <typename TensorConfig>
std::vector<TensorMetadata> Describe(const google::protobuf::RepeatedPtrField<TensorConfig>& tensors, int mbs) {
  std::vector<TensorMetadata> out;
  for (const auto& c : tensors) {
    TensorMetadata m{c.name(), std::string(KServeName(FromConfigType(c.data_type()))), {}};
    if (mbs > 0) m.shape.push_back(-1);
    m.shape.insert(m.shape.end(), c.dims().begin(), c.dims().end());
    out.push_back(std::move(m));
  }
  return out;
}

ReshapeRules RulesFor(const inference::ModelConfig& config) {
  ReshapeRules r;
  r.batched = config.max_batch_size() > 0;
  r.max_batch_size = config.max_batch_size();
  for (const auto& c : config.input()) {
    if (c.has_reshape()) r.inputs[c.name()] = {c.reshape().shape().begin(), c.reshape().shape().end()};
  }
  for (const auto& c : config.output()) {
    if (c.has_reshape()) r.outputs[c.name()] = {c.dims().begin(), c.dims().end()};
  }
  return r;
}

// The generated candidate that ran on an instance, or index -1 with the
// last failure when none did.
struct ChosenCandidate {
  int index = -1;
  Status failure;
};

// Tries `candidates` in order with `try_run` (a warm-up run of one sample)
// and returns the first that runs. A failure other than InvalidArgument (the
// inputs do not suit the model) is returned: out of memory or a broken
// device is not fixed by other inputs.
Expected<ChosenCandidate> FindRunningCandidate(const std::vector<WarmupCandidate>& candidates,
                                               const std::function<Status(const std::vector<Tensor>&)>& try_run,
                                               const std::string& instance) {
  ChosenCandidate out;
  for (size_t k = 0; k < candidates.size(); ++k) {
    Status st = try_run(candidates[k].inputs);
    if (st.ok()) {
      out.index = static_cast<int>(k);
      return out;
    }
    if (st.code() != Code::kInvalidArgument) return st.WithContext("warm-up of " + instance + " with generated inputs");
    spdlog::debug("warm-up candidate '{}' of {} failed: {}", candidates[k].description, instance, st.message());
    out.failure = st.WithMessage("with " + candidates[k].description + ", " + st.message());
  }
  return out;
}

// The warning of a model no generated input ran: the node that failed and
// how to give it a warm-up.
std::string NoWarmupWarning(const std::string& model, const Status& last_failure) {
  const std::string& m = last_failure.message();
  const std::string node = FailingNode(m);
  // "with variable dims 64, <what failed>": the candidate, then ORT's own words when it has them.
  const std::string candidate = m.substr(0, m.find(", "));
  return "no generated warm-up input ran (" + DescribeWarmupCandidates() + "); " + candidate + " " +
         (node.empty() ? "it failed: " + m.substr(std::min(m.size(), candidate.size() + 2))
                       : node + " failed: " + FailureExplanation(m.substr(0, m.find(kRejectionAdvice)))) +
         ". The model is READY but has not run on its device yet: add a model_warmup with inputs it accepts to "
         "config.pbtxt (docs/SERVING.md, Warm-up), or for `serve --model " + model +
         ".onnx` pass --config FILE.pbtxt or --warmup-input NAME=FILE.npy; --strict-warmup keeps such models "
         "UNAVAILABLE";
}

// (the config's model_warmup, else the generated candidates), for the
// precision check before any instance's session exists. The interface is
// read from a CPU session of the model (no graph optimisation); with
// `fp16_io` its float32 tensors are taken as float16, as they will be served.
Expected<std::vector<std::vector<Tensor>>> PrecisionCheckInputs(const std::string& path, const ModelSource& source,
                                                                const inference::ModelConfig& config, bool fp16_io,
                                                                const LoaderOptions& options, const LoaderDeps& deps) {
  SessionOptions so;
  so.log_id = config.name();
  so.optimization = OptimizationLevel::kDisable;
  auto session = deps.session_factory(path, so);
  if (!session.ok()) return session.status().WithContext("reading the interface of model '" + source.name + "'");
  std::vector<TensorInfo> inputs = (*session)->inputs(), outputs = (*session)->outputs();
  for (auto* list : {&inputs, &outputs}) {
    for (auto& t : *list) {
      if (fp16_io && t.dtype == DataType::kFloat) t.dtype = DataType::kFloat16;
    }
  }
  inference::ModelConfig completed = config;
  ORTGPU_RETURN_IF_ERROR(CompleteConfig(inputs, outputs,
                                        ConfigGiven{source.has_config, SetsMaxBatchSize(source.config_text)},
                                        options.completion, completed)
                             .WithContext("config of model '" + source.name + "'"));
  if (!completed.model_warmup().empty()) return WarmupSamples(completed, source.dir);
  WarmupHints hints{options.warmup_inputs, ShapeFlagsFor(inputs, options.warmup_shapes), inputs};
  ORTGPU_ASSIGN_OR_RETURN(auto candidates, GenerateWarmupCandidates(completed, hints));
  std::vector<std::vector<Tensor>> out;
  for (auto& c : candidates) out.push_back(std::move(c.inputs));
  return out;
}

// What one instance is made of while it loads (VersionLoad::LoadInstance).
struct InstanceBuild {
  size_t index = 0;
  SessionOptions so;
  bool on_gpu = false;
  // One session per padded batch size; CUDA graphs on those (false again
  // when ORT refuses to capture the model).
  bool per_size_sessions = false;
  bool graphs = false;
  // Each worker has sessions of its own (CUDA graphs, worker_sessions "own").
  bool own_sessions = false;
  std::vector<TensorMetadata> declared;
  // The instance's first runner (its main worker) and the other workers'.
  SessionRunner* session_runner = nullptr;  // owned by `runner`
  std::unique_ptr<InstanceRunner> runner;
  std::vector<SessionRunner*> sharing_ptrs;  // owned by `sharing_runners`
  std::vector<std::unique_ptr<InstanceRunner>> sharing_runners;
};

class VersionLoad {
 public:
  VersionLoad(const ModelSource& source, const inference::ModelConfig& config, int64_t version,
              const LoaderOptions& options, const LoaderDeps& deps, const std::vector<InstanceSpec>& instances,
              int& failing_instance)
      : source_(source),
        version_(version),
        options_(options),
        deps_(deps),
        instances_(instances),
        failing_instance_(failing_instance),
        memory_(deps.nvml, options.visible_gpus ? options.visible_gpus->uuids : std::vector<std::string>{}) {
    failing_instance_ = -1;
    model_ = std::make_shared<LoadedModel>();
    model_->instances = instances;
    model_->name = source.name;
    model_->version = version;
    model_->config = config;
    if (model_->config.name().empty()) model_->config.set_name(source.name);
  }

  Expected<std::shared_ptr<LoadedModel>> Run() {
    ORTGPU_RETURN_IF_ERROR(Prepare());
    ORTGPU_RETURN_IF_ERROR(PlanMemory());
    memory_.Begin(layout_.gpus());
    for (size_t i = 0; i < instances_.size(); ++i) ORTGPU_RETURN_IF_ERROR(LoadInstance(i));
    failing_instance_ = -1;
    ORTGPU_RETURN_IF_ERROR(CheckPlacement());
    return Finish();
  }

 private:
  Status Prepare();
  Status PlanMemory();
  Expected<std::unique_ptr<Session>> MakeSession(SessionOptions so, int64_t rows);
  Status LoadInstance(size_t i);
  Expected<std::unique_ptr<Session>> MainSession(const InstanceBuild& b);
  Status CompleteFromFirstSession(const Session& session);
  void ChooseSessions(InstanceBuild& b);
  Expected<InstanceSessions> BuildSessions(InstanceBuild& b, std::unique_ptr<Session> main);
  Status MakeRunners(InstanceBuild& b, InstanceSessions sessions);
  void TakeTurns(InstanceBuild& b);
  Status WarmUp(InstanceBuild& b);
  Status ChooseGeneratedWarmup(InstanceBuild& b);
  void WarmOnWorkers(InstanceBuild& b, bool measure_costs);
  Status CheckPlacement();
  Status ReadLabels();
  Expected<std::shared_ptr<LoadedModel>> Finish();

  void PlaceOnGpu(const InstanceBuild& b, SessionRunner& r) const {
    if (b.on_gpu && deps_.device_memory != nullptr) r.batch_runner().SetDeviceMemory(deps_.device_memory, instances_[b.index].gpu);
  }
  std::string Instance(size_t i) const { return instances_[i].Describe(i); }

  const ModelSource& source_;
  const int64_t version_;
  const LoaderOptions& options_;
  const LoaderDeps& deps_;
  const std::vector<InstanceSpec>& instances_;
  int& failing_instance_;
  std::shared_ptr<LoadedModel> model_;

  // Prepare: the file the sessions load (the converted one after a
  // precision conversion) and the options every instance starts from.
  std::string path_;
  SessionOptions base_;
  // gpu_mem_limit "plan": each session's arena bounded by what the memory
  // plan predicts for it (set per session by MakeSession).
  bool mem_limit_from_plan_ = false;
  std::string graph_request_;
  bool require_gpu_ = false;
  GpuTurnMode turn_mode_ = GpuTurnMode::kAuto;
  ShareWeights share_ = ShareWeights::kAuto;
  ArenaShrinkage shrinkage_ = ArenaShrinkage::kAuto;
  PrecisionSettings precision_;

  // PlanMemory: the layout the plan judged, the profile of an earlier load
  // of this model and settings (set before the first session), the key it
  // is stored under, and the main session's rows before the config is
  // completed (the planned layout's, else the profile's).
  LoadLayout layout_;
  std::optional<MemoryProfile> profile_;
  Expected<std::string> profile_key_ = NotFound("no memory plan");
  int64_t planned_main_rows_ = 1;

  // Instance 0's session completes the config and decides these.
  std::vector<std::vector<Tensor>> samples_;   // the config's model_warmup, or the generated input that ran
  std::vector<WarmupCandidate> candidates_;    // generated, when the config has no model_warmup
  BatchPolicy policy_;
  WarmupSizes shapes_;

  // What the instances made.
  std::vector<std::unique_ptr<InstanceRunner>> runners_;
  const SessionRunner* first_runner_ = nullptr;                 // instance 0's
  std::map<int, const SessionRunner*> first_on_gpu_;            // by GPU: the placement check profiles its session
  // By GPU: the optimised graph its first session saved for the placement
  // check, removed when loading ends.
  std::map<int, std::unique_ptr<doctor::SavedGraph>> placement_graphs_;
  // One GpuTurn per GPU the model's instances run on (gpu_turns).
  std::map<int, std::shared_ptr<GpuTurn>> turns_;
  std::shared_ptr<MeasureOneAtATime> measuring_ = std::make_shared<MeasureOneAtATime>();
  // One copy of the weights per device the instances run on (share_weights),
  // made before the device's first session.
  std::map<std::pair<Provider, int>, DeviceWeights> weights_;
  // What the version holds in memory, measured as it loads (model_memory.h).
  MemoryRecorder memory_;
  int64_t warmup_ns_ = 0;
};

Status VersionLoad::Prepare() {
  const inference::ModelConfig& config = model_->config;
  path_ = source_.ModelPath(version_, config.default_model_filename());
  if (source_.single_file.empty() && !config.default_model_filename().empty()) {
    ORTGPU_ASSIGN_OR_RETURN(path_, ResolveInside(JoinPath(source_.dir, std::to_string(version_)),
                                                 config.default_model_filename(), "default_model_filename"));
  }
  if (!RealFileSystem().Exists(path_)) {
    return NotFound("version " + std::to_string(version_) + " of model '" + source_.name + "' has no model file " +
                    path_ + "; put the ONNX file there (named model.onnx unless default_model_filename says otherwise)");
  }
  // A FIFO or device would block the load (and the server's start) forever.
  ORTGPU_RETURN_IF_ERROR(CheckRegularFile(path_, "model file"));
  ORTGPU_RETURN_IF_ERROR(ReadLabels().WithContext("config of model '" + source_.name + "'"));
  ORTGPU_ASSIGN_OR_RETURN(base_, BaseSessionOptions(config));
  mem_limit_from_plan_ = base_.cuda_options.count("gpu_mem_limit") > 0 && base_.cuda_options["gpu_mem_limit"] == "plan";
  if (mem_limit_from_plan_) base_.cuda_options.erase("gpu_mem_limit");
  graph_request_ = CudaGraphRequest(config);
  require_gpu_ = options_.require_gpu || ParameterIsTrue(ConfigParameters(config)["require_gpu"]);
  if (require_gpu_) {
    for (size_t i = 0; i < instances_.size(); ++i) {
      if (instances_[i].kind == InstanceKind::kCpu) {
        return FailedPrecondition("require_gpu is set but " + Instance(i) +
                                  " is KIND_CPU in instance_group; make it KIND_GPU or drop --require-gpu");
      }
    }
  }
  const auto params = ConfigParameters(config);
  ORTGPU_ASSIGN_OR_RETURN(turn_mode_, ParseGpuTurnMode(params.count("gpu_turns") ? params.at("gpu_turns") : ""));
  ORTGPU_ASSIGN_OR_RETURN(share_, ParseShareWeights(params.count("share_weights") ? params.at("share_weights") : ""));
  ORTGPU_ASSIGN_OR_RETURN(shrinkage_,
                          ParseArenaShrinkage(params.count("arena_shrinkage") ? params.at("arena_shrinkage") : ""));
  ORTGPU_ASSIGN_OR_RETURN(precision_, ParsePrecisionSettings(params));
  ApplyPrecision(precision_, base_);
  model_->precision.precision = std::string(PrecisionName(precision_.precision));
  if (!precision_.converts()) return Status::Ok();
  // Converted before any instance's session: every instance loads the
  // converted file (from the model cache, never beside the user's model).
  PrecisionRequest request;
  request.model_path = path_;
  request.settings = precision_;
  request.session = InstanceOptions(base_, instances_.front());
  request.cache_dir = options_.model_cache_dir;
  ORTGPU_ASSIGN_OR_RETURN(request.input_choices,
                          PrecisionCheckInputs(path_, source_, config, precision_.fp16_io, options_, deps_));
  auto prepared =
      PrepareModelPrecision(request, deps_.precision_engines ? deps_.precision_engines : RealPrecisionEngineFactory());
  if (!prepared.ok()) {
    return prepared.status().WithContext("model '" + source_.name + "' version " + std::to_string(version_));
  }
  path_ = prepared->path;
  model_->precision = prepared->outcome;
  model_->converted_scratch = prepared->scratch;
  if (model_->precision.checked && !model_->precision.within_budget()) {
    spdlog::warn("model '{}' version {}: served outside the accuracy budget (precision_check warn): {}", source_.name,
                 version_, model_->precision.violations.front());
  }
  return Status::Ok();
}

Status VersionLoad::PlanMemory() {
  std::map<int, int> gpu_instances;
  for (const auto& spec : instances_) {
    if (spec.kind == InstanceKind::kGpu) ++gpu_instances[spec.gpu];
  }
  layout_ = LayoutOf(model_->config, SetsMaxBatchSize(source_.config_text), gpu_instances, share_,
                     !graph_request_.empty(), !precision_.converts() && !model_->precision.already_fp16);
  if (deps_.planner != nullptr && deps_.planner->active() && !layout_.gpu_instances.empty()) {
    profile_key_ = MemoryProfileKey(path_, PlanSettings(base_, layout_, *deps_.planner,
                                                        std::string(PrecisionName(precision_.precision)),
                                                        precision_.fp16_io));
    if (profile_key_.ok()) profile_ = deps_.planner->FindProfile(*profile_key_);
    int refused_gpu = -1;
    Status planned = PlanLoad(*deps_.planner, source_.name, version_, path_, layout_, profile_, &refused_gpu);
    if (!planned.ok()) {
      // The GPU that would not fit is the failing one: the caller loads on
      // the others (LoadModelVersion's failure isolation).
      for (size_t i = 0; i < instances_.size() && refused_gpu >= 0; ++i) {
        if (instances_[i].kind == InstanceKind::kGpu && instances_[i].gpu == refused_gpu) {
          failing_instance_ = static_cast<int>(i);
          break;
        }
      }
      return planned;
    }
  }
  if (mem_limit_from_plan_ && !profile_) {
    spdlog::warn("model '{}': gpu_mem_limit \"plan\": no memory profile of this model and settings yet, so its arenas "
                 "are not bounded at this load; the next load bounds them from this one's measurement",
                 source_.name);
  }
  planned_main_rows_ = layout_.sizes_known ? layout_.SessionRows().front()
                       : profile_           ? profile_->measured_shape.session_rows.front()
                                            : 1;
  return Status::Ok();
}

Expected<std::unique_ptr<Session>> VersionLoad::MakeSession(SessionOptions so, int64_t rows) {
  if (mem_limit_from_plan_ && profile_ && so.provider == Provider::kCuda) {
    so.cuda_options["gpu_mem_limit"] = std::to_string(
        ArenaLimitFor(*profile_, rows, deps_.planner != nullptr ? deps_.planner->options().margin_percent : 10,
                      layout_.RunsPerSession()));
  }
  DeviceWeights* shared = nullptr;
  // auto on a GPU makes the copy at the device's second session: a
  // device copy that one session alone uses costs 40-72 MiB more than
  // ORT's own on the H200 (docs/SERVING.md, "Shared weights").
  if (share_ != ShareWeights::kOff && deps_.weights_factory) {
    const auto id = so.cuda_options.find("device_id");
    const WeightsDevice device{so.provider, so.provider == Provider::kCpu || id == so.cuda_options.end()
                                                ? 0
                                                : std::atoi(id->second.c_str())};
    auto [it, fresh] = weights_.try_emplace({device.provider, device.device_id});
    shared = &it->second;
    const bool defer = fresh && share_ == ShareWeights::kAuto && device.provider != Provider::kCpu;
    if (defer) {
      shared->device = device;
      shared->deferred = true;
    }
    // The CUDA runtime may be loadable only once the CUDA EP has loaded
    // it (its RUNPATH, not ours): a store that failed Unavailable before
    // the device's first session is tried once more after it; a deferred
    // one (auto on a GPU) is first made then.
    const bool retry = !fresh && shared->store == nullptr && !shared->retried && shared->sessions_without > 0 &&
                       (shared->deferred || shared->failure == Code::kUnavailable);
    if ((fresh && !defer) || retry) {
      shared->device = device;
      shared->retried = retry;
      auto store = deps_.weights_factory(path_, device);
      shared->failure = store.ok() ? Code::kOk : store.status().code();
      if (store.ok()) {
        shared->store = std::move(store).value();
        shared->not_shared.clear();
      } else if (shared->failure == Code::kInvalidArgument || shared->failure == Code::kNotFound ||
                 (share_ == ShareWeights::kOn && !(fresh && shared->failure == Code::kUnavailable))) {
        // The model's own files are broken (ORT would fail on them too), or sharing was demanded
        // (a CUDA runtime missing before the first session still gets its retry).
        return store.status().WithContext("share_weights: reading the weights of model '" + source_.name + "'");
      } else {
        shared->not_shared = store.status().message() + "; each session loads its own";
      }
    }
    if (shared->store != nullptr) so.shared_initializers = shared->store;
  }
  auto session = deps_.session_factory(path_, so);
  if (session.ok()) memory_.SessionCreated(**session);
  if (session.ok() && shared != nullptr) {
    if (shared->store != nullptr) {
      shared->Record(**session);
    } else {
      ++shared->sessions_without;
    }
  }
  return session;
}

Status VersionLoad::LoadInstance(size_t i) {
  failing_instance_ = static_cast<int>(i);
  InstanceBuild b;
  b.index = i;
  b.so = InstanceOptions(base_, instances_[i]);
  b.on_gpu = instances_[i].kind == InstanceKind::kGpu;
  ORTGPU_ASSIGN_OR_RETURN(std::unique_ptr<Session> main, MainSession(b));
  if (i == 0) ORTGPU_RETURN_IF_ERROR(CompleteFromFirstSession(*main));
  ChooseSessions(b);
  ORTGPU_ASSIGN_OR_RETURN(InstanceSessions sessions, BuildSessions(b, std::move(main)));
  if (i == 0) {
    for (const auto& [rows, s] : sessions.by_batch_rows) model_->session_per_batch_size.push_back(rows);
    if (!sessions.by_batch_rows.empty() && !b.graphs) model_->session_per_batch_size.push_back(shapes_.sizes.back());
    model_->cuda_graphs = b.graphs;
  }
  ORTGPU_RETURN_IF_ERROR(MakeRunners(b, std::move(sessions)));
  TakeTurns(b);
  if (deps_.wrap_runner) b.runner = deps_.wrap_runner(std::move(b.runner));
  // The loading thread warms this instance up: its GPU becomes the
  // thread's current device first (ORT's session creation sets the
  // device itself; ortgpu's own copies and allocations follow the thread's).
  ORTGPU_RETURN_IF_ERROR(b.session_runner->batch_runner().BindDevice().WithContext("warm-up of " + Instance(i)));
  const int64_t warm_start = deps_.clock->NowNanos();
  ORTGPU_RETURN_IF_ERROR(WarmUp(b));
  warmup_ns_ += deps_.clock->NowNanos() - warm_start;
  runners_.push_back(std::move(b.runner));
  for (auto& extra : b.sharing_runners) runners_.push_back(std::move(extra));
  // Without a profile the plan knew only the weights: instance 0, loaded
  // and warmed, now says what an instance holds; the others on its GPU
  // are made only if they fit (CUDA-graph sessions warm on their workers
  // later, so their activations are not known here).
  if (i == 0 && !profile_ && !b.graphs && b.on_gpu && deps_.planner != nullptr) {
    const int remaining =
        layout_.gpu_instances.count(instances_[0].gpu) ? layout_.gpu_instances.at(instances_[0].gpu) - 1 : 0;
    const MemoryRecorder::InstanceBytes first = memory_.FirstInstanceBytes();
    ORTGPU_RETURN_IF_ERROR(PlanRemainingInstances(*deps_.planner, source_.name, version_, instances_[0].gpu, remaining,
                                                  first.total, first.activations, layout_));
  }
  return Status::Ok();
}

// The instance's first session. Under require_gpu the first session on each
// GPU saves the graph ORT optimised, so the placement check can tell shape
// computation from compute by what each CPU node reads (doctor/placement.h);
// only those.
Expected<std::unique_ptr<Session>> VersionLoad::MainSession(const InstanceBuild& b) {
  const InstanceSpec& spec = instances_[b.index];
  SessionOptions first_options = b.so;
  const bool saves_graph = require_gpu_ && deps_.placement != nullptr && b.so.provider == Provider::kCuda &&
                           placement_graphs_.count(spec.gpu) == 0;
  if (saves_graph) {
    auto& graph = placement_graphs_[spec.gpu];
    graph = std::make_unique<doctor::SavedGraph>(PlacementDir());
    graph->Request(first_options);
  }
  auto session = MakeSession(saves_graph ? first_options : b.so, planned_main_rows_);
  if (!session.ok() && saves_graph) {
    // Saving the graph serves the check only: a session that cannot save
    // it loads without, and element types decide.
    spdlog::warn("model '{}': the first session on GPU {} could not save its optimised graph for the placement "
                 "check ({}); loading it without",
                 source_.name, spec.gpu, session.status().message());
    placement_graphs_[spec.gpu].reset();
    session = MakeSession(b.so, planned_main_rows_);
  }
  if (!session.ok()) {
    return session.status().WithContext("loading " + Instance(b.index) + " of model '" + source_.name +
                                        "' version " + std::to_string(version_));
  }
  return session;
}

// Completes the config from the first session (every instance runs the same
// file) and decides the warm-up and the batch policy.
Status VersionLoad::CompleteFromFirstSession(const Session& session) {
  ORTGPU_RETURN_IF_ERROR(session.inputs().empty() && session.outputs().empty()
                             ? InvalidArgument("the model has no inputs or outputs")
                             : Status::Ok());
  ORTGPU_RETURN_IF_ERROR(CompleteConfig(session.inputs(), session.outputs(),
                                        ConfigGiven{source_.has_config, SetsMaxBatchSize(source_.config_text)},
                                        options_.completion, model_->config, &model_->completed)
                             .WithContext("config of model '" + source_.name + "'"));
  if (model_->config.model_warmup().empty()) {
    WarmupHints hints{options_.warmup_inputs, ShapeFlagsFor(session.inputs(), options_.warmup_shapes),
                      session.inputs()};
    ORTGPU_ASSIGN_OR_RETURN(candidates_, GenerateWarmupCandidates(model_->config, hints));
  } else {
    ORTGPU_ASSIGN_OR_RETURN(samples_, WarmupSamples(model_->config, source_.dir));
  }
  const bool gpu = std::any_of(instances_.begin(), instances_.end(),
                               [](const InstanceSpec& x) { return x.kind == InstanceKind::kGpu; });
  policy_ = BatchPolicyFor(model_->config, gpu);
  shapes_ = WarmupBatchSizes(policy_);
  if (!shapes_.every_size) {
    spdlog::info("model '{}': max_batch_size {} is above {}, so warm-up runs only the preferred batch sizes, "
                 "the powers of two and max_batch_size ({} sizes); other sizes pay their first-run cost when "
                 "they first run (pad_to_preferred_batch_size avoids them)",
                 source_.name, policy_.max_batch_size, kMaxWarmupEveryBatchSize, shapes_.sizes.size());
  }
  return Status::Ok();
}

// Whether the instance gets a session per padded batch size, and CUDA
// graphs on them (they replay fixed shapes: padded ones).
void VersionLoad::ChooseSessions(InstanceBuild& b) {
  const auto params = ConfigParameters(model_->config);
  const auto per_size = params.find("session_per_batch_size");
  b.per_size_sessions = b.on_gpu && policy_.pad_to_preferred_batch_size &&
                        (per_size == params.end() || ParameterIsTrue(per_size->second));
  b.graphs = !graph_request_.empty() && b.per_size_sessions && !shapes_.sizes.empty();
  if (b.index == 0 && !graph_request_.empty() && !b.graphs) {
    model_->cuda_graph_warning =
        "CUDA graphs (" + graph_request_ + ") are not used: they replay fixed shapes, so `ortgpu serve` captures "
        "them only on GPU instances whose batches are padded to the preferred sizes (dynamic_batching with "
        "preferred_batch_size, pad_to_preferred_batch_size and session_per_batch_size left on); the model runs "
        "without them";
    spdlog::warn("model '{}': {}", source_.name, model_->cuda_graph_warning);
  }
}

// The sessions of one instance (or, with graphs, of one worker). Padding
// leaves a few batch sizes; each but the largest (which the main session
// runs) gets a session of its own, so no session ever changes shape
// (SessionRunner, InstanceSessions). With CUDA graphs every padded size gets
// one that captures its graph, and the main session runs the rest without.
// `main` null: made here (another worker's own sessions).
Expected<InstanceSessions> VersionLoad::BuildSessions(InstanceBuild& b, std::unique_ptr<Session> main) {
  InstanceSessions sessions;
  if (main == nullptr) {
    auto made = MakeSession(b.so, b.graphs || shapes_.sizes.empty() ? 1 : shapes_.sizes.back());
    if (!made.ok()) return made.status().WithContext("loading a worker's sessions of " + Instance(b.index));
    main = std::move(made).value();
  }
  sessions.main = std::move(main);
  if (!b.per_size_sessions) return sessions;
  for (int attempt = 0; attempt < 2; ++attempt) {
    SessionOptions sized = b.so;
    if (b.graphs) sized.cuda_options["enable_cuda_graph"] = "1";
    const size_t count = b.graphs ? shapes_.sizes.size() : shapes_.sizes.size() - 1;
    Status failed;
    for (size_t k = 0; k < count && !shapes_.sizes.empty(); ++k) {
      auto extra = MakeSession(sized, shapes_.sizes[k]);
      if (!extra.ok()) {
        failed = extra.status().WithContext("loading the batch-" + std::to_string(shapes_.sizes[k]) + " session of " +
                                            Instance(b.index) + " of model '" + source_.name + "'");
        break;
      }
      sessions.by_batch_rows[shapes_.sizes[k]] = std::move(extra).value();
    }
    if (failed.ok()) break;
    if (!b.graphs || failed.reason() != Reason::kCudaGraphRefused) return failed;
    // ORT refuses graphs for this model (nodes outside the CUDA EP,
    // control flow; ort/ort_status.cc recognises its refusal): serve it
    // without them, and say why.
    model_->cuda_graph_warning = "CUDA graphs (" + graph_request_ + ") are not used: ONNX Runtime cannot capture "
                                 "this model (" + failed.message() + "); it runs without them";
    spdlog::warn("model '{}': {}", source_.name, model_->cuda_graph_warning);
    b.graphs = false;
    sessions.by_batch_rows.clear();
  }
  sessions.cuda_graphs = b.graphs;
  return sessions;
}

// The instance's runners: its main worker's over `sessions`, and one per
// other worker. While one worker's batch runs on the GPU, another joins the
// next one (SessionRunner). Default 2 workers on GPU instances that batch
// dynamically, 1 otherwise. With CUDA graphs, or the config parameter
// worker_sessions "own", each worker has sessions of its own (the weights
// stay shared); own sessions measured no faster on the H200 (run l4:
// ResNet-50 and BERT-base within noise) at twice the activation memory, so
// sharing stays the default.
Status VersionLoad::MakeRunners(InstanceBuild& b, InstanceSessions sessions) {
  const size_t i = b.index;
  // The most rows the main session runs: the largest size when it runs
  // every size or the largest; with CUDA graphs only unpadded runs (the
  // generated warm-up candidates).
  const int64_t main_rows = b.graphs || shapes_.sizes.empty() ? 1 : shapes_.sizes.back();
  auto session_runner = std::make_unique<SessionRunner>(std::move(sessions), RulesFor(model_->config));
  PlaceOnGpu(b, *session_runner);
  b.session_runner = session_runner.get();
  memory_.AddInstance(b.on_gpu, instances_[i].gpu);
  memory_.AddSessions(b.on_gpu, instances_[i].gpu, session_runner->batch_runner().sessions(), main_rows, i == 0);
  if (i == 0) first_runner_ = session_runner.get();
  if (b.on_gpu) first_on_gpu_.try_emplace(instances_[i].gpu, session_runner.get());
  const auto params = ConfigParameters(model_->config);
  const auto workers_param = params.find("workers_per_instance");
  int workers = instances_[i].kind == InstanceKind::kGpu && policy_.dynamic_batching ? 2 : 1;
  if (workers_param != params.end()) workers = std::clamp(std::atoi(workers_param->second.c_str()), 1, 8);
  const auto worker_sessions = params.find("worker_sessions");
  b.own_sessions = b.graphs || (worker_sessions != params.end() && worker_sessions->second == "own");
  std::vector<std::unique_ptr<SessionRunner>> sharing;
  for (int w = 1; w < workers; ++w) {
    if (b.own_sessions) {
      ORTGPU_ASSIGN_OR_RETURN(InstanceSessions own, BuildSessions(b, nullptr));
      sharing.push_back(std::make_unique<SessionRunner>(std::move(own), RulesFor(model_->config)));
      memory_.AddSessions(b.on_gpu, instances_[i].gpu, sharing.back()->batch_runner().sessions(), main_rows, i == 0);
    } else {
      sharing.push_back(
          std::make_unique<SessionRunner>(session_runner->batch_runner().sessions(), RulesFor(model_->config)));
    }
    PlaceOnGpu(b, *sharing.back());
  }
  if (i == 0) {
    model_->workers_per_instance = workers;
    model_->own_worker_sessions = b.own_sessions && workers > 1;
  }
  b.declared = Describe(model_->config.input(), model_->config.max_batch_size());
  b.runner = std::make_unique<RejectionExplainingRunner>(std::move(session_runner), b.declared);
  for (auto& extra : sharing) b.sharing_ptrs.push_back(extra.get());
  for (auto& extra : sharing) {
    b.sharing_runners.push_back(std::make_unique<RejectionExplainingRunner>(std::move(extra), b.declared));
  }
  return Status::Ok();
}

// The instance's batch runs take turns on its GPU (GpuTurn; config
// parameter gpu_turns: auto = with CUDA graphs).
void VersionLoad::TakeTurns(InstanceBuild& b) {
  const InstanceSpec& spec = instances_[b.index];
  if (spec.kind != InstanceKind::kGpu || turn_mode_ == GpuTurnMode::kOff ||
      !(b.graphs || turn_mode_ == GpuTurnMode::kOn)) {
    return;
  }
  std::shared_ptr<GpuTurn>& turn = turns_[spec.gpu];
  if (turn == nullptr) turn = std::make_shared<GpuTurn>();
  b.session_runner->batch_runner().SetGpuTurn(turn, turn_mode_ == GpuTurnMode::kOn);
  for (SessionRunner* extra : b.sharing_ptrs) extra->batch_runner().SetGpuTurn(turn, turn_mode_ == GpuTurnMode::kOn);
  if (b.index == 0) model_->gpu_turns = true;
}

// Warms the instance up on the loading thread, or with CUDA graphs sets its
// workers to warm (and capture) on their own threads before READY.
Status VersionLoad::WarmUp(InstanceBuild& b) {
  const size_t i = b.index;
  // The executed sizes are timed after the warm-up when padding may be
  // skipped (BatchPolicy::adaptive_padding): the batcher pads a batch on
  // an idle instance only if the padded size costs about the same.
  const bool measure_costs =
      policy_.pad_to_preferred_batch_size && policy_.adaptive_padding && !policy_.LightBatchSizes().empty();
  // The config's model_warmup runs as given, and is the user's to fix when
  // it fails; without one the first instance finds a generated input that
  // runs, which every other instance then runs too.
  if (!model_->config.model_warmup().empty()) {
    for (const auto& sample : samples_) {
      auto warm = b.runner->Run(sample);
      if (!warm.ok()) {
        return warm.status().WithMessage("warm-up of " + Instance(i) +
                                         " with the config's model_warmup failed: " + warm.status().message() +
                                         "; the model stays unavailable. Give the model_warmup inputs the model "
                                         "accepts");
      }
    }
  } else if (i == 0) {
    ORTGPU_RETURN_IF_ERROR(ChooseGeneratedWarmup(b));
  } else if (!samples_.empty() && shapes_.sizes.empty()) {
    auto warm = b.runner->Run(samples_[0]);
    if (!warm.ok()) return warm.status().WithContext("warm-up of " + Instance(i));
  }
  if (b.graphs && !samples_.empty()) {
    WarmOnWorkers(b, measure_costs);
  } else if (!samples_.empty()) {
    // The first instance ran the smallest size already when it chose a generated input.
    std::vector<int64_t> sizes = shapes_.sizes;
    if (i == 0 && !model_->warmup.generated.empty() && !sizes.empty()) sizes.erase(sizes.begin());
    // One session running every size: its arena after each is a point of
    // the memory line (per-size sessions are one point each at the end).
    std::function<void(int64_t)> after_size;
    if (i == 0 && !b.per_size_sessions) {
      after_size = [this, runner = b.session_runner](int64_t rows) { memory_.Warmed(runner->batch_runner().SessionFor(rows), rows); };
    }
    ORTGPU_RETURN_IF_ERROR(WarmBatchSizes(*b.runner, samples_[0], sizes, Instance(i), *deps_.clock, after_size));
    if (measure_costs) {
      // The instance's workers run sessions of one build: one table for all.
      ORTGPU_RETURN_IF_ERROR(
          MeasureInto(*b.runner, *b.session_runner, samples_[0], shapes_.sizes, Instance(i), *deps_.clock));
      if (const BatchCosts* costs = b.session_runner->batch_costs()) {
        for (SessionRunner* extra : b.sharing_ptrs) extra->SetBatchCosts(*costs);
      }
    }
  }
  for (auto& extra : b.sharing_runners) {
    if (b.graphs) break;  // warmed on their worker threads
    if (samples_.empty()) continue;
    if (shapes_.sizes.empty()) {
      if (b.own_sessions) ORTGPU_RETURN_IF_ERROR(extra->Run(samples_[0]).status().WithContext("warm-up of " + Instance(i)));
      continue;
    }
    // Sessions of its own are warmed at every size; shared ones are warm,
    // and one batch makes this worker's staging buffers.
    ORTGPU_RETURN_IF_ERROR(WarmBatchSizes(*extra, samples_[0],
                                          b.own_sessions ? shapes_.sizes : std::vector<int64_t>{shapes_.sizes.front()},
                                          Instance(i), *deps_.clock));
  }
  if (!b.graphs) {
    // Give-back (docs/MEMORY.md): runs larger than the warmed ones return
    // what they left to the device (config parameter arena_shrinkage).
    const size_t planned = b.session_runner->batch_runner().largest_input_bytes();
    b.session_runner->batch_runner().SetArenaShrinkage(shrinkage_, planned);
    for (SessionRunner* extra : b.sharing_ptrs) extra->batch_runner().SetArenaShrinkage(shrinkage_, planned);
  }
  return Status::Ok();
}

// Instance 0 without model_warmup: the first generated candidate that runs
// becomes the warm-up every instance runs. A candidate runs as warm-up will:
// at the smallest batch size the batcher forms (so a padded instance's
// sessions see only their own shapes), or once without batching. With CUDA
// graphs the padded sizes capture on the worker threads, so candidates run
// on the main session, which captures none.
Status VersionLoad::ChooseGeneratedWarmup(InstanceBuild& b) {
  const std::string what = Instance(b.index);
  auto try_run = [&](const std::vector<Tensor>& sample) -> Status {
    if (b.graphs) {
      ORTGPU_ASSIGN_OR_RETURN(auto inputs, b.session_runner->batch_runner().ModelInputs(sample));
      return ExplainRejection(b.session_runner->batch_runner().session().Run(inputs).status(), sample, b.declared, 0);
    }
    if (shapes_.sizes.empty()) return b.runner->Run(sample).status();
    return WarmBatchSizes(*b.runner, sample, {shapes_.sizes.front()}, what, *deps_.clock);
  };
  ORTGPU_ASSIGN_OR_RETURN(auto chosen, FindRunningCandidate(candidates_, try_run, what));
  if (chosen.index < 0) {
    const std::string warning = NoWarmupWarning(source_.name, chosen.failure);
    if (options_.strict_warmup || require_gpu_) {
      return FailedPrecondition(warning + (require_gpu_ ? "; --require-gpu needs a run to check placement, so the "
                                                          "model stays unavailable"
                                                        : "; --strict-warmup keeps the model unavailable"));
    }
    model_->warmup.warning = warning;
    return Status::Ok();
  }
  samples_ = {candidates_[static_cast<size_t>(chosen.index)].inputs};
  model_->warmup.generated = candidates_[static_cast<size_t>(chosen.index)].description;
  if (!b.per_size_sessions && !shapes_.sizes.empty()) {
    memory_.Warmed(b.session_runner->batch_runner().SessionFor(shapes_.sizes.front()), shapes_.sizes.front());
  }
  return Status::Ok();
}

// ORT keeps a captured graph per thread: each worker captures its graphs on
// its own thread before the model is READY (PrepareOnWorker,
// DynamicBatcher::WaitUntilPrepared). Three runs of each size: ORT's regular
// runs before the capture, and the capture itself, all before READY. Then
// each worker times its own sizes (MeasureInto), for padding only when it
// pays, one worker at a time once all are warm (MeasureOneAtATime).
void VersionLoad::WarmOnWorkers(InstanceBuild& b, bool measure_costs) {
  std::vector<int64_t> thrice;
  for (int64_t n : shapes_.sizes) thrice.insert(thrice.end(), 3, n);
  auto warm_for = [&](SessionRunner* self) {
    if (measure_costs) ++measuring_->workers;
    return [sample = samples_[0], sizes = thrice, measured = measure_costs ? shapes_.sizes : std::vector<int64_t>{},
            what = Instance(b.index), clock = deps_.clock, self, measuring = measuring_](InstanceRunner& r) -> Status {
      Status warmed = WarmBatchSizes(r, sample, sizes, what, *clock);
      if (measured.empty()) return warmed;
      MeasureOneAtATime& m = *measuring;
      MutexLock lock(&m.mu);
      ++m.warmed;  // a failed worker counts too: the others must not wait for it
      m.cv.SignalAll();
      while (m.warmed != m.workers) m.cv.Wait(&m.mu);
      return warmed.ok() ? MeasureInto(r, *self, sample, measured, what, *clock) : warmed;
    };
  };
  b.session_runner->SetWorkerWarmup(warm_for(b.session_runner));
  for (SessionRunner* extra : b.sharing_ptrs) extra->SetWorkerWarmup(warm_for(extra));
}

// Placement is proved on every GPU the model runs on (require_gpu): one
// instance's session each (a GPU's sessions are built alike).
Status VersionLoad::CheckPlacement() {
  if (!require_gpu_ || deps_.placement == nullptr || samples_.empty()) return Status::Ok();
  for (const auto& [gpu, runner] : first_on_gpu_) {
    ORTGPU_ASSIGN_OR_RETURN(auto inputs, runner->batch_runner().ModelInputs(samples_[0]));
    ORTGPU_RETURN_IF_ERROR(deps_.placement->CheckGpuPlacement(runner->batch_runner().session(), inputs)
                               .WithContext("GPU " + std::to_string(gpu)));
  }
  return Status::Ok();
}

// The label file of each output that names one (label_filename), from the
// folder the model loads from, one label per line (a trailing \r dropped).
// A name leading out of that folder is a config error (ResolveInside); a
// file that cannot be read fails only classification on that output.
Status VersionLoad::ReadLabels() {
  for (const auto& o : model_->config.output()) {
    if (o.label_filename().empty()) continue;
    ORTGPU_ASSIGN_OR_RETURN(const std::string file, ResolveInside(source_.dir, o.label_filename(), "label_filename"));
    LoadedModel::OutputLabels& entry = model_->labels[o.name()];
    auto text = RealFileSystem().ReadFile(file);
    if (!text.ok()) {
      entry.error = fmt::format("model '{}' output '{}': its label_filename '{}' cannot be read; put the file in "
                                "the model's folder and load the model again",
                                source_.name, o.name(), o.label_filename());
      spdlog::warn("{}", entry.error);
      continue;
    }
    std::string_view rest = *text;
    while (!rest.empty()) {
      const size_t nl = rest.find('\n');
      std::string_view line = rest.substr(0, nl);
      if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
      entry.labels.emplace_back(line);
      rest = nl == std::string_view::npos ? std::string_view() : rest.substr(nl + 1);
    }
  }
  return Status::Ok();
}

// The weights' report, the completed interface, the batcher started (and,
// with CUDA graphs, its workers warmed and captured), and the memory the
// load measured, kept as the model's profile for later plans.
Expected<std::shared_ptr<LoadedModel>> VersionLoad::Finish() {
  for (const auto& [key, w] : weights_) {
    const std::string line = w.Describe();
    // (A GPU's only session under auto made no copy: nothing to say.)
    if (w.store == nullptr && !line.empty()) spdlog::warn("model '{}': {}", source_.name, line);
    if (!line.empty()) model_->weights.push_back(line);
    if (w.store != nullptr) model_->shared_weights.push_back(w.store);
  }
  if (model_->precision.converted || model_->precision.already_fp16) {
    // Shown by /v2/models/M/config beside the user's precision parameter.
    auto& params = *model_->config.mutable_parameters();
    params["precision_accuracy"].set_string_value(model_->precision.AccuracyText());
    params["precision_cache"].set_string_value(model_->precision.cache);
  }
  const int mbs = model_->config.max_batch_size();
  model_->inputs = Describe(model_->config.input(), mbs);
  model_->outputs = Describe(model_->config.output(), mbs);
  if (!samples_.empty()) model_->warmup.batch_sizes = shapes_.sizes;  // none ran without a sample
  model_->warmup.every_batch_size = shapes_.every_size;
  model_->warmup.instances = static_cast<int>(instances_.size());
  model_->warmup.ns = warmup_ns_;
  model_->batching = policy_;
  BatcherOptions bo;
  bo.model_name = source_.name;
  bo.model_version = std::to_string(version_);
  // Always the model's max_batch_size, with or without dynamic batching:
  // a request's rows are what its execution is filed under.
  bo.batching = policy_;
  bo.max_queue_size = model_->config.dynamic_batching().default_queue_policy().max_queue_size();
  bo.busy_poll_ns = options_.busy_poll_ns;
  bo.inline_max_run_ns = options_.inline_max_run_ns;
  model_->stats = std::make_unique<ModelStats>();
  model_->batcher =
      std::make_unique<DynamicBatcher>(bo, std::move(runners_), *deps_.clock, *model_->stats, deps_.observer);
  const int64_t prepare_start = deps_.clock->NowNanos();
  ORTGPU_RETURN_IF_ERROR(model_->batcher->WaitUntilPrepared());
  model_->warmup.ns += deps_.clock->NowNanos() - prepare_start;
  for (const auto& [key, w] : weights_) {
    if (w.store != nullptr) {
      memory_.SharedWeights(key.first != Provider::kCpu, key.second,
                            static_cast<uint64_t>(std::max<int64_t>(w.store->bytes(), 0)));
    }
  }
  // After WaitUntilPrepared: every worker warmed (and captured) its sizes.
  model_->memory = memory_.Finish();
  if (model_->memory.profile && profile_key_.ok()) deps_.planner->StoreProfile(*profile_key_, *model_->memory.profile);
  // Read after WaitUntilPrepared: a worker that measured its table on its
  // own thread is done with it.
  model_->padding = DescribePadding(policy_, first_runner_ != nullptr ? first_runner_->batch_costs() : nullptr);
  if (!model_->padding.empty()) spdlog::info("model '{}' version {}: {}", source_.name, version_, model_->padding);
  return model_;
}

}  // namespace

Expected<std::shared_ptr<LoadedModel>> LoadPlaced(const ModelSource& source, const inference::ModelConfig& config,
                                                  int64_t version, const LoaderOptions& options, const LoaderDeps& deps,
                                                  const std::vector<InstanceSpec>& instances, int& failing_instance) {
  return VersionLoad(source, config, version, options, deps, instances, failing_instance).Run();
}

}  // namespace ortgpu::serve
