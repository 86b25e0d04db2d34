// AsyncInferQueues: ModelInfer through gRPC's completion-queue API, the
// latency-critical RPC of the gRPC front end (GrpcServer). Every other RPC
// uses gRPC's callback API; gRPC's performance guide notes the callback API
// is slower than the completion-queue one for high-rate workloads, and on
// the H200 a 1-connection tiny-MLP call through it cost ~220 us more than
// the same call over HTTP (docs/BENCHMARKS.md). Here the threads that poll
// the queues also read the call, decode it and hand it to the core, so a
// call's arrival wakes one thread, not a poller and then a callback thread.
//
// Threads: `threads` pollers, each on a completion queue of its own with a
// few calls requested on it; with `busy_poll` > 0 a poller keeps polling its
// queue that long after each event before it blocks (serve --busy-poll-us).
// A call is answered with Finish from whichever thread completes it (the
// instance worker or GrpcServer's encoding pool).
//
// Lifecycle: construct before ServerBuilder::BuildAndStart (it adds the
// queues), Start() after, Stop() after Server::Shutdown returned and every
// call handed to the handler was answered; the destructor calls Stop().
// Thread-safety: Start and Stop from one thread; the rest is internal.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <shared_mutex>
#include <thread>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "grpc_service.grpc.pb.h"
#include "status/expected.h"

namespace ortgpu::serve {

namespace grpc_methods {
using G = inference::GRPCInferenceService;
// Triton's GRPCInferenceService with ModelInfer on the completion-queue API
// and every other method on the callback API (the generated CallbackService
// with one link of its chain swapped).
using InferenceServiceBase = G::WithCallbackMethod_ServerLive<G::WithCallbackMethod_ServerReady<
    G::WithCallbackMethod_ModelReady<G::WithCallbackMethod_ServerMetadata<G::WithCallbackMethod_ModelMetadata<
        G::WithAsyncMethod_ModelInfer<G::WithCallbackMethod_ModelStreamInfer<G::WithCallbackMethod_ModelConfig<
            G::WithCallbackMethod_ModelStatistics<G::WithCallbackMethod_RepositoryIndex<
                G::WithCallbackMethod_RepositoryModelLoad<G::WithCallbackMethod_RepositoryModelUnload<
                    G::WithCallbackMethod_SystemSharedMemoryStatus<G::WithCallbackMethod_SystemSharedMemoryRegister<
                        G::WithCallbackMethod_SystemSharedMemoryUnregister<G::WithCallbackMethod_CudaSharedMemoryStatus<
                            G::WithCallbackMethod_CudaSharedMemoryRegister<
                                G::WithCallbackMethod_CudaSharedMemoryUnregister<G::WithCallbackMethod_TraceSetting<
                                    G::WithCallbackMethod_LogSettings<G::Service>>>>>>>>>>>>>>>>>>>>;
}  // namespace grpc_methods

class AsyncInferQueues {
 public:
  // Answers a call: exactly once, from any thread.
  using Done = std::function<void(const Status&)>;
  // Handles one ModelInfer call. `request` is the call's (its contents may
  // be moved out); `response` must be filled before `done(Ok)`; both live
  // until done is called.
  using Handler = std::function<void(::grpc::ServerContext& ctx, inference::ModelInferRequest& request,
                                     inference::ModelInferResponse* response, Done done)>;

  // Adds `threads` (>= 1) completion queues to `builder`.
  AsyncInferQueues(::grpc::ServerBuilder& builder, int threads, std::chrono::microseconds busy_poll);
  ~AsyncInferQueues();
  AsyncInferQueues(const AsyncInferQueues&) = delete;
  AsyncInferQueues& operator=(const AsyncInferQueues&) = delete;

  // Requests calls of `service` (registered with the builder, built and
  // started) and starts the pollers. REQUIRES: service outlives Stop().
  void Start(grpc_methods::InferenceServiceBase& service, Handler handler);
  // Shuts the queues down, deletes the calls never answered by then (none,
  // when the REQUIRES above hold) and joins the pollers. Idempotent.
  void Stop();

  int threads() const { return static_cast<int>(queues_.size()); }

  class Call;  // one call's state (grpc_async_infer.cc)

 private:
  void Poll(::grpc::ServerCompletionQueue& cq);
  // Requests the next call on `cq`, unless the queues are closing.
  void Request(::grpc::ServerCompletionQueue& cq);

  std::vector<std::unique_ptr<::grpc::ServerCompletionQueue>> queues_;
  std::chrono::microseconds busy_poll_;
  grpc_methods::InferenceServiceBase* service_ = nullptr;
  Handler handler_;
  // Held shared by whoever starts an operation on a queue, exclusively by
  // Stop while it marks them closed (no operation may start on a queue that
  // is shut down).
  std::shared_mutex closing_;
  bool closed_ = false;  // guarded by closing_
  std::vector<std::thread> pollers_;
  bool started_ = false;
};

}  // namespace ortgpu::serve
