// libFuzzer target over config.pbtxt handling: the protobuf text-format
// parse with ortgpu's error text, the warnings about fields not honoured,
// the JSON rendering of the config endpoint, and the readers the loader
// applies to a parsed config (parameters, the CUDA graphs request), then the
// completion against a fixed model signature. Every input must end in a
// Status: no crash, no sanitizer report.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include <google/protobuf/stubs/logging.h>

#include "serve/config_json.h"
#include "serve/repository/model_config.h"

// Protobuf logs (to stderr) each string field that is not UTF-8 when the
// config is rendered as JSON; thousands of such lines would bury a crash.
extern "C" int LLVMFuzzerInitialize(int*, char***) {
  google::protobuf::SetLogHandler(nullptr);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ortgpu;
  using namespace ortgpu::serve;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto parsed = ParseModelConfig(text, "config.pbtxt");
  if (!parsed.ok()) return 0;
  inference::ModelConfig& config = parsed->config;
  (void)UnhonouredFieldWarnings(config);
  (void)TritonConfigJson(config);  // what GET /v2/models/M/config writes
  (void)ConfigParameters(config);
  (void)CudaGraphRequest(config);
  TensorInfo x;
  x.name = "x";
  x.dtype = DataType::kFloat;
  x.shape = {-1, 4};
  x.is_tensor = true;
  TensorInfo y = x;
  y.name = "y";
  const ConfigGiven given{/*file=*/true, /*max_batch_size=*/SetsMaxBatchSize(text)};
  (void)CompleteConfig({x}, {y}, given, CompletionOptions{}, config);
  return 0;
}
