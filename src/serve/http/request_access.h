// Who may talk to the HTTP endpoints, beyond a TCP connection: the checks
// that keep a web page in a browser from using a server on localhost (DNS
// rebinding through the Host header, cross-site requests through Origin) and
// the optional bearer token of the repository-control endpoints.
//
//   Host    accepted when it is an IP address (any: a browser that sends an
//           IP as Host reached the server by that address, so a rebound
//           name cannot hide behind it), "localhost", or one of
//           allowed_hosts ("*": any). Port and a trailing dot are ignored;
//           no Host header (HTTP/1.0) is accepted.
//   Origin  when present (browsers send it on cross-origin and POST
//           requests; other clients do not) it must be the server itself
//           (http://<Host>) or one of allowed_origins ("*": any).
//           A cross-origin request that passes gets CORS headers
//           (Access-Control-Allow-Origin: that origin), and an OPTIONS
//           preflight from it a 204 naming the methods and headers allowed.
//   Token   with a token set, POST /v2/repository/index, .../load and
//           .../unload need "Authorization: Bearer <token>" (compared in
//           constant time).
//
// Pure functions; thread-safe.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "serve/protocol/route.h"
#include "status/expected.h"

namespace ortgpu::serve {

struct AccessOptions {
  // Host names accepted besides IP addresses and "localhost"; "*" accepts
  // any Host. --allow-host.
  std::vector<std::string> allowed_hosts;
  // Origins ("https://app.example.com", scheme://host[:port]) whose browser
  // requests are accepted; "*": any. --allow-origin.
  std::vector<std::string> allowed_origins;
  // Bearer token of the repository-control endpoints; "": none asked for.
  // --auth-token-file.
  std::string auth_token;
};

// The request headers the checks read; "" when absent.
struct AccessHeaders {
  std::string_view host;
  std::string_view origin;
  std::string_view authorization;
  bool preflight = false;  // an OPTIONS request: a CORS preflight carries no token
};

struct AccessDenied {
  // kForbidden (403) for Host/Origin, kUnauthorized (401, with
  // WWW-Authenticate: Bearer) for the token.
  HttpRefusal refusal = HttpRefusal::kForbidden;
  std::string message;  // what was seen and the flag that allows it
};

// nullopt when the request may proceed to `endpoint`.
std::optional<AccessDenied> CheckAccess(const AccessOptions& options, const AccessHeaders& headers,
                                        protocol::Endpoint endpoint);

// True when `origin` ("http://host:port") names the server the request was
// sent to (`host`, the Host header): not a cross-origin request.
bool IsSameOrigin(std::string_view origin, std::string_view host);

// Whether `authorization` ("Bearer <token>", scheme case-insensitive) carries
// `token`, compared in constant time. The gRPC front end checks its
// metadata with it.
bool BearerTokenMatches(std::string_view authorization, std::string_view token);

// Reads --auth-token-file: the file's first line, surrounding whitespace
// trimmed. InvalidArgument naming the flag when it cannot be read or is empty.
Expected<std::string> ReadAuthTokenFile(const std::string& path);

}  // namespace ortgpu::serve
