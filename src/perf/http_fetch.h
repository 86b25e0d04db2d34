// HttpEndpoint and Fetch: where `ortgpu perf` sends its load (parsed from
// --url), and the blocking HTTP/1.1 GET (and POST) it uses for everything
// that is not load: model metadata and config, the statistics extension
// before and after each window, the Prometheus scrape and the registration
// of shared memory regions. Each call opens its own connection with a
// deadline, so a stalled server costs at most `timeout`.
// Pure parsing plus a blocking call; thread-safe (no shared state).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include "status/expected.h"

namespace ortgpu::perf {

struct HttpEndpoint {
  std::string host;      // "127.0.0.1", "localhost"
  uint16_t port = 8000;  // 8000 when the URL names none
  std::string path;      // "" or "/metrics" (only the metrics URL has one)
  // "HOST:PORT", the Host header.
  std::string authority() const { return host + ":" + std::to_string(port); }
};

// Parses "http://HOST[:PORT][/PATH]" (also "HOST:PORT" with no scheme).
// "grpc://" and "https://" are InvalidArgument saying what is supported;
// `flag` ("--url") names the flag in errors.
Expected<HttpEndpoint> ParseHttpUrl(std::string_view url, std::string_view flag);

struct FetchResult {
  unsigned status = 0;
  std::string body;
};

// GET `target` from `endpoint`. Errors: Unavailable when the connection
// fails (refused, reset) and DeadlineExceeded past `timeout`, each naming
// the URL. An HTTP error status is not an error: it is in the result.
Expected<FetchResult> Fetch(const HttpEndpoint& endpoint, const std::string& target, std::chrono::milliseconds timeout);
// POST `json_body` (Content-Type: application/json) to `target`; as Fetch.
Expected<FetchResult> Post(const HttpEndpoint& endpoint, const std::string& target, const std::string& json_body,
                           std::chrono::milliseconds timeout);

}  // namespace ortgpu::perf
