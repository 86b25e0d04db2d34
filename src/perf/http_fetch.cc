#include "perf/http_fetch.h"

#include <charconv>

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

namespace ortgpu::perf {

namespace beast = boost::beast;
namespace http = beast::http;
using tcp = boost::asio::ip::tcp;

Expected<HttpEndpoint> ParseHttpUrl(std::string_view url, std::string_view flag) {
  const std::string shown(url);
  std::string_view rest = url;
  if (const auto scheme = rest.find("://"); scheme != std::string_view::npos) {
    const std::string_view s = rest.substr(0, scheme);
    if (s == "grpc") {
      return InvalidArgument(std::string(flag) + " '" + shown + "' is the gRPC endpoint; give the HTTP one here "
                             "(model metadata and statistics are read over HTTP) and send the load over gRPC with "
                             "-i grpc --grpc-url HOST:PORT");
    }
    if (s != "http") {
      return InvalidArgument(std::string(flag) + " '" + shown + "': the scheme " + std::string(s) +
                             ":// is not supported; perf speaks KServe v2 over HTTP/1.1 (and gRPC with -i grpc): "
                             "use http://HOST:PORT");
    }
    rest.remove_prefix(scheme + 3);
  }
  HttpEndpoint e;
  const auto slash = rest.find('/');
  if (slash != std::string_view::npos) {
    e.path = std::string(rest.substr(slash));
    rest = rest.substr(0, slash);
    if (e.path == "/") e.path.clear();
  }
  const auto colon = rest.rfind(':');
  std::string_view host = rest;
  if (colon != std::string_view::npos) {
    host = rest.substr(0, colon);
    const std::string_view port = rest.substr(colon + 1);
    unsigned value = 0;
    auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
    if (ec != std::errc() || end != port.data() + port.size() || value == 0 || value > 65535) {
      return InvalidArgument(std::string(flag) + " '" + shown + "': the port '" + std::string(port) +
                             "' is not a number in 1..65535; e.g. http://localhost:8000");
    }
    e.port = static_cast<uint16_t>(value);
  }
  if (host.empty()) return InvalidArgument(std::string(flag) + " '" + shown + "' names no host; e.g. http://localhost:8000");
  e.host = std::string(host);
  return e;
}

namespace {

Expected<FetchResult> Exchange(const HttpEndpoint& endpoint, http::verb verb, const std::string& target,
                               const std::string& body, std::chrono::milliseconds timeout) {
  const std::string url = "http://" + endpoint.authority() + target;
  boost::asio::io_context ioc;
  beast::tcp_stream stream(ioc);
  beast::flat_buffer buffer;
  http::response<http::string_body> response;
  beast::error_code failure;
  const char* stage = "connect to";
  // One deadline over resolve, connect, write and read, run asynchronously
  // so that the tcp_stream's timer bounds every step.
  tcp::resolver resolver(ioc);
  http::request<http::string_body> request{verb, target, 11};
  request.set(http::field::host, endpoint.authority());
  if (verb == http::verb::post) {
    request.set(http::field::content_type, "application/json");
    request.body() = body;
    request.prepare_payload();
  }
  stream.expires_after(timeout);
  resolver.async_resolve(endpoint.host, std::to_string(endpoint.port), [&](beast::error_code ec, tcp::resolver::results_type r) {
    if (ec) { failure = ec; return; }
    stream.async_connect(r, [&](beast::error_code ec, const tcp::endpoint&) {
      if (ec) { failure = ec; return; }
      stage = "send to";
      http::async_write(stream, request, [&](beast::error_code ec, size_t) {
        if (ec) { failure = ec; return; }
        stage = "read a response from";
        http::async_read(stream, buffer, response, [&](beast::error_code ec, size_t) { failure = ec; });
      });
    });
  });
  ioc.run_for(timeout + std::chrono::milliseconds(100));
  if (!ioc.stopped() || failure == beast::error::timeout) {
    return DeadlineExceeded("no answer from " + url + " within " + std::to_string(timeout.count()) +
                            " ms; is the server up and not stalled?");
  }
  if (failure) {
    return Unavailable(std::string("cannot ") + stage + " " + url + ": " + failure.message() +
                       "; check --url and that the server is running");
  }
  return FetchResult{response.result_int(), std::move(response.body())};
}

}  // namespace

Expected<FetchResult> Fetch(const HttpEndpoint& endpoint, const std::string& target, std::chrono::milliseconds timeout) {
  return Exchange(endpoint, http::verb::get, target, "", timeout);
}

Expected<FetchResult> Post(const HttpEndpoint& endpoint, const std::string& target, const std::string& json_body,
                           std::chrono::milliseconds timeout) {
  return Exchange(endpoint, http::verb::post, target, json_body, timeout);
}

}  // namespace ortgpu::perf
