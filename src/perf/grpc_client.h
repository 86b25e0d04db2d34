// GrpcLoadClient: the gRPC load generator behind `ortgpu perf -i grpc`
// (perf_analyzer's name for it): the same closed and open loops as the HTTP
// LoadClient (client.h), sending one pre-built inference.ModelInferRequest
// (raw_input_contents, encoded once) over the KServe v2 gRPC service with
// gRPC's callback API. `connections` calls are outstanding at once in the
// closed loop; they are spread over `threads` channels, each its own HTTP/2
// connection. A call is not allocated anything but its ClientContext and
// response.
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

// The ModelInferRequest for `inputs`: raw_input_contents in input order
// (BYTES in Triton's length-prefixed form), every output of `model` asked
// for. Errors: a tensor whose bytes do not match its shape.
Expected<inference::ModelInferRequest> EncodeGrpcInferRequest(const ModelInfo& model, const std::vector<Tensor>& inputs);

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
