// GrpcServer: the KServe v2 gRPC front end of `ortgpu serve`
// (inference.GRPCInferenceService from Triton's grpc_service.proto, plus
// grpc.health.v1.Health), beside the HTTP one and over the same ModelServer:
// the same core, batcher, queue cap and status mapping (GrpcCodeFor). RPCs
// and codes: docs/PROTOCOL.md.
//
// Threads (docs/ARCHITECTURE.md): every RPC is read, decoded and handled
// by the pollers of GrpcCallQueues (`poller_threads`, gRPC's completion-queue
// API), which are the only threads that read gRPC's sockets; gRPC's callback
// and sync APIs, which bring threads of gRPC's own, are not used. No thread
// waits for an inference. The instance worker that completes an infer
// encodes a small response and completes the call itself; a large one it
// posts to a small pool owned here (`threads`), and returns to the GPU.
// Model load/unload run on a one-thread blocking pool.
//
// Lifecycle: Start() -> serving -> BeginDrain() (ServerReady false, new
// infers UNAVAILABLE) -> WaitIdle() -> Stop() (cancels what is left, waits
// for every call to be completed, joins the pools). The destructor calls
// Stop().
//
// Thread-safety: every public method may be called from any thread.
// REQUIRES: the ModelServer and RuntimeSettings outlive the GrpcServer, and
// the ModelServer completes every infer it accepted (ServerCore::Shutdown
// does): Stop() waits for those completions.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "serve/front_end_defaults.h"
#include "serve/model_server.h"
#include "serve/runtime_settings.h"
#include "status/expected.h"

namespace ortgpu::serve {

struct GrpcOptions {
  std::string host = kDefaultHost;
  uint16_t port = kDefaultGrpcPort;  // 0: any free port (GrpcServer::port() reports it)
  // Largest request message accepted (RESOURCE_EXHAUSTED beyond it): the
  // HTTP body limit, --max-body-bytes.
  size_t max_message_bytes = kDefaultMaxBodyBytes;
  // An infer is dropped unrun (DEADLINE_EXCEEDED) once the earlier of the
  // client's deadline and this passes; 0: only the client's deadline.
  std::chrono::milliseconds request_timeout = kDefaultRequestTimeout;
  // Threads that encode large infer responses and complete the calls
  // (small ones are completed by the thread that ran the inference).
  int threads = 2;
  // Threads that poll the completion queues, each reading, decoding and
  // handling the calls that arrive on its queue (GrpcCallQueues), and how
  // long each keeps polling after an event before it blocks while requests
  // do not overlap (0: block at once; serve --busy-poll-us). 0:
  // DefaultGrpcPollers().
  int poller_threads = 0;
  std::chrono::microseconds busy_poll = kDefaultBusyPoll;
  // With a token (--auth-token-file) the repository, logging, trace and
  // shared-memory register/unregister RPCs need the metadata
  // "authorization: Bearer <token>" (UNAUTHENTICATED otherwise), as their
  // HTTP endpoints need the header.
  std::string auth_token;
  // How often a grpc.health.v1.Health/Watch stream looks at the serving
  // status (it sends the status each time it changed).
  std::chrono::milliseconds health_watch_poll{1000};
};

// The gRPC pollers when GrpcOptions::poller_threads is 0: one per four
// hardware threads, 1 to 4. Calls of one connection land on every poller's
// queue in turn, and the poller that read a call wakes the one it landed on:
// on the 2-core build machine one lone client's calls took 87-112 us with
// one poller against 137-174 us with two (docs/BENCHMARKS.md), so small
// machines get one; large ones keep four for the throughput of many
// connections.
int DefaultGrpcPollers();

class GrpcServer {
 public:
  // Binds host:port and starts serving. Unavailable naming the address when
  // it cannot be bound.
  static Expected<std::unique_ptr<GrpcServer>> Start(ModelServer& server, RuntimeSettings& settings,
                                                     GrpcOptions options);
  ~GrpcServer();
  GrpcServer(const GrpcServer&) = delete;
  GrpcServer& operator=(const GrpcServer&) = delete;

  uint16_t port() const;
  // From now on ServerReady/health answer not ready and new infers get
  // UNAVAILABLE; calls in flight go on. Idempotent.
  void BeginDrain();
  // Waits until no infer is in flight or `timeout` passes; true when idle.
  bool WaitIdle(std::chrono::milliseconds timeout);
  // Stops the server (see the header comment). Idempotent.
  void Stop();
  // Infers accepted and not yet completed (streamed ones included).
  int in_flight() const;

  struct State;  // shared with the calls; defined in grpc_server.cc

 private:
  GrpcServer() = default;
  std::shared_ptr<State> state_;
};

}  // namespace ortgpu::serve
