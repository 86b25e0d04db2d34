// MetricsServer: a small HTTP listener that serves Metrics::Serialize() at
// GET /metrics (Prometheus text format 0.0.4) on its own port, apart from
// the inference port so scrapes never queue behind inference traffic.
//
// One network thread; each connection gets one response and is closed.
// Thread-safety: port() and Stop() may be called from any thread.
// REQUIRES: `metrics` outlives the MetricsServer.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "serve/front_end_defaults.h"
#include "serve/http/request_access.h"
#include "serve/metrics/metrics.h"
#include "status/expected.h"

namespace ortgpu::serve {

struct MetricsServerOptions {
  std::string host = kDefaultHost;
  uint16_t port = kDefaultMetricsPort;  // 0: any free port
  std::chrono::milliseconds read_timeout{10'000};  // a scrape request must arrive within this
  // The Host and Origin checks of the HTTP endpoint (request_access.h), so a
  // web page cannot read the metrics either; the token does not apply.
  AccessOptions access;
};

class MetricsServer {
 public:
  // Binds and starts serving. Unavailable when the address cannot be bound.
  static Expected<std::unique_ptr<MetricsServer>> Start(const Metrics& metrics, MetricsServerOptions options);
  ~MetricsServer();  // Stop()
  MetricsServer(const MetricsServer&) = delete;
  MetricsServer& operator=(const MetricsServer&) = delete;

  uint16_t port() const;
  // Closes the listener and open connections; joins the thread. Idempotent.
  void Stop();

  struct State;

 private:
  explicit MetricsServer(std::shared_ptr<State> state);
  std::shared_ptr<State> state_;
};

}  // namespace ortgpu::serve
