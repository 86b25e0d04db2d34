#include "serve/metrics/metrics_server.h"

#include "serve/http/listener.h"
#include "status/status.h"

#include <optional>
#include <thread>

#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <fmt/format.h>

namespace ortgpu::serve {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

struct MetricsServer::State {
  State(const Metrics& m, MetricsServerOptions o) : metrics(m), options(std::move(o)), acceptor(ioc) {}
  const Metrics& metrics;
  const MetricsServerOptions options;
  asio::io_context ioc;  // run by `thread` only, so no strands are needed
  tcp::acceptor acceptor;
  std::thread thread;
  uint16_t port = 0;
  bool stopped = false;  // touched only by the caller of Stop()
};

namespace {

using State = MetricsServer::State;

// One scrape: read a request, answer, close.
class ScrapeConnection : public std::enable_shared_from_this<ScrapeConnection> {
 public:
  ScrapeConnection(State& state, tcp::socket socket) : state_(state), stream_(std::move(socket)) {}

  void Start() {
    stream_.expires_after(state_.options.read_timeout);
    http::async_read(stream_, buffer_, request_,
                     [self = shared_from_this()](beast::error_code ec, size_t) { self->OnRead(ec); });
  }

 private:
  void OnRead(beast::error_code ec) {
    if (ec) return;
    response_.version(request_.version());
    response_.keep_alive(false);
    response_.set(http::field::server, "ortgpu");
    std::string_view path = request_.target();
    path = path.substr(0, path.find('?'));
    const auto denied = CheckAccess(state_.options.access,
                                    {request_[http::field::host], request_[http::field::origin], "", false},
                                    protocol::Endpoint::kHealthLive);
    if (denied) {
      response_.result(static_cast<unsigned>(HttpStatusFor(Code::kInvalidArgument, denied->refusal)));
      response_.set(http::field::content_type, "text/plain");
      response_.body() = denied->message + "\n";
    } else if (path != "/metrics") {
      response_.result(static_cast<unsigned>(HttpStatusFor(Code::kNotFound)));
      response_.set(http::field::content_type, "text/plain");
      response_.body() = "metrics are served at /metrics\n";
    } else if (request_.method() != http::verb::get && request_.method() != http::verb::head) {
      response_.result(static_cast<unsigned>(HttpStatusFor(Code::kInvalidArgument, HttpRefusal::kMethodNotAllowed)));
      response_.set(http::field::allow, "GET");
    } else {
      response_.result(http::status::ok);
      response_.set(http::field::content_type, Metrics::kContentType);
      response_.body() = state_.metrics.Serialize();
    }
    response_.prepare_payload();
    if (request_.method() == http::verb::head) {
      // The length the GET would have, and no body (RFC 9110 9.3.2).
      const size_t length = response_.body().size();
      response_.body().clear();
      response_.content_length(length);
    }
    http::async_write(stream_, response_, [self = shared_from_this()](beast::error_code ec, size_t) {
      beast::error_code ignored;
      self->stream_.socket().shutdown(tcp::socket::shutdown_both, ignored);
    });
  }

  State& state_;
  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
  http::request<http::string_body> request_;
  http::response<http::string_body> response_;
};

void Accept(State& state) {
  state.acceptor.async_accept([&state](beast::error_code ec, tcp::socket socket) {
    if (ec == asio::error::operation_aborted || !state.acceptor.is_open()) return;
    if (!ec) std::make_shared<ScrapeConnection>(state, std::move(socket))->Start();
    Accept(state);
  });
}

}  // namespace

Expected<std::unique_ptr<MetricsServer>> MetricsServer::Start(const Metrics& metrics, MetricsServerOptions options) {
  auto state = std::make_shared<State>(metrics, std::move(options));
  ORTGPU_ASSIGN_OR_RETURN(state->port,
                          OpenListener(state->acceptor, {state->options.host, state->options.port, "metrics",
                                                         "pick another --metrics-port or disable metrics"}));
  Accept(*state);
  state->thread = std::thread([s = state.get()] { s->ioc.run(); });
  return std::unique_ptr<MetricsServer>(new MetricsServer(std::move(state)));
}

MetricsServer::MetricsServer(std::shared_ptr<State> state) : state_(std::move(state)) {}

MetricsServer::~MetricsServer() { Stop(); }

uint16_t MetricsServer::port() const { return state_->port; }

void MetricsServer::Stop() {
  if (state_->stopped) return;
  state_->stopped = true;
  // Stopping the io_context abandons open scrapes; their handlers (and the
  // connections they own) are destroyed with the io_context.
  state_->ioc.stop();
  if (state_->thread.joinable()) state_->thread.join();
  beast::error_code ec;
  state_->acceptor.close(ec);
}

}  // namespace ortgpu::serve
