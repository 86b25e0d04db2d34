// TestHttpClient: a blocking Beast HTTP/1.1 client for end-to-end tests of
// the HTTP servers over real sockets. One connection per object (keep-alive
// by default); not thread-safe. Every socket operation has a 10 s deadline so
// a broken server fails the test instead of hanging it.
#pragma once

#include <chrono>
#include <string>

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

namespace ortgpu::serve::testing {

namespace beast = boost::beast;
namespace http = beast::http;
using tcp = boost::asio::ip::tcp;

struct HttpResult {
  unsigned status = 0;
  std::string body;
  http::response<http::string_body> raw;
  bool keep_alive() const { return raw.keep_alive(); }
  std::string header(std::string_view name) const {
    auto it = raw.find(name);
    return it == raw.end() ? "" : std::string(it->value());
  }
};

class TestHttpClient {
 public:
  explicit TestHttpClient(uint16_t port) : stream_(ioc_) {
    stream_.expires_after(std::chrono::seconds(10));
    stream_.connect(tcp::endpoint(boost::asio::ip::make_address("127.0.0.1"), port));
  }

  HttpResult Get(const std::string& target) { return Send(http::verb::get, target, ""); }
  HttpResult Post(const std::string& target, const std::string& body,
                  const std::vector<std::pair<std::string, std::string>>& headers = {}) {
    return Send(http::verb::post, target, body, headers);
  }

  HttpResult Send(http::verb method, const std::string& target, const std::string& body,
                  const std::vector<std::pair<std::string, std::string>>& headers = {}) {
    Write(method, target, body, headers);
    return Read();
  }

  void Write(http::verb method, const std::string& target, const std::string& body,
             const std::vector<std::pair<std::string, std::string>>& headers = {}) {
    http::request<http::string_body> req{method, target, 11};
    req.set(http::field::host, "127.0.0.1");
    for (const auto& [k, v] : headers) req.set(k, v);
    req.body() = body;
    req.prepare_payload();
    stream_.expires_after(std::chrono::seconds(10));
    http::write(stream_, req);
  }

  void WriteRaw(const std::string& bytes) {
    stream_.expires_after(std::chrono::seconds(10));
    boost::asio::write(stream_, boost::asio::buffer(bytes));
  }

  HttpResult Read() {
    HttpResult r;
    stream_.expires_after(std::chrono::seconds(10));
    http::response_parser<http::string_body> parser;
    parser.body_limit(1u << 30);
    http::read(stream_, buffer_, parser);
    r.raw = parser.release();
    r.status = r.raw.result_int();
    r.body = r.raw.body();
    return r;
  }

  // True when the server closed the connection: a read returns EOF (or a
  // reset) before the deadline instead of data.
  bool ServerClosed() {
    stream_.expires_after(std::chrono::seconds(10));
    char c;
    beast::error_code ec;
    stream_.read_some(boost::asio::buffer(&c, 1), ec);
    return ec == boost::asio::error::eof || ec == boost::asio::error::connection_reset;
  }

  // True when the server ends the connection within 10 s, whether or not
  // it sent a reply first (what it sent is read and dropped).
  bool ServerEnds() {
    stream_.expires_after(std::chrono::seconds(10));
    char chunk[4096];
    beast::error_code ec;
    while (!ec) stream_.read_some(boost::asio::buffer(chunk), ec);
    return ec == boost::asio::error::eof || ec == boost::asio::error::connection_reset;
  }

  void ShutdownSend() { stream_.socket().shutdown(tcp::socket::shutdown_send); }
  // Closes with a reset (SO_LINGER 0), as a killed client or a timed-out
  // one with unread data does: the server sees the client gone.
  void Reset() {
    stream_.socket().set_option(boost::asio::socket_base::linger(true, 0));
    stream_.socket().close();
  }

 private:
  boost::asio::io_context ioc_;
  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
};

}  // namespace ortgpu::serve::testing
