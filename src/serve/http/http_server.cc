#include "serve/http/http_server.h"

#include "serve/http/listener.h"
#include "sys/clock.h"
#include "sys/mutex.h"

#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <new>
#include <optional>
#include <thread>
#include <unordered_map>
#include <vector>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "serve/busy_poll.h"
#include "serve/http/endpoints.h"
#include "serve/http/segments_body.h"
#include "serve/protocol/infer_request_decoder.h"
#include "serve/protocol/route.h"

namespace ortgpu::serve {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

class HttpSession;

constexpr size_t kReadChunk = 16 * 1024;
// A connection's read buffer above this is shrunk between requests, so a
// large chunked body or header does not keep its memory with the connection.
constexpr size_t kRetainedReadBuffer = 256 * 1024;

struct HttpServer::State {
  State(ModelServer& s, HttpOptions o)
      : server(s), options(std::move(o)), acceptor(asio::make_strand(ioc)), busy_poll(options.busy_poll) {}

  ModelServer& server;
  const HttpOptions options;
  asio::io_context ioc;
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>> work;
  tcp::acceptor acceptor;  // used only on its strand
  asio::steady_timer accept_pause{acceptor.get_executor()};  // used only on the acceptor's strand
  AcceptBackoff accept_backoff;                                // used only on the acceptor's strand
  int64_t max_connections = 0;                                 // set once at Start
  asio::thread_pool blocking{2};
  asio::thread_pool decode{2};  // EndpointPools::decode: large JSON infer bodies, off the network threads
  std::vector<std::thread> threads;
  int thread_count = 0;  // set before the first network thread starts
  uint16_t port = 0;
  std::shared_ptr<spdlog::logger> access_logger;

  std::atomic<bool> draining{false};
  // When the network threads poll instead of sleeping (HttpOptions::busy_poll).
  BusyPoll busy_poll;
  std::atomic<bool> stopping{false};

  Mutex mu;
  CondVar idle_cv;                     // in_flight reached 0
  bool stopped GUARDED_BY(mu) = false;  // no completion may be posted once set
  int in_flight GUARDED_BY(mu) = 0;
  std::unordered_map<HttpSession*, std::weak_ptr<HttpSession>> sessions GUARDED_BY(mu);

  void RequestStarted() EXCLUDES(mu) {
    busy_poll.RequestStarted();
    MutexLock lock(&mu);
    ++in_flight;
  }
  void RequestFinished() EXCLUDES(mu) {
    busy_poll.RequestFinished();
    MutexLock lock(&mu);
    if (--in_flight == 0) idle_cv.SignalAll();
  }
};

using State = HttpServer::State;

// One TCP connection. Owned by shared_ptrs held by its pending operations
// and by the ModelServer completion of the request in flight; it dies when
// the last of them completes. All members are used only on its strand.
class HttpSession : public std::enable_shared_from_this<HttpSession> {
 public:
  HttpSession(std::shared_ptr<State> state, tcp::socket socket)
      : state_(std::move(state)), stream_(std::move(socket)), timer_(stream_.get_executor()) {
    beast::error_code ec;
    auto ep = stream_.socket().remote_endpoint(ec);
    remote_ = ec ? "?" : fmt::format("{}:{}", ep.address().to_string(), ep.port());
    // Responses go out whole in one gather write: nothing to coalesce, and
    // Nagle would hold the last segment of a large one for the client's ACK.
    stream_.socket().set_option(tcp::no_delay(true), ec);
    // Room for a whole small request (header, JSON, a few KB of tensors) in
    // one read; Beast's reads are sized from the buffer's free capacity.
    buffer_.reserve(kReadChunk);
  }

  ~HttpSession() {
    EndRequest();
    MutexLock lock(&state_->mu);
    if (state_->sessions.erase(this) > 0 && state_->options.connection_events.open) {
      state_->options.connection_events.open(state_->sessions.size());
    }
  }

  void Start() {
    {
      MutexLock lock(&state_->mu);
      if (state_->stopped) return;
      state_->sessions.emplace(this, weak_from_this());
      if (state_->options.connection_events.open) state_->options.connection_events.open(state_->sessions.size());
    }
    asio::dispatch(stream_.get_executor(), [self = shared_from_this()] { self->ReadHeader(); });
  }

  // Drain started: a request still being read is dropped with its
  // connection (HttpServer::BeginDrain).
  void OnDrain() {
    asio::post(stream_.get_executor(), [self = shared_from_this()] {
      if (!self->request_started_ || self->awaiting_reply_ != 0 || self->response_) return;
      beast::error_code ec;
      self->stream_.socket().shutdown(tcp::socket::shutdown_both, ec);
      self->stream_.close();
      self->timer_.cancel();
    });
  }

  // The drain timeout passed: the request waiting for its reply gets
  // `status` now and is cancelled in the scheduler (HttpServer::AnswerPending).
  void AnswerNow(Status status) {
    asio::post(stream_.get_executor(), [self = shared_from_this(), status = std::move(status)] {
      if (!self->ClaimReply(self->awaiting_reply_)) return;
      if (self->cancel_) self->cancel_->store(true);
      self->timer_.cancel();
      self->close_after_ = true;
      self->Write(ErrorReply(status));
    });
  }

  // Closes the socket and cancels the timer; pending operations complete
  // with an error and release the session.
  void Shutdown() {
    asio::post(stream_.get_executor(), [self = shared_from_this()] {
      beast::error_code ec;
      self->stream_.socket().shutdown(tcp::socket::shutdown_both, ec);
      self->stream_.close();
      self->timer_.cancel();
    });
  }

 private:
  void ReadHeader() {
    if (state_->stopping) return;
    body_parser_.reset();
    body_ = {};
    if (buffer_.capacity() > kRetainedReadBuffer && buffer_.size() < kReadChunk) {
      buffer_.shrink_to_fit();
      buffer_.reserve(kReadChunk);
    }
    header_parser_.emplace();
    header_parser_->body_limit(state_->options.max_body_bytes);
    header_parser_->header_limit(64 * 1024);
    stream_.expires_after(state_->options.idle_timeout);
    http::async_read_header(stream_, buffer_, *header_parser_,
                            [self = shared_from_this()](beast::error_code ec, size_t) { self->OnHeader(ec); });
  }

  void OnHeader(beast::error_code ec) {
    if (ec == http::error::body_limit) {
      BeginRequest();
      return ReplyTooLarge();
    }
    if (ec) return MaybeReplyMalformed(ec);  // EOF, timeout and resets just close
    BeginRequest();
    const auto& req = header_parser_->get();
    method_ = std::string(req.method_string());
    target_ = std::string(req.target());
    version_ = req.version();
    keep_alive_ = req.keep_alive();
    if (state_->draining) {
      close_after_ = true;
      return Write(ErrorReply(Unavailable("server is shutting down; retry on another instance")));
    }
    if (auto len = header_parser_->content_length(); len && *len > state_->options.max_body_bytes) {
      return ReplyTooLarge();
    }
    if (beast::iequals(req[http::field::expect], "100-continue")) {
      auto cont = std::make_shared<http::response<http::empty_body>>(http::status::continue_, version_);
      stream_.expires_after(state_->options.write_timeout);
      http::async_write(stream_, *cont, [self = shared_from_this(), cont](beast::error_code ec, size_t) {
        if (ec) return;
        self->ReadBody();
      });
      return;
    }
    ReadBody();
  }

  // A body with a Content-Length (every KServe client sends one) is read
  // straight into body_, sized once, in reads as large as the socket gives,
  // under one timer for the whole body: Beast's parser would read it 512
  // bytes at a time, each read re-arming the stream's timer. A chunked body
  // goes through Beast's parser (rare: no KServe client sends one).
  void ReadBody() {
    if (header_parser_->is_done()) return OnRequest();  // no body
    if (header_parser_->chunked() || !header_parser_->content_length()) {
      body_parser_.emplace(std::move(*header_parser_));
      header_parser_.reset();
      body_parser_->body_limit(state_->options.max_body_bytes);
      stream_.expires_after(state_->options.read_timeout);
      http::async_read(stream_, buffer_, *body_parser_,
                       [self = shared_from_this()](beast::error_code ec, size_t) { self->OnChunkedBody(ec); });
      return;
    }
    const size_t length = static_cast<size_t>(*header_parser_->content_length());
    stream_.expires_never();
    try {
      body_ = RequestBody::Allocate(length);
    } catch (const std::bad_alloc&) {
      close_after_ = true;
      return Write(ErrorReply(ResourceExhausted(fmt::format(
          "the server has no memory for a request body of {} bytes; retry later or send a smaller batch", length))));
    }
    // Bytes the header read took in beyond the header belong to the body
    // (and, past it, to a pipelined next request: those stay in buffer_).
    const size_t have = std::min(buffer_.size(), length);
    if (have > 0) std::memcpy(body_.data(), buffer_.data().data(), have);
    buffer_.consume(have);
    if (have == length) return OnRequest();
    reading_body_ = true;
    timer_.expires_after(state_->options.read_timeout);
    timer_.async_wait([self = shared_from_this()](beast::error_code ec) {
      if (ec || !self->reading_body_) return;  // the body arrived (or the wait was re-armed)
      beast::error_code ignored;
      self->stream_.socket().close(ignored);  // the pending read completes with an error
    });
    // Asio's transfer_all caps every read at 64 KiB; ask for all that is left.
    const size_t wanted = length - have;
    auto all_left = [wanted](const beast::error_code& ec, size_t done) -> size_t { return ec ? 0 : wanted - done; };
    asio::async_read(stream_.socket(), asio::buffer(body_.data() + have, wanted), all_left,
                     [self = shared_from_this()](beast::error_code ec, size_t) {
                       self->reading_body_ = false;
                       self->timer_.cancel();
                       if (ec) return;  // timeout, reset or EOF mid-body: the connection just closes
                       self->OnRequest();
                     });
  }

  void OnChunkedBody(beast::error_code ec) {
    if (ec == http::error::body_limit) return ReplyTooLarge();
    if (ec) return MaybeReplyMalformed(ec);
    stream_.expires_never();
    body_ = RequestBody::Copy(body_parser_->get().body());
    OnRequest();
  }

  // The request is fully read: its header is in whichever parser read it,
  // its body in body_.
  void OnRequest() {
    body_read_ = std::chrono::steady_clock::now();
    request_bytes_ = body_.size();
    const http::request_header<>& req =
        body_parser_ ? static_cast<const http::request_header<>&>(body_parser_->get())
                     : static_cast<const http::request_header<>&>(header_parser_->get());
    auto route = protocol::MatchRoute(req.target());
    if (!route) return Write(ErrorReply(route.status()));
    if (auto denied = CheckAccess(state_->options.access,
                                  {req[http::field::host], req[http::field::origin], req[http::field::authorization],
                                   req.method() == http::verb::options},
                                  route->endpoint)) {
      return Write(ErrorReply(InvalidArgument(denied->message), denied->refusal));
    }
    // An allowed cross-origin browser request: its reply carries CORS
    // headers, and its preflight is answered here.
    if (const std::string_view origin = req[http::field::origin];
        !origin.empty() && !IsSameOrigin(origin, req[http::field::host])) {
      cors_origin_ = std::string(origin);
      if (req.method() == http::verb::options) {
        preflight_ = true;
        HttpReply r;
        r.status = 204;
        r.content_type.clear();
        return Write(std::move(r));
      }
    }
    // HEAD is GET without the body (RFC 9110 9.3.2): same status and headers.
    head_ = req.method() == http::verb::head && route->AllowsMethod("GET");
    if (!route->AllowsMethod(req.method_string()) && !head_) {
      HttpReply r = ErrorReply(InvalidArgument(fmt::format("{} takes {}, not {}", protocol::EndpointName(route->endpoint),
                                                           route->method, std::string(req.method_string()))),
                               HttpRefusal::kMethodNotAllowed);
      allow_ = route->method;
      return Write(std::move(r));
    }
    EndpointRequest er;
    er.route = std::move(route).value();
    er.body = std::move(body_);
    if (auto it = req.find(protocol::kInferenceHeaderContentLength); it != req.end()) {
      er.inference_header_length = std::string(it->value());
    }
    er.content_encoding = std::string(req[http::field::content_encoding]);
    er.accept_encoding = std::string(req[http::field::accept_encoding]);
    er.max_body_bytes = state_->options.max_body_bytes;
    er.draining = state_->draining;
    er.settings = state_->options.settings;
    cancel_.reset();
    if (er.route.endpoint == protocol::Endpoint::kInfer) {
      cancel_ = std::make_shared<std::atomic<bool>>(false);
      er.cancelled = cancel_;
    }
    header_parser_.reset();
    body_parser_.reset();
    bool is_infer = er.route.endpoint == protocol::Endpoint::kInfer;
    uint64_t seq = seq_;
    awaiting_reply_ = seq;
    if (is_infer && state_->options.request_timeout.count() > 0) {
      er.deadline_ns = RealClock().NowNanos() +
                       std::chrono::duration_cast<std::chrono::nanoseconds>(state_->options.request_timeout).count();
    }
    ReplyCallback reply = [self = shared_from_this(), seq](HttpReply r) { self->Deliver(std::move(r), seq); };
    // The one call: decoding (here or on the decode pool), the endpoint and
    // the answer through Deliver, exactly once.
    DispatchEndpoint(state_->server, std::move(er), {state_->blocking, state_->decode}, std::move(reply));
    // An infer still waiting for its reply (any reply comes through this
    // strand, so none can come before these are armed): the request
    // timeout, and the watch for a client that leaves. One answered on
    // this thread (DynamicBatcher's inline runs, a refusal) arms neither:
    // two timer updates and an epoll change saved per request.
    if (is_infer && awaiting_reply_ == seq) {
      if (state_->options.request_timeout.count() > 0) {
        timer_.expires_after(state_->options.request_timeout);
        timer_.async_wait([self = shared_from_this(), seq](beast::error_code ec) {
          if (ec || !self->ClaimReply(seq)) return;  // answered already, or a stale expiry
          self->Write(ErrorReply(DeadlineExceeded(fmt::format(
              "inference did not finish within the request timeout of {} ms; the model may be overloaded: "
              "retry later or raise --request-timeout",
              self->state_->options.request_timeout.count()))));
        });
      }
      WatchForClose(seq);
    }
  }

  // While request `seq` waits for its reply nothing reads the socket; a
  // wait for readability tells a client that went away (a reset) from one
  // that pipelined its next request (bytes to read) or half-closed its side
  // (EOF: shutdown for writing, as nc and some HTTP/1.0 clients do after
  // the request, issue 25). A reset cancels the request
  // (InferRequest::cancelled), so it is dropped if still queued. An EOF is
  // answered, then the connection closes: it cannot be told from a client
  // that closed its socket altogether, whose reply goes nowhere.
  void WatchForClose(uint64_t seq) {
    stream_.socket().async_wait(tcp::socket::wait_read, [self = shared_from_this(), seq](beast::error_code ec) {
      if (self->awaiting_reply_ != seq || !self->cancel_) return;  // answered already
      if (!ec) {
        char byte;
        const ssize_t n = ::recv(self->stream_.socket().native_handle(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
        if (n > 0 || (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))) return;  // pipelined
        if (n == 0) {  // half-closed: nothing more will come
          self->close_after_ = true;
          return;
        }
      } else if (ec == asio::error::operation_aborted) {
        return;
      }
      self->cancel_->store(true);
    });
  }

  // Any thread: hands the reply to the strand unless the server stopped.
  // A reply given on the strand itself (a request run on this network
  // thread, DynamicBatcher's inline runs, or refused before it ran) is
  // written at once: posting it would wake another network thread to write
  // it, a thread hand-over of tens of microseconds on a virtual machine.
  void Deliver(HttpReply reply, uint64_t seq) {
    if (OnOwnStrand()) {
      {
        MutexLock lock(&state_->mu);
        if (state_->stopped) return;
      }
      return Answer(std::move(reply), seq);
    }
    MutexLock lock(&state_->mu);
    if (state_->stopped) return;
    asio::post(stream_.get_executor(), [self = shared_from_this(), reply = std::move(reply), seq]() mutable {
      self->Answer(std::move(reply), seq);
    });
  }

  // Whether the calling thread runs this connection's strand now.
  bool OnOwnStrand() {
    using Strand = asio::strand<asio::io_context::executor_type>;
    const Strand* strand = stream_.get_executor().target<Strand>();
    return strand != nullptr && strand->running_in_this_thread();
  }

  // On the strand: writes `reply` to request `seq` unless that was answered
  // already (504: a late reply is dropped); encodes it here first, not on
  // the worker that answered.
  void Answer(HttpReply reply, uint64_t seq) {
    if (!ClaimReply(seq)) return;
    timer_.cancel();
    if (reply.finish) reply = reply.finish();
    Write(std::move(reply));
  }

  void ReplyTooLarge() {
    close_after_ = true;
    HttpReply r = ErrorReply(ResourceExhausted(fmt::format(
        "request body exceeds the limit of {} bytes; send a smaller batch or raise --max-body-bytes",
        state_->options.max_body_bytes)), HttpRefusal::kBodyTooLarge);
    Write(std::move(r));
  }

  // A request Beast could not parse gets a 400 and the connection closes
  // (the stream position is unknown). Transport errors just close.
  void MaybeReplyMalformed(beast::error_code ec) {
    if (ec == http::error::end_of_stream || ec == http::error::partial_message ||
        ec.category() != beast::http::make_error_code(http::error::bad_method).category()) {
      return;
    }
    BeginRequest();
    close_after_ = true;
    Write(ErrorReply(InvalidArgument(fmt::format("malformed HTTP request: {}", ec.message()))));
  }

  // True, once, when `seq` is the request awaiting its reply; the caller
  // then writes that reply. See awaiting_reply_.
  bool ClaimReply(uint64_t seq) {
    if (seq == 0 || seq != awaiting_reply_) return false;
    awaiting_reply_ = 0;
    return true;
  }

  // REQUIRES: no read or write is pending on stream_.
  void Write(HttpReply reply) {
    model_ = std::move(reply.model);
    auto& res = response_.emplace(static_cast<http::status>(reply.status), version_ ? version_ : 11);
    res.set(http::field::server, "ortgpu");
    if (!reply.content_type.empty()) res.set(http::field::content_type, reply.content_type);
    if (reply.inference_header_length) {
      res.set(protocol::kInferenceHeaderContentLength, std::to_string(*reply.inference_header_length));
    }
    if (!allow_.empty()) res.set(http::field::allow, allow_);
    if (!reply.content_encoding.empty()) res.set(http::field::content_encoding, reply.content_encoding);
    if (reply.status == 401) res.set(http::field::www_authenticate, "Bearer");
    if (!cors_origin_.empty()) {
      res.set(http::field::access_control_allow_origin, cors_origin_);
      res.set(http::field::vary, "Origin");
      if (preflight_) {
        res.set(http::field::access_control_allow_methods, "GET, HEAD, POST");
        res.set(http::field::access_control_allow_headers,
                "Content-Type, Inference-Header-Content-Length, Authorization");
        res.set(http::field::access_control_max_age, "600");
      }
    }
    if (state_->draining) close_after_ = true;
    res.keep_alive(keep_alive_ && !close_after_);
    res.body().head = std::move(reply.body);
    res.body().tail = std::move(reply.body_tail);
    res.prepare_payload();
    if (head_) {
      // The length the GET would have, and no body.
      const uint64_t length = SegmentsBody::size(res.body());
      res.body() = {};
      res.content_length(length);
    }
    stream_.expires_after(state_->options.write_timeout);
    http::async_write(stream_, *response_,
                      [self = shared_from_this()](beast::error_code ec, size_t bytes) { self->OnWrite(ec, bytes); });
  }

  void OnWrite(beast::error_code ec, size_t bytes) {
    LogAccess(bytes);
    bool close = close_after_ || !response_->keep_alive();
    response_.reset();
    EndRequest();
    if (ec) return;
    if (close) return LingerClose();
    ReadHeader();
  }

  // Half-closes and reads what the client still sends for a short while, so
  // it sees the response instead of a reset (a 413 arrives mid-upload).
  void LingerClose() {
    beast::error_code ec;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ec);
    if (ec) return;
    stream_.expires_after(std::chrono::seconds(2));
    Discard();
  }

  void Discard() {
    stream_.async_read_some(asio::buffer(discard_), [self = shared_from_this()](beast::error_code ec, size_t) {
      if (ec || self->state_->stopping) return;
      self->Discard();
    });
  }

  void BeginRequest() {
    if (request_started_) return;
    request_started_ = true;
    ++seq_;
    allow_.clear();
    model_.clear();
    head_ = false;
    preflight_ = false;
    cors_origin_.clear();
    started_ = std::chrono::steady_clock::now();
    body_read_ = {};
    request_bytes_ = 0;
    state_->RequestStarted();
  }

  void EndRequest() {
    if (!request_started_) return;
    request_started_ = false;
    state_->RequestFinished();
  }

  void LogAccess(size_t bytes) {
    AccessLogFormat format = state_->options.access_log;
    if (format == AccessLogFormat::kNone || !response_) return;
    using Ms = std::chrono::duration<double, std::milli>;
    double ms = Ms(std::chrono::steady_clock::now() - started_).count();
    // From the header read to the last body byte: how long the body took to
    // arrive (0 for requests answered before their body was read).
    double read_ms = body_read_ > started_ ? Ms(body_read_ - started_).count() : 0.0;
    unsigned status = response_->result_int();
    std::string line;
    if (format == AccessLogFormat::kPlain) {
      line = fmt::format("{} \"{} {} HTTP/{}.{}\" {} {} {:.3f}ms in={} read={:.3f}ms", remote_, method_, target_,
                         version_ / 10, version_ % 10, status, bytes, ms, request_bytes_, read_ms);
    } else {
      nlohmann::json j = {{"remote", remote_}, {"method", method_}, {"target", target_}, {"status", status},
                          {"bytes", bytes},   {"duration_ms", ms}, {"request_bytes", request_bytes_},
                          {"read_ms", read_ms}};
      if (!model_.empty()) j["model"] = model_;
      line = j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    }
    state_->access_logger->info(line);
  }

  // Declared first so it is destroyed last: the stream and timer below
  // unregister from the io_context that State owns.
  std::shared_ptr<State> state_;
  beast::tcp_stream stream_;
  asio::steady_timer timer_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::empty_body>> header_parser_;
  std::optional<http::request_parser<http::string_body>> body_parser_;  // chunked bodies only
  RequestBody body_;           // the request body being read
  bool reading_body_ = false;  // a body read is pending; timer_ guards it
  std::optional<http::response<SegmentsBody>> response_;  // written scatter-gather
  std::array<char, 4096> discard_{};
  std::string remote_;
  std::string method_;
  std::string target_;
  std::string model_;
  std::string allow_;
  unsigned version_ = 11;
  bool keep_alive_ = true;
  bool close_after_ = false;
  bool request_started_ = false;
  bool head_ = false;  // the request is a HEAD: its reply is written without a body
  bool preflight_ = false;   // an allowed CORS preflight (OPTIONS) is answered
  std::string cors_origin_;  // an allowed cross-origin request's Origin; "" for others
  // The infer request awaiting its reply can be cancelled through this
  // (InferRequest::cancelled); null for other requests.
  std::shared_ptr<std::atomic<bool>> cancel_;
  // Each request gets the next number when its header is read (BeginRequest).
  // A reply from the ModelServer or the request timer carries the number of
  // the request it answers and is written only while awaiting_reply_ holds
  // that number: it is set once the request is fully read and dispatched, and
  // cleared by the first reply (ClaimReply). So a request gets exactly one
  // reply, the late reply of a timed-out request is dropped, and no reply is
  // written while the next header or body is read or a 100 Continue written.
  uint64_t seq_ = 0;
  uint64_t awaiting_reply_ = 0;  // 0: none
  std::chrono::steady_clock::time_point started_;    // the request's header was read
  std::chrono::steady_clock::time_point body_read_;  // its body was complete; {} until then
  size_t request_bytes_ = 0;                         // its body's size
};

namespace {

void Refused(State& state, std::string_view reason) {
  if (state.options.connection_events.refused) state.options.connection_events.refused(reason);
}

size_t OpenConnections(State& state) {
  MutexLock lock(&state.mu);
  return state.sessions.size();
}

// Runs on the acceptor's strand. See connection_limits.h for the policy.
void Accept(std::shared_ptr<State> state) {
  state->acceptor.async_accept(asio::make_strand(state->ioc), [state](beast::error_code ec, tcp::socket socket) {
    if (state->stopping || state->draining || !state->acceptor.is_open()) return;
    if (!ec) {
      state->accept_backoff.Reset();
      if (static_cast<int64_t>(OpenConnections(*state)) >= state->max_connections) {
        // Counted before the close: whoever sees the connection closed also
        // finds it counted.
        Refused(*state, "max_connections");
        beast::error_code ignored;
        socket.close(ignored);  // the client sees the connection closed at once
      } else {
        std::make_shared<HttpSession>(state, std::move(socket))->Start();
      }
    } else if (ec == asio::error::operation_aborted) {
      return;
    } else if (IsResourceExhaustion(ec)) {
      // Out of descriptors (or memory): retrying at once would spin. Pause,
      // while the connections already open keep being served.
      Refused(*state, "accept_failed");
      const auto pause = state->accept_backoff.Next();
      if (state->accept_backoff.failures() == 1) {
        spdlog::warn("cannot accept HTTP connections: {}; retrying with a pause of up to 1 s (raise ulimit -n or "
                     "lower --max-connections, now {})",
                     ec.message(), state->max_connections);
      }
      state->accept_pause.expires_after(pause);
      state->accept_pause.async_wait([state](beast::error_code wait_ec) {
        if (!wait_ec) Accept(state);
      });
      return;
    }
    // Other accept errors (ECONNABORTED: the client left first) are the
    // client's: take the next connection.
    Accept(state);
  });
}

// A network thread: runs handlers. With busy polling (BusyPoll) a thread
// that just ran a handler takes a seat when the server is lightly loaded and
// keeps polling (the reactor too, with a zero timeout) while a handler ran
// within the window; the threads without a seat park outside the io_context
// meanwhile. They must: a thread blocked in run_one would hold Asio's reactor
// in epoll_wait, and the polling ones would see no socket event until it
// woke up. The first seat taken posts a no-op for every other thread, so
// those blocked in run_one return and either take a free seat or park. A
// seat is given up once the window passes with nothing to run, or the
// server gets crowded (two requests in flight); the parked threads go back
// to run_one when the last seat is. `seated` is the thread's own and
// survives a handler's exception (RunNetworkThread).
void RunNetworkLoop(State& s, bool& seated) {
  BusyPoll& busy = s.busy_poll;
  if (!busy.enabled()) {
    s.ioc.run();
    return;
  }
  while (!s.ioc.stopped()) {
    if (seated) {
      if (s.ioc.poll_one() > 0) {
        busy.Activity();
      } else if (!busy.ShouldPoll()) {
        busy.ReleaseSeat();
        seated = false;
      }
      continue;
    }
    busy.Park();  // returns at once unless some thread polls
    if (s.ioc.stopped()) break;
    if (s.ioc.run_one() == 0) break;  // out of work: stopped
    busy.Activity();
    if (!busy.ShouldPoll()) continue;
    const BusyPoll::Seat seat = busy.TakeSeat();
    seated = seat != BusyPoll::Seat::kNone;
    if (seat == BusyPoll::Seat::kFirst) {
      for (int i = 1; i < s.thread_count; ++i) asio::post(s.ioc, [] {});
    }
  }
  if (seated) busy.ReleaseSeat();
  seated = false;
}

// A handler that throws would end ioc.run() and, from a std::thread,
// the process: it is logged and the thread runs on. The connection the
// handler served is dropped with it (its handlers released their hold).
void RunNetworkThread(State& s) {
  bool seated = false;
  while (true) {
    try {
      RunNetworkLoop(s, seated);
      return;
    } catch (const std::exception& e) {
      spdlog::error("an HTTP handler threw ({}); its connection is dropped, the server keeps serving", e.what());
    } catch (...) {
      spdlog::error("an HTTP handler threw an unknown exception; its connection is dropped, the server keeps serving");
    }
  }
}

// The sessions alive now.
std::vector<std::shared_ptr<HttpSession>> Sessions(State& state) {
  std::vector<std::shared_ptr<HttpSession>> out;
  MutexLock lock(&state.mu);
  for (auto& [ptr, weak] : state.sessions) {
    if (auto s = weak.lock()) out.push_back(std::move(s));
  }
  return out;
}

}  // namespace

std::string_view AccessLogFormatName(AccessLogFormat format) {
  switch (format) {
    case AccessLogFormat::kNone: return "none";
    case AccessLogFormat::kPlain: return "plain";
    case AccessLogFormat::kJson: return "json";
  }
  return "none";
}

Expected<AccessLogFormat> ParseAccessLogFormat(std::string_view text) {
  if (text == "none") return AccessLogFormat::kNone;
  if (text == "plain") return AccessLogFormat::kPlain;
  if (text == "json") return AccessLogFormat::kJson;
  return InvalidArgument(fmt::format("access log format '{}' is not one of: none, plain, json", text));
}

Expected<std::unique_ptr<HttpServer>> HttpServer::Start(ModelServer& server, HttpOptions options) {
  int threads = options.threads > 0 ? options.threads
                                    : static_cast<int>(std::clamp(std::thread::hardware_concurrency(), 1u, 8u));
  auto state = std::make_shared<State>(server, std::move(options));
  state->max_connections =
      state->options.max_connections > 0 ? state->options.max_connections : DefaultMaxConnections();
  state->access_logger = state->options.access_logger ? state->options.access_logger : spdlog::default_logger();
  ORTGPU_ASSIGN_OR_RETURN(state->port,
                          OpenListener(state->acceptor, {state->options.host, state->options.port, "HTTP",
                                                         "pick another --http-port or stop the process using it"}));
  state->work.emplace(state->ioc.get_executor());
  asio::dispatch(state->acceptor.get_executor(), [state] { Accept(state); });
  state->thread_count = threads;
  for (int i = 0; i < threads; ++i) {
    state->threads.emplace_back([s = state.get()] { RunNetworkThread(*s); });
  }
  return std::unique_ptr<HttpServer>(new HttpServer(std::move(state)));
}

HttpServer::HttpServer(std::shared_ptr<State> state) : state_(std::move(state)) {}

HttpServer::~HttpServer() { Stop(); }

uint16_t HttpServer::port() const { return state_->port; }

int HttpServer::in_flight() const {
  MutexLock lock(&state_->mu);
  return state_->in_flight;
}

void HttpServer::BeginDrain() {
  if (state_->draining.exchange(true)) return;
  asio::post(state_->acceptor.get_executor(), [s = state_] {
    beast::error_code ec;
    s->acceptor.close(ec);
    s->accept_pause.cancel();
  });
  for (auto& session : Sessions(*state_)) session->OnDrain();
}

void HttpServer::AnswerPending(const Status& status) {
  for (auto& session : Sessions(*state_)) session->AnswerNow(status);
}

bool HttpServer::WaitIdle(std::chrono::milliseconds timeout) {
  State& s = *state_;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  MutexLock lock(&s.mu);
  while (s.in_flight != 0) {
    if (!s.idle_cv.WaitUntil(&s.mu, deadline)) return s.in_flight == 0;
  }
  return true;
}

void HttpServer::Stop() {
  std::vector<std::weak_ptr<HttpSession>> sessions;
  {
    MutexLock lock(&state_->mu);
    if (state_->stopped) return;
    state_->stopped = true;
    state_->stopping = true;
    for (auto& [ptr, weak] : state_->sessions) sessions.push_back(weak);
  }
  BeginDrain();
  asio::post(state_->acceptor.get_executor(), [s = state_] {
    beast::error_code ec;
    s->acceptor.close(ec);
  });
  for (auto& weak : sessions) {
    if (auto s = weak.lock()) s->Shutdown();
  }
  state_->work.reset();
  state_->busy_poll.Stop();
  for (std::thread& t : state_->threads) t.join();
  state_->threads.clear();
  state_->blocking.join();
  state_->decode.join();
}

}  // namespace ortgpu::serve
