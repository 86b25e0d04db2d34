#include "tune/config_writer.h"

#include <algorithm>

#include <google/protobuf/text_format.h>

namespace ortgpu::tune {

namespace {

// The CUDA accelerator of the config, added when absent (others are kept).
inference::ModelOptimizationPolicy::ExecutionAccelerators::Accelerator& CudaAccelerator(inference::ModelConfig& config) {
  auto* accelerators = config.mutable_optimization()->mutable_execution_accelerators();
  for (auto& a : *accelerators->mutable_gpu_execution_accelerator()) {
    if (a.name() == "cuda") return a;
  }
  auto* a = accelerators->add_gpu_execution_accelerator();
  a->set_name("cuda");
  return *a;
}

bool HasCudaAccelerator(const inference::ModelConfig& config) {
  for (const auto& a : config.optimization().execution_accelerators().gpu_execution_accelerator()) {
    if (a.name() == "cuda") return true;
  }
  return false;
}

void SetParameter(inference::ModelConfig& config, const std::string& key, const std::string& value) {
  (*config.mutable_parameters())[key].set_string_value(value);
}

}  // namespace

inference::ModelConfig TunedModelConfig(const ServedCandidate& winner, const ConfigWriterOptions& options) {
  inference::ModelConfig config = options.base.value_or(inference::ModelConfig());
  if (!options.model_name.empty()) config.set_name(options.model_name);
  const int64_t max_batch = std::max<int64_t>(options.base ? options.base->max_batch_size() : 0, options.max_batch_size);
  if (max_batch > 0) {
    config.set_max_batch_size(static_cast<int32_t>(std::max(max_batch, winner.batch)));
    auto* batching = config.mutable_dynamic_batching();
    batching->clear_preferred_batch_size();
    batching->add_preferred_batch_size(static_cast<int32_t>(winner.batch));
    batching->set_max_queue_delay_microseconds(static_cast<uint64_t>(winner.max_queue_delay_us));
  } else {
    config.set_max_batch_size(0);
    config.clear_dynamic_batching();
  }

  // A base config's one instance group keeps its fields (kind, GPUs, name):
  // tune sets its count, and its kind only where it contradicts the device
  // tune measured on (KIND_CPU measured on a GPU, or the reverse). Several
  // groups become one: the search measured one group.
  // (KIND_AUTO, the field's default, contradicts only a CPU measurement.)
  inference::ModelInstanceGroup group;
  group.set_kind(options.instance_kind);
  if (config.instance_group_size() == 1) {
    group = config.instance_group(0);
    const bool on_cpu = group.kind() == inference::ModelInstanceGroup::KIND_CPU;
    if (on_cpu != (options.instance_kind == inference::ModelInstanceGroup::KIND_CPU)) group.set_kind(options.instance_kind);
  }
  group.set_count(winner.instances);
  config.clear_instance_group();
  *config.add_instance_group() = std::move(group);

  const EngineChoice& e = winner.engine;
  const EngineChoice defaults;
  // Only what differs from ORT's defaults is written; a base config's own
  // settings of these keys are replaced either way.
  const bool engine_changed = e.prefer_nhwc != defaults.prefer_nhwc || e.cuda_graphs != defaults.cuda_graphs ||
                              e.conv_search != defaults.conv_search || e.fuse_conv_bias != defaults.fuse_conv_bias;
  if (engine_changed || HasCudaAccelerator(config)) {
    auto& cuda = CudaAccelerator(config);
    auto& params = *cuda.mutable_parameters();
    params.erase("prefer_nhwc");
    params.erase("enable_cuda_graph");
    params.erase("cudnn_conv_algo_search");
    params.erase("fuse_conv_bias");
    if (e.prefer_nhwc) params["prefer_nhwc"] = "1";
    if (e.fuse_conv_bias) params["fuse_conv_bias"] = "1";
    if (e.cuda_graphs) params["enable_cuda_graph"] = "1";
    if (e.conv_search != defaults.conv_search) params["cudnn_conv_algo_search"] = std::string(ConvAlgoSearchName(e.conv_search));
  }

  auto& model_params = *config.mutable_parameters();
  model_params.erase("precision");
  model_params.erase("precision_budget");
  model_params.erase("pad_to_preferred_batch_size");
  model_params.erase("adaptive_padding");
  model_params.erase("workers_per_instance");
  if (e.precision != defaults.precision) SetParameter(config, "precision", std::string(PrecisionName(e.precision)));
  const bool converted = e.precision == Precision::kFp16 || e.precision == Precision::kMixed;
  if (converted && !options.precision_budget.empty()) SetParameter(config, "precision_budget", options.precision_budget);
  if (max_batch > 0) {
    // serve pads GPU instances' batches unless told not to (docs/SERVING.md, Padding).
    const bool gpu = options.instance_kind != inference::ModelInstanceGroup::KIND_CPU;
    if (winner.pad_to_preferred) {
      SetParameter(config, "pad_to_preferred_batch_size", "true");
      if (!winner.adaptive_padding) SetParameter(config, "adaptive_padding", "false");
    } else if (gpu) {
      SetParameter(config, "pad_to_preferred_batch_size", "false");
    }
  }
  if (winner.workers_per_instance != ServedCandidate::kDefaultWorkers) {
    SetParameter(config, "workers_per_instance", std::to_string(winner.workers_per_instance));
  }
  return config;
}

std::string TunedConfigPbtxt(const ServedCandidate& winner, const ConfigWriterOptions& options) {
  std::string out;
  for (const std::string& line : options.comments) out += "# " + line + "\n";
  std::string body;
  google::protobuf::TextFormat::PrintToString(TunedModelConfig(winner, options), &body);
  return out + body;
}

}  // namespace ortgpu::tune
