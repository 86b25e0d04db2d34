// The defaults that several front ends of `ortgpu serve` share, defined once.
// HttpOptions, GrpcOptions, MetricsServerOptions and EndpointRequest start
// from these; serve's --host, --max-body-bytes and --request-timeout-ms set
// the HTTP values, and Server hands them to the gRPC and metrics listeners,
// so one flag sets every front end. Triton's well-known ports.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>

namespace ortgpu::serve {

inline constexpr const char* kDefaultHost = "127.0.0.1";
inline constexpr uint16_t kDefaultHttpPort = 8000;
inline constexpr uint16_t kDefaultGrpcPort = 8001;
inline constexpr uint16_t kDefaultMetricsPort = 8002;
// The largest request body (HTTP, after decompression) or message (gRPC).
inline constexpr size_t kDefaultMaxBodyBytes = size_t{64} << 20;
// An inference not answered within this is dropped (504, DEADLINE_EXCEEDED).
inline constexpr std::chrono::milliseconds kDefaultRequestTimeout{60'000};
// How long network threads and instance workers poll for work after their
// last before they sleep (serve --busy-poll-us; BusyPoll says when they do).
inline constexpr std::chrono::microseconds kDefaultBusyPoll{200};

}  // namespace ortgpu::serve
