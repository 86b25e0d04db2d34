// GrpcCallQueues: every RPC of the gRPC front end (GrpcServer) served
// through gRPC's completion-queue API by threads of ours, and no thread of
// gRPC's.
//
// Why: gRPC 1.51 as Debian builds it (iomgr, epoll1) serves its callback
// API from a process-wide queue with cores/2 (2..16) "nexting" threads of
// its own, and its sync API from thread pools of its own. All of those poll
// the one epoll set every socket of the process is in, so with even one
// callback method registered, the thread that reads a ModelInfer call off
// the socket was most often one of gRPC's, which then woke the poller the
// call was queued for: a thread hand-off on every call, out of reach of
// --busy-poll-us (docs/BENCHMARKS.md, gRPC). Here the pollers are the only
// threads that poll, so the thread that reads a call is the one that
// handles it.
//
// Threads: `threads` pollers, each on a completion queue of its own, on
// which every method has calls requested ahead of arrivals (Method::ahead);
// with `busy_poll` > 0 a poller keeps polling its queue that long after each
// event before it blocks (serve --busy-poll-us), except while requests
// overlap (busy_poll(): BusyPoll's crowding, fed by the server's requests).
// Every poller may poll at once: each drains a queue of its own, so one
// cannot park while another polls as the HTTP threads do. Each event's tag is a
// CallTag; its OnEvent runs on the poller. Operations on calls (Finish,
// Read, Write, alarms) may be started from any thread, through IfOpen.
//
// Lifecycle: construct before ServerBuilder::BuildAndStart (it adds the
// queues), Start() after, Stop() after Server::Shutdown returned and every
// call handed to a handler was answered; the destructor calls Stop().
// Thread-safety: Start and Stop from one thread; IfOpen from any.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "serve/busy_poll.h"
#include "sys/mutex.h"

namespace ortgpu::serve {

// What a completion-queue event's tag points to: the pollers call OnEvent
// with the event's `ok`.
class CallTag {
 public:
  virtual void OnEvent(bool ok) = 0;

 protected:
  ~CallTag() = default;
};

// A CallTag that calls `F` on its owner: a call with several operations in
// flight at once (a stream's read and write) has one of these for each.
template <class T, void (T::*F)(bool)>
class MemberTag final : public CallTag {
 public:
  explicit MemberTag(T* owner) : owner_(owner) {}
  void OnEvent(bool ok) override { (owner_->*F)(ok); }

 private:
  T* owner_;
};

class GrpcCallQueues {
 public:
  // One RPC method: `request_one` requests one call of it on the queue
  // given (the call requests its successor when it arrives); Start requests
  // `ahead` on each queue, so a burst of calls does not wait for a poller.
  struct Method {
    std::string name;
    std::function<void(::grpc::ServerCompletionQueue& cq)> request_one;
    int ahead = 1;
  };

  // Adds `threads` (>= 1) completion queues to `builder`.
  GrpcCallQueues(::grpc::ServerBuilder& builder, int threads, std::chrono::microseconds busy_poll);
  ~GrpcCallQueues();
  GrpcCallQueues(const GrpcCallQueues&) = delete;
  GrpcCallQueues& operator=(const GrpcCallQueues&) = delete;

  // Requests the calls of `methods` (of services registered with the
  // builder, built and started) and starts the pollers.
  void Start(std::vector<Method> methods);
  // Shuts the queues down and joins the pollers once they drained them:
  // every operation still pending gets its event (ok false). Idempotent.
  void Stop();

  // Runs `start`, which starts one operation on a queue (its event will
  // come), unless the queues are shut down or shutting down: then returns
  // false without running it, and no event will come for it.
  template <class F>
  bool IfOpen(F&& start) {
    ReaderMutexLock lock(&closing_);
    if (closed_) return false;
    start();
    return true;
  }

  int threads() const { return static_cast<int>(queues_.size()); }
  // What stops the pollers polling while requests overlap: the server counts
  // its requests here (RequestStarted, RequestFinished).
  BusyPoll& busy_poll() { return busy_; }

 private:
  void Poll(::grpc::ServerCompletionQueue& cq);

  std::vector<std::unique_ptr<::grpc::ServerCompletionQueue>> queues_;
  std::chrono::microseconds busy_poll_;
  BusyPoll busy_;
  std::vector<Method> methods_;
  // Held shared by whoever starts an operation on a queue (IfOpen),
  // exclusively by Stop while it marks them closed: no operation may start
  // on a queue that is shut down.
  SharedMutex closing_;
  bool closed_ GUARDED_BY(closing_) = false;
  std::vector<std::thread> pollers_;
  bool started_ = false;
};

// Answers a call: exactly once, from any thread.
using CallDone = std::function<void(const ::grpc::Status&)>;

// A unary method on the queues. `handler` fills `response` and calls `done`
// exactly once, on the poller (most methods) or later from any thread (an
// inference, a model load); `request` may be changed (ModelInfer moves its
// raw contents out). Both live until done is called.
template <class Req, class Resp>
class UnaryMethod {
 public:
  using Writer = ::grpc::ServerAsyncResponseWriter<Resp>;
  using RequestFn = std::function<void(::grpc::ServerContext*, Req*, Writer*, ::grpc::ServerCompletionQueue*, void*)>;
  using Handler = std::function<void(::grpc::ServerContext& ctx, Req& request, Resp* response, CallDone done)>;

  UnaryMethod(GrpcCallQueues& queues, RequestFn request, Handler handler)
      : queues_(queues), request_(std::move(request)), handler_(std::move(handler)) {}

  void RequestOn(::grpc::ServerCompletionQueue& cq);

 private:
  class Call;
  GrpcCallQueues& queues_;
  RequestFn request_;
  Handler handler_;
};

// One unary call, from its request on a queue to its Finish; it is the tag
// of both events and deletes itself after the second.
template <class Req, class Resp>
class UnaryMethod<Req, Resp>::Call final : public CallTag {
 public:
  Call(UnaryMethod& method, ::grpc::ServerCompletionQueue& cq) : method_(method), cq_(cq), writer_(&ctx_) {}

  void OnEvent(bool ok) override {
    if (finishing_ || !ok) {  // answered, or the server shut down before a call came
      delete this;
      return;
    }
    // The handler may answer at once, after which this call may be gone.
    UnaryMethod& method = method_;
    ::grpc::ServerCompletionQueue& cq = cq_;
    method.handler_(ctx_, request_, &response_, [this](const ::grpc::Status& st) { Finish(st); });
    method.RequestOn(cq);  // the next call, off the path of this one
  }

 private:
  friend class UnaryMethod;
  void Finish(const ::grpc::Status& st) {
    finishing_ = true;  // read by the poller that gets the Finish event
    const bool started = method_.queues_.IfOpen([&] {
      if (st.ok()) {
        writer_.Finish(response_, st, this);
      } else {
        writer_.FinishWithError(st, this);
      }
    });
    if (!started) delete this;  // Stop ran early (a REQUIRES broken): no event will come
  }

  UnaryMethod& method_;
  ::grpc::ServerCompletionQueue& cq_;
  ::grpc::ServerContext ctx_;
  Req request_;
  Resp response_;
  Writer writer_;
  bool finishing_ = false;
};

template <class Req, class Resp>
void UnaryMethod<Req, Resp>::RequestOn(::grpc::ServerCompletionQueue& cq) {
  auto* call = new Call(*this, cq);
  if (!queues_.IfOpen([&] { request_(&call->ctx_, &call->request_, &call->writer_, &cq, call); })) delete call;
}

// The Method entry of a unary RPC of `service`, by its generated
// Request<Name> member: UnaryRpc(queues, service, &Svc::RequestServerLive,
// handler). The UnaryMethod lives as long as the entry's copies.
template <class Object, class Svc, class Req, class Resp>
GrpcCallQueues::Method UnaryRpc(GrpcCallQueues& queues, std::string name, Object& service,
                                void (Svc::*request)(::grpc::ServerContext*, Req*,
                                                     ::grpc::ServerAsyncResponseWriter<Resp>*,
                                                     ::grpc::CompletionQueue*, ::grpc::ServerCompletionQueue*, void*),
                                typename UnaryMethod<Req, Resp>::Handler handler, int ahead = 1) {
  Svc& svc = service;
  auto method = std::make_shared<UnaryMethod<Req, Resp>>(
      queues,
      [&svc, request](::grpc::ServerContext* ctx, Req* req, ::grpc::ServerAsyncResponseWriter<Resp>* writer,
                      ::grpc::ServerCompletionQueue* cq, void* tag) { (svc.*request)(ctx, req, writer, cq, cq, tag); },
      std::move(handler));
  return GrpcCallQueues::Method{std::move(name), [method](::grpc::ServerCompletionQueue& cq) { method->RequestOn(cq); },
                                ahead};
}

}  // namespace ortgpu::serve
