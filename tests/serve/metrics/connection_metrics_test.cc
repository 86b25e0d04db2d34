// The acceptor's events as Prometheus series (issue 11: refused connections
// are counted, so running out of descriptors shows on a dashboard).
#include "serve/metrics/connection_metrics.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace ortgpu::serve {
namespace {

using ::testing::HasSubstr;

TEST(ConnectionMetricsTest, RefusalsAreCountedByReasonAndOpenConnectionsAreAGauge) {
  Metrics metrics;
  ConnectionEvents events = ConnectionMetrics(metrics);
  const std::string before = metrics.Serialize();
  EXPECT_THAT(before, HasSubstr(R"(ortgpu_http_connections_refused_total{reason="accept_failed"} 0)"));
  EXPECT_THAT(before, HasSubstr(R"(ortgpu_http_connections_refused_total{reason="max_connections"} 0)"));
  events.refused("accept_failed");
  events.refused("accept_failed");
  events.refused("max_connections");
  events.open(7);
  const std::string after = metrics.Serialize();
  EXPECT_THAT(after, HasSubstr(R"(ortgpu_http_connections_refused_total{reason="accept_failed"} 2)"));
  EXPECT_THAT(after, HasSubstr(R"(ortgpu_http_connections_refused_total{reason="max_connections"} 1)"));
  EXPECT_THAT(after, HasSubstr("ortgpu_http_connections_open 7"));
}

}  // namespace
}  // namespace ortgpu::serve
