// The HTTP acceptor's events (serve/http/connection_limits.h) as Prometheus
// series in the server's Metrics registry:
//   ortgpu_http_connections_refused_total{reason}  counter; reason is
//       "max_connections" (over --max-connections) or "accept_failed"
//       (accept() failed: out of file descriptors or memory)
//   ortgpu_http_connections_open                   gauge
// The returned callbacks are thread-safe and must not outlive `metrics`.
#pragma once

#include "serve/http/connection_limits.h"
#include "serve/metrics/metrics.h"

namespace ortgpu::serve {

ConnectionEvents ConnectionMetrics(Metrics& metrics);

}  // namespace ortgpu::serve
