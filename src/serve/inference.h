// The inference request and response as the server core sees them: decoded,
// protocol-neutral. The HTTP/KServe layer (serve/protocol/) turns wire bytes
// into InferRequest and InferResponse back into bytes; the model repository
// and scheduler (serve/repository/, serve/scheduler/) execute them.
//
// Plain value types; an InferRequest is owned by whoever holds it and is
// moved, never shared, between threads.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ort/tensor.h"
#include "status/expected.h"

namespace ortgpu::serve {

// A request parameter value as KServe allows it (bool, int64, double, string),
// kept as its JSON text.
using Parameters = std::map<std::string, std::string>;

struct RequestedOutput {
  std::string name;
  bool binary_data = false;  // Triton binary tensor extension
  Parameters parameters;
};

struct InferRequest {
  std::string model_name;
  std::string model_version;  // "" means the policy's latest ready version
  std::string id;             // echoed back in the response
  std::vector<Tensor> inputs;
  std::vector<RequestedOutput> outputs;  // empty: all outputs
  bool binary_data_output = false;       // request-level default for outputs
  Parameters parameters;
  // Inputs whose bytes are in a registered shared memory region (Triton's
  // shared memory extension), by input name: their parameters
  // (shared_memory_region, shared_memory_offset, shared_memory_byte_size).
  // The front end fills those tensors' data before the core sees them.
  std::map<std::string, Parameters> shared_memory_inputs;
  // Outputs the client placed in a CUDA shared memory region, by name: the
  // device memory they go to (the region's address at the offset, its GPU,
  // shared_memory_byte_size bytes; the region as owner). When every request
  // of a batch has one for an output, a GPU instance writes it there device
  // to device and returns it as a placeholder (Tensor::device set, no
  // bytes); otherwise the front end writes it from the host as usual.
  std::map<std::string, DeviceView> device_outputs;
  // On the scheduler's Clock (ServerDeps::clock, steady_clock by default):
  // once it passes, the request is answered DeadlineExceeded without running
  // if it has not started. 0: no deadline.
  int64_t deadline_ns = 0;
  // Set (to true) by the front end once nobody waits for the answer any
  // more: the client's connection closed, or the server's drain timeout
  // passed and the client got its 503. A request still queued is then
  // answered Cancelled without running. Null: never cancelled.
  std::shared_ptr<const std::atomic<bool>> cancelled;
  bool is_cancelled() const { return cancelled && cancelled->load(std::memory_order_relaxed); }
};

struct InferResponse {
  std::string model_name;
  std::string model_version;
  std::string id;
  std::vector<Tensor> outputs;
  std::vector<bool> output_binary;  // per output: send as binary section
  // Per output (missing entries: none): parameters to send with it; an
  // output with shared_memory_region was written into that region and is
  // sent without its data.
  std::vector<Parameters> output_parameters;
  Parameters parameters;
};

// Called exactly once per request, from a worker thread, with the response
// or the Status explaining the failure.
using InferCallback = std::function<void(Expected<InferResponse>)>;

}  // namespace ortgpu::serve
