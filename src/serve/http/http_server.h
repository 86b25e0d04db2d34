// HttpServer: the KServe v2 REST front end of `ortgpu serve`, on Boost.Beast.
// It owns the listening socket, the connections and a pool of network
// threads; it parses and validates each request on its connection's strand,
// calls the ModelServer, and writes the response from the completion (posted
// back to the strand). Endpoints and status codes: docs/PROTOCOL.md.
//
// Connections are HTTP/1.1 with keep-alive; requests on one connection are
// handled one at a time in arrival order, so pipelined requests get their
// responses in order. Every response answers exactly the request it was
// read for: an infer that outlives request_timeout gets a 504, and its late
// result is dropped, never sent as the answer of a later request.
//
// Lifecycle: Start() -> serving -> BeginDrain() (no new connections; new
// requests get 503) -> WaitIdle() (in-flight requests finish) -> Stop()
// (closes every connection, joins the threads). The destructor calls Stop().
//
// Thread-safety: every public method may be called from any thread.
// REQUIRES: the ModelServer outlives the HttpServer. Completions the
// ModelServer delivers after Stop() are dropped safely.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include <spdlog/logger.h>

#include "serve/front_end_defaults.h"
#include "serve/busy_poll.h"
#include "serve/http/connection_limits.h"
#include "serve/http/request_access.h"
#include "serve/model_server.h"
#include "serve/runtime_settings.h"
#include "status/expected.h"

namespace ortgpu::serve {

enum class AccessLogFormat { kNone, kPlain, kJson };
// "none" | "plain" | "json"; InvalidArgument naming the accepted values.
Expected<AccessLogFormat> ParseAccessLogFormat(std::string_view text);
std::string_view AccessLogFormatName(AccessLogFormat format);  // "none", "plain", "json"

struct HttpOptions {
  std::string host = kDefaultHost;
  uint16_t port = kDefaultHttpPort;  // 0: any free port (HttpServer::port() reports it)
  int threads = 0;       // network threads; 0: hardware threads, at most 8
  size_t max_body_bytes = kDefaultMaxBodyBytes;  // larger bodies get 413
  // An infer request not answered within this gets 504; 0 disables.
  std::chrono::milliseconds request_timeout = kDefaultRequestTimeout;
  // How long a connection may wait for (and send) the header of its next
  // request; then it is closed. Bounds idle keep-alive and slow headers.
  std::chrono::milliseconds idle_timeout{30'000};
  // How long a request body may take to arrive once its header is read.
  std::chrono::milliseconds read_timeout{30'000};
  // How long writing a response may take (a client that stops reading).
  std::chrono::milliseconds write_timeout{30'000};
  // Busy polling (BusyPoll, busy_poll.h): while a handler ran within this
  // window and requests do not overlap, one network thread keeps polling
  // (socket events and posted replies) instead of blocking in epoll, so a
  // reply posted by a worker, or the next request of a lone client, is taken
  // at once instead of after a thread's wake-up (tens of microseconds on a
  // virtual machine). Costs one core while a lone client keeps the server
  // busy, none when idle or crowded. 0: block at once.
  std::chrono::microseconds busy_poll = kDefaultBusyPoll;
  // Connections open at once; one more is accepted and closed at once (and
  // counted in connection_events.refused). 0: DefaultMaxConnections(), the
  // file-descriptor limit less a reserve (connection_limits.h).
  int64_t max_connections = 0;
  ConnectionEvents connection_events;
  // Host and Origin checks and the repository-control token
  // (request_access.h); the default accepts IP addresses and localhost as
  // Host and no cross-origin browser request.
  AccessOptions access;
  AccessLogFormat access_log = AccessLogFormat::kNone;
  // Where access log lines go (info level); null: spdlog's default logger.
  std::shared_ptr<spdlog::logger> access_logger;
  // What the logging and trace endpoints read and change; null: they answer
  // 501. REQUIRES: outlives the server.
  RuntimeSettings* settings = nullptr;
};

class HttpServer {
 public:
  // Binds host:port and starts the network threads. Unavailable (with the
  // address and the OS error) when the address cannot be bound.
  static Expected<std::unique_ptr<HttpServer>> Start(ModelServer& server, HttpOptions options);

  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // The bound port (the real one when options.port was 0).
  uint16_t port() const;

  // Stops accepting connections; requests that arrive from now on get 503
  // and their connection is closed after the response. A connection still
  // reading the body of a request is closed at once (the request was not
  // taken on yet, and a client trickling its body must not hold the
  // shutdown). Idempotent.
  void BeginDrain();
  // Answers every request still waiting for its reply with `status` (the
  // drain timeout passed: 503), closes its connection after the reply, and
  // cancels it (InferRequest::cancelled), so a request still queued in the
  // scheduler is dropped instead of run. Requests already executing finish
  // and their result is dropped. REQUIRES: BeginDrain() was called.
  void AnswerPending(const Status& status);
  // Waits until no request is in flight (read but not yet answered) or
  // `timeout` passes; true when idle.
  bool WaitIdle(std::chrono::milliseconds timeout);
  // Closes every connection and joins the network threads. Idempotent.
  void Stop();

  // Requests read but not yet answered, for tests and the drain log.
  int in_flight() const;

  struct State;  // shared with the connections; defined in http_server.cc

 private:
  explicit HttpServer(std::shared_ptr<State> state);
  std::shared_ptr<State> state_;
};

}  // namespace ortgpu::serve
