// GrpcLoadClient: the gRPC load generator behind `ortgpu perf -i grpc`
// (perf_analyzer's name for it): the same closed and open loops as the HTTP
// LoadClient (client.h), sending one pre-built inference.ModelInferRequest
// (raw_input_contents, serialized once: every call sends the same bytes by
// reference) over the KServe v2 gRPC service with gRPC's callback API, or
// blocking calls for small closed loops (below). Responses are not parsed:
// a completion needs the call's status only.
// `connections` calls are outstanding at once in the closed loop, each on a
// channel (an HTTP/2 connection) of its own up to kMaxGrpcChannels, beyond
// which they share them round-robin; gRPC's own threads run the callbacks
// (`threads` is not used). A call is not allocated anything but its
// ClientContext.
//
// Completion::status: 200 for OK, kTimeout for DEADLINE_EXCEEDED (the
// client's request_timeout), kTransportError for UNAVAILABLE (no
// connection), kGrpcStatusBase + the gRPC code otherwise.
// Thread-safety: as LoadClient (Start, TakeCompletions, Stop from one
// thread); gRPC's threads run the completions.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "grpc_service.pb.h"
#include "perf/client.h"
#include "perf/request_builder.h"

namespace ortgpu::perf {

// Completion::status of a failed gRPC call: this plus its grpc::StatusCode.
inline constexpr int kGrpcStatusBase = 1000;
// Closed loops of at most this many connections make blocking calls, each
// on a thread of its own (the lowest latency: gRPC reads the response on the
// calling thread); larger ones and open loops use gRPC's callback API on
// one channel per connection up to kMaxGrpcChannels.
inline constexpr int kBlockingCallsMaxConcurrency = 16;
inline constexpr int kMaxGrpcChannels = 64;

// The ModelInferRequest for `inputs`: raw_input_contents in input order
// (BYTES in Triton's length-prefixed form), every output of `model` asked
// for; with `shm`, each input and output names its region instead (no raw
// contents). Errors: a tensor whose bytes do not match its shape.
Expected<inference::ModelInferRequest> EncodeGrpcInferRequest(const ModelInfo& model, const std::vector<Tensor>& inputs,
                                                              const SharedMemoryPlan* shm = nullptr);

class GrpcLoadClient : public LoadGenerator {
 public:
  // Opens the channels to `target` ("HOST:PORT") and starts sending.
  // REQUIRES: connections, threads >= 1.
  static Expected<std::unique_ptr<GrpcLoadClient>> Start(const std::string& target,
                                                         inference::ModelInferRequest request,
                                                         const ClientOptions& options);
  ~GrpcLoadClient() override;

  void TakeCompletions(std::vector<Completion>& out) override;
  int64_t completed() const override;
  bool WaitForCompleted(int64_t n, std::chrono::milliseconds timeout) override;
  std::string first_transport_error() const override;
  void Stop(std::chrono::milliseconds drain) override;

  struct State;  // grpc_client.cc

 private:
  GrpcLoadClient() = default;
  std::shared_ptr<State> state_;
};

}  // namespace ortgpu::perf
