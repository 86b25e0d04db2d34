// fixed_response_server: the bare Boost.Beast HTTP server `ortgpu perf` is
// measured against wrk with (scripts/perf_vs_wrk.sh, docs/BENCHMARKS.md). It
// answers every POST with one fixed KServe v2 infer response (binary output
// of 16 bytes), and the GETs perf makes before it starts: the metadata and
// config of one model "fixed" (an FP32 input "x" of [-1, 4], output "y");
// everything else is 404. Keep-alive; no model, no parsing of the body.
//
//   ortgpu_fixed_response_server PORT [THREADS]
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

namespace {

const std::string kInferJson =
    R"({"model_name":"fixed","model_version":"1","outputs":[{"name":"y","datatype":"FP32","shape":[1,4],"parameters":{"binary_data_size":16}}]})";
const std::string kInferBody = kInferJson + std::string(16, '\0');
const std::string kMetadata =
    R"({"name":"fixed","versions":["1"],"platform":"fixed","inputs":[{"name":"x","datatype":"FP32","shape":[-1,4]}],)"
    R"("outputs":[{"name":"y","datatype":"FP32","shape":[-1,4]}]})";
const std::string kConfig = R"({"name":"fixed","max_batch_size":8})";

class Session : public std::enable_shared_from_this<Session> {
 public:
  explicit Session(tcp::socket socket) : stream_(std::move(socket)) {}
  void Start() { Read(); }

 private:
  void Read() {
    request_ = {};
    http::async_read(stream_, buffer_, request_, [self = shared_from_this()](beast::error_code ec, size_t) {
      if (ec) return;
      self->Answer();
    });
  }

  void Answer() {
    response_ = {};
    response_.version(11);
    response_.keep_alive(request_.keep_alive());
    const std::string_view target = request_.target();
    if (request_.method() == http::verb::post) {
      response_.result(http::status::ok);
      response_.set(http::field::content_type, "application/octet-stream");
      response_.set("Inference-Header-Content-Length", std::to_string(kInferJson.size()));
      response_.body() = kInferBody;
    } else if (target == "/v2/models/fixed") {
      response_.result(http::status::ok);
      response_.body() = kMetadata;
    } else if (target == "/v2/models/fixed/config") {
      response_.result(http::status::ok);
      response_.body() = kConfig;
    } else {
      response_.result(http::status::not_found);
      response_.body() = R"({"error":"not found"})";
    }
    response_.prepare_payload();
    http::async_write(stream_, response_, [self = shared_from_this()](beast::error_code ec, size_t) {
      if (ec || !self->response_.keep_alive()) return;
      self->Read();
    });
  }

  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
  http::request<http::string_body> request_;
  http::response<http::string_body> response_;
};

void Accept(tcp::acceptor& acceptor, asio::io_context& ioc) {
  acceptor.async_accept(asio::make_strand(ioc), [&acceptor, &ioc](beast::error_code ec, tcp::socket socket) {
    if (!ec) {
      socket.set_option(tcp::no_delay(true));
      std::make_shared<Session>(std::move(socket))->Start();
    }
    Accept(acceptor, ioc);
  });
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s PORT [THREADS]\n", argv[0]);
    return 2;
  }
  const auto port = static_cast<unsigned short>(std::atoi(argv[1]));
  const int threads = argc > 2 ? std::max(1, std::atoi(argv[2])) : 1;
  asio::io_context ioc(threads);
  tcp::acceptor acceptor(ioc, tcp::endpoint(asio::ip::make_address("127.0.0.1"), port));
  std::printf("listening on 127.0.0.1:%u with %d thread(s)\n", acceptor.local_endpoint().port(), threads);
  std::fflush(stdout);
  Accept(acceptor, ioc);
  std::vector<std::thread> pool;
  for (int i = 1; i < threads; ++i) pool.emplace_back([&ioc] { ioc.run(); });
  ioc.run();
  for (auto& t : pool) t.join();
}
