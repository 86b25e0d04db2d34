#include "serve/grpc/grpc_streams.h"

#include <deque>
#include <memory>
#include <utility>

#include <grpcpp/alarm.h>

#include "sys/mutex.h"

namespace ortgpu::serve {
namespace {

using inference::ModelInferRequest;
using inference::ModelStreamInferResponse;

class StreamInferMethod {
 public:
  StreamInferMethod(GrpcCallQueues& queues, inference::GRPCInferenceService::AsyncService& service,
                    InferHandler handler)
      : queues_(queues), service_(service), handler_(std::move(handler)) {}

  void RequestOn(::grpc::ServerCompletionQueue& cq);

 private:
  class Call;
  GrpcCallQueues& queues_;
  inference::GRPCInferenceService::AsyncService& service_;
  InferHandler handler_;
};

// One stream. `ops_` counts the operations started whose events have not
// come; the call deletes itself once it has nothing more to do and that
// count is 0. The reads (and the arrival) run on the poller; completions
// and their writes on any thread, hence mu_.
class StreamInferMethod::Call {
 public:
  Call(StreamInferMethod& method, ::grpc::ServerCompletionQueue& cq) : method_(method), cq_(cq), stream_(&ctx_) {}

  void Request() {
    auto& svc = method_.service_;
    if (!method_.queues_.IfOpen([&] { svc.RequestModelStreamInfer(&ctx_, &stream_, &cq_, &cq_, &arrived_); })) {
      delete this;
    }
  }

 private:
  void OnArrived(bool ok) {
    if (!ok) {  // the server shut down before a call came
      delete this;
      return;
    }
    method_.RequestOn(cq_);  // the next stream
    MutexLock lock(&mu_);
    StartRead();
    if (!Ended()) return;
    lock.Unlock();
    delete this;
  }

  void OnRead(bool ok) {
    MutexLock lock(&mu_);
    --ops_;
    if (!ok) {  // the client closed its side, or went away
      reads_done_ = true;
      if (!Ended()) return;
      lock.Unlock();
      delete this;
      return;
    }
    ++pending_;
    lock.Unlock();
    auto response = std::make_shared<ModelStreamInferResponse>();
    method_.handler_(ctx_, request_, response->mutable_infer_response(),
                     [this, response](const ::grpc::Status& st) { Complete(response, st); });
    request_.Clear();
    lock.Lock();
    StartRead();
    if (!Ended()) return;
    lock.Unlock();
    delete this;
  }

  void Complete(std::shared_ptr<ModelStreamInferResponse> response, const ::grpc::Status& st) {
    if (!st.ok()) {
      response->Clear();
      response->set_error_message(st.error_message());
    }
    MutexLock lock(&mu_);
    --pending_;
    if (!broken_) {
      queue_.push_back(std::move(response));
      if (!writing_) StartWrite();
    }
    if (!Ended()) return;
    lock.Unlock();
    delete this;
  }

  void OnWrite(bool ok) {
    MutexLock lock(&mu_);
    --ops_;
    queue_.pop_front();
    if (!ok) Break();  // the client went away: drop what is left
    writing_ = false;
    if (!queue_.empty()) StartWrite();
    if (!Ended()) return;
    lock.Unlock();
    delete this;
  }

  void OnFinished(bool) {
    MutexLock lock(&mu_);
    --ops_;
    if (!Ended()) return;
    lock.Unlock();
    delete this;
  }

  void StartRead() REQUIRES(mu_) {
    ++ops_;
    if (!method_.queues_.IfOpen([&] { stream_.Read(&request_, &read_); })) {
      --ops_;
      reads_done_ = true;
    }
  }
  void StartWrite() REQUIRES(mu_) {
    writing_ = true;
    ++ops_;
    const ModelStreamInferResponse& front = *queue_.front();
    if (!method_.queues_.IfOpen([&] { stream_.Write(front, &written_); })) {
      --ops_;
      writing_ = false;
      Break();
    }
  }
  void Break() REQUIRES(mu_) {
    broken_ = true;
    queue_.clear();
  }
  // Starts the Finish once every read, inference and write is done, and
  // says whether the call is over: finished and its last event came. The
  // caller then releases mu_ and deletes the call.
  bool Ended() REQUIRES(mu_) {
    if (!reads_done_ || pending_ > 0 || writing_) return false;
    if (!finish_started_) {
      finish_started_ = true;
      ++ops_;
      if (!method_.queues_.IfOpen([&] { stream_.Finish(::grpc::Status::OK, &finished_); })) --ops_;
    }
    return ops_ == 0;
  }

  StreamInferMethod& method_;
  ::grpc::ServerCompletionQueue& cq_;
  ::grpc::ServerContext ctx_;
  ::grpc::ServerAsyncReaderWriter<ModelStreamInferResponse, ModelInferRequest> stream_;
  ModelInferRequest request_;  // the read in progress
  MemberTag<Call, &Call::OnArrived> arrived_{this};
  MemberTag<Call, &Call::OnRead> read_{this};
  MemberTag<Call, &Call::OnWrite> written_{this};
  MemberTag<Call, &Call::OnFinished> finished_{this};

  Mutex mu_;
  std::deque<std::shared_ptr<ModelStreamInferResponse>> queue_ GUARDED_BY(mu_);  // front is being written
  int ops_ GUARDED_BY(mu_) = 0;
  int pending_ GUARDED_BY(mu_) = 0;  // inferences not completed
  bool reads_done_ GUARDED_BY(mu_) = false;
  bool writing_ GUARDED_BY(mu_) = false;
  bool broken_ GUARDED_BY(mu_) = false;
  bool finish_started_ GUARDED_BY(mu_) = false;
};

void StreamInferMethod::RequestOn(::grpc::ServerCompletionQueue& cq) { (new Call(*this, cq))->Request(); }

using grpc::health::v1::HealthCheckRequest;
using grpc::health::v1::HealthCheckResponse;

class HealthWatchMethod {
 public:
  HealthWatchMethod(GrpcCallQueues& queues, grpc::health::v1::Health::AsyncService& service,
                    std::function<HealthStatus(const std::string&)> status, std::chrono::milliseconds poll)
      : queues_(queues), service_(service), status_(std::move(status)), poll_(poll) {}

  void RequestOn(::grpc::ServerCompletionQueue& cq);

 private:
  class Call;
  GrpcCallQueues& queues_;
  grpc::health::v1::Health::AsyncService& service_;
  std::function<HealthStatus(const std::string&)> status_;
  std::chrono::milliseconds poll_;
};

// One Watch. Every event of the call comes to the poller of its queue, one
// at a time, so it needs no lock. `ops_` counts the operations started
// whose events have not come; the call deletes itself once it is done (the
// client cancelled or the server shut down) and that count is 0.
class HealthWatchMethod::Call {
 public:
  Call(HealthWatchMethod& method, ::grpc::ServerCompletionQueue& cq) : method_(method), cq_(cq), writer_(&ctx_) {}

  void Request() {
    ctx_.AsyncNotifyWhenDone(&done_tag_);  // delivered only once the call arrived
    auto& svc = method_.service_;
    if (!method_.queues_.IfOpen([&] { svc.RequestWatch(&ctx_, &request_, &writer_, &cq_, &cq_, &arrived_); })) {
      delete this;
    }
  }

 private:
  void OnArrived(bool ok) {
    if (!ok) {  // the server shut down before a call came
      delete this;
      return;
    }
    method_.RequestOn(cq_);
    ops_ = 1;  // the done tag
    Send(method_.status_(request_.service()));
  }

  void Send(HealthStatus status) {
    sent_ = status;
    response_.set_status(status);
    ++ops_;
    if (!method_.queues_.IfOpen([&] { writer_.Write(response_, &written_); })) --ops_;
  }

  void OnWritten(bool ok) {
    --ops_;
    if (ok && !done_) Arm();
    MaybeDelete();
  }

  void Arm() {
    ++ops_;
    const auto when = std::chrono::system_clock::now() + method_.poll_;
    if (!method_.queues_.IfOpen([&] { alarm_.Set(&cq_, when, &alarm_tag_); })) --ops_;
  }

  void OnAlarm(bool) {
    --ops_;
    if (!done_) {
      const HealthStatus now = method_.status_(request_.service());
      if (now != sent_) {
        Send(now);
      } else {
        Arm();
      }
    }
    MaybeDelete();
  }

  void OnDone(bool) {
    --ops_;
    done_ = true;
    alarm_.Cancel();  // its event comes at once (ok false), if it is set
    MaybeDelete();
  }

  void MaybeDelete() {
    if (done_ && ops_ == 0) delete this;
  }

  HealthWatchMethod& method_;
  ::grpc::ServerCompletionQueue& cq_;
  ::grpc::ServerContext ctx_;
  ::grpc::ServerAsyncWriter<HealthCheckResponse> writer_;
  HealthCheckRequest request_;
  HealthCheckResponse response_;
  ::grpc::Alarm alarm_;
  HealthStatus sent_ = HealthCheckResponse::UNKNOWN;
  int ops_ = 0;
  bool done_ = false;
  MemberTag<Call, &Call::OnArrived> arrived_{this};
  MemberTag<Call, &Call::OnWritten> written_{this};
  MemberTag<Call, &Call::OnAlarm> alarm_tag_{this};
  MemberTag<Call, &Call::OnDone> done_tag_{this};
};

void HealthWatchMethod::RequestOn(::grpc::ServerCompletionQueue& cq) { (new Call(*this, cq))->Request(); }

}  // namespace

GrpcCallQueues::Method StreamInferRpc(GrpcCallQueues& queues, inference::GRPCInferenceService::AsyncService& service,
                                      InferHandler handler) {
  auto method = std::make_shared<StreamInferMethod>(queues, service, std::move(handler));
  return {"ModelStreamInfer", [method](::grpc::ServerCompletionQueue& cq) { method->RequestOn(cq); }, 1};
}

GrpcCallQueues::Method HealthWatchRpc(GrpcCallQueues& queues, grpc::health::v1::Health::AsyncService& service,
                                      std::function<HealthStatus(const std::string& service)> status,
                                      std::chrono::milliseconds poll) {
  auto method = std::make_shared<HealthWatchMethod>(queues, service, std::move(status), poll);
  return {"grpc.health.v1.Health/Watch", [method](::grpc::ServerCompletionQueue& cq) { method->RequestOn(cq); }, 1};
}

}  // namespace ortgpu::serve
