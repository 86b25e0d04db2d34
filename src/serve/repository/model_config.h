// Model configuration: Triton's config.pbtxt (inference::ModelConfig, from
// proto/serve/model_config.proto) as ortgpu reads, completes and checks it.
//
// Parsing keeps going past fields ortgpu does not know or does not honour and
// returns them as warnings (the server logs them); a syntax error is an
// InvalidArgument naming the line and column. Pure functions over values;
// thread-safe.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>


#include "model_config.pb.h"
#include "ort/session.h"
#include "ort/session_options.h"
#include "status/expected.h"

namespace ortgpu::serve {

struct ParsedConfig {
  inference::ModelConfig config;
  // "config.pbtxt:7:3: unknown field 'foo' ignored", "field 'sequence_batching' is not honoured by ortgpu ...".
  std::vector<std::string> warnings;
};

// Parses protobuf text format. `label` names the file in messages
// ("models/resnet/config.pbtxt").
Expected<ParsedConfig> ParseModelConfig(std::string_view text, const std::string& label);

// Warnings for fields that are set and valid but that ortgpu ignores
// (sequence_batching, optimization.cuda, ...). Called by ParseModelConfig.
std::vector<std::string> UnhonouredFieldWarnings(const inference::ModelConfig& config);

// Defaults used when config.pbtxt is absent or silent (Triton's ORT
// backend auto-complete).
struct CompletionOptions {
  // max_batch_size given to a model whose inputs and outputs all start with a
  // variable dimension, when the config does not set one; dynamic_batching is
  // then enabled with its defaults.
  int default_max_batch_size = 4;
};

// What the user wrote, beyond what the parsed config shows (proto3 does not
// tell an absent max_batch_size from `max_batch_size: 0`).
struct ConfigGiven {
  bool file = false;            // a config.pbtxt exists (or --config FILE)
  bool max_batch_size = false;  // it sets max_batch_size, 0 included
};

// Whether config.pbtxt text sets max_batch_size (a field line, not a comment).
bool SetsMaxBatchSize(std::string_view config_text);

// Fills in what the config leaves out from the ONNX model's own inputs and
// outputs, as Triton's ONNX Runtime backend does, with or without a
// config.pbtxt: every input and output the config does not list, the
// data_type and dims of those it lists without them, and max_batch_size
// (options.default_max_batch_size, with dynamic_batching) when the config
// does not set it, every model input and output has a variable first dim and
// every dims the config gives leave that dim out. Then checks the config
// against the model: every configured tensor exists with the same type, dims
// agree, max_batch_size > 0 only when the model has a variable first
// dimension. The message of an error names the tensor and says what to
// change in config.pbtxt. `completed` (nullable) receives what was filled
// in, for the start-up summary ("max_batch_size 4 with dynamic_batching",
// "inputs x, sr").
Status CompleteConfig(const std::vector<TensorInfo>& model_inputs, const std::vector<TensorInfo>& model_outputs,
                      ConfigGiven given, const CompletionOptions& options, inference::ModelConfig& config,
                      std::vector<std::string>* completed = nullptr);

// Conversions between the config's TYPE_* enum and ortgpu's DataType.
DataType FromConfigType(inference::DataType t);
inference::DataType ToConfigType(DataType t);

// Where the config asks for CUDA graphs (optimization.cuda.graphs, or
// enable_cuda_graph in the cuda accelerator's parameters or in parameters),
// as the text to name in messages; "" when it does not. The loader honours
// the request on GPU instances whose batches are padded to a few fixed
// sizes (one graph per padded size and worker) and warns otherwise.
std::string CudaGraphRequest(const inference::ModelConfig& config);

// The ORT graph optimization level of optimization { graph { level } }, as
// Triton's ONNX Runtime backend reads it: 0 or absent all, -1 basic, 1
// extended, 2 none. InvalidArgument for any other value.
Expected<OptimizationLevel> GraphOptimizationLevel(const inference::ModelConfig& config);

// The parameters block as a plain map (ModelParameter.string_value).
std::map<std::string, std::string> ConfigParameters(const inference::ModelConfig& config);

// true for "true", "1", "yes" (any case).
bool ParameterIsTrue(const std::string& value);

}  // namespace ortgpu::serve
