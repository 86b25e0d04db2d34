// Tests of the HTTP front end's hardening (issue 11) over real sockets on
// port 0, with FakeModelServer: connection limits and the back-off when
// accept() runs out of descriptors, the drain (503 for what cannot finish,
// cancellation, trickling bodies), HEAD, and the Host / Origin / token
// checks. No sleep synchronises anything: waits poll a condition under a
// deadline.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/resource.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <chrono>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "fakes/fake_model_server.h"
#include "serve/http/connection_limits.h"
#include "serve/http/content_encoding.h"
#include "serve/http/http_server.h"
#include "serve/http/request_access.h"
#include "serve/http/test_http_client.h"
#include "serve/metrics/metrics_server.h"

namespace ortgpu::serve {
namespace {

using ::testing::HasSubstr;
using testing::HttpResult;
using testing::TestHttpClient;
namespace http = boost::beast::http;
using namespace std::chrono_literals;

const std::string kEchoBody =
    R"({"id":"r1","inputs":[{"name":"x","datatype":"FP32","shape":[1,2],"data":[[1.5,2.5]]}]})";

// Polls `done` until it holds or 10 s pass.
bool WaitFor(const std::function<bool()>& done) {
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::yield();
  }
  return true;
}

// Sends raw `bytes` on a new connection and returns all the server sends
// back until it closes: a HEAD reply must be read without a client that
// expects the body its Content-Length announces.
std::string Exchange(uint16_t port, const std::string& bytes) {
  boost::asio::io_context ioc;
  boost::asio::ip::tcp::socket socket(ioc);
  socket.connect({boost::asio::ip::make_address("127.0.0.1"), port});
  boost::asio::write(socket, boost::asio::buffer(bytes));
  std::string received;
  boost::system::error_code ec;
  char buf[4096];
  while (!ec) {
    const size_t n = socket.read_some(boost::asio::buffer(buf), ec);
    received.append(buf, n);
  }
  return received;
}

// An infer body of about 1.2 MiB of JSON (600,000 ones for echo's x),
// over the size that sends a body to the decode pool.
std::string LargeJsonBody() {
  std::string big = R"({"inputs":[{"name":"x","datatype":"FP32","shape":[1,600000],"data":[)";
  for (int i = 0; i < 600000; ++i) big += i ? ",1" : "1";
  big += "]}]}";
  return big;
}

// Counts the acceptor's events, as the Prometheus adapter would.
struct EventCounts {
  std::atomic<int64_t> over_limit{0};
  std::atomic<int64_t> accept_failed{0};
  std::atomic<int64_t> open{0};
  ConnectionEvents Events() {
    ConnectionEvents e;
    e.refused = [this](std::string_view reason) { (reason == "max_connections" ? over_limit : accept_failed)++; };
    e.open = [this](int64_t n) { open = n; };
    return e;
  }
};

class HttpHardeningTest : public ::testing::Test {
 protected:
  void StartServer(HttpOptions options = {}) {
    options.port = 0;
    if (options.threads == 0) options.threads = 2;
    options.connection_events = counts_.Events();
    auto s = HttpServer::Start(fake_, std::move(options));
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    server_ = std::move(s).value();
  }
  void TearDown() override {
    if (server_) server_->Stop();
  }
  uint16_t port() const { return server_->port(); }

  EventCounts counts_;
  FakeModelServer fake_;
  std::unique_ptr<HttpServer> server_;
};

TEST(AcceptBackoffTest, DoublesUpToTheMaximumAndResetsAfterASuccess) {
  AcceptBackoff b(10ms, 1000ms);
  std::vector<int64_t> pauses;
  for (int i = 0; i < 9; ++i) pauses.push_back(b.Next().count());
  EXPECT_EQ(pauses, (std::vector<int64_t>{10, 20, 40, 80, 160, 320, 640, 1000, 1000}));
  EXPECT_EQ(b.failures(), 9);
  b.Reset();
  EXPECT_EQ(b.failures(), 0);
  EXPECT_EQ(b.Next().count(), 10);
}

TEST(AcceptBackoffTest, ResourceExhaustionIsTellsEmfileFromAClientThatLeft) {
  using boost::system::error_code;
  EXPECT_TRUE(IsResourceExhaustion(error_code(EMFILE, boost::system::system_category())));
  EXPECT_TRUE(IsResourceExhaustion(error_code(ENFILE, boost::system::system_category())));
  EXPECT_FALSE(IsResourceExhaustion(error_code(ECONNABORTED, boost::system::system_category())));
}

TEST(AcceptBackoffTest, DefaultMaxConnectionsFollowsTheDescriptorLimit) {
  rlimit limit{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &limit), 0);
  if (limit.rlim_cur != RLIM_INFINITY) {
    EXPECT_EQ(DefaultMaxConnections(),
              std::max<int64_t>(1, static_cast<int64_t>(limit.rlim_cur) - kReservedDescriptors));
  }
}

TEST_F(HttpHardeningTest, MaxConnectionsClosesTheConnectionOverTheLimitAndCountsIt) {
  HttpOptions o;
  o.max_connections = 2;
  StartServer(o);
  TestHttpClient a(port()), b(port());
  ASSERT_EQ(a.Get("/v2/health/live").status, 200u);
  ASSERT_EQ(b.Get("/v2/health/live").status, 200u);
  TestHttpClient c(port());
  EXPECT_TRUE(c.ServerClosed());
  EXPECT_EQ(counts_.over_limit.load(), 1);
  EXPECT_EQ(counts_.open.load(), 2);
  // The open connections keep being served.
  EXPECT_EQ(a.Get("/v2/health/live").status, 200u);
}

// With no descriptor left, accept() fails with EMFILE. The acceptor must
// pause (not retry ~33k times a second) and the connections already open
// must still be answered; once descriptors are free again the waiting
// connection is served.
TEST_F(HttpHardeningTest, OutOfFileDescriptorsBacksOffAndKeepsServingOpenConnections) {
  StartServer();
  TestHttpClient open(port());
  ASSERT_EQ(open.Get("/v2/health/live").status, 200u);

  rlimit saved{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &saved), 0);
  // Take every descriptor below a lowered limit but one: the next client
  // socket takes that one, and the server's accept() finds none.
  int highest = 0;
  for (int fd = 0; fd < 4096; ++fd) {
    if (::fcntl(fd, F_GETFD) != -1) highest = fd;
  }
  rlimit low = saved;
  low.rlim_cur = static_cast<rlim_t>(highest + 8);
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &low), 0);
  std::vector<int> fillers;
  for (int fd; (fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC)) >= 0;) fillers.push_back(fd);
  ASSERT_FALSE(fillers.empty());
  ::close(fillers.back());
  fillers.pop_back();
  auto restore = [&] {
    for (int fd : fillers) ::close(fd);
    fillers.clear();
    (void)::setrlimit(RLIMIT_NOFILE, &saved);
  };

  // A bare socket: one descriptor (a TestHttpClient's io_context takes more).
  const int waiting = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port());
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const bool connected =
      waiting >= 0 && ::connect(waiting, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0;
  const bool refused = connected && WaitFor([&] { return counts_.accept_failed.load() >= 2; });
  // Answered while the acceptor is out of descriptors.
  HttpResult live{};
  for (int i = 0; i < 5 && refused; ++i) live = open.Get("/v2/health/live");
  const int64_t failures = counts_.accept_failed.load();
  restore();
  ASSERT_TRUE(connected) << "the client could not connect under the lowered limit";
  ASSERT_TRUE(refused) << "accept() never failed";
  EXPECT_EQ(live.status, 200u);
  // A retry without a pause fails tens of thousands of times a second; the
  // back-off (10, 20, 40 ms...) has failed a handful of times by now.
  EXPECT_LT(failures, 50);
  // Descriptors are back: the waiting connection is accepted and served.
  timeval ten_seconds{10, 0};
  ::setsockopt(waiting, SOL_SOCKET, SO_RCVTIMEO, &ten_seconds, sizeof ten_seconds);
  const std::string get = "GET /v2/health/live HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n";
  ASSERT_EQ(::send(waiting, get.data(), get.size(), MSG_NOSIGNAL), static_cast<ssize_t>(get.size()));
  std::string reply;
  char buf[1024];
  for (ssize_t n; (n = ::recv(waiting, buf, sizeof buf, 0)) > 0;) reply.append(buf, static_cast<size_t>(n));
  ::close(waiting);
  EXPECT_THAT(reply, HasSubstr("HTTP/1.1 200 OK"));
}

TEST_F(HttpHardeningTest, DrainTimeoutAnswersWaitingRequests503AndCancelsThem) {
  StartServer();
  fake_.HoldInfers(true);
  std::vector<std::unique_ptr<TestHttpClient>> clients;
  for (int i = 0; i < 3; ++i) {
    clients.push_back(std::make_unique<TestHttpClient>(port()));
    clients.back()->Write(http::verb::post, "/v2/models/echo/infer", kEchoBody);
  }
  fake_.WaitForParked(3);
  server_->BeginDrain();
  EXPECT_FALSE(server_->WaitIdle(0ms));
  server_->AnswerPending(Unavailable("drain timeout passed"));
  for (auto& c : clients) {
    HttpResult r = c->Read();
    EXPECT_EQ(r.status, 503u);
    EXPECT_THAT(r.body, HasSubstr("drain timeout passed"));
    EXPECT_FALSE(r.keep_alive());
  }
  EXPECT_EQ(fake_.ParkedCancelled(), (std::vector<bool>{true, true, true}));
  EXPECT_TRUE(server_->WaitIdle(10s));
  fake_.ReleaseAll();  // late results are dropped
}

TEST_F(HttpHardeningTest, AQueuedRequestWhoseClientResetIsCancelled) {
  StartServer();
  fake_.HoldInfers(true);
  TestHttpClient leaving(port());
  leaving.Write(http::verb::post, "/v2/models/echo/infer", kEchoBody);
  fake_.WaitForParked(1);
  leaving.Reset();  // the client goes away without waiting for the answer
  EXPECT_TRUE(WaitFor([&] { return fake_.ParkedCancelled() == std::vector<bool>{true}; }));
  // A client that pipelines its next request is still waiting: not cancelled.
  TestHttpClient staying(port());
  staying.Write(http::verb::post, "/v2/models/echo/infer", kEchoBody);
  fake_.WaitForParked(2);
  staying.Write(http::verb::get, "/v2/health/live", "");
  EXPECT_EQ(fake_.ParkedCancelled(), (std::vector<bool>{true, false}));
  fake_.ReleaseAll();
  EXPECT_EQ(staying.Read().status, 200u);
  EXPECT_EQ(staying.Read().status, 200u);
}

// Issue 25: a client that half-closes its side after sending the request
// (shutdown for writing, as nc and some HTTP/1.0 clients do) is still
// waiting: its queued request is answered, not cancelled (it got 503), and
// then the connection closes.
TEST_F(HttpHardeningTest, Issue25AHalfClosedClientIsAnsweredNotCancelled) {
  HttpOptions o;
  o.threads = 1;
  StartServer(o);
  fake_.HoldInfers(true);
  TestHttpClient c(port());
  c.Write(http::verb::post, "/v2/models/echo/infer", kEchoBody);
  c.ShutdownSend();
  fake_.WaitForParked(1);
  // One network thread: once a later request is answered, the half-close
  // (sent before it) has been seen.
  EXPECT_EQ(TestHttpClient(port()).Get("/v2/health/live").status, 200u);
  EXPECT_EQ(fake_.ParkedCancelled(), std::vector<bool>{false});
  fake_.ReleaseAll();
  HttpResult r = c.Read();
  EXPECT_EQ(r.status, 200u) << r.body;
  EXPECT_EQ(nlohmann::json::parse(r.body)["outputs"][0]["data"], nlohmann::json::array({1.5, 2.5}));
  EXPECT_FALSE(r.keep_alive());
  EXPECT_TRUE(c.ServerClosed());
}

// A large all-JSON body is decoded off the network threads: with one
// network thread, and the thread that handles the big request stuck in the
// model server, health checks are still answered.
TEST_F(HttpHardeningTest, HealthIsAnsweredWhileALargeJsonRequestIsBeingHandled) {
  HttpOptions o;
  o.threads = 1;
  StartServer(o);
  const std::string big = LargeJsonBody();
  ASSERT_GT(big.size(), size_t{1} << 20);
  fake_.BlockInferCalls(true);
  TestHttpClient heavy(port());
  heavy.Write(http::verb::post, "/v2/models/echo/infer", big);
  fake_.WaitForBlocked(1);
  TestHttpClient health(port());
  EXPECT_EQ(health.Get("/v2/health/live").status, 200u);
  fake_.BlockInferCalls(false);
  EXPECT_EQ(heavy.Read().status, 200u);
}

// Issue 25: the choice of where to decode is made on the decompressed
// size. A gzip body of a few KiB that inflates to over 1 MiB of JSON is
// decoded on the decode pool, as the same body sent plain is; before, it
// was inflated and parsed on the network thread, and health checks waited.
TEST_F(HttpHardeningTest, Issue25ASmallGzipBodyThatInflatesLargeIsDecodedOffTheNetworkThreads) {
  HttpOptions o;
  o.threads = 1;
  StartServer(o);
  const std::string big = LargeJsonBody();
  auto gzip = Compress(big, ContentCoding::kGzip);
  ASSERT_TRUE(gzip.ok());
  ASSERT_GT(big.size(), size_t{1} << 20);
  ASSERT_LT(gzip->size(), size_t{64} << 10);
  fake_.BlockInferCalls(true);
  TestHttpClient heavy(port());
  heavy.Write(http::verb::post, "/v2/models/echo/infer", *gzip, {{"Content-Encoding", "gzip"}});
  fake_.WaitForBlocked(1);
  TestHttpClient health(port());
  EXPECT_EQ(health.Get("/v2/health/live").status, 200u);
  fake_.BlockInferCalls(false);
  HttpResult r = heavy.Read();
  EXPECT_EQ(r.status, 200u) << r.body.substr(0, 300);
  EXPECT_EQ(fake_.last_request().inputs.at(0).shape, (std::vector<int64_t>{1, 600000}));
}

// Issue 25: inflation is bounded by --max-body-bytes wherever it runs: a
// small gzip body that inflates past it is a 413 saying so.
TEST_F(HttpHardeningTest, Issue25AGzipBodyThatInflatesPastMaxBodyBytesIs413) {
  HttpOptions o;
  o.max_body_bytes = 2u << 20;
  StartServer(o);
  const std::string zeros(3u << 20, '0');  // 3 MiB inflated, a few KiB sent
  auto gzip = Compress(zeros, ContentCoding::kGzip);
  ASSERT_TRUE(gzip.ok());
  TestHttpClient c(port());
  HttpResult r = c.Send(http::verb::post, "/v2/models/echo/infer", *gzip, {{"Content-Encoding", "gzip"}});
  EXPECT_EQ(r.status, 413u);
  EXPECT_THAT(r.body, HasSubstr("inflates past the limit of 2097152 bytes"));
  EXPECT_THAT(r.body, HasSubstr("--max-body-bytes"));
}

TEST_F(HttpHardeningTest, AnOutOfMemoryWhileHandlingARequestIsA503AndTheServerKeepsServing) {
  StartServer();
  fake_.ThrowBadAllocOnInfer(true);
  TestHttpClient c(port());
  HttpResult r = c.Post("/v2/models/echo/infer", kEchoBody);
  EXPECT_EQ(r.status, 503u);
  EXPECT_THAT(r.body, HasSubstr("out of memory"));
  fake_.ThrowBadAllocOnInfer(false);
  EXPECT_EQ(c.Post("/v2/models/echo/infer", kEchoBody).status, 200u);
}

TEST_F(HttpHardeningTest, TricklingBodyDoesNotHoldTheDrain) {
  StartServer();
  TestHttpClient c(port());
  c.WriteRaw("POST /v2/models/echo/infer HTTP/1.1\r\nHost: localhost\r\nContent-Length: 100000\r\n\r\n{\"in");
  ASSERT_TRUE(WaitFor([&] { return server_->in_flight() == 1; }));
  server_->BeginDrain();
  EXPECT_TRUE(server_->WaitIdle(10s));
  // Closed mid-body, or (when the drain began before the header was
  // handled) answered 503 and closed: either way it does not hold the drain.
  EXPECT_TRUE(c.ServerEnds());
}

TEST_F(HttpHardeningTest, HeadIsAcceptedOnGetEndpointsAndGetsNoBody) {
  StartServer();
  const std::string metadata = TestHttpClient(port()).Get("/v2").body;
  // Raw bytes: the HEAD's reply must carry the GET's Content-Length and no
  // body, so the reply to the pipelined GET follows its header directly.
  const std::string received =
      Exchange(port(), "HEAD /v2 HTTP/1.1\r\nHost: localhost\r\n\r\n"
                       "GET /v2/health/live HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n");
  const size_t end_of_head = received.find("\r\n\r\n");
  ASSERT_NE(end_of_head, std::string::npos) << received;
  const std::string head = received.substr(0, end_of_head);
  EXPECT_THAT(head, HasSubstr("HTTP/1.1 200 OK"));
  EXPECT_THAT(head, HasSubstr("Content-Length: " + std::to_string(metadata.size())));
  EXPECT_EQ(received.substr(end_of_head + 4, 8), "HTTP/1.1") << "the HEAD reply carried a body: " << received;
}

TEST_F(HttpHardeningTest, HeadOnAPostEndpointIs405) {
  StartServer();
  TestHttpClient c(port());
  HttpResult r = c.Send(http::verb::head, "/v2/models/echo/infer", "");
  EXPECT_EQ(r.status, 405u);
}

TEST_F(HttpHardeningTest, HostThatIsNotThisServerIs403) {
  StartServer();
  TestHttpClient c(port());
  HttpResult evil = c.Send(http::verb::get, "/v2", "", {{"Host", "evil.example:8000"}});
  EXPECT_EQ(evil.status, 403u);
  EXPECT_THAT(evil.body, HasSubstr("--allow-host evil.example"));
  TestHttpClient d(port());
  EXPECT_EQ(d.Send(http::verb::get, "/v2", "", {{"Host", "localhost:8000"}}).status, 200u);
  EXPECT_EQ(d.Send(http::verb::get, "/v2", "", {{"Host", "[::1]:8000"}}).status, 200u);
}

TEST_F(HttpHardeningTest, AllowHostAcceptsAConfiguredName) {
  HttpOptions o;
  o.access.allowed_hosts = {"models.internal"};
  StartServer(o);
  TestHttpClient c(port());
  EXPECT_EQ(c.Send(http::verb::get, "/v2", "", {{"Host", "Models.Internal:8000"}}).status, 200u);
}

TEST_F(HttpHardeningTest, CrossOriginBrowserRequestIs403UnlessAllowed) {
  StartServer();
  TestHttpClient c(port());
  HttpResult r = c.Send(http::verb::post, "/v2/models/echo/infer", kEchoBody, {{"Origin", "http://evil.example"}});
  EXPECT_EQ(r.status, 403u);
  EXPECT_THAT(r.body, HasSubstr("--allow-origin"));
  TestHttpClient d(port());
  // Same origin: the page was served by this address.
  EXPECT_EQ(d.Send(http::verb::post, "/v2/models/echo/infer", kEchoBody, {{"Origin", "http://127.0.0.1"}}).status,
            200u);
  server_->Stop();
  HttpOptions o;
  o.access.allowed_origins = {"https://app.example.com"};
  StartServer(o);
  TestHttpClient e(port());
  HttpResult allowed =
      e.Send(http::verb::post, "/v2/models/echo/infer", kEchoBody, {{"Origin", "https://app.example.com"}});
  EXPECT_EQ(allowed.status, 200u);
  EXPECT_EQ(allowed.header("Access-Control-Allow-Origin"), "https://app.example.com");
  HttpResult preflight = e.Send(http::verb::options, "/v2/models/echo/infer", "",
                                {{"Origin", "https://app.example.com"}, {"Access-Control-Request-Method", "POST"}});
  EXPECT_EQ(preflight.status, 204u);
  EXPECT_THAT(preflight.header("Access-Control-Allow-Methods"), HasSubstr("POST"));
  EXPECT_THAT(preflight.header("Access-Control-Allow-Headers"), HasSubstr("Inference-Header-Content-Length"));
}

// The run-time settings and shared-memory registration change what the
// server does and maps, so they take the token too; reading them too.
TEST_F(HttpHardeningTest, AuthTokenGuardsLoggingTraceAndSharedMemoryRegistration) {
  HttpOptions o;
  o.access.auth_token = "s3cret";
  StartServer(o);
  EXPECT_EQ(TestHttpClient(port()).Post("/v2/logging", R"({"log_info":false})").status, 401u);
  EXPECT_EQ(TestHttpClient(port()).Get("/v2/trace/setting").status, 401u);
  EXPECT_EQ(TestHttpClient(port()).Post("/v2/systemsharedmemory/region/r/register",
                                        R"({"key":"/k","offset":0,"byte_size":16})")
                .status,
            401u);
  EXPECT_NE(TestHttpClient(port()).Send(http::verb::get, "/v2/logging", "", {{"Authorization", "Bearer s3cret"}}).status,
            401u);
}

TEST_F(HttpHardeningTest, AuthTokenGuardsRepositoryControlButNotInference) {
  HttpOptions o;
  o.access.auth_token = "s3cret";
  StartServer(o);
  TestHttpClient c(port());
  HttpResult none = c.Post("/v2/repository/models/echo/load", "");
  EXPECT_EQ(none.status, 401u);
  EXPECT_EQ(none.header("WWW-Authenticate"), "Bearer");
  TestHttpClient d(port());
  EXPECT_EQ(d.Post("/v2/repository/index", "", {{"Authorization", "Bearer wrong"}}).status, 401u);
  TestHttpClient e(port());
  EXPECT_EQ(e.Post("/v2/repository/models/echo/load", "", {{"Authorization", "Bearer s3cret"}}).status, 200u);
  EXPECT_EQ(e.Post("/v2/models/echo/infer", kEchoBody).status, 200u);  // inference needs no token
}

TEST(MetricsListenerHardeningTest, HeadGetsNoBodyAndAForeignHostIs403) {
  Metrics metrics;
  MetricsServerOptions o;
  o.port = 0;
  auto server = MetricsServer::Start(metrics, o);
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  const uint16_t port = (*server)->port();
  metrics.RecordExecution("m", "1");
  ASSERT_EQ(TestHttpClient(port).Get("/metrics").status, 200u);
  HttpResult evil = TestHttpClient(port).Send(http::verb::get, "/metrics", "", {{"Host", "evil.example"}});
  EXPECT_EQ(evil.status, 403u);
  // A HEAD reply read as a GET's would wait for its body: read raw bytes.
  const std::string received = Exchange(port, "HEAD /metrics HTTP/1.1\r\nHost: localhost\r\n\r\n");
  const size_t end_of_head = received.find("\r\n\r\n");
  ASSERT_NE(end_of_head, std::string::npos) << received;
  EXPECT_EQ(received.size(), end_of_head + 4) << "the HEAD reply carried a body";
  EXPECT_THAT(received, HasSubstr("200 OK"));
}

TEST(RequestAccessTest, ReadsTheTokenFromTheFirstLineAndRefusesAnEmptyFile) {
  const std::string dir = ::testing::TempDir();
  const std::string path = dir + "/ortgpu-token-" + std::to_string(::getpid());
  {
    std::FILE* f = std::fopen(path.c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fputs("  abc123 \nsecond line\n", f);
    std::fclose(f);
  }
  auto token = ReadAuthTokenFile(path);
  ASSERT_TRUE(token.ok()) << token.status().message();
  EXPECT_EQ(*token, "abc123");
  {
    std::FILE* f = std::fopen(path.c_str(), "w");
    std::fclose(f);
  }
  auto empty = ReadAuthTokenFile(path);
  EXPECT_EQ(empty.status().code(), Code::kInvalidArgument);
  EXPECT_THAT(empty.status().message(), HasSubstr("--auth-token-file"));
  std::remove(path.c_str());
}

}  // namespace
}  // namespace ortgpu::serve
