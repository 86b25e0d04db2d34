// LoadClient: the asynchronous HTTP/1.1 load generator behind `ortgpu perf`.
// N keep-alive connections on one Asio io_context thread by default
// (ClientOptions::threads spreads them over more), each writing the
// pre-encoded request bytes (request_builder.h) with one async_write of a
// two-buffer sequence and reading the response into a buffer it owns and
// reuses. Nothing is allocated per request on the steady path: no per-request
// timer (one ticker per thread checks deadlines), no header map (the
// response head is scanned in place for the status, Content-Length and
// Connection: close).
//
// Two ways to send:
//   - closed loop (concurrency mode): every connection sends its next request
//     as soon as the previous answer arrives, so `connections` requests are
//     always outstanding;
//   - open loop (rate mode): sends follow an ArrivalSchedule; a send that
//     finds no idle connection waits in a backlog and is counted as delayed.
//     Its latency runs from its scheduled time, so a slow server is not
//     hidden by the client waiting for it (no coordinated omission).
// `request_limit` > 0 stops after that many sends (--request-count).
//
// A request unanswered after `request_timeout` is recorded as kTimeout and
// its connection is closed and reopened; a refused or reset connection is
// recorded as kTransportError and retried after a short pause. Completions
// are collected by TakeCompletions from any one controlling thread.
// Thread-safety: Start, TakeCompletions, Stop and the destructor from one
// thread; the I/O threads are internal.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "perf/arrivals.h"
#include "perf/http_fetch.h"
#include "perf/request_builder.h"
#include "status/expected.h"

namespace ortgpu::perf {

// Completion::status values that are not HTTP statuses.
inline constexpr int kTransportError = 0;  // connect failed, reset, malformed response
inline constexpr int kTimeout = -1;        // no complete answer within request_timeout

struct Completion {
  int64_t end_ns = 0;      // steady_clock time the answer was complete
  int64_t latency_ns = 0;  // from the send (closed loop) or its scheduled time (open loop)
  int status = 0;          // HTTP status, kTransportError or kTimeout
  bool delayed = false;    // open loop: it waited for a free connection
};

struct ClientOptions {
  int connections = 1;  // concurrency (closed loop) or pool size (open loop)
  int threads = 1;      // I/O threads; connections are spread round-robin
  std::chrono::milliseconds request_timeout{10000};
  // Open loop when rate_per_s > 0; each thread gets rate/threads.
  double rate_per_s = 0;
  Distribution distribution = Distribution::kConstant;
  uint64_t seed = 1;
  int64_t request_limit = 0;  // 0: no limit
  // The I/O threads poll without sleeping (a core each): no wake-up between
  // a response's arrival and its read, as trtexec's --useSpinWait.
  bool busy_poll = false;
};

// steady_clock now in nanoseconds (the clock of every Completion).
int64_t SteadyNowNs();

// What perf's measurement loop asks of a load generator: LoadClient (HTTP)
// or GrpcLoadClient (grpc_client.h).
class LoadGenerator {
 public:
  virtual ~LoadGenerator() = default;
  // Moves the completions recorded since the last call onto `out`.
  virtual void TakeCompletions(std::vector<Completion>& out) = 0;
  // Requests answered (or failed) so far.
  virtual int64_t completed() const = 0;
  // Blocks until `n` requests have completed or `timeout` passed; true in
  // the first case.
  virtual bool WaitForCompleted(int64_t n, std::chrono::milliseconds timeout) = 0;
  // The first transport failure's text, "" if none.
  virtual std::string first_transport_error() const = 0;
  // Stops sending, waits up to `drain` for outstanding requests, then closes
  // everything. Idempotent.
  virtual void Stop(std::chrono::milliseconds drain) = 0;
};

struct SharedState;  // what the I/O threads share (client.cc)

class LoadClient : public LoadGenerator {
 public:
  // Resolves `endpoint`, opens the connections and starts sending on
  // `options.threads` new threads. Errors: the host does not resolve, or
  // options are out of range. REQUIRES: requests non-empty (each is sent in
  // turn); connections, threads >= 1.
  static Expected<std::unique_ptr<LoadClient>> Start(const HttpEndpoint& endpoint, std::vector<EncodedRequest> requests,
                                                     const ClientOptions& options);
  ~LoadClient() override;
  LoadClient(const LoadClient&) = delete;
  LoadClient& operator=(const LoadClient&) = delete;

  // Moves the completions recorded since the last call onto `out`.
  void TakeCompletions(std::vector<Completion>& out) override;
  // Requests answered (or failed) so far, and sent so far.
  int64_t completed() const override { return completed_.load(std::memory_order_relaxed); }
  // Blocks until `n` requests have completed or `timeout` passed; true in
  // the first case. For a fixed count (request_limit) and tests.
  bool WaitForCompleted(int64_t n, std::chrono::milliseconds timeout) override;
  // The first transport failure's text ("connection refused to 127.0.0.1:8000"), "" if none.
  std::string first_transport_error() const override;

  // Stops sending, waits up to `drain` for outstanding requests, then closes
  // every connection and joins the threads. Idempotent.
  void Stop(std::chrono::milliseconds drain) override;

  struct Worker;  // one I/O thread and its connections (client.cc)

 private:
  LoadClient() = default;
  std::shared_ptr<SharedState> shared_;
  std::vector<std::unique_ptr<Worker>> workers_;
  std::atomic<int64_t> completed_{0};
  bool stopped_ = false;
};

}  // namespace ortgpu::perf
