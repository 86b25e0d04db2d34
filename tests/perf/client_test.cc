// LoadClient against the stub server on port 0: what it sends, counts and
// reports, in both loops and when the server fails, stalls or closes.
#include "perf/client.h"

#include <gtest/gtest.h>

#include "fakes/stub_kserve_server.h"
#include "perf/request_builder.h"

namespace ortgpu::perf {
namespace {

using ortgpu::testing::StubKServeServer;
using namespace std::chrono_literals;

std::vector<EncodedRequest> StubRequest() {
  ModelInfo m;
  m.name = "stub";
  m.outputs = {"y"};
  auto r = EncodeInferRequest(m, {Tensor::Zeros("x", DataType::kFloat, {1, 4})}, TensorFormat::kBinary, "127.0.0.1");
  EXPECT_TRUE(r.ok());
  return {*r};
}

HttpEndpoint Local(const StubKServeServer& s) { return {"127.0.0.1", s.port(), ""}; }

std::vector<Completion> RunUntil(const StubKServeServer& stub, const ClientOptions& o, int64_t n) {
  auto client = LoadClient::Start(Local(stub), StubRequest(), o);
  EXPECT_TRUE(client.ok()) << client.status().message();
  EXPECT_TRUE((*client)->WaitForCompleted(n, 20s)) << (*client)->first_transport_error();
  (*client)->Stop(1s);
  std::vector<Completion> done;
  (*client)->TakeCompletions(done);
  return done;
}

TEST(LoadClient, ClosedLoopSendsExactlyTheRequestLimitOverItsConnections) {
  StubKServeServer stub({});
  ClientOptions o;
  o.connections = 3;
  o.request_limit = 20;
  const auto done = RunUntil(stub, o, 20);
  ASSERT_EQ(done.size(), 20u);
  for (const auto& c : done) {
    EXPECT_EQ(c.status, 200);
    EXPECT_GT(c.latency_ns, 0);
    EXPECT_FALSE(c.delayed);
  }
  EXPECT_EQ(stub.infer_requests(), 20);
  EXPECT_EQ(stub.connections_accepted(), 3);  // keep-alive: one connection each
}

TEST(LoadClient, ConnectionsSpreadOverThreads) {
  StubKServeServer stub({});
  ClientOptions o;
  o.connections = 4;
  o.threads = 2;
  o.request_limit = 40;
  EXPECT_EQ(RunUntil(stub, o, 40).size(), 40u);
  EXPECT_EQ(stub.infer_requests(), 40);
}

TEST(LoadClient, OpenLoopFollowsTheScheduleUpToTheLimit) {
  StubKServeServer stub({});
  ClientOptions o;
  o.connections = 2;
  o.rate_per_s = 2000;
  o.distribution = Distribution::kPoisson;
  o.request_limit = 30;
  const auto done = RunUntil(stub, o, 30);
  EXPECT_EQ(done.size(), 30u);
  EXPECT_EQ(stub.infer_requests(), 30);
}

TEST(LoadClient, HttpErrorsAreRecordedWithTheirStatus) {
  StubKServeServer stub({.infer = StubKServeServer::Infer::kError500});
  ClientOptions o;
  o.request_limit = 5;
  const auto done = RunUntil(stub, o, 5);
  ASSERT_EQ(done.size(), 5u);
  for (const auto& c : done) EXPECT_EQ(c.status, 500);
}

TEST(LoadClient, AStalledServerTimesOutAndSaysSo) {
  StubKServeServer stub({.infer = StubKServeServer::Infer::kNeverAnswer});
  ClientOptions o;
  o.connections = 2;
  o.request_timeout = 100ms;
  o.request_limit = 2;
  auto client = LoadClient::Start(Local(stub), StubRequest(), o);
  ASSERT_TRUE(client.ok());
  ASSERT_TRUE((*client)->WaitForCompleted(2, 20s));
  std::vector<Completion> done;
  (*client)->TakeCompletions(done);
  ASSERT_EQ(done.size(), 2u);
  for (const auto& c : done) {
    EXPECT_EQ(c.status, kTimeout);
    EXPECT_GE(c.latency_ns, 100'000'000);
  }
  EXPECT_NE((*client)->first_transport_error().find("within 100 ms"), std::string::npos) << (*client)->first_transport_error();
  (*client)->Stop(0ms);
}

TEST(LoadClient, ConnectionCloseIsFollowedByANewConnection) {
  StubKServeServer stub({.close_after_answer = true});
  ClientOptions o;
  o.request_limit = 5;
  const auto done = RunUntil(stub, o, 5);
  ASSERT_EQ(done.size(), 5u);
  for (const auto& c : done) EXPECT_EQ(c.status, 200);
  EXPECT_EQ(stub.connections_accepted(), 5);  // one per answer, none after the last
}

TEST(LoadClient, BadOptionsAreRefused) {
  ClientOptions o;
  o.connections = 0;
  EXPECT_FALSE(LoadClient::Start({"127.0.0.1", 1, ""}, StubRequest(), o).ok());
  EXPECT_FALSE(LoadClient::Start({"127.0.0.1", 1, ""}, {}, ClientOptions{}).ok());
}

}  // namespace
}  // namespace ortgpu::perf
