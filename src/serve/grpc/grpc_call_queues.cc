#include "serve/grpc/grpc_call_queues.h"

#include <algorithm>

namespace ortgpu::serve {

GrpcCallQueues::GrpcCallQueues(::grpc::ServerBuilder& builder, int threads, std::chrono::microseconds busy_poll)
    : busy_poll_(busy_poll), busy_(busy_poll) {
  for (int i = 0; i < std::max(1, threads); ++i) queues_.push_back(builder.AddCompletionQueue());
}

GrpcCallQueues::~GrpcCallQueues() { Stop(); }

void GrpcCallQueues::Start(std::vector<Method> methods) {
  methods_ = std::move(methods);
  started_ = true;
  for (auto& cq : queues_) {
    for (const Method& m : methods_) {
      for (int i = 0; i < std::max(1, m.ahead); ++i) m.request_one(*cq);
    }
    pollers_.emplace_back([this, q = cq.get()] { Poll(*q); });
  }
}

void GrpcCallQueues::Poll(::grpc::ServerCompletionQueue& cq) {
  const auto window = busy_poll_;
  auto last_event = std::chrono::steady_clock::now();
  void* tag = nullptr;
  bool ok = false;
  while (true) {
    if (window.count() > 0 && std::chrono::steady_clock::now() - last_event < window && !busy_.Crowded()) {
      // Busy polling: look without blocking, so the next call is read the
      // moment it arrives instead of after a wake-up. The deadline is the
      // infinite past: gRPC rounds a deadline up to the next millisecond,
      // so "now" would wait in epoll up to 1 ms, and the wake-up this loop
      // exists to save would still be paid.
      const auto st = cq.AsyncNext(&tag, &ok, gpr_inf_past(GPR_CLOCK_MONOTONIC));
      if (st == ::grpc::CompletionQueue::SHUTDOWN) return;
      if (st == ::grpc::CompletionQueue::TIMEOUT) continue;
    } else if (!cq.Next(&tag, &ok)) {
      return;  // shut down and drained
    }
    last_event = std::chrono::steady_clock::now();
    static_cast<CallTag*>(tag)->OnEvent(ok);
  }
}

void GrpcCallQueues::Stop() {
  {
    WriterMutexLock lock(&closing_);
    if (closed_) return;
    closed_ = true;
  }
  // Every operation still pending gets its event with ok false (the server
  // has shut down) and its call cleans up as the pollers drain the queues.
  for (auto& cq : queues_) cq->Shutdown();
  if (!started_) {
    for (auto& cq : queues_) {
      void* tag = nullptr;
      bool ok = false;
      while (cq->Next(&tag, &ok)) static_cast<CallTag*>(tag)->OnEvent(false);
    }
  }
  for (auto& t : pollers_) t.join();
  pollers_.clear();
}

}  // namespace ortgpu::serve
