// The two streaming RPCs of the gRPC front end on GrpcCallQueues (the
// completion-queue API, no thread of gRPC's):
//
//   - ModelStreamInfer (Triton's bidirectional stream, non-decoupled
//     models): each request read is handed to the ModelInfer handler as it
//     arrives; each response is written as it completes (so in completion
//     order, each naming its request's id). A failed request is a response
//     with error_message and the stream goes on. The call finishes once the
//     client closed its side and every response was written; a client that
//     goes away drops the responses still to come.
//   - grpc.health.v1.Health/Watch: the serving status at once, then again
//     each time it changes (looked at every `poll`); SERVICE_UNKNOWN for a
//     service the server does not have, without ending the call (the health
//     protocol's rule). The call lasts until the client cancels it or the
//     server shuts down.
//
// Threads: the events of a call arrive on the poller of its queue; a stream
// response is written from whichever thread completes its inference.
#pragma once

#include <chrono>
#include <functional>
#include <string>

#include "grpc_service.grpc.pb.h"
#include "health.grpc.pb.h"
#include "serve/grpc/grpc_call_queues.h"

namespace ortgpu::serve {

using InferHandler = UnaryMethod<inference::ModelInferRequest, inference::ModelInferResponse>::Handler;
using HealthStatus = grpc::health::v1::HealthCheckResponse::ServingStatus;

GrpcCallQueues::Method StreamInferRpc(GrpcCallQueues& queues, inference::GRPCInferenceService::AsyncService& service,
                                      InferHandler handler);

// `status` gives the serving status of a service name ("" is the server);
// it runs on the pollers.
GrpcCallQueues::Method HealthWatchRpc(GrpcCallQueues& queues, grpc::health::v1::Health::AsyncService& service,
                                      std::function<HealthStatus(const std::string& service)> status,
                                      std::chrono::milliseconds poll);

}  // namespace ortgpu::serve
