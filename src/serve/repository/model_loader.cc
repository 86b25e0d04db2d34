#include "serve/repository/model_loader.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <random>
#include <set>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "doctor/placement.h"
#include "ort/ort_status.h"
#include "serve/repository/memory_plan.h"
#include "serve/repository/contained_path.h"
#include "serve/repository/instance_placement.h"
#include "serve/repository/rejection_runner.h"
#include "serve/repository/shared_weights.h"
#include "serve/repository/warmup_inputs.h"
#include "serve/scheduler/batch_costs.h"
#include "serve/scheduler/batching.h"
#include "serve/scheduler/gpu_turn.h"

#include "sys/file_system.h"
#include "sys/mutex.h"

namespace ortgpu::serve {
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

void FillRandom(Tensor& t, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> dist(0.0, 1.0);
  for (int64_t i = 0; i < t.element_count(); ++i) {
    const double v = dist(rng);
    switch (t.dtype) {
      case DataType::kFloat: t.data_as<float>()[i] = static_cast<float>(v); break;
      case DataType::kDouble: t.data_as<double>()[i] = v; break;
      case DataType::kFloat16: t.data_as<uint16_t>()[i] = FloatToHalf(static_cast<float>(v)); break;
      case DataType::kBfloat16: t.data_as<uint16_t>()[i] = FloatToBfloat16(static_cast<float>(v)); break;
      default: {
        // Integers and bool: small non-negative values, valid as indices into most things.
        const size_t n = ElementSize(t.dtype);
        std::memset(t.data.data() + i * n, 0, n);
        t.data[i * n] = static_cast<uint8_t>(v * 2);
      }
    }
  }
}

// Adds the bytes a warm-up tensor of `shape` will hold (times `copies`) to
// `total`, refusing before anything is allocated when the sum passes
// kMaxWarmupBytes. `what` names the tensor for the message.
Status AddWarmupBytes(const std::string& what, DataType dtype, const std::vector<int64_t>& shape, int64_t copies,
                      int64_t& total) {
  const int64_t each = dtype == DataType::kString ? static_cast<int64_t>(sizeof(std::string))
                                                  : static_cast<int64_t>(ElementSize(dtype));
  const auto n = ElementCount(shape);
  const int64_t room = kMaxWarmupBytes - total;
  if (!n || (each > 0 && *n > room / each / copies)) {
    const std::string runs = copies > 1 ? " (x" + std::to_string(copies) + " runs)" : "";
    return InvalidArgument(what + " has shape " + ShapeToString(shape) + runs + ", more than the " +
                           std::to_string(kMaxWarmupBytes >> 30) +
                           " GiB that warm-up samples may hold in all, so the model cannot be warmed up. Give "
                           "config.pbtxt smaller dims (or a smaller model_warmup batch_size or count)");
  }
  total += *n * each * copies;
  return Status::Ok();
}

// The first row of every tensor of `sample`.
Expected<std::vector<Tensor>> FirstRow(const std::vector<Tensor>& sample) {
  if (sample.empty() || sample[0].shape.empty()) return sample;
  const int64_t rows = sample[0].shape[0];
  std::vector<Tensor> copy = sample;
  ORTGPU_ASSIGN_OR_RETURN(auto split, SplitBatch(copy, {1}, rows - 1));
  return std::move(split[0]);
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



}  // namespace

BatchPolicy BatchPolicyFor(const inference::ModelConfig& config, bool gpu_instances) {
  BatchPolicy p;
  p.max_batch_size = config.max_batch_size();
  p.dynamic_batching = config.max_batch_size() > 0 && config.has_dynamic_batching();
  if (config.has_dynamic_batching()) {
    const auto& db = config.dynamic_batching();
    p.preferred_batch_sizes.assign(db.preferred_batch_size().begin(), db.preferred_batch_size().end());
    p.max_queue_delay_ns = static_cast<int64_t>(db.max_queue_delay_microseconds()) * 1000;
  }
  // On a GPU every new batch shape costs (docs/BENCHMARKS.md: ~100 ms a run
  // for ResNet-50 whenever the shape changes), so GPU instances pad unless
  // the config says otherwise; CPU instances do not.
  const auto params = ConfigParameters(config);
  auto it = params.find("pad_to_preferred_batch_size");
  const bool pad = it == params.end() ? gpu_instances : ParameterIsTrue(it->second);
  p.pad_to_preferred_batch_size = p.dynamic_batching && pad;
  // Pad only when it pays (issue 25); "false" pads every batch, as before.
  auto adaptive = params.find("adaptive_padding");
  p.adaptive_padding = adaptive == params.end() || ParameterIsTrue(adaptive->second);
  return p.Normalized();
}

Status WarmBatchSizes(InstanceRunner& runner, const std::vector<Tensor>& sample, const std::vector<int64_t>& sizes,
                      const std::string& instance, const Clock& clock,
                      const std::function<void(int64_t rows)>& after_size) {
  if (sizes.empty()) return Status::Ok();
  ORTGPU_ASSIGN_OR_RETURN(const std::vector<Tensor> row, FirstRow(sample));
  for (int64_t n : sizes) {
    int64_t bytes = 0;
    for (const Tensor& t : row) {
      std::vector<int64_t> shape = t.shape;
      if (!shape.empty()) shape[0] = n;
      ORTGPU_RETURN_IF_ERROR(AddWarmupBytes("the batch " + std::to_string(n) + " warm-up of input '" + t.name + "'",
                                            t.dtype, shape, 1, bytes));
    }
    // One batch in memory at a time; each is the sample's first row
    // repeated, joined as the scheduler joins requests (so the instance's
    // staging buffers exist before the first request).
    const std::vector<const std::vector<Tensor>*> repeated(static_cast<size_t>(n), &row);
    int64_t ready_ns = 0;
    auto warm = runner.RunBatch(repeated, 0, clock, ready_ns);
    if (!warm.ok()) {
      return warm.status().WithMessage(
          "warm-up of " + instance + " at batch size " + std::to_string(n) + " (a size the dynamic batcher "
          "can form) failed: " + warm.status().message() +
          "; the model stays unavailable. Lower max_batch_size (or the preferred_batch_size list with "
          "pad_to_preferred_batch_size) to what the model and the device can run");
    }
    if (after_size) after_size(n);
  }
  return Status::Ok();
}

Status MeasureInto(InstanceRunner& runner, SessionRunner& target, const std::vector<Tensor>& sample,
                   const std::vector<int64_t>& sizes, const std::string& instance, const Clock& clock) {
  ORTGPU_ASSIGN_OR_RETURN(const std::vector<Tensor> row, FirstRow(sample));
  auto costs = MeasureBatchCosts(runner, row, sizes, clock);
  if (!costs.ok()) {
    return Status(costs.status().code(), "measuring the batch sizes of " + instance + " after its warm-up failed: " +
                                             costs.status().message() + "; the model stays unavailable");
  }
  target.SetBatchCosts(std::move(costs).value());
  return Status::Ok();
}

std::string WarmupReport::Took() const {
  if (ns < 1'000'000'000) return fmt::format("{} ms", ns / 1'000'000);
  return fmt::format("{:.1f} s", static_cast<double>(ns) / 1e9);
}

std::string WarmupReport::Describe() const {
  if (!warning.empty()) return "not warmed up: " + warning;
  const std::string with = generated.empty() || generated == "fixed dims" ? "" : " (generated inputs: " + generated + ")";
  if (batch_sizes.empty()) return "warm-up " + Took() + with;
  return fmt::format("warmed {} batch size{}{} x {} instance{} in {}", batch_sizes.size(),
                     batch_sizes.size() == 1 ? "" : "s", every_batch_size ? "" : " (a bounded subset)", instances,
                     instances == 1 ? "" : "s", Took()) + with;
}

std::string WarmupReport::Brief() const {
  if (!warning.empty()) return "none (see warning)";
  if (batch_sizes.empty()) return Took();
  return fmt::format("{}, {} size{}{}", Took(), batch_sizes.size(), batch_sizes.size() == 1 ? "" : "s",
                     every_batch_size ? "" : " (subset)");
}

SessionFactory RealSessionFactory() {
  return [](const std::string& path, const SessionOptions& options) { return Session::Load(path, options); };
}

namespace {

// Where placement checks keep their profiles and saved graphs.
std::string PlacementDir() {
  std::error_code ec;
  const auto dir = std::filesystem::temp_directory_path(ec) / "ortgpu-placement";
  std::filesystem::create_directories(dir, ec);
  return dir.string();
}

}  // namespace

Status RequireGpuVerdict(const doctor::PlacementSummary& summary, const std::string& model) {
  if (summary.compute_fallbacks.empty()) return Status::Ok();
  std::string nodes;
  for (size_t i = 0; i < summary.compute_fallbacks.size() && i < 5; ++i) {
    const auto& n = summary.compute_fallbacks[i];
    nodes += (i ? ", " : "") + n.node_name + " (" + n.op_type + (n.derivation.empty() ? "" : ", " + n.derivation) + ")";
  }
  return FailedPrecondition(
      "require_gpu: " + std::to_string(summary.compute_fallbacks.size()) +
      " compute node(s) fell back to the CPU: " + nodes +
      "; the model would be served slowly. Run `ortgpu doctor --model " + model +
      "` for the reasons, or drop --require-gpu to serve it anyway");
}

Status ProfilePlacementChecker::CheckGpuPlacement(const Session& session, const std::vector<Tensor>& inputs) const {
  auto placement = doctor::ProfilePlacement(session, inputs, PlacementDir());
  if (!placement.ok()) return placement.status().WithContext("profiling a run to check node placement");
  return RequireGpuVerdict(*placement, session.label());
}

Expected<std::vector<std::vector<Tensor>>> WarmupSamples(const inference::ModelConfig& config,
                                                         const std::string& model_dir) {
  const int mbs = config.max_batch_size();
  std::vector<std::vector<Tensor>> out;
  int64_t total_bytes = 0;
  uint32_t seed = 1;
  for (const auto& w : config.model_warmup()) {
    if (mbs == 0 && w.batch_size() > 1) {
      return InvalidArgument("model_warmup '" + w.name() + "' has batch_size " + std::to_string(w.batch_size()) +
                             " but max_batch_size is 0; use batch_size 1");
    }
    const int64_t count = w.count() > 0 ? static_cast<int64_t>(w.count()) : 1;
    if (count > kMaxWarmupCount) {
      return InvalidArgument("model_warmup '" + w.name() + "' has count " + std::to_string(count) + "; at most " +
                             std::to_string(kMaxWarmupCount) +
                             " warm-up runs are allowed (each repeats the sample in memory); use a smaller count");
    }
    std::vector<Tensor> sample;
    for (const auto& [name, in] : w.inputs()) {
      std::vector<int64_t> shape;
      if (mbs > 0) shape.push_back(w.batch_size() > 0 ? w.batch_size() : 1);
      for (int64_t d : in.dims()) {
        if (d < 0) return InvalidArgument("model_warmup '" + w.name() + "' input '" + name + "' has a variable dim; give every dim");
        shape.push_back(d);
      }
      ORTGPU_RETURN_IF_ERROR(AddWarmupBytes("model_warmup '" + w.name() + "' input '" + name + "'",
                                            FromConfigType(in.data_type()), shape, count, total_bytes));
      Tensor t = Tensor::Zeros(name, FromConfigType(in.data_type()), shape);
      if (in.has_random_data() && t.dtype != DataType::kString) FillRandom(t, seed++);
      if (in.has_input_data_file()) {
        ORTGPU_ASSIGN_OR_RETURN(const std::string path, ResolveInside(JoinPath(model_dir, "warmup"),
                                                                      in.input_data_file(), "input_data_file"));
        auto bytes = RealFileSystem().ReadFile(path);
        if (!bytes.ok()) return bytes.status().WithContext("model_warmup '" + w.name() + "' input '" + name + "'");
        const size_t per_row = t.data.size() / static_cast<size_t>(mbs > 0 ? shape[0] : 1);
        if (bytes->size() != per_row && bytes->size() != t.data.size()) {
          return InvalidArgument("warm-up file " + path + " has " + std::to_string(bytes->size()) + " bytes but input '" +
                                 name + "' needs " + std::to_string(per_row) + " per batch row");
        }
        for (size_t off = 0; off < t.data.size(); off += bytes->size()) std::memcpy(t.data.data() + off, bytes->data(), bytes->size());
      }
      sample.push_back(std::move(t));
    }
    for (int64_t i = 0; i < count; ++i) out.push_back(sample);
  }
  return out;
}

namespace {

// The warm-up inputs of the float32 model at `path`, in the loader's order
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

}  // namespace

namespace {

// Loads `version` on `instances` (placed already). `failing_instance` is
// set to the index of the instance being loaded or warmed while that goes
// on, and to -1 outside the instances' loop, so the caller can tell a
// failure of one instance (its GPU) from one of the model.
Expected<std::shared_ptr<LoadedModel>> LoadPlaced(const ModelSource& source, const inference::ModelConfig& config,
                                                  int64_t version, const LoaderOptions& options, const LoaderDeps& deps,
                                                  const std::vector<InstanceSpec>& instances, int& failing_instance) {
  failing_instance = -1;
  auto model = std::make_shared<LoadedModel>();
  model->instances = instances;
  model->name = source.name;
  model->version = version;
  model->config = config;
  if (model->config.name().empty()) model->config.set_name(source.name);
  std::string path = source.ModelPath(version, config.default_model_filename());
  if (source.single_file.empty() && !config.default_model_filename().empty()) {
    ORTGPU_ASSIGN_OR_RETURN(path, ResolveInside(JoinPath(source.dir, std::to_string(version)),
                                                config.default_model_filename(), "default_model_filename"));
  }
  if (!RealFileSystem().Exists(path)) {
    return NotFound("version " + std::to_string(version) + " of model '" + source.name + "' has no model file " + path +
                    "; put the ONNX file there (named model.onnx unless default_model_filename says otherwise)");
  }
  // A FIFO or device would block the load (and the server's start) forever.
  ORTGPU_RETURN_IF_ERROR(CheckRegularFile(path, "model file"));
  ORTGPU_ASSIGN_OR_RETURN(SessionOptions base, BaseSessionOptions(model->config));
  // gpu_mem_limit "plan": each session's arena bounded by what the memory
  // plan predicts for it (set per session below).
  const bool mem_limit_from_plan = base.cuda_options.count("gpu_mem_limit") > 0 && base.cuda_options["gpu_mem_limit"] == "plan";
  if (mem_limit_from_plan) base.cuda_options.erase("gpu_mem_limit");
  const std::string graph_request = CudaGraphRequest(config);
  const bool require_gpu = options.require_gpu || ParameterIsTrue(ConfigParameters(config)["require_gpu"]);
  if (require_gpu) {
    for (size_t i = 0; i < instances.size(); ++i) {
      if (instances[i].kind == InstanceKind::kCpu) {
        return FailedPrecondition("require_gpu is set but " + instances[i].Describe(i) +
                                  " is KIND_CPU in instance_group; make it KIND_GPU or drop --require-gpu");
      }
    }
  }
  std::vector<std::unique_ptr<InstanceRunner>> runners;
  const SessionRunner* first_runner = nullptr;  // instance 0's
  std::map<int, const SessionRunner*> first_on_gpu;  // by GPU: the placement check profiles its session
  // By GPU: the optimised graph its first session saved for the placement
  // check, removed when loading ends.
  std::map<int, std::unique_ptr<doctor::SavedGraph>> placement_graphs;
  std::vector<SessionOptions> instance_options;
  std::vector<std::vector<Tensor>> samples;      // the config's model_warmup, or the generated input that ran
  std::vector<WarmupCandidate> candidates;       // generated, when the config has no model_warmup
  BatchPolicy policy;
  WarmupSizes shapes;
  int64_t warmup_ns = 0;
  // One GpuTurn per GPU the model's instances run on (config parameter
  // gpu_turns, GpuTurnMode).
  ORTGPU_ASSIGN_OR_RETURN(const GpuTurnMode turn_mode, ParseGpuTurnMode(ConfigParameters(config)["gpu_turns"]));
  std::map<int, std::shared_ptr<GpuTurn>> turns;
  auto measuring = std::make_shared<MeasureOneAtATime>();
  // One copy of the weights per device the instances run on (config
  // parameter share_weights), made before the device's first session.
  ORTGPU_ASSIGN_OR_RETURN(const ShareWeights share, ParseShareWeights(ConfigParameters(config)["share_weights"]));
  ORTGPU_ASSIGN_OR_RETURN(const ArenaShrinkage shrinkage, ParseArenaShrinkage(ConfigParameters(config)["arena_shrinkage"]));
  std::map<std::pair<Provider, int>, DeviceWeights> weights;
  // What the version holds in memory, measured as it loads (model_memory.h).
  MemoryRecorder memory(deps.nvml, options.visible_gpus ? options.visible_gpus->uuids : std::vector<std::string>{});
  // The memory profile of an earlier load of this model and settings
  // (memory_plan.h), set before the first session.
  std::optional<MemoryProfile> profile;
  auto make_session = [&](SessionOptions so, int64_t rows) -> Expected<std::unique_ptr<Session>> {
    if (mem_limit_from_plan && profile && so.provider == Provider::kCuda) {
      so.cuda_options["gpu_mem_limit"] = std::to_string(
          ArenaLimitFor(*profile, rows, deps.planner != nullptr ? deps.planner->options().margin_percent : 10));
    }
    DeviceWeights* shared = nullptr;
    // auto on a GPU makes the copy at the device's second session: a
    // device copy that one session alone uses costs 40-72 MiB more than
    // ORT's own on the H200 (docs/SERVING.md, "Shared weights").
    if (share != ShareWeights::kOff && deps.weights_factory) {
      const auto id = so.cuda_options.find("device_id");
      const WeightsDevice device{so.provider,
                                 so.provider == Provider::kCpu || id == so.cuda_options.end() ? 0 : std::atoi(id->second.c_str())};
      auto [it, fresh] = weights.try_emplace({device.provider, device.device_id});
      shared = &it->second;
      const bool defer = fresh && share == ShareWeights::kAuto && device.provider != Provider::kCpu;
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
        auto store = deps.weights_factory(path, device);
        shared->failure = store.ok() ? Code::kOk : store.status().code();
        if (store.ok()) {
          shared->store = std::move(store).value();
          shared->not_shared.clear();
        } else if (shared->failure == Code::kInvalidArgument || shared->failure == Code::kNotFound ||
                   (share == ShareWeights::kOn && !(fresh && shared->failure == Code::kUnavailable))) {
          // The model's own files are broken (ORT would fail on them too), or sharing was demanded
          // (a CUDA runtime missing before the first session still gets its retry).
          return store.status().WithContext("share_weights: reading the weights of model '" + source.name + "'");
        } else {
          shared->not_shared = store.status().message() + "; each session loads its own";
        }
      }
      if (shared->store != nullptr) so.shared_initializers = shared->store;
    }
    auto session = deps.session_factory(path, so);
    if (session.ok()) memory.SessionCreated(**session);
    if (session.ok() && shared != nullptr) {
      if (shared->store != nullptr) {
        shared->Record(**session);
      } else {
        ++shared->sessions_without;
      }
    }
    return session;
  };
  ORTGPU_ASSIGN_OR_RETURN(const PrecisionSettings precision, ParsePrecisionSettings(ConfigParameters(config)));
  ApplyPrecision(precision, base);
  model->precision.precision = std::string(PrecisionName(precision.precision));
  if (precision.converts()) {
    // Converted before any instance's session: every instance loads the
    // converted file (from the model cache, never beside the user's model).
    PrecisionRequest request;
    request.model_path = path;
    request.settings = precision;
    request.session = InstanceOptions(base, instances.front());
    request.cache_dir = options.model_cache_dir;
    ORTGPU_ASSIGN_OR_RETURN(request.input_choices,
                            PrecisionCheckInputs(path, source, model->config, precision.fp16_io, options, deps));
    auto prepared = PrepareModelPrecision(request, deps.precision_engines ? deps.precision_engines
                                                                          : RealPrecisionEngineFactory());
    if (!prepared.ok()) {
      return prepared.status().WithContext("model '" + source.name + "' version " + std::to_string(version));
    }
    path = prepared->path;
    model->precision = prepared->outcome;
    model->converted_scratch = prepared->scratch;
    if (model->precision.checked && !model->precision.within_budget()) {
      spdlog::warn("model '{}' version {}: served outside the accuracy budget (precision_check warn): {}", source.name,
                   version, model->precision.violations.front());
    }
  }
  // The GPU memory plan: a load that will not fit is refused here, before
  // its first session allocates (memory_plan.h).
  std::map<int, int> gpu_instances;
  for (const auto& spec : instances) {
    if (spec.kind == InstanceKind::kGpu) ++gpu_instances[spec.gpu];
  }
  const LoadLayout layout = LayoutOf(model->config, SetsMaxBatchSize(source.config_text), gpu_instances, share,
                                     !graph_request.empty(), !precision.converts() && !model->precision.already_fp16);
  Expected<std::string> profile_key = NotFound("no memory plan");
  if (deps.planner != nullptr && deps.planner->active() && !layout.gpu_instances.empty()) {
    profile_key = MemoryProfileKey(path, PlanSettings(base, layout, *deps.planner,
                                                      std::string(PrecisionName(precision.precision)), precision.fp16_io));
    if (profile_key.ok()) profile = deps.planner->FindProfile(*profile_key);
    int refused_gpu = -1;
    Status planned = PlanLoad(*deps.planner, source.name, version, path, layout, profile, &refused_gpu);
    if (!planned.ok()) {
      // The GPU that would not fit is the failing one: the caller loads on
      // the others (LoadModelVersion's failure isolation).
      for (size_t i = 0; i < instances.size() && refused_gpu >= 0; ++i) {
        if (instances[i].kind == InstanceKind::kGpu && instances[i].gpu == refused_gpu) {
          failing_instance = static_cast<int>(i);
          break;
        }
      }
      return planned;
    }
  }
  if (mem_limit_from_plan && !profile) {
    spdlog::warn("model '{}': gpu_mem_limit \"plan\": no memory profile of this model and settings yet, so its arenas "
                 "are not bounded at this load; the next load bounds them from this one's measurement",
                 source.name);
  }
  // The main session's rows before the config is completed: the planned
  // layout's, else the profile's.
  const int64_t planned_main_rows = layout.sizes_known ? layout.SessionRows().front()
                                    : profile ? profile->measured_shape.session_rows.front()
                                              : 1;
  memory.Begin(layout.gpus());
  for (size_t i = 0; i < instances.size(); ++i) {
    failing_instance = static_cast<int>(i);
    SessionOptions so = InstanceOptions(base, instances[i]);
    // Under require_gpu the first session on each GPU saves the graph ORT
    // optimised, so the placement check can tell shape computation from
    // compute by what each CPU node reads (doctor/placement.h); only those.
    SessionOptions first_options = so;
    const bool saves_graph = require_gpu && deps.placement != nullptr && so.provider == Provider::kCuda &&
                             placement_graphs.count(instances[i].gpu) == 0;
    if (saves_graph) {
      auto& graph = placement_graphs[instances[i].gpu];
      graph = std::make_unique<doctor::SavedGraph>(PlacementDir());
      graph->Request(first_options);
    }
    auto session = make_session(saves_graph ? first_options : so, planned_main_rows);
    if (!session.ok() && saves_graph) {
      // Saving the graph serves the check only: a session that cannot save
      // it loads without, and element types decide.
      spdlog::warn("model '{}': the first session on GPU {} could not save its optimised graph for the placement "
                   "check ({}); loading it without",
                   source.name, instances[i].gpu, session.status().message());
      placement_graphs[instances[i].gpu].reset();
      session = make_session(so, planned_main_rows);
    }
    if (!session.ok()) return session.status().WithContext("loading " + instances[i].Describe(i) + " of model '" + source.name + "' version " + std::to_string(version));
    if (i == 0) {
      // Complete the config from the first session: every instance runs the same file.
      ORTGPU_RETURN_IF_ERROR((*session)->inputs().empty() && (*session)->outputs().empty()
                                 ? InvalidArgument("the model has no inputs or outputs")
                                 : Status::Ok());
      ORTGPU_RETURN_IF_ERROR(CompleteConfig((*session)->inputs(), (*session)->outputs(),
                                            ConfigGiven{source.has_config, SetsMaxBatchSize(source.config_text)},
                                            options.completion, model->config, &model->completed)
                                 .WithContext("config of model '" + source.name + "'"));
      if (model->config.model_warmup().empty()) {
        WarmupHints hints{options.warmup_inputs, ShapeFlagsFor((*session)->inputs(), options.warmup_shapes),
                          (*session)->inputs()};
        ORTGPU_ASSIGN_OR_RETURN(candidates, GenerateWarmupCandidates(model->config, hints));
      } else {
        ORTGPU_ASSIGN_OR_RETURN(samples, WarmupSamples(model->config, source.dir));
      }
      const bool gpu = std::any_of(instances.begin(), instances.end(),
                                   [](const InstanceSpec& x) { return x.kind == InstanceKind::kGpu; });
      policy = BatchPolicyFor(model->config, gpu);
      shapes = WarmupBatchSizes(policy);
      if (!shapes.every_size) {
        spdlog::info("model '{}': max_batch_size {} is above {}, so warm-up runs only the preferred batch sizes, "
                     "the powers of two and max_batch_size ({} sizes); other sizes pay their first-run cost when "
                     "they first run (pad_to_preferred_batch_size avoids them)",
                     source.name, policy.max_batch_size, kMaxWarmupEveryBatchSize, shapes.sizes.size());
      }
    }
    const auto params = ConfigParameters(model->config);
    const auto per_size = params.find("session_per_batch_size");
    const bool per_size_sessions = instances[i].kind == InstanceKind::kGpu && policy.pad_to_preferred_batch_size &&
                                   (per_size == params.end() || ParameterIsTrue(per_size->second));
    // CUDA graphs need batches of a few fixed shapes: padded ones.
    bool graphs = !graph_request.empty() && per_size_sessions && !shapes.sizes.empty();
    if (i == 0 && !graph_request.empty() && !graphs) {
      model->cuda_graph_warning =
          "CUDA graphs (" + graph_request + ") are not used: they replay fixed shapes, so `ortgpu serve` captures "
          "them only on GPU instances whose batches are padded to the preferred sizes (dynamic_batching with "
          "preferred_batch_size, pad_to_preferred_batch_size and session_per_batch_size left on); the model runs "
          "without them";
      spdlog::warn("model '{}': {}", source.name, model->cuda_graph_warning);
    }
    // The sessions of one instance (or, with graphs, of one worker).
    // Padding leaves a few batch sizes; each but the largest (which the main
    // session runs) gets a session of its own, so no session ever changes
    // shape (SessionRunner, InstanceSessions). With CUDA graphs every padded
    // size gets one that captures its graph, and the main session runs the
    // rest without.
    auto build_sessions = [&](std::unique_ptr<Session> main) -> Expected<InstanceSessions> {
      InstanceSessions sessions;
      if (main == nullptr) {
        auto made = make_session(so, graphs || shapes.sizes.empty() ? 1 : shapes.sizes.back());
        if (!made.ok()) return made.status().WithContext("loading a worker's sessions of " + instances[i].Describe(i));
        main = std::move(made).value();
      }
      sessions.main = std::move(main);
      if (!per_size_sessions) return sessions;
      for (int attempt = 0; attempt < 2; ++attempt) {
        SessionOptions sized = so;
        if (graphs) sized.cuda_options["enable_cuda_graph"] = "1";
        const size_t count = graphs ? shapes.sizes.size() : shapes.sizes.size() - 1;
        Status failed;
        for (size_t k = 0; k < count && !shapes.sizes.empty(); ++k) {
          auto extra = make_session(sized, shapes.sizes[k]);
          if (!extra.ok()) {
            failed = extra.status().WithContext("loading the batch-" + std::to_string(shapes.sizes[k]) + " session of " +
                                                instances[i].Describe(i) + " of model '" + source.name + "'");
            break;
          }
          sessions.by_batch_rows[shapes.sizes[k]] = std::move(extra).value();
        }
        if (failed.ok()) break;
        if (!graphs || failed.reason() != Reason::kCudaGraphRefused) return failed;
        // ORT refuses graphs for this model (nodes outside the CUDA EP,
        // control flow; ort/ort_status.cc recognises its refusal): serve it
        // without them, and say why.
        model->cuda_graph_warning = "CUDA graphs (" + graph_request + ") are not used: ONNX Runtime cannot capture "
                                    "this model (" + failed.message() + "); it runs without them";
        spdlog::warn("model '{}': {}", source.name, model->cuda_graph_warning);
        graphs = false;
        sessions.by_batch_rows.clear();
      }
      sessions.cuda_graphs = graphs;
      return sessions;
    };
    ORTGPU_ASSIGN_OR_RETURN(InstanceSessions sessions, build_sessions(std::move(session).value()));
    if (i == 0) {
      for (const auto& [rows, s] : sessions.by_batch_rows) model->session_per_batch_size.push_back(rows);
      if (!sessions.by_batch_rows.empty() && !graphs) model->session_per_batch_size.push_back(shapes.sizes.back());
      model->cuda_graphs = graphs;
    }
    const bool on_gpu = instances[i].kind == InstanceKind::kGpu;
    // Each runner of a GPU instance drives its GPU (DeviceMemory): the
    // session's device_id by default, deps.device_memory when given.
    auto place = [&](SessionRunner& r) {
      if (on_gpu && deps.device_memory != nullptr) r.SetDeviceMemory(deps.device_memory, instances[i].gpu);
    };
    auto session_runner = std::make_unique<SessionRunner>(std::move(sessions), RulesFor(model->config));
    place(*session_runner);
    SessionRunner* session_runner_ptr = session_runner.get();
    // The most rows the main session runs: the largest size when it runs
    // every size or the largest; with CUDA graphs only unpadded runs (the
    // generated warm-up candidates).
    const int64_t main_rows = graphs || shapes.sizes.empty() ? 1 : shapes.sizes.back();
    memory.AddInstance(on_gpu, instances[i].gpu);
    memory.AddSessions(on_gpu, instances[i].gpu, session_runner->sessions(), main_rows, i == 0);
    if (i == 0) first_runner = session_runner.get();
    if (on_gpu) first_on_gpu.try_emplace(instances[i].gpu, session_runner.get());
    // More workers on the same sessions: while one worker's batch runs on
    // the GPU, another joins the next one (SessionRunner). Default 2 on GPU
    // instances that batch dynamically, 1 otherwise. With CUDA graphs, or
    // the config parameter worker_sessions "own", each worker has sessions of
    // its own (the weights stay shared); own sessions measured no faster on
    // the H200 (run l4: ResNet-50 and BERT-base within noise) at twice the
    // activation memory, so sharing stays the default.
    const auto workers_param = params.find("workers_per_instance");
    int workers = instances[i].kind == InstanceKind::kGpu && policy.dynamic_batching ? 2 : 1;
    if (workers_param != params.end()) workers = std::clamp(std::atoi(workers_param->second.c_str()), 1, 8);
    const auto worker_sessions = params.find("worker_sessions");
    const bool own_sessions = graphs || (worker_sessions != params.end() && worker_sessions->second == "own");
    std::vector<std::unique_ptr<SessionRunner>> sharing;
    std::vector<std::unique_ptr<InstanceRunner>> sharing_runners;
    for (int w = 1; w < workers; ++w) {
      if (own_sessions) {
        ORTGPU_ASSIGN_OR_RETURN(InstanceSessions own, build_sessions(nullptr));
        sharing.push_back(std::make_unique<SessionRunner>(std::move(own), RulesFor(model->config)));
        memory.AddSessions(on_gpu, instances[i].gpu, sharing.back()->sessions(), main_rows, i == 0);
      } else {
        sharing.push_back(std::make_unique<SessionRunner>(session_runner->sessions(), RulesFor(model->config)));
      }
      place(*sharing.back());
    }
    if (i == 0) {
      model->workers_per_instance = workers;
      model->own_worker_sessions = own_sessions && workers > 1;
    }
    const auto declared = Describe(model->config.input(), model->config.max_batch_size());
    std::unique_ptr<InstanceRunner> runner =
        std::make_unique<RejectionExplainingRunner>(std::move(session_runner), declared);
    std::vector<SessionRunner*> sharing_ptrs;  // for SetWorkerWarmup, owned by their wrappers below
    for (auto& extra : sharing) sharing_ptrs.push_back(extra.get());
    for (auto& extra : sharing) {
      auto explained = std::make_unique<RejectionExplainingRunner>(std::move(extra), declared);
      extra.reset();
      sharing_runners.push_back(std::move(explained));
    }
    sharing.clear();
    if (instances[i].kind == InstanceKind::kGpu && turn_mode != GpuTurnMode::kOff && (graphs || turn_mode == GpuTurnMode::kOn)) {
      std::shared_ptr<GpuTurn>& turn = turns[instances[i].gpu];
      if (turn == nullptr) turn = std::make_shared<GpuTurn>();
      session_runner_ptr->SetGpuTurn(turn, turn_mode == GpuTurnMode::kOn);
      for (SessionRunner* extra : sharing_ptrs) extra->SetGpuTurn(turn, turn_mode == GpuTurnMode::kOn);
      if (i == 0) model->gpu_turns = true;
    }
    if (deps.wrap_runner) runner = deps.wrap_runner(std::move(runner));
    // The loading thread warms this instance up: its GPU becomes the
    // thread's current device first (ORT's session creation sets the
    // device itself; ortgpu's own copies and allocations follow the thread's).
    ORTGPU_RETURN_IF_ERROR(session_runner_ptr->BindDevice().WithContext("warm-up of " + instances[i].Describe(i)));
    const int64_t warm_start = deps.clock->NowNanos();
    // The executed sizes are timed after the warm-up when padding may be
    // skipped (BatchPolicy::adaptive_padding): the batcher pads a batch on
    // an idle instance only if the padded size costs about the same.
    const bool measure_costs =
        policy.pad_to_preferred_batch_size && policy.adaptive_padding && !policy.LightBatchSizes().empty();
    // The config's model_warmup runs as given, and is the user's to fix when
    // it fails; without one the first instance finds a generated input that
    // runs, which every other instance then runs too.
    if (!model->config.model_warmup().empty()) {
      for (const auto& sample : samples) {
        auto warm = runner->Run(sample);
        if (!warm.ok()) {
          return warm.status().WithMessage("warm-up of " + instances[i].Describe(i) +
                                           " with the config's model_warmup failed: " + warm.status().message() +
                                           "; the model stays unavailable. Give the model_warmup inputs the model "
                                           "accepts");
        }
      }
    } else if (i == 0) {
      // A candidate runs as warm-up will: at the smallest batch size the
      // batcher forms (so a padded instance's sessions see only their own
      // shapes), or once without batching. With CUDA graphs the padded sizes
      // capture on the worker threads, so candidates run on the main
      // session, which captures none.
      const std::string what = instances[i].Describe(i);
      auto try_run = [&](const std::vector<Tensor>& sample) -> Status {
        if (graphs) {
          ORTGPU_ASSIGN_OR_RETURN(auto inputs, session_runner_ptr->ModelInputs(sample));
          return ExplainRejection(session_runner_ptr->session().Run(inputs).status(), sample, declared, 0);
        }
        if (shapes.sizes.empty()) return runner->Run(sample).status();
        return WarmBatchSizes(*runner, sample, {shapes.sizes.front()}, what, *deps.clock);
      };
      ORTGPU_ASSIGN_OR_RETURN(auto chosen, FindRunningCandidate(candidates, try_run, what));
      if (chosen.index < 0) {
        const std::string warning = NoWarmupWarning(source.name, chosen.failure);
        if (options.strict_warmup || require_gpu) {
          return FailedPrecondition(warning + (require_gpu ? "; --require-gpu needs a run to check placement, so the "
                                                             "model stays unavailable"
                                                           : "; --strict-warmup keeps the model unavailable"));
        }
        model->warmup.warning = warning;
      } else {
        samples = {candidates[static_cast<size_t>(chosen.index)].inputs};
        model->warmup.generated = candidates[static_cast<size_t>(chosen.index)].description;
        if (!per_size_sessions && !shapes.sizes.empty()) {
          memory.Warmed(session_runner_ptr->SessionFor(shapes.sizes.front()), shapes.sizes.front());
        }
      }
    } else if (!samples.empty() && shapes.sizes.empty()) {
      auto warm = runner->Run(samples[0]);
      if (!warm.ok()) return warm.status().WithContext("warm-up of " + instances[i].Describe(i));
    }
    if (graphs && !samples.empty()) {
      // ORT keeps a captured graph per thread: each worker captures its
      // graphs on its own thread before the model is READY (PrepareOnWorker,
      // DynamicBatcher::WaitUntilPrepared).
      // Three runs of each size: ORT's regular runs before the capture, and
      // the capture itself, all before READY.
      // Then each worker times its own sizes (MeasureInto), for padding
      // only when it pays.
      std::vector<int64_t> thrice;
      for (int64_t n : shapes.sizes) thrice.insert(thrice.end(), 3, n);
      auto warm_for = [&](SessionRunner* self) {
        if (measure_costs) ++measuring->workers;
        return [sample = samples[0], sizes = thrice, measured = measure_costs ? shapes.sizes : std::vector<int64_t>{},
                what = instances[i].Describe(i), clock = deps.clock, self, measuring](InstanceRunner& r) -> Status {
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
      session_runner_ptr->SetWorkerWarmup(warm_for(session_runner_ptr));
      for (SessionRunner* extra : sharing_ptrs) extra->SetWorkerWarmup(warm_for(extra));
    } else if (!samples.empty()) {
      // The first instance ran the smallest size already when it chose a generated input.
      std::vector<int64_t> sizes = shapes.sizes;
      if (i == 0 && !model->warmup.generated.empty() && !sizes.empty()) sizes.erase(sizes.begin());
      // One session running every size: its arena after each is a point of
      // the memory line (per-size sessions are one point each at the end).
      std::function<void(int64_t)> after_size;
      if (i == 0 && !per_size_sessions) {
        after_size = [&memory, session_runner_ptr](int64_t rows) {
          memory.Warmed(session_runner_ptr->SessionFor(rows), rows);
        };
      }
      ORTGPU_RETURN_IF_ERROR(
          WarmBatchSizes(*runner, samples[0], sizes, instances[i].Describe(i), *deps.clock, after_size));
      if (measure_costs) {
        // The instance's workers run sessions of one build: one table for all.
        ORTGPU_RETURN_IF_ERROR(
            MeasureInto(*runner, *session_runner_ptr, samples[0], shapes.sizes, instances[i].Describe(i), *deps.clock));
        if (const BatchCosts* costs = session_runner_ptr->batch_costs()) {
          for (SessionRunner* extra : sharing_ptrs) extra->SetBatchCosts(*costs);
        }
      }
    }
    for (auto& extra : sharing_runners) {
      if (graphs) break;  // warmed on their worker threads
      if (samples.empty()) continue;
      if (shapes.sizes.empty()) {
        if (own_sessions) ORTGPU_RETURN_IF_ERROR(extra->Run(samples[0]).status().WithContext("warm-up of " + instances[i].Describe(i)));
        continue;
      }
      // Sessions of its own are warmed at every size; shared ones are warm,
      // and one batch makes this worker's staging buffers.
      ORTGPU_RETURN_IF_ERROR(WarmBatchSizes(*extra, samples[0],
                                            own_sessions ? shapes.sizes : std::vector<int64_t>{shapes.sizes.front()},
                                            instances[i].Describe(i), *deps.clock));
    }
    if (!graphs) {
      // Give-back (docs/MEMORY.md): runs larger than the warmed ones return
      // what they left to the device (config parameter arena_shrinkage).
      const size_t planned = session_runner_ptr->largest_input_bytes();
      session_runner_ptr->SetArenaShrinkage(shrinkage, planned);
      for (SessionRunner* extra : sharing_ptrs) extra->SetArenaShrinkage(shrinkage, planned);
    }
    warmup_ns += deps.clock->NowNanos() - warm_start;
    instance_options.push_back(so);
    runners.push_back(std::move(runner));
    for (auto& extra : sharing_runners) runners.push_back(std::move(extra));
    // Without a profile the plan knew only the weights: instance 0, loaded
    // and warmed, now says what an instance holds; the others on its GPU
    // are made only if they fit (CUDA-graph sessions warm on their workers
    // later, so their activations are not known here).
    if (i == 0 && !profile && !graphs && on_gpu && deps.planner != nullptr) {
      const int remaining = layout.gpu_instances.count(instances[0].gpu) ? layout.gpu_instances.at(instances[0].gpu) - 1 : 0;
      ORTGPU_RETURN_IF_ERROR(PlanRemainingInstances(*deps.planner, source.name, version, instances[0].gpu, remaining,
                                                    memory.FirstInstanceBytes(), layout));
    }
  }
  failing_instance = -1;
  if (require_gpu && deps.placement != nullptr && !samples.empty()) {
    // Placement is proved on every GPU the model runs on: one instance's
    // session each (a GPU's sessions are built alike).
    for (const auto& [gpu, runner] : first_on_gpu) {
      ORTGPU_ASSIGN_OR_RETURN(auto inputs, runner->ModelInputs(samples[0]));
      ORTGPU_RETURN_IF_ERROR(deps.placement->CheckGpuPlacement(runner->session(), inputs)
                                 .WithContext("GPU " + std::to_string(gpu)));
    }
  }
  for (const auto& [key, w] : weights) {
    const std::string line = w.Describe();
    // (A GPU's only session under auto made no copy: nothing to say.)
    if (w.store == nullptr && !line.empty()) spdlog::warn("model '{}': {}", source.name, line);
    if (!line.empty()) model->weights.push_back(line);
    if (w.store != nullptr) model->shared_weights.push_back(w.store);
  }
  if (model->precision.converted || model->precision.already_fp16) {
    // Shown by /v2/models/M/config beside the user's precision parameter.
    auto& params = *model->config.mutable_parameters();
    params["precision_accuracy"].set_string_value(model->precision.AccuracyText());
    params["precision_cache"].set_string_value(model->precision.cache);
  }
  const int mbs = model->config.max_batch_size();
  model->inputs = Describe(model->config.input(), mbs);
  model->outputs = Describe(model->config.output(), mbs);
  if (!samples.empty()) model->warmup.batch_sizes = shapes.sizes;  // none ran without a sample
  model->warmup.every_batch_size = shapes.every_size;
  model->warmup.instances = static_cast<int>(instances.size());
  model->warmup.ns = warmup_ns;
  model->batching = policy;
  BatcherOptions bo;
  bo.model_name = source.name;
  bo.model_version = std::to_string(version);
  // Always the model's max_batch_size, with or without dynamic batching:
  // a request's rows are what its execution is filed under.
  bo.batching = policy;
  bo.max_queue_size = model->config.dynamic_batching().default_queue_policy().max_queue_size();
  bo.busy_poll_ns = options.busy_poll_ns;
  model->stats = std::make_unique<ModelStats>();
  model->batcher = std::make_unique<DynamicBatcher>(bo, std::move(runners), *deps.clock, *model->stats, deps.observer);
  const int64_t prepare_start = deps.clock->NowNanos();
  ORTGPU_RETURN_IF_ERROR(model->batcher->WaitUntilPrepared());
  model->warmup.ns += deps.clock->NowNanos() - prepare_start;
  for (const auto& [key, w] : weights) {
    if (w.store != nullptr) {
      memory.SharedWeights(key.first != Provider::kCpu, key.second, static_cast<uint64_t>(std::max<int64_t>(w.store->bytes(), 0)));
    }
  }
  // After WaitUntilPrepared: every worker warmed (and captured) its sizes.
  model->memory = memory.Finish();
  if (model->memory.profile && profile_key.ok()) deps.planner->StoreProfile(*profile_key, *model->memory.profile);
  // Read after WaitUntilPrepared: a worker that measured its table on its
  // own thread is done with it.
  model->padding = DescribePadding(policy, first_runner != nullptr ? first_runner->batch_costs() : nullptr);
  if (!model->padding.empty()) spdlog::info("model '{}' version {}: {}", source.name, version, model->padding);
  return model;
}

// What a GPU's failure can look like, as opposed to the model's own: out of
// memory, a device or CUDA EP that does not work, an unexpected CUDA error.
// Config and model errors (InvalidArgument, NotFound, Unimplemented,
// FailedPrecondition) would fail on every GPU alike.
bool IsDeviceFailure(const Status& st) {
  return st.code() == Code::kResourceExhausted || st.code() == Code::kUnavailable || st.code() == Code::kInternal;
}

}  // namespace

std::string DescribeGpuFailures(const std::vector<GpuFailure>& failures) {
  std::string out;
  for (const auto& f : failures) {
    out += (out.empty() ? "" : "; ") + std::string("GPU ") + std::to_string(f.gpu) + " (" +
           std::to_string(f.instances) + (f.instances == 1 ? " instance" : " instances") + ") is not used: " + f.reason;
  }
  return out;
}

Expected<std::shared_ptr<LoadedModel>> LoadModelVersion(const ModelSource& source, const inference::ModelConfig& config,
                                                        int64_t version, const LoaderOptions& options,
                                                        const LoaderDeps& deps) {
  auto placed = PlaceInstances(config, options.default_instance_kind,
                               options.visible_gpus ? &*options.visible_gpus : nullptr);
  if (!placed.ok()) {
    return placed.status().WithContext("config of model '" + source.name + "'");
  }
  std::vector<InstanceSpec> instances = std::move(placed).value();
  std::vector<GpuFailure> failed;
  while (true) {
    int failing = -1;
    auto model = LoadPlaced(source, config, version, options, deps, instances, failing);
    if (model.ok()) {
      (*model)->failed_gpus = failed;
      if (InstancesPerGpu(instances).size() > 1) {
        spdlog::info("model '{}' version {}: instances on {}", source.name, version,
                     DescribePlacement(instances, options.visible_gpus ? &options.visible_gpus->names : nullptr));
      }
      if (!failed.empty()) {
        spdlog::warn("model '{}' version {} is READY on {} only: {}", source.name, version,
                     DescribePlacement(instances, nullptr), DescribeGpuFailures(failed));
      }
      return model;
    }
    if (failing < 0 || instances[static_cast<size_t>(failing)].kind != InstanceKind::kGpu ||
        !IsDeviceFailure(model.status())) {
      return failed.empty() ? model.status() : model.status().WithContext(DescribeGpuFailures(failed));
    }
    // Failure isolation: the GPU that failed loses its instances and the
    // model loads again on the others (a fresh load: instance 0 completes
    // the config and chooses the warm-up, and the memory plan sees the new
    // layout). With no other GPU left the model is UNAVAILABLE.
    const int gpu = instances[static_cast<size_t>(failing)].gpu;
    const auto on_gpu = [gpu](const InstanceSpec& s) { return s.kind == InstanceKind::kGpu && s.gpu == gpu; };
    const int lost = static_cast<int>(std::count_if(instances.begin(), instances.end(), on_gpu));
    failed.push_back({gpu, lost, model.status().message()});
    std::erase_if(instances, on_gpu);
    if (instances.empty()) {
      const std::vector<GpuFailure> earlier(failed.begin(), failed.end() - 1);
      return earlier.empty() ? model.status() : model.status().WithContext(DescribeGpuFailures(earlier));
    }
    spdlog::warn("model '{}' version {}: GPU {} failed, so its {} instance(s) are not used: {}; loading on {}",
                 source.name, version, gpu, lost, model.status().message(), DescribePlacement(instances, nullptr));
  }
}

}  // namespace ortgpu::serve
