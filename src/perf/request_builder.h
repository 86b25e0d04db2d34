// Request building for `ortgpu perf`: what the served model takes (from
// GET /v2/models/M and, for max_batch_size, GET /v2/models/M/config), the
// input tensors bench would generate for it (bench/inputs.h: --shape,
// --int-range, --input FILE.npy|.pb), and those tensors encoded ONCE as the
// complete bytes of one HTTP/1.1 KServe v2 infer request, which the load
// client then writes unchanged for every request.
//
// Wire format: binary tensors by default (Triton's binary tensor extension:
// a JSON header of Inference-Header-Content-Length bytes, then each input's
// raw bytes; outputs asked for in binary too, so the server spends no time
// printing floats), or everything in JSON with TensorFormat::kJson.
// Pure functions apart from FetchModelInfo; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "bench/inputs.h"
#include "ort/session.h"
#include "ort/tensor.h"
#include "perf/http_fetch.h"
#include "status/expected.h"

namespace ortgpu::perf {

enum class TensorFormat { kBinary, kJson };

// What the server says about the model.
struct ModelInfo {
  std::string name;
  std::string version;  // "" asks for the server's default (latest READY)
  std::string platform;
  std::vector<TensorInfo> inputs;  // KServe shapes: -1 for a variable dim (the batch dim included)
  std::vector<std::string> outputs;
  int64_t max_batch_size = 0;  // 0: the model does not batch (or the server has no config endpoint)
  std::string config_json;     // GET .../config's body; "" when the server has none
};

// Parses the metadata JSON ({"name","platform","inputs":[{"name","datatype","shape"}],"outputs"})
// and, when non-empty, the config JSON ({"max_batch_size": N, ...}). Errors
// name what is missing or not understood (a datatype KServe does not define).
Expected<ModelInfo> ParseModelInfo(const std::string& metadata_json, const std::string& config_json);

// GETs the metadata (404 -> NotFound naming the model and where to look)
// and the config (its absence is not an error: max_batch_size stays 0).
Expected<ModelInfo> FetchModelInfo(const HttpEndpoint& endpoint, const std::string& model, const std::string& version,
                                   std::chrono::milliseconds timeout);

// "/v2/models/M[/versions/V]" + suffix ("/infer", "/stats", "").
std::string ModelPath(const std::string& model, const std::string& version, const std::string& suffix);

// The input tensors for `rows` rows per request: bench::MakeInputs over the
// model's inputs. For a batching model (max_batch_size > 0) the first dim is
// the batch and gets `rows`. REQUIRES: rows >= 1.
Expected<std::vector<Tensor>> MakeRequestInputs(const ModelInfo& model, const bench::InputSpec& spec, int64_t rows);

// One complete request: `head` (request line and headers, ending in the
// blank line) and `body`, written together as a two-buffer sequence.
struct EncodedRequest {
  std::string head;
  std::string body;
  std::string json_header;  // the JSON part of the body (all of it with kJson), for tests and --verbose
};

// Where a tensor lives in a registered shared memory region (Triton's
// shared_memory_region, shared_memory_offset, shared_memory_byte_size).
struct RegionRef {
  std::string region;
  uint64_t offset = 0;
  uint64_t byte_size = 0;
};
// perf's --shared-memory: each input's and each output's region (outputs in
// the order of ModelInfo::outputs).
struct SharedMemoryPlan {
  std::vector<RegionRef> inputs;
  std::vector<RegionRef> outputs;
};

// Encodes POST {ModelPath}/infer for `inputs`, asking for every output of
// `model` in the same format. `host` is the Host header value. With `shm`
// every input and output names its region instead (a JSON body with no
// tensor data; `format` does not apply). Errors: a tensor whose bytes do not
// match its shape.
Expected<EncodedRequest> EncodeInferRequest(const ModelInfo& model, const std::vector<Tensor>& inputs, TensorFormat format,
                                            const std::string& host, const SharedMemoryPlan* shm = nullptr);
// The "parameters" object of a tensor in `ref`'s region, as JSON text.
std::string SharedMemoryParametersJson(const RegionRef& ref);

}  // namespace ortgpu::perf
