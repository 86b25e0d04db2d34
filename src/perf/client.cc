#include "perf/client.h"

#include <array>
#include <charconv>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <optional>
#include <string_view>
#include <thread>

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>

namespace ortgpu::perf {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using error_code = boost::system::error_code;

int64_t SteadyNowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

namespace {

constexpr size_t kInitialBuffer = 16 * 1024;
constexpr size_t kMaxHead = 64 * 1024;
constexpr int64_t kRetryPauseNs = 100'000'000;  // after a refused or reset connection

bool StartsWithNoCase(std::string_view line, std::string_view prefix) {
  if (line.size() < prefix.size()) return false;
  for (size_t i = 0; i < prefix.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(line[i])) != prefix[i]) return false;
  }
  return true;
}

std::string_view TrimValue(std::string_view v) {
  while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
  while (!v.empty() && (v.back() == ' ' || v.back() == '\t' || v.back() == '\r')) v.remove_suffix(1);
  return v;
}

}  // namespace

// State shared by the workers of one LoadClient.
struct SharedState {
  std::vector<EncodedRequest> requests;
  tcp::resolver::results_type endpoints;
  std::string authority;
  ClientOptions options;
  std::atomic<int64_t> sends_left{0};  // with a request limit
  std::atomic<int64_t>* completed = nullptr;
  std::atomic<int> busy{0};            // requests written and not yet answered
  std::atomic<int64_t> wait_target{0};  // WaitForCompleted's n while it waits, else 0
  std::mutex mu;                        // guards first_error; pairs with drained
  std::condition_variable drained;      // busy reached 0 while stopping, or wait_target was reached
  std::string first_error;

  bool TakeSend() {
    return options.request_limit <= 0 || sends_left.fetch_sub(1, std::memory_order_relaxed) > 0;
  }
  void NoteError(const std::string& what) {
    std::lock_guard lock(mu);
    if (first_error.empty()) first_error = what;
  }
};

// One connection: owned by its worker, touched only on the worker's thread.
struct Connection {
  enum class State { kConnecting, kIdle, kBusy, kRetryWait, kClosed };
  explicit Connection(asio::io_context& ioc) : socket(ioc), rx(kInitialBuffer) {}
  tcp::socket socket;
  std::vector<char> rx;  // reused for every response
  size_t rx_len = 0;
  size_t head_len = 0;   // 0 until the response head is complete
  size_t total_len = 0;
  int status = 0;
  bool close_after = false;
  State state = State::kConnecting;
  int64_t start_ns = 0;
  int64_t deadline_ns = 0;
  int64_t retry_at_ns = 0;
  bool delayed = false;
  uint64_t generation = 0;  // bumped on close: completions of older operations are stale
  size_t next_request = 0;
};

struct LoadClient::Worker {
  Worker(SharedState& s, int index) : shared(s), ioc(1), ticker(ioc), arrival_timer(ioc) {
    const auto& o = s.options;
    if (o.rate_per_s > 0) schedule.emplace(o.rate_per_s / o.threads, o.distribution, o.seed + static_cast<uint64_t>(index) * 7919);
    done.reserve(1 << 14);
  }

  SharedState& shared;
  asio::io_context ioc;
  std::vector<std::unique_ptr<Connection>> conns;
  asio::steady_timer ticker;
  asio::steady_timer arrival_timer;
  std::optional<ArrivalSchedule> schedule;  // open loop only
  int64_t next_arrival_ns = 0;
  std::deque<int64_t> backlog;  // scheduled times of sends waiting for a connection
  std::vector<Connection*> idle;
  bool stopping = false;
  std::mutex mu;
  std::vector<Completion> done;  // guarded by mu
  std::thread thread;

  int64_t timeout_ns() const { return std::chrono::nanoseconds(shared.options.request_timeout).count(); }

  void Begin() {
    for (auto& c : conns) Connect(*c);
    Tick();
    if (schedule) {
      next_arrival_ns = SteadyNowNs();
      OnArrival();
    }
  }

  void Connect(Connection& c) {
    c.state = Connection::State::kConnecting;
    c.deadline_ns = SteadyNowNs() + timeout_ns();
    const uint64_t gen = c.generation;
    asio::async_connect(c.socket, shared.endpoints, [this, &c, gen](const error_code& ec, const tcp::endpoint&) {
      if (gen != c.generation) return;
      if (ec) return Fail(c, "cannot connect to " + shared.authority + ": " + ec.message());
      error_code ignored;
      c.socket.set_option(tcp::no_delay(true), ignored);
      OnReady(c);
    });
  }

  // The connection can take a request.
  void OnReady(Connection& c) {
    c.state = Connection::State::kIdle;
    if (stopping) return;
    if (!schedule) {
      if (shared.TakeSend()) Send(c, SteadyNowNs(), false);
      return;
    }
    if (!backlog.empty()) {
      const int64_t scheduled = backlog.front();
      backlog.pop_front();
      Send(c, scheduled, true);
      return;
    }
    idle.push_back(&c);
  }

  void Send(Connection& c, int64_t start_ns, bool delayed) {
    c.state = Connection::State::kBusy;
    shared.busy.fetch_add(1, std::memory_order_relaxed);
    c.start_ns = start_ns;
    c.delayed = delayed;
    c.deadline_ns = SteadyNowNs() + timeout_ns();
    c.rx_len = c.head_len = c.total_len = 0;
    const EncodedRequest& r = shared.requests[c.next_request++ % shared.requests.size()];
    const std::array<asio::const_buffer, 2> bytes = {asio::buffer(r.head), asio::buffer(r.body)};
    const uint64_t gen = c.generation;
    asio::async_write(c.socket, bytes, [this, &c, gen](const error_code& ec, size_t) {
      if (gen != c.generation) return;
      if (ec) return Fail(c, "cannot send to " + shared.authority + ": " + ec.message());
      Read(c);
    });
  }

  void Read(Connection& c) {
    if (c.rx_len == c.rx.size()) c.rx.resize(c.rx.size() * 2);
    const uint64_t gen = c.generation;
    c.socket.async_read_some(asio::buffer(c.rx.data() + c.rx_len, c.rx.size() - c.rx_len),
                             [this, &c, gen](const error_code& ec, size_t n) {
                               if (gen != c.generation) return;
                               if (ec) {
                                 return Fail(c, ec == asio::error::eof ? "the server at " + shared.authority + " closed the connection"
                                                                       : "cannot read from " + shared.authority + ": " + ec.message());
                               }
                               c.rx_len += n;
                               std::string problem;
                               if (Parse(c, problem)) return Complete(c);
                               if (!problem.empty()) return Fail(c, problem);
                               Read(c);
                             });
  }

  // True when a whole response is in c.rx; `problem` set when it never will be.
  static bool Parse(Connection& c, std::string& problem) {
    if (c.head_len == 0) {
      const std::string_view data(c.rx.data(), c.rx_len);
      const size_t end = data.find("\r\n\r\n");
      if (end == std::string_view::npos) {
        if (c.rx_len > kMaxHead) problem = "a response head longer than 64 KiB";
        return false;
      }
      c.head_len = end + 4;
      const std::string_view head = data.substr(0, end + 2);
      if (head.size() < 12 || !head.starts_with("HTTP/1.")) {
        problem = "a response that is not HTTP/1.x";
        return false;
      }
      c.status = (head[9] - '0') * 100 + (head[10] - '0') * 10 + (head[11] - '0');
      c.close_after = head.starts_with("HTTP/1.0");
      size_t content_length = 0;
      bool chunked = false;
      for (size_t pos = head.find("\r\n") + 2; pos < head.size();) {
        const size_t eol = head.find("\r\n", pos);
        const std::string_view line = head.substr(pos, eol - pos);
        pos = eol + 2;
        if (StartsWithNoCase(line, "content-length:")) {
          const std::string_view v = TrimValue(line.substr(15));
          std::from_chars(v.data(), v.data() + v.size(), content_length);
        } else if (StartsWithNoCase(line, "connection:")) {
          c.close_after = StartsWithNoCase(TrimValue(line.substr(11)), "close");
        } else if (StartsWithNoCase(line, "transfer-encoding:")) {
          chunked = true;
        }
      }
      if (chunked) {
        problem = "a chunked response (perf reads responses with Content-Length, as KServe servers send them)";
        return false;
      }
      c.total_len = c.head_len + content_length;
      if (c.total_len > c.rx.size()) c.rx.resize(c.total_len);
    }
    return c.rx_len >= c.total_len;
  }

  void Record(Connection& c, int status) {
    const int64_t now = SteadyNowNs();
    {
      std::lock_guard lock(mu);
      done.push_back({now, now - c.start_ns, status, c.delayed});
    }
    // Sequentially consistent with WaitForCompleted's store of its target:
    // either this sees the target, or the waiter's check sees this count.
    const int64_t completed = shared.completed->fetch_add(1) + 1;
    const int64_t target = shared.wait_target.load();
    if ((shared.busy.fetch_sub(1, std::memory_order_acq_rel) == 1 && stopping) || (target > 0 && completed >= target)) {
      std::lock_guard lock(shared.mu);
      shared.drained.notify_all();
    }
  }

  void Complete(Connection& c) {
    Record(c, c.status);
    if (c.close_after) {
      Close(c);  // the server ends the connection after this answer: open a new one now
      const bool limit_reached = shared.options.request_limit > 0 && shared.sends_left.load() <= 0;
      if (!stopping && !limit_reached) Connect(c);
      return;
    }
    OnReady(c);
  }

  void Close(Connection& c) {
    ++c.generation;
    error_code ignored;
    c.socket.close(ignored);
    c.state = stopping ? Connection::State::kClosed : Connection::State::kRetryWait;
  }

  void Fail(Connection& c, const std::string& what) {
    shared.NoteError(what);
    const bool was_busy = c.state == Connection::State::kBusy;
    if (was_busy) Record(c, kTransportError);
    Close(c);
    c.retry_at_ns = SteadyNowNs() + kRetryPauseNs;
  }

  void Tick() {
    const int64_t now = SteadyNowNs();
    for (auto& cp : conns) {
      Connection& c = *cp;
      if ((c.state == Connection::State::kBusy || c.state == Connection::State::kConnecting) && now > c.deadline_ns) {
        const bool was_busy = c.state == Connection::State::kBusy;
        shared.NoteError(was_busy ? "no answer from " + shared.authority + " within " +
                                        std::to_string(shared.options.request_timeout.count()) + " ms"
                                  : "cannot connect to " + shared.authority + " within " +
                                        std::to_string(shared.options.request_timeout.count()) + " ms");
        if (was_busy) Record(c, kTimeout);
        Close(c);
        c.retry_at_ns = now;
      }
      if (c.state == Connection::State::kRetryWait && now >= c.retry_at_ns && !stopping) Connect(c);
    }
    if (stopping && shared.busy.load() == 0) return;
    const auto period = std::clamp(shared.options.request_timeout / 10, std::chrono::milliseconds(1), std::chrono::milliseconds(50));
    ticker.expires_after(period);
    ticker.async_wait([this](const error_code& ec) {
      if (!ec) Tick();
    });
  }

  void OnArrival() {
    const int64_t now = SteadyNowNs();
    while (next_arrival_ns <= now && !stopping) {
      if (!shared.TakeSend()) return;  // the request limit is reached: no more arrivals
      if (!idle.empty()) {
        Connection* c = idle.back();
        idle.pop_back();
        Send(*c, next_arrival_ns, false);
      } else {
        backlog.push_back(next_arrival_ns);
      }
      next_arrival_ns += schedule->NextGapNs();
    }
    if (stopping) return;
    arrival_timer.expires_at(std::chrono::steady_clock::time_point(std::chrono::nanoseconds(next_arrival_ns)));
    arrival_timer.async_wait([this](const error_code& ec) {
      if (!ec) OnArrival();
    });
  }

  // On the worker's thread: no new sends from now on.
  void BeginStop() {
    stopping = true;
    backlog.clear();
    arrival_timer.cancel();
    for (auto& c : conns) {
      if (c->state != Connection::State::kBusy) Close(*c);
    }
    idle.clear();
  }

  // On the worker's thread: abandon what is outstanding.
  void Finish() {
    for (auto& c : conns) {
      if (c->state == Connection::State::kBusy) shared.busy.fetch_sub(1);
      Close(*c);
    }
    ticker.cancel();
    arrival_timer.cancel();
  }
};

Expected<std::unique_ptr<LoadClient>> LoadClient::Start(const HttpEndpoint& endpoint, std::vector<EncodedRequest> requests,
                                                        const ClientOptions& options) {
  if (requests.empty() || options.connections < 1 || options.threads < 1) {
    return InvalidArgument("the load client needs at least one request, one connection and one thread");
  }
  auto shared = std::make_shared<SharedState>();
  shared->requests = std::move(requests);
  shared->options = options;
  shared->options.threads = std::min(options.threads, options.connections);
  shared->authority = endpoint.authority();
  shared->sends_left = options.request_limit;
  {
    asio::io_context ioc;
    tcp::resolver resolver(ioc);
    error_code ec;
    shared->endpoints = resolver.resolve(endpoint.host, std::to_string(endpoint.port), ec);
    if (ec) return Unavailable("cannot resolve " + endpoint.host + ": " + ec.message() + "; check --url");
  }
  std::unique_ptr<LoadClient> client(new LoadClient());
  shared->completed = &client->completed_;
  client->shared_ = shared;
  for (int t = 0; t < shared->options.threads; ++t) client->workers_.push_back(std::make_unique<Worker>(*shared, t));
  for (int i = 0; i < options.connections; ++i) {
    auto& w = *client->workers_[static_cast<size_t>(i % shared->options.threads)];
    w.conns.push_back(std::make_unique<Connection>(w.ioc));
  }
  for (auto& w : client->workers_) {
    Worker* wp = w.get();
    wp->thread = std::thread([wp] {
      wp->Begin();
      if (!wp->shared.options.busy_poll) {
        wp->ioc.run();
        return;
      }
      // Handlers run as their events come, without waiting in epoll (a
      // poll returns at once); the loop ends as run() would: stopped or
      // out of work.
      while (!wp->ioc.stopped()) wp->ioc.poll();
    });
  }
  return client;
}

LoadClient::~LoadClient() { Stop(std::chrono::milliseconds(0)); }

void LoadClient::TakeCompletions(std::vector<Completion>& out) {
  for (auto& w : workers_) {
    std::lock_guard lock(w->mu);
    out.insert(out.end(), w->done.begin(), w->done.end());
    w->done.clear();
  }
}

bool LoadClient::WaitForCompleted(int64_t n, std::chrono::milliseconds timeout) {
  std::unique_lock lock(shared_->mu);
  shared_->wait_target = n;
  const bool done = shared_->drained.wait_for(lock, timeout, [&] { return completed() >= n; });
  shared_->wait_target = 0;
  return done;
}

std::string LoadClient::first_transport_error() const {
  std::lock_guard lock(shared_->mu);
  return shared_->first_error;
}

void LoadClient::Stop(std::chrono::milliseconds drain) {
  if (stopped_) return;
  stopped_ = true;
  for (auto& w : workers_) asio::post(w->ioc, [wp = w.get()] { wp->BeginStop(); });
  {
    std::unique_lock lock(shared_->mu);
    shared_->drained.wait_for(lock, drain, [this] { return shared_->busy.load() == 0; });
  }
  for (auto& w : workers_) {
    asio::post(w->ioc, [wp = w.get()] {
      wp->Finish();
      wp->ioc.stop();
    });
  }
  for (auto& w : workers_) {
    if (w->thread.joinable()) w->thread.join();
  }
}

}  // namespace ortgpu::perf
