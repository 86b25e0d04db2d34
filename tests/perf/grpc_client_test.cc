#include "perf/grpc_client.h"

#include <gtest/gtest.h>

namespace ortgpu::perf {
namespace {

ClientOptions Options(int connections, int threads, double rate = 0) {
  ClientOptions o;
  o.connections = connections;
  o.threads = threads;
  o.rate_per_s = rate;
  return o;
}

// Small closed loops get a poller per call (nothing else is read on a
// call's thread); larger ones and open loops none: gRPC's callback threads
// run their completions.
TEST(GrpcPollerThreadsTest, OnePerCallInSmallClosedLoopsElseNone) {
  EXPECT_EQ(GrpcPollerThreads(Options(1, 4)), 1);
  EXPECT_EQ(GrpcPollerThreads(Options(kOnePollerPerCallMaxConcurrency, 4)), kOnePollerPerCallMaxConcurrency);
  EXPECT_EQ(GrpcPollerThreads(Options(kOnePollerPerCallMaxConcurrency + 1, 4)), 0);
  EXPECT_EQ(GrpcPollerThreads(Options(64, 4, 1000)), 0);
  EXPECT_EQ(GrpcPollerThreads(Options(2, 4, 1000)), 0);
}

TEST(GrpcLoadClientTest, NoConnectionOrThreadIsAClearError) {
  auto none = GrpcLoadClient::Start("127.0.0.1:1", {}, Options(0, 1));
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("at least one connection"), std::string::npos);
  EXPECT_FALSE(GrpcLoadClient::Start("127.0.0.1:1", {}, Options(1, 0)).ok());
}

}  // namespace
}  // namespace ortgpu::perf
