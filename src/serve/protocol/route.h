// KServe v2 / Triton URL routing: a request target ("/v2/models/m/infer")
// mapped to the endpoint it names, with the model name and version taken
// from the path, percent-decoded and checked.
//
// Pure function; safe to call from any thread.
//
// Model names are used by the repository as directory names, so a name that
// could walk the filesystem is refused before any lookup: empty, ".", "..",
// containing '/', '\\', NUL or a control character (also when
// percent-encoded, e.g. "%2e%2e" or "%2F"), or longer than 255 bytes.
// Versions are decimal integers ("1", "42").
#pragma once

#include <string>
#include <string_view>

#include "status/expected.h"

namespace ortgpu::serve::protocol {

enum class Endpoint {
  kHealthLive,        // GET  /v2/health/live
  kHealthReady,       // GET  /v2/health/ready
  kServerMetadata,    // GET  /v2
  kModelMetadata,     // GET  /v2/models/{m}[/versions/{v}]
  kModelReady,        // GET  /v2/models/{m}[/versions/{v}]/ready
  kModelConfig,       // GET  /v2/models/{m}[/versions/{v}]/config
  kModelStats,        // GET  /v2/models/{m}[/versions/{v}]/stats
  kAllModelStats,     // GET  /v2/models/stats
  kInfer,             // POST /v2/models/{m}[/versions/{v}]/infer
  kRepositoryIndex,   // POST /v2/repository/index
  kRepositoryLoad,    // POST /v2/repository/models/{m}/load
  kRepositoryUnload,  // POST /v2/repository/models/{m}/unload
  kLogging,           // GET|POST /v2/logging
  kTraceSetting,      // GET|POST /v2/trace/setting; with a model: /v2/models/{m}[/versions/{v}]/trace/setting
  kSystemShmStatus,      // GET  /v2/systemsharedmemory[/region/{r}]/status
  kSystemShmRegister,    // POST /v2/systemsharedmemory/region/{r}/register
  kSystemShmUnregister,  // POST /v2/systemsharedmemory[/region/{r}]/unregister
  kCudaShmStatus,        // GET  /v2/cudasharedmemory[/region/{r}]/status
  kCudaShmRegister,      // POST /v2/cudasharedmemory/region/{r}/register
  kCudaShmUnregister,    // POST /v2/cudasharedmemory[/region/{r}]/unregister
};

// "model_metadata", for logs.
std::string_view EndpointName(Endpoint e);

struct Route {
  Endpoint endpoint = Endpoint::kHealthLive;
  // The method the endpoint takes: "GET", "POST", or "GET, POST" for the
  // settings endpoints (also the value of a 405's Allow header).
  std::string method;
  bool AllowsMethod(std::string_view m) const {
    return m == method || (method == "GET, POST" && (m == "GET" || m == "POST"));
  }
  std::string model;    // decoded; "" when the endpoint has none
  std::string version;  // decoded; "" when absent
  std::string region;   // shared memory endpoints: the region name, "" for all
};

// Maps `target` (path plus optional "?query", which is ignored). The method
// is not checked here: the caller compares it with Route::method (405).
// NotFound for a path that is no endpoint; InvalidArgument for a bad model
// name, version or percent-encoding.
Expected<Route> MatchRoute(std::string_view target);

// Checks a decoded model name against the rules above.
Status ValidateModelName(std::string_view name);

}  // namespace ortgpu::serve::protocol
