// GrpcLoadClient: the gRPC load generator behind `ortgpu perf -i grpc`
// (perf_analyzer's name for it): the same closed and open loops as the HTTP
// LoadClient (client.h), sending one pre-built inference.ModelInferRequest
// (raw_input_contents, serialized once: every call sends the same bytes by
// reference) over the KServe v2 gRPC service. Closed loops of up to
// kOnePollerPerCallMaxConcurrency calls (latency runs) use gRPC's
// asynchronous API on completion queues of the client's own threads, one
// per call (GrpcPollerThreads): each call's thread reads its response,
// records it and sends the next, over a gRPC direct channel on a connection
// the client opened (no resolver, balancer or retry layer per call); with
// ClientOptions::busy_poll the pollers never sleep. Larger closed loops and
// open loops (throughput runs) use gRPC's callback API on regular channels,
// whose threads (cores/2) run the completions: with 602 KB requests at 64
// connections it kept up better on the H200 than 4 pollers of the client's
// (docs/BENCHMARKS.md). Responses are not parsed: a completion needs the
// call's status only.
// `connections` calls are outstanding at once in the closed loop, each on a
// channel (an HTTP/2 connection) of its own up to kMaxGrpcChannels, beyond
// which they share them round-robin. A call is not allocated anything but
// its ClientContext.
//
// Completion::status: 200 for OK, kTimeout for DEADLINE_EXCEEDED (the
// client's request_timeout), kTransportError for UNAVAILABLE (no
// connection), kGrpcStatusBase + the gRPC code otherwise.
// Thread-safety: as LoadClient (Start, TakeCompletions, Stop from one
// thread); the pollers or gRPC's callback threads run the completions.
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
// Closed loops of at most this many connections get a poller thread per
// call (the lowest latency: nothing else is read on a call's thread).
inline constexpr int kOnePollerPerCallMaxConcurrency = 16;
inline constexpr int kMaxGrpcChannels = 64;

// The client's poller threads for `options`: one per call in closed loops
// of up to kOnePollerPerCallMaxConcurrency connections, else none (gRPC's
// callback API).
int GrpcPollerThreads(const ClientOptions& options);

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
