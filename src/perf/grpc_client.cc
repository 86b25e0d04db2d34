#include "perf/grpc_client.h"

#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <thread>

#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <grpc/support/time.h>
#include <grpcpp/create_channel_posix.h>
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>

#include "grpc_service.grpc.pb.h"
#include "kserve/grpc_runtime.h"

namespace ortgpu::perf {

namespace {

void SetSharedMemoryParameters(const RegionRef& ref, google::protobuf::Map<std::string, inference::InferParameter>& p) {
  p["shared_memory_region"].set_string_param(ref.region);
  p["shared_memory_offset"].set_int64_param(static_cast<int64_t>(ref.offset));
  p["shared_memory_byte_size"].set_int64_param(static_cast<int64_t>(ref.byte_size));
}

// A TCP connection to `target` when it is "HOST:PORT" ("[V6]:PORT" too),
// with TCP_NODELAY, waited for at most `timeout`; -1 for another form (a
// URI such as dns:///, unix:, ipv4:) or a connection that did not open.
int ConnectTcp(const std::string& target, std::chrono::milliseconds timeout) {
  const size_t colon = target.rfind(':');
  if (colon == std::string::npos || target.find('/') != std::string::npos) return -1;
  std::string host = target.substr(0, colon);
  const std::string port = target.substr(colon + 1);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  if (host.empty() || port.empty()) return -1;
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (getaddrinfo(host.c_str(), port.c_str(), &hints, &found) != 0) return -1;
  int fd = -1;
  for (addrinfo* a = found; a != nullptr && fd < 0; a = a->ai_next) {
    fd = socket(a->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) continue;
    bool open = connect(fd, a->ai_addr, a->ai_addrlen) == 0;
    if (!open && errno == EINPROGRESS) {
      pollfd p{fd, POLLOUT, 0};
      int err = 0;
      socklen_t len = sizeof(err);
      open = poll(&p, 1, static_cast<int>(timeout.count())) == 1 &&
             getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) == 0 && err == 0;
    }
    if (!open) {
      close(fd);
      fd = -1;
    }
  }
  freeaddrinfo(found);
  if (fd >= 0) {
    const int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  }
  return fd;
}

}  // namespace

Expected<inference::ModelInferRequest> EncodeGrpcInferRequest(const ModelInfo& model, const std::vector<Tensor>& inputs,
                                                              const SharedMemoryPlan* shm) {
  if (shm != nullptr && (shm->inputs.size() != inputs.size() || shm->outputs.size() != model.outputs.size())) {
    return InvalidArgument("the shared memory plan does not have a region for every input and output");
  }
  inference::ModelInferRequest r;
  r.set_model_name(model.name);
  r.set_model_version(model.version);
  for (const Tensor& t : inputs) {
    ORTGPU_RETURN_IF_ERROR(ValidateTensorSize(t));
    auto* in = r.add_inputs();
    in->set_name(t.name);
    in->set_datatype(std::string(KServeName(t.dtype)));
    for (int64_t d : t.shape) in->add_shape(d);
    if (shm != nullptr) {
      SetSharedMemoryParameters(shm->inputs[static_cast<size_t>(r.inputs_size() - 1)], *in->mutable_parameters());
      continue;
    }
    std::string& raw = *r.add_raw_input_contents();
    if (t.dtype == DataType::kString) {
      for (const auto& s : t.strings) {
        const auto n = static_cast<uint32_t>(s.size());
        raw.append(reinterpret_cast<const char*>(&n), 4);
        raw += s;
      }
    } else {
      raw.assign(reinterpret_cast<const char*>(t.data.data()), t.data.size());
    }
  }
  for (size_t i = 0; i < model.outputs.size(); ++i) {
    auto* out = r.add_outputs();
    out->set_name(model.outputs[i]);
    if (shm != nullptr) SetSharedMemoryParameters(shm->outputs[i], *out->mutable_parameters());
  }
  return r;
}

constexpr char kModelInfer[] = "/inference.GRPCInferenceService/ModelInfer";

// A thread of the client's with the completion queue it polls, one per call
// in small closed loops: the poller records each completion and sends the
// next, and gRPC reads the response on this thread (no hand-off to a thread
// of gRPC's, as its callback API makes: a wake-up, tens of microseconds at
// concurrency 1).
struct Poller {
  ::grpc::CompletionQueue cq;
  std::thread thread;
};

// One outstanding call's storage, reused call after call. The response is
// kept as gRPC's bytes: a load generator needs its status, not its outputs.
struct Call {
  std::unique_ptr<::grpc::ClientContext> ctx;
  std::unique_ptr<::grpc::GenericClientAsyncResponseReader> reader;  // lives in ctx's call: reset first
  ::grpc::ByteBuffer response;
  ::grpc::Status status;
  ::grpc::GenericStub* stub = nullptr;
  Poller* poller = nullptr;  // null: gRPC's callback API (large and open loops)
  int64_t start_ns = 0;  // send (closed loop) or scheduled time (open loop)
  bool delayed = false;
};

struct GrpcLoadClient::State {
  ClientOptions options;
  // The request serialized once: each call sends the same slices (a
  // reference, not a copy), where a typed stub would serialize the message
  // again for every call (602 KB for ResNet-50).
  ::grpc::ByteBuffer request;
  std::vector<std::shared_ptr<::grpc::Channel>> channels;
  std::vector<std::unique_ptr<::grpc::GenericStub>> stubs;
  std::vector<std::unique_ptr<Poller>> pollers;
  std::vector<std::unique_ptr<Call>> calls;

  std::mutex mu;
  std::condition_variable cv;
  std::vector<Completion> completions;  // guarded by mu
  std::vector<Call*> idle;              // guarded by mu: open loop, calls free to send
  std::deque<int64_t> backlog;          // guarded by mu: open loop, scheduled sends waiting for a call
  int outstanding = 0;                  // guarded by mu
  int64_t sent = 0;                     // guarded by mu
  int64_t completed = 0;                // guarded by mu
  int64_t wait_target = 0;              // guarded by mu: WaitForCompleted's n while it waits, else 0
  std::string first_transport_error;    // guarded by mu
  bool stopping = false;                // guarded by mu
  std::thread pacer;                    // open loop

  // Claims the right to send one more request. REQUIRES: mu held.
  bool MaySend() {
    if (stopping) return false;
    if (options.request_limit > 0 && sent >= options.request_limit) return false;
    ++sent;
    ++outstanding;
    return true;
  }

  // Starts `c`'s next call; it completes on c->poller's queue, or on one
  // of gRPC's callback threads when the call has no poller.
  // REQUIRES: mu not held; MaySend() returned true for this send.
  void Send(Call* c, int64_t start_ns, bool delayed) {
    {
      std::lock_guard lock(mu);  // Stop may be cancelling the calls' contexts
      c->reader.reset();
      c->ctx = std::make_unique<::grpc::ClientContext>();
    }
    c->ctx->set_deadline(std::chrono::system_clock::now() + options.request_timeout);
    c->response.Clear();
    c->start_ns = start_ns;
    c->delayed = delayed;
    if (c->poller == nullptr) {
      c->stub->UnaryCall(c->ctx.get(), kModelInfer, ::grpc::StubOptions(), &request, &c->response,
                         [this, c](::grpc::Status st) { Done(c, st); });
      return;
    }
    c->reader = c->stub->PrepareUnaryCall(c->ctx.get(), kModelInfer, request, &c->poller->cq);
    c->reader->StartCall();
    c->reader->Finish(&c->response, &c->status, c);
  }

  // A poller's loop: each completion is recorded and its call sent again
  // (closed loop) or taken for the backlog or parked (open loop). With
  // busy_poll it never sleeps: it asks for an event that is already there
  // (the infinite past as deadline; gRPC rounds "now" up to a millisecond).
  void Poll(Poller& p) {
    void* tag = nullptr;
    bool ok = false;
    while (true) {
      if (options.busy_poll) {
        const auto r = p.cq.AsyncNext(&tag, &ok, gpr_inf_past(GPR_CLOCK_MONOTONIC));
        if (r == ::grpc::CompletionQueue::TIMEOUT) continue;
        if (r == ::grpc::CompletionQueue::SHUTDOWN) return;
      } else if (!p.cq.Next(&tag, &ok)) {
        return;
      }
      Call* c = static_cast<Call*>(tag);
      Done(c, c->status);
    }
  }

  // Files the completion of `c`'s call. REQUIRES: mu held.
  void Record(Call* c, const ::grpc::Status& st) {
    Completion done;
    done.end_ns = SteadyNowNs();
    done.latency_ns = done.end_ns - c->start_ns;
    done.delayed = c->delayed;
    if (st.ok()) {
      done.status = 200;
    } else if (st.error_code() == ::grpc::StatusCode::DEADLINE_EXCEEDED) {
      done.status = kTimeout;
    } else if (st.error_code() == ::grpc::StatusCode::UNAVAILABLE) {
      done.status = kTransportError;
    } else {
      done.status = kGrpcStatusBase + static_cast<int>(st.error_code());
    }
    if (done.status == kTransportError && first_transport_error.empty()) {
      first_transport_error = st.error_message() + "; check --grpc-url and that the server serves gRPC there (serve --grpc-port)";
    }
    completions.push_back(done);
    ++completed;
    --outstanding;
    // Only a waiter whose condition now holds is woken: a wake-up per call
    // would cost the poller a futex and the waiter a turn on mu.
    if ((wait_target > 0 && completed >= wait_target) || (stopping && outstanding == 0)) cv.notify_all();
  }

  void Done(Call* c, const ::grpc::Status& st) {
    int64_t next_start = 0;
    bool next_delayed = false;
    bool send = false;
    {
      std::lock_guard lock(mu);
      Record(c, st);
      if (options.rate_per_s > 0) {
        if (!backlog.empty() && MaySend()) {
          next_start = backlog.front();
          backlog.pop_front();
          next_delayed = true;
          send = true;
        } else {
          idle.push_back(c);
        }
      } else if (MaySend()) {
        next_start = SteadyNowNs();
        send = true;
      }
    }
    if (send) Send(c, next_start, next_delayed);
  }

  // Open loop: one send per arrival, on an idle call or into the backlog.
  void Pace() {
    ArrivalSchedule schedule(options.rate_per_s, options.distribution, options.seed);
    int64_t next = SteadyNowNs();
    while (true) {
      next += schedule.NextGapNs();
      std::unique_lock lock(mu);
      cv.wait_until(lock, std::chrono::steady_clock::time_point(std::chrono::nanoseconds(next)),
                    [&] { return stopping; });
      if (stopping) return;
      if (idle.empty()) {
        if (options.request_limit == 0 || sent + static_cast<int64_t>(backlog.size()) < options.request_limit) {
          backlog.push_back(next);
        }
        continue;
      }
      if (!MaySend()) continue;
      Call* c = idle.back();
      idle.pop_back();
      lock.unlock();
      Send(c, next, false);
    }
  }
};

int GrpcPollerThreads(const ClientOptions& options) {
  return options.rate_per_s <= 0 && options.connections <= kOnePollerPerCallMaxConcurrency ? options.connections : 0;
}

Expected<std::unique_ptr<GrpcLoadClient>> GrpcLoadClient::Start(const std::string& target,
                                                                inference::ModelInferRequest request,
                                                                const ClientOptions& options) {
  if (options.connections < 1 || options.threads < 1) {
    return InvalidArgument("the gRPC load client needs at least one connection and one thread");
  }
  kserve::ConfigureGrpcRuntime();
  std::unique_ptr<GrpcLoadClient> client(new GrpcLoadClient());
  client->state_ = std::make_shared<State>();
  State& s = *client->state_;
  s.options = options;
  bool own = false;
  if (auto st = ::grpc::SerializationTraits<inference::ModelInferRequest>::Serialize(request, &s.request, &own);
      !st.ok()) {
    return Internal("cannot serialize the ModelInferRequest: " + st.error_message());
  }
  // One HTTP/2 connection per call (as the HTTP client opens one per
  // connection), up to kMaxGrpcChannels: a connection's frames are handled
  // by one thread at a time on each side, which bounds what one carries.
  const int pollers = GrpcPollerThreads(options);
  const int channels = std::min(options.connections, kMaxGrpcChannels);
  for (int i = 0; i < channels; ++i) {
    ::grpc::ChannelArguments args;
    args.SetMaxReceiveMessageSize(-1);
    args.SetInt("ortgpu.perf.channel", i);  // a distinct argument: a channel of its own, not a shared one
    args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
    // A load generator must not retry behind the measurement's back (as
    // perf_analyzer does not); without gRPC's retry layer a call also costs
    // 11% fewer client instructions (callgrind, docs/BENCHMARKS.md).
    args.SetInt(GRPC_ARG_ENABLE_RETRIES, 0);
    // With pollers, a channel over a connection perf opened itself is
    // gRPC's direct channel: no resolver, load balancing or retry layer
    // between a call and the connection (a sixth of the client's
    // instructions per call, docs/BENCHMARKS.md). Where it does not connect,
    // a channel of gRPC's own makes the calls fail with gRPC's account of why.
    const int fd = pollers > 0 ? ConnectTcp(target, options.request_timeout) : -1;
    s.channels.push_back(fd >= 0 ? ::grpc::CreateCustomInsecureChannelFromFd(target, fd, args)
                                 : ::grpc::CreateCustomChannel(target, ::grpc::InsecureChannelCredentials(), args));
    s.stubs.push_back(std::make_unique<::grpc::GenericStub>(s.channels.back()));
  }
  for (int i = 0; i < pollers; ++i) s.pollers.push_back(std::make_unique<Poller>());
  for (int i = 0; i < options.connections; ++i) {
    auto c = std::make_unique<Call>();
    c->stub = s.stubs[static_cast<size_t>(i % channels)].get();
    if (pollers > 0) c->poller = s.pollers[static_cast<size_t>(i)].get();  // one each
    s.calls.push_back(std::move(c));
  }
  for (auto& p : s.pollers) p->thread = std::thread([&s, p = p.get()] { s.Poll(*p); });
  if (options.rate_per_s > 0) {
    for (auto& c : s.calls) s.idle.push_back(c.get());
    s.pacer = std::thread([&s] { s.Pace(); });
    return client;
  }
  std::vector<Call*> first;
  {
    std::lock_guard lock(s.mu);
    for (auto& c : s.calls) {
      if (s.MaySend()) first.push_back(c.get());
    }
  }
  for (Call* c : first) s.Send(c, SteadyNowNs(), false);
  return client;
}

GrpcLoadClient::~GrpcLoadClient() { Stop(std::chrono::milliseconds(0)); }

void GrpcLoadClient::TakeCompletions(std::vector<Completion>& out) {
  std::lock_guard lock(state_->mu);
  out.insert(out.end(), state_->completions.begin(), state_->completions.end());
  state_->completions.clear();
}

int64_t GrpcLoadClient::completed() const {
  std::lock_guard lock(state_->mu);
  return state_->completed;
}

bool GrpcLoadClient::WaitForCompleted(int64_t n, std::chrono::milliseconds timeout) {
  std::unique_lock lock(state_->mu);
  state_->wait_target = n;
  const bool done = state_->cv.wait_for(lock, timeout, [&] { return state_->completed >= n; });
  state_->wait_target = 0;
  return done;
}

std::string GrpcLoadClient::first_transport_error() const {
  std::lock_guard lock(state_->mu);
  return state_->first_transport_error;
}

void GrpcLoadClient::Stop(std::chrono::milliseconds drain) {
  State& s = *state_;
  {
    std::unique_lock lock(s.mu);
    if (s.stopping && s.outstanding == 0 && !s.pacer.joinable()) return;
    s.stopping = true;
    s.cv.notify_all();
  }
  if (s.pacer.joinable()) s.pacer.join();
  {
    std::unique_lock lock(s.mu);
    if (!s.cv.wait_for(lock, drain, [&] { return s.outstanding == 0; })) {
      for (auto& c : s.calls) {
        if (c->ctx) c->ctx->TryCancel();  // only calls in flight still wait; the others ignore it
      }
      s.cv.wait(lock, [&] { return s.outstanding == 0; });
    }
  }
  for (auto& c : s.calls) {
    c->reader.reset();  // the calls are over: free them before their queues go
    c->ctx.reset();
  }
  for (auto& p : s.pollers) p->cq.Shutdown();
  for (auto& p : s.pollers) {
    if (p->thread.joinable()) p->thread.join();
  }
}

}  // namespace ortgpu::perf
