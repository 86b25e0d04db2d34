#include "serve/http/http_server.h"

#include <atomic>
#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <spdlog/sinks/base_sink.h>

#include "fakes/fake_model_server.h"
#include "sys/clock.h"
#include "serve/http/test_http_client.h"

namespace ortgpu::serve {
namespace {

using ::testing::HasSubstr;
using testing::HttpResult;
using testing::TestHttpClient;
namespace http = boost::beast::http;

const std::string kEchoBody =
    R"({"id":"r1","inputs":[{"name":"x","datatype":"FP32","shape":[1,2],"data":[[1.5,2.5]]}]})";

// Collects access log lines; thread-safe.
class LineSink : public spdlog::sinks::base_sink<std::mutex> {
 public:
  std::vector<std::string> lines() {
    std::lock_guard lock(mutex_);
    return lines_;
  }

 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    lines_.emplace_back(msg.payload.data(), msg.payload.size());
  }
  void flush_() override {}

 private:
  std::vector<std::string> lines_;
};

class HttpServerTest : public ::testing::Test {
 protected:
  void StartServer(HttpOptions options = {}) {
    options.port = 0;
    options.threads = 2;
    auto s = HttpServer::Start(fake_, std::move(options));
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    server_ = std::move(s).value();
  }
  void SetUp() override {}
  void TearDown() override {
    if (server_) server_->Stop();
  }
  uint16_t port() const { return server_->port(); }
  nlohmann::json Json(const HttpResult& r) { return nlohmann::json::parse(r.body); }

  // Bounded wait until at least `n` requests are in flight: the server has
  // read their headers. Polls a counter; no sleep stands in for an event.
  bool WaitForInFlight(int n) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (server_->in_flight() < n) {
      if (std::chrono::steady_clock::now() > deadline) return false;
      std::this_thread::yield();
    }
    return true;
  }

  // On `c`, sends infer request "A" and reads its 504; A stays parked in the
  // fake until ReleaseAll(), so its answer comes late. Returns once the 504
  // has been written (nothing in flight), with the connection kept alive.
  void TimeOutRequestA(TestHttpClient& c) {
    fake_.HoldInfers(true);
    HttpResult r = c.Post("/v2/models/echo/infer", InferBody("A"));
    ASSERT_EQ(r.status, 504u) << r.body;
    ASSERT_TRUE(r.keep_alive());
    fake_.WaitForParked(1);
    ASSERT_TRUE(server_->WaitIdle(std::chrono::seconds(10)));
  }

  static std::string InferBody(const std::string& id) {
    return R"({"id":")" + id + R"(","inputs":[{"name":"x","datatype":"FP32","shape":[1,2],"data":[[1.5,2.5]]}]})";
  }
  static std::string InferHeader(size_t content_length, const std::string& extra_headers = "") {
    return "POST /v2/models/echo/infer HTTP/1.1\r\nHost: localhost\r\n" + extra_headers +
           "Content-Length: " + std::to_string(content_length) + "\r\n\r\n";
  }

  FakeModelServer fake_;
  std::unique_ptr<HttpServer> server_;
};

TEST_F(HttpServerTest, HealthEndpoints) {
  StartServer();
  TestHttpClient c(port());
  EXPECT_EQ(c.Get("/v2/health/live").status, 200u);
  EXPECT_EQ(c.Get("/v2/health/ready").status, 200u);
  fake_.SetReady(false);
  HttpResult r = c.Get("/v2/health/ready");
  EXPECT_EQ(r.status, 503u);
  EXPECT_THAT(Json(r)["error"].get<std::string>(), HasSubstr("not ready"));
}

TEST_F(HttpServerTest, ServerMetadataListsExtensions) {
  StartServer();
  TestHttpClient c(port());
  HttpResult r = c.Get("/v2");
  ASSERT_EQ(r.status, 200u);
  auto j = Json(r);
  EXPECT_EQ(j["name"], "ortgpu");
  EXPECT_TRUE(j["version"].is_string());
  EXPECT_EQ(j["extensions"], nlohmann::json({"binary_tensor_data", "statistics", "model_repository",
                                             "model_configuration", "schedule_policy", "logging",
                                             "system_shared_memory", "cuda_shared_memory", "classification"}));
  EXPECT_EQ(r.header("Content-Type"), "application/json");
}

TEST_F(HttpServerTest, ModelMetadataReadyConfigStats) {
  StartServer();
  TestHttpClient c(port());
  HttpResult r = c.Get("/v2/models/echo");
  ASSERT_EQ(r.status, 200u);
  EXPECT_EQ(Json(r)["inputs"][0]["shape"], nlohmann::json({-1, 2}));
  EXPECT_EQ(c.Get("/v2/models/echo/versions/1").status, 200u);
  EXPECT_EQ(c.Get("/v2/models/echo/ready").status, 200u);
  EXPECT_EQ(c.Get("/v2/models/broken/ready").status, 400u);
  EXPECT_EQ(Json(c.Get("/v2/models/echo/config"))["max_batch_size"], 8);
  EXPECT_EQ(Json(c.Get("/v2/models/echo/versions/1/stats"))["model_stats"].size(), 1u);
  EXPECT_EQ(Json(c.Get("/v2/models/stats"))["model_stats"].size(), 2u);
}

TEST_F(HttpServerTest, UnknownModelOrVersionIs404) {
  StartServer();
  TestHttpClient c(port());
  HttpResult r = c.Get("/v2/models/nope");
  EXPECT_EQ(r.status, 404u);
  EXPECT_THAT(Json(r)["error"].get<std::string>(), HasSubstr("'nope'"));
  EXPECT_EQ(c.Get("/v2/models/echo/versions/9").status, 404u);
  EXPECT_EQ(c.Get("/v2/models/echo/versions/9/ready").status, 404u);
  EXPECT_EQ(c.Post("/v2/models/nope/infer", kEchoBody).status, 404u);
  EXPECT_EQ(c.Get("/v2/nothing/here").status, 404u);
}

TEST_F(HttpServerTest, PathTricksAre400) {
  StartServer();
  TestHttpClient c(port());
  for (std::string target : {"/v2/models/%2e%2e/ready", "/v2/models/a%2Fb", "/v2/models/a%00/config",
                             "/v2/repository/models/%2E%2E/load"}) {
    HttpResult r = target.find("repository") != std::string::npos ? c.Post(target, "") : c.Get(target);
    EXPECT_EQ(r.status, 400u) << target;
    EXPECT_TRUE(r.keep_alive()) << target;
  }
}

TEST_F(HttpServerTest, WrongMethodIs405WithAllow) {
  StartServer();
  TestHttpClient c(port());
  HttpResult r = c.Get("/v2/models/echo/infer");
  EXPECT_EQ(r.status, 405u);
  EXPECT_EQ(r.header("Allow"), "POST");
}

TEST_F(HttpServerTest, RepositoryEndpoints) {
  StartServer();
  TestHttpClient c(port());
  HttpResult r = c.Post("/v2/repository/index", "");
  ASSERT_EQ(r.status, 200u);
  EXPECT_EQ(Json(r).size(), 2u);
  EXPECT_EQ(Json(r)[0]["state"], "UNAVAILABLE");
  r = c.Post("/v2/repository/index", R"({"ready":true})");
  ASSERT_EQ(r.status, 200u);
  EXPECT_EQ(Json(r).size(), 1u);
  EXPECT_EQ(c.Post("/v2/repository/index", "{bad").status, 400u);
  EXPECT_EQ(c.Post("/v2/repository/models/echo/load", "").status, 200u);
  EXPECT_EQ(c.Post("/v2/repository/models/echo/unload", "").status, 200u);
  EXPECT_EQ(c.Post("/v2/repository/models/nope/load", "").status, 404u);
}

TEST_F(HttpServerTest, InferJsonEchoes) {
  StartServer();
  TestHttpClient c(port());
  HttpResult r = c.Post("/v2/models/echo/infer", kEchoBody);
  ASSERT_EQ(r.status, 200u) << r.body;
  auto j = Json(r);
  EXPECT_EQ(j["model_name"], "echo");
  EXPECT_EQ(j["id"], "r1");
  EXPECT_EQ(j["outputs"][0]["data"], nlohmann::json({1.5, 2.5}));
  EXPECT_EQ(j["outputs"][0]["shape"], nlohmann::json({1, 2}));
  EXPECT_EQ(c.Post("/v2/models/echo/versions/1/infer", kEchoBody).status, 200u);
}

TEST_F(HttpServerTest, InferBinaryRequestAndResponse) {
  StartServer();
  TestHttpClient c(port());
  std::string json =
      R"({"inputs":[{"name":"x","datatype":"INT32","shape":[2],"parameters":{"binary_data_size":8}}],)"
      R"("outputs":[{"name":"x","parameters":{"binary_data":true}}]})";
  int32_t v[2] = {7, -9};
  std::string body = json + std::string(reinterpret_cast<char*>(v), 8);
  HttpResult r = c.Post("/v2/models/echo/infer", body,
                        {{"Inference-Header-Content-Length", std::to_string(json.size())},
                         {"Content-Type", "application/octet-stream"}});
  ASSERT_EQ(r.status, 200u) << r.body;
  size_t jl = std::stoul(r.header("Inference-Header-Content-Length"));
  auto j = nlohmann::json::parse(r.body.substr(0, jl));
  EXPECT_EQ(j["outputs"][0]["parameters"]["binary_data_size"], 8);
  ASSERT_EQ(r.body.size(), jl + 8);
  int32_t out[2];
  std::memcpy(out, r.body.data() + jl, 8);
  EXPECT_EQ(out[0], 7);
  EXPECT_EQ(out[1], -9);
}

TEST_F(HttpServerTest, InferErrorsCarryStatusAndMessage) {
  StartServer();
  TestHttpClient c(port());
  HttpResult r = c.Post("/v2/models/echo/infer", "{not json");
  EXPECT_EQ(r.status, 400u);
  EXPECT_THAT(Json(r)["error"].get<std::string>(), HasSubstr("not valid JSON"));
  EXPECT_TRUE(r.keep_alive());
  r = c.Post("/v2/models/echo/infer", kEchoBody, {{"Inference-Header-Content-Length", "abc"}});
  EXPECT_EQ(r.status, 400u);
  r = c.Post("/v2/models/broken/infer", kEchoBody);
  EXPECT_EQ(r.status, 503u);
  EXPECT_THAT(Json(r)["error"].get<std::string>(), HasSubstr("UNAVAILABLE"));
  r = c.Post("/v2/models/echo/infer", R"({"inputs":[{"name":"x","datatype":"FP32","shape":[1,2],"data":[1.5,2.5]}],)"
                                      R"("outputs":[{"name":"x","parameters":{"classification":1}}]})");
  EXPECT_EQ(r.status, 200u);
  EXPECT_EQ(Json(r)["outputs"][0]["data"], nlohmann::json::array({"2.5:1"}));
  EXPECT_EQ(Json(r)["outputs"][0]["datatype"], "BYTES");
  r = c.Post("/v2/models/echo/infer", kEchoBody, {{"Content-Encoding", "br"}});
  EXPECT_EQ(r.status, 501u);
}

TEST_F(HttpServerTest, KeepAliveServesManyRequestsOnOneConnection) {
  StartServer();
  TestHttpClient c(port());
  for (int i = 0; i < 20; ++i) {
    HttpResult r = c.Post("/v2/models/echo/infer", kEchoBody);
    ASSERT_EQ(r.status, 200u);
    EXPECT_TRUE(r.keep_alive());
  }
}

TEST_F(HttpServerTest, PipelinedRequestsAnsweredInOrder) {
  StartServer();
  TestHttpClient c(port());
  std::string raw;
  for (int i = 0; i < 3; ++i) {
    std::string body = R"({"id":")" + std::to_string(i) +
                       R"(","inputs":[{"name":"x","datatype":"INT8","shape":[1],"data":[1]}]})";
    raw += "POST /v2/models/echo/infer HTTP/1.1\r\nHost: localhost\r\nContent-Length: " + std::to_string(body.size()) +
           "\r\n\r\n" + body;
  }
  raw += "GET /v2/health/live HTTP/1.1\r\nHost: localhost\r\n\r\n";
  c.WriteRaw(raw);
  for (int i = 0; i < 3; ++i) {
    HttpResult r = c.Read();
    ASSERT_EQ(r.status, 200u);
    EXPECT_EQ(Json(r)["id"], std::to_string(i));
  }
  EXPECT_EQ(c.Read().status, 200u);
}

// Issue 8: bodies are read straight into their buffer in large reads. A
// multi-megabyte binary request sent in pieces, with a pipelined request
// right behind its last byte, arrives byte for byte, and the next request
// is still answered.
TEST_F(HttpServerTest, LargeBinaryBodyInPiecesArrivesIntactWithPipelinedNext) {
  StartServer();
  TestHttpClient c(port());
  constexpr size_t kBytes = 3u << 20;
  const std::string json = R"({"inputs":[{"name":"x","datatype":"UINT8","shape":[)" + std::to_string(kBytes) +
                           R"(],"parameters":{"binary_data_size":)" + std::to_string(kBytes) +
                           R"(}}],"outputs":[{"name":"x","parameters":{"binary_data":true}}]})";
  std::string tensor(kBytes, '\0');
  for (size_t i = 0; i < kBytes; ++i) tensor[i] = static_cast<char>((i * 131 + 7) & 0xff);
  const std::string body = json + tensor;
  const std::string header = "POST /v2/models/echo/infer HTTP/1.1\r\nHost: localhost\r\nInference-Header-Content-Length: " +
                             std::to_string(json.size()) + "\r\nContent-Length: " + std::to_string(body.size()) +
                             "\r\n\r\n";
  c.WriteRaw(header + body.substr(0, 100));          // header and the start of the JSON together
  c.WriteRaw(body.substr(100, kBytes / 2));            // the middle
  c.WriteRaw(body.substr(100 + kBytes / 2) + "GET /v2/health/live HTTP/1.1\r\nHost: localhost\r\n\r\n");
  HttpResult r = c.Read();
  ASSERT_EQ(r.status, 200u) << r.body.substr(0, 300);
  const size_t jl = std::stoul(r.header("Inference-Header-Content-Length"));
  ASSERT_EQ(r.body.size(), jl + kBytes);
  EXPECT_TRUE(r.body.compare(jl, kBytes, tensor) == 0) << "the tensor bytes changed on the way";
  EXPECT_EQ(c.Read().status, 200u);  // the pipelined request behind the body
}

TEST_F(HttpServerTest, ChunkedBodyIsRead) {
  StartServer();
  TestHttpClient c(port());
  const std::string first = kEchoBody.substr(0, 10), rest = kEchoBody.substr(10);
  c.WriteRaw(fmt::format("POST /v2/models/echo/infer HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\n\r\n"
                         "{:x}\r\n{}\r\n{:x}\r\n{}\r\n0\r\n\r\n",
                         first.size(), first, rest.size(), rest));
  HttpResult r = c.Read();
  ASSERT_EQ(r.status, 200u) << r.body;
  EXPECT_EQ(Json(r)["id"], "r1");
}

TEST_F(HttpServerTest, BodyThatStopsArrivingIsCutOffAtTheReadTimeout) {
  HttpOptions o;
  o.read_timeout = std::chrono::milliseconds(200);
  StartServer(o);
  TestHttpClient c(port());
  c.WriteRaw(InferHeader(100000) + std::string(5000, ' '));  // and the rest never comes
  EXPECT_TRUE(c.ServerClosed());
  ASSERT_TRUE(server_->WaitIdle(std::chrono::seconds(10)));
  TestHttpClient c2(port());
  EXPECT_EQ(c2.Get("/v2/health/live").status, 200u);
}

// --busy-poll-us: network threads that poll before blocking answer every
// request and stop cleanly.
TEST_F(HttpServerTest, BusyPollingNetworkThreadsServeAndStop) {
  HttpOptions o;
  o.busy_poll = std::chrono::microseconds(2000);
  StartServer(o);
  TestHttpClient c(port());
  for (int i = 0; i < 20; ++i) ASSERT_EQ(c.Post("/v2/models/echo/infer", kEchoBody).status, 200u);
  server_->Stop();
}

// The default (BusyPoll): lone requests with threads polling and parking,
// then overlapping ones from several clients at once, which stop the polling
// and wake the parked threads; every request is answered and the server
// stops with threads seated or parked.
TEST_F(HttpServerTest, DefaultBusyPollingServesLoneAndOverlappingRequests) {
  HttpOptions o;
  ASSERT_GT(o.busy_poll.count(), 0) << "busy polling is on by default";
  o.threads = 4;
  o.port = 0;
  auto s = HttpServer::Start(fake_, o);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  server_ = std::move(s).value();
  TestHttpClient lone(port());
  for (int i = 0; i < 20; ++i) ASSERT_EQ(lone.Post("/v2/models/echo/infer", kEchoBody).status, 200u);
  std::atomic<int> ok{0};
  std::vector<std::thread> clients;
  for (int c = 0; c < 6; ++c) {
    clients.emplace_back([&] {
      TestHttpClient client(port());
      for (int i = 0; i < 30; ++i) ok += client.Post("/v2/models/echo/infer", kEchoBody).status == 200u;
    });
  }
  for (auto& t : clients) t.join();
  EXPECT_EQ(ok.load(), 180);
  for (int i = 0; i < 20; ++i) ASSERT_EQ(lone.Post("/v2/models/echo/infer", kEchoBody).status, 200u);
  server_->Stop();
}

TEST_F(HttpServerTest, OversizeBodyIs413AndCloses) {
  HttpOptions o;
  o.max_body_bytes = 1024;
  StartServer(o);
  TestHttpClient c(port());
  HttpResult r = c.Post("/v2/models/echo/infer", std::string(4096, ' '));
  EXPECT_EQ(r.status, 413u);
  EXPECT_THAT(Json(r)["error"].get<std::string>(), HasSubstr("1024 bytes"));
  EXPECT_FALSE(r.keep_alive());
  // The server stays healthy.
  TestHttpClient c2(port());
  EXPECT_EQ(c2.Get("/v2/health/live").status, 200u);
}

TEST_F(HttpServerTest, ExpectContinueIsHonoured) {
  StartServer();
  TestHttpClient c(port());
  c.WriteRaw("POST /v2/models/echo/infer HTTP/1.1\r\nHost: localhost\r\nExpect: 100-continue\r\nContent-Length: " +
             std::to_string(kEchoBody.size()) + "\r\n\r\n");
  EXPECT_EQ(c.Read().status, 100u);
  c.WriteRaw(kEchoBody);
  EXPECT_EQ(c.Read().status, 200u);
}

TEST_F(HttpServerTest, MalformedHttpIs400) {
  StartServer();
  TestHttpClient c(port());
  c.WriteRaw("NOT HTTP AT ALL\r\n\r\n");
  EXPECT_EQ(c.Read().status, 400u);
  EXPECT_TRUE(c.ServerClosed());
}

TEST_F(HttpServerTest, SlowClientIsDisconnected) {
  HttpOptions o;
  o.idle_timeout = std::chrono::milliseconds(200);
  StartServer(o);
  TestHttpClient c(port());
  c.WriteRaw("GET /v2/health/live HTTP/1.1\r\nHo");  // and never finishes
  EXPECT_TRUE(c.ServerClosed());
  TestHttpClient idle(port());  // sends nothing at all
  EXPECT_TRUE(idle.ServerClosed());
  EXPECT_EQ(server_->in_flight(), 0);
}

TEST_F(HttpServerTest, HalfClosedClientStillGetsItsResponse) {
  StartServer();
  TestHttpClient c(port());
  c.Write(http::verb::post, "/v2/models/echo/infer", kEchoBody);
  c.ShutdownSend();
  EXPECT_EQ(c.Read().status, 200u);
  EXPECT_TRUE(c.ServerClosed());
}

TEST_F(HttpServerTest, SlowInferenceIs504) {
  HttpOptions o;
  o.request_timeout = std::chrono::milliseconds(100);
  StartServer(o);
  fake_.HoldInfers(true);
  TestHttpClient c(port());
  HttpResult r = c.Post("/v2/models/echo/infer", kEchoBody);
  EXPECT_EQ(r.status, 504u);
  EXPECT_THAT(Json(r)["error"].get<std::string>(), HasSubstr("request timeout of 100 ms"));
  fake_.ReleaseAll();  // the late completion is dropped
  EXPECT_EQ(c.Post("/v2/models/echo/infer", kEchoBody).status, 200u);
}

TEST_F(HttpServerTest, RequestTimeoutBecomesTheSchedulersDeadline) {
  HttpOptions o;
  o.request_timeout = std::chrono::milliseconds(5000);
  StartServer(o);
  TestHttpClient c(port());
  const int64_t before = RealClock().NowNanos();
  ASSERT_EQ(c.Post("/v2/models/echo/infer", kEchoBody).status, 200u);
  const int64_t deadline = fake_.last_request().deadline_ns;
  EXPECT_GE(deadline, before + 5'000'000'000LL);
  EXPECT_LE(deadline, RealClock().NowNanos() + 5'000'000'000LL);
}

// Regression: the late answer of a request that got a 504 was written as the
// response of the next request on the connection once that request's header
// had arrived, while its body (or its 100 Continue) was still in transit: the
// client got the wrong answer, and the server wrote while reading and freed
// the parser of the pending body read.
TEST_F(HttpServerTest, LateAnswerOfTimedOutRequestIsDroppedWhileNextAwaits100Continue) {
  HttpOptions o;
  o.request_timeout = std::chrono::milliseconds(100);
  StartServer(o);
  TestHttpClient c(port());
  ASSERT_NO_FATAL_FAILURE(TimeOutRequestA(c));

  std::string b = InferBody("B");
  c.WriteRaw(InferHeader(b.size(), "Expect: 100-continue\r\n"));
  ASSERT_EQ(c.Read().status, 100u);  // B's header is read; the server awaits its body
  fake_.ReleaseAll();                // A's answer arrives now
  c.WriteRaw(b);
  HttpResult r = c.Read();
  ASSERT_EQ(r.status, 200u) << r.body;
  EXPECT_EQ(Json(r)["id"], "B");

  // Nothing stray is left on the connection: the next answer is the next request's.
  r = c.Post("/v2/models/echo/infer", InferBody("C"));
  ASSERT_EQ(r.status, 200u) << r.body;
  EXPECT_EQ(Json(r)["id"], "C");
  EXPECT_TRUE(server_->WaitIdle(std::chrono::seconds(10)));
}

TEST_F(HttpServerTest, LateAnswerOfTimedOutRequestIsDroppedWhileNextBodyArrives) {
  HttpOptions o;
  o.request_timeout = std::chrono::milliseconds(100);
  StartServer(o);
  TestHttpClient c(port());
  ASSERT_NO_FATAL_FAILURE(TimeOutRequestA(c));

  std::string b = InferBody("B");
  c.WriteRaw(InferHeader(b.size()) + b.substr(0, b.size() / 2));
  ASSERT_TRUE(WaitForInFlight(1));  // B's header is read; the server reads its body
  fake_.ReleaseAll();               // A's answer arrives now
  c.WriteRaw(b.substr(b.size() / 2));
  HttpResult r = c.Read();
  ASSERT_EQ(r.status, 200u) << r.body;
  EXPECT_EQ(Json(r)["id"], "B");

  r = c.Post("/v2/models/echo/infer", InferBody("C"));
  ASSERT_EQ(r.status, 200u) << r.body;
  EXPECT_EQ(Json(r)["id"], "C");
  EXPECT_TRUE(server_->WaitIdle(std::chrono::seconds(10)));
}

TEST_F(HttpServerTest, DrainFinishesInFlightAndRefusesNewWork) {
  StartServer();
  fake_.HoldInfers(true);
  std::vector<std::unique_ptr<TestHttpClient>> busy;
  for (int i = 0; i < 3; ++i) {
    busy.push_back(std::make_unique<TestHttpClient>(port()));
    busy.back()->Write(http::verb::post, "/v2/models/echo/infer", kEchoBody);
  }
  TestHttpClient idle(port());
  EXPECT_EQ(idle.Get("/v2/health/live").status, 200u);
  fake_.WaitForParked(3);
  EXPECT_GE(server_->in_flight(), 3);  // the health request may still be finishing its write

  server_->BeginDrain();
  HttpResult r = idle.Get("/v2/health/ready");
  EXPECT_EQ(r.status, 503u);
  EXPECT_FALSE(r.keep_alive());
  EXPECT_FALSE(server_->WaitIdle(std::chrono::milliseconds(0)));

  fake_.ReleaseAll();
  for (auto& c : busy) {
    HttpResult done = c->Read();
    EXPECT_EQ(done.status, 200u);
    EXPECT_FALSE(done.keep_alive());  // connections close after the drain
  }
  EXPECT_TRUE(server_->WaitIdle(std::chrono::seconds(10)));
  server_->Stop();
  EXPECT_THROW(TestHttpClient late(port()), boost::system::system_error);
}

// Issue 25 (this test asserted nothing): Stop closes the connection of a
// request still running, and the answer that comes after Stop is dropped,
// not written: the client sees its connection end with no response, and the
// port takes no new connection.
TEST_F(HttpServerTest, StopWithAParkedRequestEndsItsConnectionWithoutAnAnswer) {
  StartServer();
  fake_.HoldInfers(true);
  TestHttpClient c(port());
  c.Write(http::verb::post, "/v2/models/echo/infer", kEchoBody);
  fake_.WaitForParked(1);
  const uint16_t stopped_port = port();
  server_->Stop();
  fake_.ReleaseAll();  // completions after Stop are dropped
  EXPECT_TRUE(c.ServerClosed());  // end of stream before any byte of a response
  EXPECT_THROW(TestHttpClient late(stopped_port), boost::system::system_error);
  server_.reset();
}

TEST_F(HttpServerTest, AccessLogJson) {
  auto sink = std::make_shared<LineSink>();
  HttpOptions o;
  o.access_log = AccessLogFormat::kJson;
  o.access_logger = std::make_shared<spdlog::logger>("access", sink);
  StartServer(o);
  TestHttpClient c(port());
  ASSERT_EQ(c.Post("/v2/models/echo/infer", kEchoBody).status, 200u);
  ASSERT_EQ(c.Get("/v2/health/live").status, 200u);  // the first line is written by now
  auto lines = sink->lines();
  ASSERT_GE(lines.size(), 1u);
  auto j = nlohmann::json::parse(lines[0]);
  EXPECT_EQ(j["method"], "POST");
  EXPECT_EQ(j["target"], "/v2/models/echo/infer");
  EXPECT_EQ(j["status"], 200);
  EXPECT_EQ(j["model"], "echo");
  EXPECT_EQ(j["request_bytes"], kEchoBody.size());
  EXPECT_GE(j["read_ms"].get<double>(), 0.0);
  EXPECT_LE(j["read_ms"].get<double>(), j["duration_ms"].get<double>());
}

TEST(HttpServerStartTest, BadHostAndBusyPort) {
  FakeModelServer fake;
  HttpOptions o;
  o.host = "not-an-ip";
  auto s = HttpServer::Start(fake, o);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), Code::kInvalidArgument);
  o.host = "127.0.0.1";
  o.port = 0;
  auto first = HttpServer::Start(fake, o);
  ASSERT_TRUE(first.ok());
  o.port = (*first)->port();
  auto second = HttpServer::Start(fake, o);
  // SO_REUSEADDR does not allow two listeners on one port.
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), Code::kUnavailable);
  EXPECT_THAT(second.status().message(), HasSubstr(std::to_string(o.port)));
}

TEST(AccessLogFormatTest, Parses) {
  EXPECT_EQ(*ParseAccessLogFormat("json"), AccessLogFormat::kJson);
  EXPECT_EQ(*ParseAccessLogFormat("none"), AccessLogFormat::kNone);
  EXPECT_THAT(ParseAccessLogFormat("xml").status().message(), HasSubstr("none, plain, json"));
}

}  // namespace
}  // namespace ortgpu::serve
