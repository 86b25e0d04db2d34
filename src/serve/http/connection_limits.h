// How the HTTP acceptor admits connections: at most a fixed number open at
// once (HttpOptions::max_connections, by default sized from the process's
// file-descriptor limit) and, when accept() fails because the process or
// the system ran out of descriptors or memory, a pause that doubles up to a
// second instead of retrying at once (which burnt a core at ~33k failed
// accepts/s and starved the connections already open).
//
// AcceptBackoff is used only on the acceptor's strand (not thread-safe);
// the free functions are pure or read the process's limits.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string_view>

#include <boost/system/error_code.hpp>

namespace ortgpu::serve {

// What the acceptor reports, for metrics (serve/metrics/metrics.h). Either
// may be empty. Called from network threads, so each must be thread-safe.
struct ConnectionEvents {
  // One connection refused: `reason` is "max_connections" (accepted and
  // closed at once because the limit was reached) or "accept_failed" (the
  // kernel's accept failed: EMFILE, ENFILE, ENOBUFS, ENOMEM).
  std::function<void(std::string_view reason)> refused;
  // The number of open connections changed to `open`.
  std::function<void(int64_t open)> open;
};

// Descriptors kept free for everything but client connections: model files,
// sessions and their libraries, the metrics listener, logs.
inline constexpr int64_t kReservedDescriptors = 64;

// The default --max-connections: the soft RLIMIT_NOFILE less
// kReservedDescriptors, at least 1 (and at most 1,000,000 when the limit
// is unlimited).
int64_t DefaultMaxConnections();

// True when an accept error means a resource ran out (EMFILE, ENFILE,
// ENOBUFS, ENOMEM): the acceptor must pause before it tries again.
bool IsResourceExhaustion(const boost::system::error_code& ec);

// The pause before the next accept after a resource ran out: `initial`,
// doubled after each failure up to `max`; Reset() after an accept worked.
class AcceptBackoff {
 public:
  explicit AcceptBackoff(std::chrono::milliseconds initial = std::chrono::milliseconds(10),
                         std::chrono::milliseconds max = std::chrono::milliseconds(1000))
      : initial_(initial), max_(max), next_(initial) {}

  std::chrono::milliseconds Next() {
    const auto pause = next_;
    next_ = std::min(max_, next_ * 2);
    ++failures_;
    return pause;
  }
  void Reset() {
    next_ = initial_;
    failures_ = 0;
  }
  // Failures since the last Reset(): the acceptor logs only the first.
  int64_t failures() const { return failures_; }

 private:
  std::chrono::milliseconds initial_;
  std::chrono::milliseconds max_;
  std::chrono::milliseconds next_;
  int64_t failures_ = 0;
};

}  // namespace ortgpu::serve
