#include "serve/repository/model_loader.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <random>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "doctor/placement.h"
#include "ort/ort_status.h"
#include "serve/repository/contained_path.h"
#include "serve/repository/instance_placement.h"
#include "serve/repository/version_load.h"
#include "serve/scheduler/batch_costs.h"
#include "ort/batching.h"

namespace ortgpu::serve {
namespace {

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
