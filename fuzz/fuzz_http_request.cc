// libFuzzer target over the HTTP front end's request path without sockets:
// Beast's request parser on raw bytes (header and body limits as the server
// sets them), then what a connection does with a complete request: URL
// routing, the Host / Origin / token checks, the method check (HEAD on GET
// endpoints) and DispatchEndpoint against the tests' FakeModelServer (model
// "echo" returns its inputs), the deferred response encoded as on the strand.
// Every input must end in a reply or a parse error: no crash, no sanitizer
// report, no unbounded allocation.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include <boost/asio/thread_pool.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include "fakes/fake_model_server.h"
#include "serve/http/endpoints.h"
#include "serve/http/request_access.h"
#include "serve/protocol/route.h"

using namespace ortgpu;
using namespace ortgpu::serve;
namespace http = boost::beast::http;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static FakeModelServer server;  // "echo" READY, "broken" UNAVAILABLE
  static boost::asio::thread_pool blocking{1};
  static boost::asio::thread_pool decode{1};  // bodies here stay under kDecodeElsewhereBytes
  static const AccessOptions access = [] {
    AccessOptions a;
    a.allowed_hosts = {"models.internal"};
    a.allowed_origins = {"https://app.example.com"};
    a.auth_token = "token";
    return a;
  }();

  http::request_parser<http::string_body> parser;
  parser.header_limit(64 * 1024);
  parser.body_limit(1 << 20);
  parser.eager(true);
  boost::beast::error_code ec;
  std::string_view rest(reinterpret_cast<const char*>(data), size);
  while (!rest.empty() && !parser.is_done()) {
    const size_t used = parser.put(boost::asio::buffer(rest.data(), rest.size()), ec);
    if (ec == http::error::need_more) break;
    if (ec) return 0;  // a malformed request: the server answers 400 and closes
    if (used == 0) break;
    rest.remove_prefix(used);
  }
  if (!parser.is_done()) {
    parser.put_eof(ec);
    if (ec || !parser.is_done()) return 0;
  }
  const auto& req = parser.get();

  auto route = protocol::MatchRoute(req.target());
  if (!route) return 0;
  if (CheckAccess(access, {req[http::field::host], req[http::field::origin], req[http::field::authorization]},
                  route->endpoint)) {
    return 0;
  }
  const bool head = req.method() == http::verb::head && route->method == "GET";
  if (req.method_string() != route->method && !head) return 0;

  EndpointRequest er;
  er.route = std::move(route).value();
  er.body = RequestBody::Copy(req.body());
  if (auto it = req.find("Inference-Header-Content-Length"); it != req.end()) {
    er.inference_header_length = std::string(it->value());
  }
  er.content_encoding = std::string(req[http::field::content_encoding]);
  DispatchEndpoint(server, std::move(er), {blocking, decode}, [](HttpReply reply) {
    if (reply.finish) reply = reply.finish();
    if (reply.status == 0) __builtin_trap();  // every reply carries a status
  });
  return 0;
}
