// ModelServer: what the protocol front end (serve/http/, serve/protocol/)
// asks of the server core (serve/repository/, serve/scheduler/). The front
// end owns sockets and wire formats; the core owns models, sessions, queues
// and statistics. Tests of the front end use a fake ModelServer; tests of the
// core call it directly.
//
// All methods are safe to call from any thread at any time, including during
// shutdown (they then answer Unavailable).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "model_config.pb.h"
#include "serve/inference.h"
#include "serve/scheduler/model_stats.h"
#include "status/expected.h"

namespace ortgpu::serve {

// A model version's lifecycle (Triton's model_lifecycle.h).
enum class ModelState { kLoading, kReady, kUnavailable, kUnloading };
std::string_view ModelStateName(ModelState s);  // "LOADING", "READY", ...

struct ModelVersionStatus {
  std::string name;
  std::string version;
  ModelState state = ModelState::kLoading;
  std::string reason;  // why UNAVAILABLE; "" otherwise
};

struct TensorMetadata {
  std::string name;
  std::string datatype;        // KServe name: "FP32"
  std::vector<int64_t> shape;  // -1 for a variable dimension; batch dim included when max_batch_size > 0
};

struct ModelMetadata {
  std::string name;
  std::vector<std::string> versions;
  std::string platform = "onnxruntime_onnx";
  std::vector<TensorMetadata> inputs;
  std::vector<TensorMetadata> outputs;
};

// Triton's load parameters (the model repository extension), as the front
// ends decoded them: a configuration that replaces the model's config.pbtxt
// for this load, and files that replace the model's folder.
struct ModelLoadParameters {
  // The "config" parameter: a ModelConfig in its JSON form (what GET
  // /v2/models/M/config returns); nullopt when not sent.
  std::optional<std::string> config_json;
  // The "file:<path>" parameters by <path> ("1/model.onnx"), their bytes
  // decoded (base64 over HTTP, bytes_param over gRPC). Non-empty: the model
  // is loaded from these files alone, and config_json is required.
  std::map<std::string, std::string> files;
  bool empty() const { return !config_json && files.empty(); }
};

class ModelServer {
 public:
  virtual ~ModelServer() = default;

  // Live: the process serves requests. Ready: live, and every model that
  // should be loaded is READY.
  virtual bool IsLive() const = 0;
  virtual bool IsReady() const = 0;

  // `version` "" means the latest ready version. NotFound for an unknown
  // model or version.
  virtual Expected<ModelMetadata> Metadata(const std::string& model, const std::string& version) const = 0;
  virtual Expected<bool> IsModelReady(const std::string& model, const std::string& version) const = 0;
  // The version's completed model configuration (each front end writes it
  // in its own form: TritonConfigJson over HTTP, the message over gRPC).
  virtual Expected<inference::ModelConfig> ModelConfig(const std::string& model, const std::string& version) const = 0;
  // The statistics extension's figures, one per version (model "": every
  // model; version "": every READY version of it).
  virtual Expected<std::vector<StatsSnapshot>> Statistics(const std::string& model, const std::string& version) const = 0;

  // The labels of an output (its config's label_filename, one per line),
  // for the classification extension; empty when it names none.
  virtual Expected<std::vector<std::string>> OutputLabels(const std::string& model, const std::string& version,
                                                          const std::string& output) const {
    return std::vector<std::string>{};
  }

  // Every model version known to the repository (Triton's repository index).
  virtual std::vector<ModelVersionStatus> RepositoryIndex(bool ready_only) const = 0;
  // Explicit model control; FailedPrecondition when not in explicit mode.
  // A (re)load with `parameters` applies them to this load only; a later
  // load without them reads the repository again. InvalidArgument, saying
  // why, for parameters that cannot be applied; what was serving then
  // keeps serving.
  virtual Status LoadModel(const std::string& model, const ModelLoadParameters& parameters) = 0;
  Status LoadModel(const std::string& model) { return LoadModel(model, ModelLoadParameters{}); }
  virtual Status UnloadModel(const std::string& model) = 0;

  // Queues the request; `done` is called exactly once, possibly before
  // Infer returns (an immediate error) or later from a worker thread.
  virtual void Infer(InferRequest request, InferCallback done) = 0;

  // The folders whose paths clients see relative to them (the model
  // repository); every message and reason the front end sends goes through
  // protocol::ClientText with these. Default: none (every absolute path is
  // reduced to its file name).
  virtual std::vector<std::string> ClientTextRoots() const { return {}; }
};

}  // namespace ortgpu::serve
