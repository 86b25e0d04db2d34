// The config.pbtxt `ortgpu tune` writes for its winner (issue 28): Triton's
// model configuration (inference::ModelConfig, proto/kserve/
// model_config.proto, the message serve's parser fills) built as a message
// and printed in protobuf text format, so what is written is what serve's
// ParseModelConfig reads, field for field. Pure functions; thread-safe.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "model_config.pb.h"
#include "tune/candidates.h"

namespace ortgpu::tune {

struct ConfigWriterOptions {
  std::string model_name;  // config `name`; empty leaves it out (serve uses the folder's name)
  // The model's max_batch_size (0: it does not batch). The written value is
  // at least the candidate's batch.
  int64_t max_batch_size = 0;
  // A config the model folder already has: its fields are kept (inputs,
  // outputs, warm-up, ...) and only what the winner decides is replaced.
  std::optional<inference::ModelConfig> base;
  // The instance kind written (KIND_CPU when tuning on the CPU provider). A
  // base config's single instance group keeps its kind unless it contradicts
  // this one (CPU against a GPU kind), and its other fields (gpus, name).
  inference::ModelInstanceGroup::Kind instance_kind = inference::ModelInstanceGroup::KIND_GPU;
  // serve's precision_budget parameter for a converted precision (fp16,
  // mixed): the accuracy budget tune judged it with, so serve's check at
  // load uses the same one; "" leaves serve's default.
  std::string precision_budget;
  // Comment lines written above the fields, without the leading "# ".
  std::vector<std::string> comments;
};

// The winner as a model configuration: max_batch_size; dynamic_batching with
// preferred_batch_size [batch] and max_queue_delay_microseconds (batching
// models only); instance_group [{count, instance_kind}]; the CUDA accelerator's
// parameters that differ from ORT's defaults (prefer_nhwc, enable_cuda_graph,
// cudnn_conv_algo_search, fuse_conv_bias); and serve's model parameters:
// precision (all but tf32, ORT's default) and precision_budget (converted
// precisions, when given), pad_to_preferred_batch_size ("true", or "false" on
// GPU instances, where serve pads by default), adaptive_padding ("false"
// when the winner pads every batch), workers_per_instance (when not serve's
// default).
inference::ModelConfig TunedModelConfig(const ServedCandidate& winner, const ConfigWriterOptions& options);

// The comments, then TunedModelConfig in text format.
std::string TunedConfigPbtxt(const ServedCandidate& winner, const ConfigWriterOptions& options);

}  // namespace ortgpu::tune
