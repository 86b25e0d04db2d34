#include "serve/grpc/grpc_async_infer.h"

#include <mutex>

#include "serve/grpc/grpc_codec.h"
#include "serve/protocol/client_text.h"

namespace ortgpu::serve {
namespace {

// Calls requested on each queue ahead of arrivals, so a burst of new calls
// does not wait for a poller to request the next one.
constexpr int kCallsRequestedPerQueue = 8;

}  // namespace

// One ModelInfer call, from its request on a queue to its Finish; its
// address is the tag of both events. Deletes itself after the second.
class AsyncInferQueues::Call {
 public:
  Call(AsyncInferQueues& owner, ::grpc::ServerCompletionQueue& cq) : owner_(owner), cq_(cq), responder_(&ctx_) {}

  // REQUIRES: owner_.closing_ held shared and not closed.
  void Request() { owner_.service_->RequestModelInfer(&ctx_, &request_, &responder_, &cq_, &cq_, this); }

  // The event of this call's tag: `ok` false when the server shut down
  // before a call came, or the Finish did not reach the client.
  void Proceed(bool ok) {
    if (finishing_ || !ok) {
      delete this;
      return;
    }
    // The handler may answer at once (a bad request), after which this call
    // may be gone: keep what requesting the next call needs.
    AsyncInferQueues& owner = owner_;
    ::grpc::ServerCompletionQueue& cq = cq_;
    owner.handler_(ctx_, request_, &response_, [this](const Status& st) { Finish(st); });
    owner.Request(cq);  // the next call on this queue, off the path of this one
  }

 private:
  void Finish(const Status& st) {
    std::shared_lock lock(owner_.closing_);
    if (owner_.closed_) {  // Stop ran early (a REQUIRES broken): nothing may start on the queue
      lock.unlock();
      delete this;
      return;
    }
    finishing_ = true;
    if (st.ok()) {
      responder_.Finish(response_, ::grpc::Status::OK, this);
    } else {
      // As clients may see it: no server file path (protocol/client_text.h).
      responder_.FinishWithError(::grpc::Status(static_cast<::grpc::StatusCode>(GrpcCodeFor(st.code())),
                                                protocol::ClientText(st.message())),
                                 this);
    }
  }

  AsyncInferQueues& owner_;
  ::grpc::ServerCompletionQueue& cq_;
  ::grpc::ServerContext ctx_;
  inference::ModelInferRequest request_;
  inference::ModelInferResponse response_;
  ::grpc::ServerAsyncResponseWriter<inference::ModelInferResponse> responder_;
  bool finishing_ = false;  // set before Finish, read by the thread that gets its event
};

AsyncInferQueues::AsyncInferQueues(::grpc::ServerBuilder& builder, int threads, std::chrono::microseconds busy_poll)
    : busy_poll_(busy_poll) {
  for (int i = 0; i < std::max(1, threads); ++i) queues_.push_back(builder.AddCompletionQueue());
}

AsyncInferQueues::~AsyncInferQueues() { Stop(); }

void AsyncInferQueues::Start(grpc_methods::InferenceServiceBase& service, Handler handler) {
  service_ = &service;
  handler_ = std::move(handler);
  started_ = true;
  for (auto& cq : queues_) {
    for (int i = 0; i < kCallsRequestedPerQueue; ++i) Request(*cq);
    pollers_.emplace_back([this, q = cq.get()] { Poll(*q); });
  }
}

void AsyncInferQueues::Request(::grpc::ServerCompletionQueue& cq) {
  std::shared_lock lock(closing_);
  if (closed_) return;
  (new Call(*this, cq))->Request();
}

void AsyncInferQueues::Poll(::grpc::ServerCompletionQueue& cq) {
  const auto window = busy_poll_;
  auto last_event = std::chrono::steady_clock::now();
  void* tag = nullptr;
  bool ok = false;
  while (true) {
    if (window.count() > 0 && std::chrono::steady_clock::now() - last_event < window) {
      // Busy polling: look without blocking, so the next call is read the
      // moment it arrives instead of after a wake-up.
      const auto st = cq.AsyncNext(&tag, &ok, std::chrono::system_clock::now());
      if (st == ::grpc::CompletionQueue::SHUTDOWN) return;
      if (st == ::grpc::CompletionQueue::TIMEOUT) continue;
    } else if (!cq.Next(&tag, &ok)) {
      return;  // shut down and drained
    }
    last_event = std::chrono::steady_clock::now();
    static_cast<Call*>(tag)->Proceed(ok);
  }
}

void AsyncInferQueues::Stop() {
  {
    std::unique_lock lock(closing_);
    if (closed_) return;
    closed_ = true;
  }
  // Every call still requested gets its event with ok false (the server has
  // shut down) and deletes itself as the pollers drain the queues.
  for (auto& cq : queues_) cq->Shutdown();
  if (!started_) {
    for (auto& cq : queues_) {
      void* tag = nullptr;
      bool ok = false;
      while (cq->Next(&tag, &ok)) static_cast<Call*>(tag)->Proceed(false);
    }
  }
  for (auto& t : pollers_) t.join();
  pollers_.clear();
}

}  // namespace ortgpu::serve
