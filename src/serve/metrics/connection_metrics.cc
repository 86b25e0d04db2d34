#include "serve/metrics/connection_metrics.h"

namespace ortgpu::serve {

ConnectionEvents ConnectionMetrics(Metrics& metrics) {
  auto& refused = prometheus::BuildCounter()
                      .Name("ortgpu_http_connections_refused_total")
                      .Help("HTTP connections refused: over --max-connections, or accept() failed (out of file "
                            "descriptors or memory)")
                      .Register(metrics.registry());
  auto& open = prometheus::BuildGauge()
                   .Name("ortgpu_http_connections_open")
                   .Help("HTTP connections open now")
                   .Register(metrics.registry());
  // Created up front: both series show 0 before the first refusal.
  prometheus::Counter* over_limit = &refused.Add({{"reason", "max_connections"}});
  prometheus::Counter* accept_failed = &refused.Add({{"reason", "accept_failed"}});
  prometheus::Gauge* open_now = &open.Add({});
  ConnectionEvents events;
  events.refused = [over_limit, accept_failed](std::string_view reason) {
    (reason == "max_connections" ? over_limit : accept_failed)->Increment();
  };
  events.open = [open_now](int64_t n) { open_now->Set(static_cast<double>(n)); };
  return events;
}

}  // namespace ortgpu::serve
