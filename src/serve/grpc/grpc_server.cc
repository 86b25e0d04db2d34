#include "serve/grpc/grpc_server.h"

#include <algorithm>
#include <climits>
#include <condition_variable>
#include <deque>
#include <limits>
#include <mutex>
#include <optional>

#include <boost/asio/post.hpp>
#include <boost/asio/thread_pool.hpp>
#include <fmt/format.h>
#include <grpcpp/grpcpp.h>

#include "grpc_service.grpc.pb.h"
#include "health.grpc.pb.h"
#include "serve/classification.h"
#include "serve/grpc/grpc_async_infer.h"
#include "serve/grpc/grpc_codec.h"
#include "serve/grpc/grpc_settings.h"
#include "serve/http/request_access.h"
#include "serve/protocol/client_text.h"
#include "serve/protocol/server_metadata.h"
#include "sys/clock.h"

namespace ortgpu::serve {
namespace {

::grpc::Status ToGrpc(const Status& st) {
  if (st.ok()) return ::grpc::Status::OK;
  // As clients may see it: no server file path (protocol/client_text.h).
  return ::grpc::Status(static_cast<::grpc::StatusCode>(GrpcCodeFor(st.code())), protocol::ClientText(st.message()));
}

::grpc::ServerUnaryReactor* Reply(::grpc::CallbackServerContext* ctx, const Status& st) {
  auto* reactor = ctx->DefaultReactor();
  reactor->Finish(ToGrpc(st));
  return reactor;
}

// When the core drops the request unrun: the earlier of the client's
// deadline and the server's request timeout, on the scheduler's clock.
int64_t DeadlineNs(const ::grpc::ServerContextBase& ctx, std::chrono::milliseconds timeout) {
  int64_t budget = timeout.count() > 0 ? std::chrono::duration_cast<std::chrono::nanoseconds>(timeout).count()
                                       : INT64_MAX;
  const auto client = ctx.deadline();
  if (client != std::chrono::system_clock::time_point::max()) {
    const auto left = std::chrono::duration_cast<std::chrono::nanoseconds>(client - std::chrono::system_clock::now());
    budget = std::min<int64_t>(budget, std::max<int64_t>(left.count(), 1));
  }
  if (budget == INT64_MAX) return 0;
  return RealClock().NowNanos() + budget;
}

void FillTensors(const std::vector<TensorMetadata>& from,
                 google::protobuf::RepeatedPtrField<inference::ModelMetadataResponse::TensorMetadata>& to) {
  for (const auto& t : from) {
    auto* m = to.Add();
    m->set_name(t.name);
    m->set_datatype(t.datatype);
    for (int64_t d : t.shape) m->add_shape(d);
  }
}

// Responses whose outputs hold at most this many bytes are encoded on the
// thread that completes the inference (State::Infer).
constexpr size_t kInlineCompletionBytes = 64u << 10;

bool InlineCompletion(const Expected<InferResponse>& result) {
  if (!result) return true;
  size_t bytes = 0;
  for (const Tensor& t : result->outputs) {
    bytes += t.byte_size();
    for (const std::string& s : t.strings) bytes += s.size() + 4;
  }
  return bytes <= kInlineCompletionBytes;
}

}  // namespace

struct GrpcServer::State {
  State(ModelServer& c, RuntimeSettings& s, GrpcOptions o)
      : core(c), settings(s), options(std::move(o)), workers(static_cast<size_t>(std::max(1, options.threads))) {}

  void Begin() {
    std::lock_guard lock(mu);
    ++in_flight;
  }
  void End() {
    std::lock_guard lock(mu);
    if (--in_flight == 0) idle.notify_all();
  }
  // Decodes `request` (moving its raw contents out) and queues it on the
  // core; `complete` runs on a worker with the response, encoded into
  // `out`, or the failure.
  template <typename Complete>
  void Infer(::grpc::ServerContextBase& ctx, inference::ModelInferRequest& request,
             inference::ModelInferResponse* out, Complete complete) {
    if (draining) {
      complete(Unavailable("the server is shutting down; send the request to another instance"));
      return;
    }
    auto decoded = DecodeGrpcInferRequest(request, &settings.system_shm);
    if (!decoded) {
      complete(decoded.status());
      return;
    }
    decoded->deadline_ns = DeadlineNs(ctx, options.request_timeout);
    // What the response needs of the request: the outputs to classify or
    // to write into shared memory.
    std::vector<RequestedOutput> special;
    for (const auto& o : decoded->outputs) {
      if (o.parameters.count("shared_memory_region") > 0 || o.parameters.count("classification") > 0) {
        special.push_back(o);
      }
    }
    Begin();
    core.Infer(std::move(decoded).value(), [this, out, complete, special = std::move(special)](
                                               Expected<InferResponse> result) mutable {
      auto finish = [this, out, complete, special](Expected<InferResponse> result) {
        Status st = result.status();
        if (st.ok() && WantsClassification(special)) st = ApplyClassification(core, special, *result);
        if (st.ok() && !special.empty()) st = WriteSharedMemoryOutputs(*result, special, settings.system_shm);
        if (st.ok()) st = EncodeGrpcInferResponse(*result, *out);
        complete(st);
        End();
      };
      // A small plain response is encoded and completed right here, on the
      // instance worker: that costs it microseconds, while handing it to the
      // pool costs the request a thread wake-up (tens of microseconds of a
      // small model's latency). Large ones go off the worker, which returns
      // to its queue at once.
      if (special.empty() && InlineCompletion(result)) {
        finish(std::move(result));
        return;
      }
      boost::asio::post(workers, [finish = std::move(finish), result = std::move(result)]() mutable {
        finish(std::move(result));
      });
    });
  }

  ModelServer& core;
  RuntimeSettings& settings;
  const GrpcOptions options;
  boost::asio::thread_pool workers;
  boost::asio::thread_pool blocking{1};
  std::atomic<bool> draining{false};
  std::atomic<bool> stopped{false};
  std::mutex mu;
  std::condition_variable idle;
  int in_flight = 0;  // guarded by mu
  uint16_t port = 0;
  std::unique_ptr<grpc_methods::InferenceServiceBase> service;
  std::unique_ptr<AsyncInferQueues> infer_queues;  // ModelInfer
  std::unique_ptr<::grpc::Service> health;
  std::unique_ptr<::grpc::Server> server;
};

namespace {

using State = GrpcServer::State;

// ModelStreamInfer for non-decoupled models: each request read is queued on
// the core as it arrives; each response is written as it completes (so in
// completion order, each naming its request's id). A failed request is a
// response with error_message; the stream goes on. The call finishes once
// the client closed its side and every response was written.
class StreamInfer : public ::grpc::ServerBidiReactor<inference::ModelInferRequest, inference::ModelStreamInferResponse> {
 public:
  StreamInfer(State& state, ::grpc::CallbackServerContext* ctx) : state_(state), ctx_(ctx) { StartRead(&request_); }

  void OnReadDone(bool ok) override {
    if (!ok) {
      std::unique_lock lock(mu_);
      reads_done_ = true;
      MaybeFinish(lock);
      return;
    }
    auto response = std::make_shared<inference::ModelStreamInferResponse>();
    {
      std::lock_guard lock(mu_);
      ++pending_;
    }
    state_.Infer(*ctx_, request_, response->mutable_infer_response(),
                 [this, response](const Status& st) { Complete(response, st); });
    request_.Clear();
    StartRead(&request_);
  }

  void OnWriteDone(bool ok) override {
    std::unique_lock lock(mu_);
    queue_.pop_front();
    if (!ok) {
      broken_ = true;  // the client went away: drop what is left
      queue_.clear();
    }
    if (!queue_.empty()) {
      auto* next = queue_.front().get();
      lock.unlock();
      StartWrite(next);
      return;
    }
    writing_ = false;
    MaybeFinish(lock);
  }

  void OnDone() override { delete this; }

 private:
  void Complete(std::shared_ptr<inference::ModelStreamInferResponse> response, const Status& st) {
    if (!st.ok()) {
      response->Clear();
      response->set_error_message(protocol::ClientText(st.message()));
    }
    std::unique_lock lock(mu_);
    --pending_;
    if (broken_) {
      MaybeFinish(lock);
      return;
    }
    queue_.push_back(std::move(response));
    if (writing_) return;
    writing_ = true;
    auto* first = queue_.front().get();
    lock.unlock();
    StartWrite(first);
  }

  // REQUIRES: `lock` holds mu_; releases it.
  void MaybeFinish(std::unique_lock<std::mutex>& lock) {
    if (!reads_done_ || pending_ > 0 || writing_ || finished_) return;
    finished_ = true;
    lock.unlock();
    Finish(::grpc::Status::OK);
  }

  State& state_;
  ::grpc::CallbackServerContext* ctx_;
  inference::ModelInferRequest request_;  // the read in progress
  std::mutex mu_;
  std::deque<std::shared_ptr<inference::ModelStreamInferResponse>> queue_;  // guarded by mu_; front is being written
  int pending_ = 0;                                                        // guarded by mu_
  bool reads_done_ = false;                                                // guarded by mu_
  bool writing_ = false;                                                   // guarded by mu_
  bool broken_ = false;                                                    // guarded by mu_
  bool finished_ = false;                                                  // guarded by mu_
};

class InferenceService final : public grpc_methods::InferenceServiceBase {
 public:
  explicit InferenceService(State& state) : s_(state) {}

  ::grpc::ServerUnaryReactor* ServerLive(::grpc::CallbackServerContext* ctx, const inference::ServerLiveRequest*,
                                         inference::ServerLiveResponse* resp) override {
    resp->set_live(s_.core.IsLive());
    return Reply(ctx, Status::Ok());
  }

  ::grpc::ServerUnaryReactor* ServerReady(::grpc::CallbackServerContext* ctx, const inference::ServerReadyRequest*,
                                          inference::ServerReadyResponse* resp) override {
    resp->set_ready(!s_.draining && s_.core.IsReady());
    return Reply(ctx, Status::Ok());
  }

  ::grpc::ServerUnaryReactor* ModelReady(::grpc::CallbackServerContext* ctx, const inference::ModelReadyRequest* req,
                                         inference::ModelReadyResponse* resp) override {
    auto ready = s_.core.IsModelReady(req->name(), req->version());
    if (!ready) return Reply(ctx, ready.status());
    resp->set_ready(*ready);
    return Reply(ctx, Status::Ok());
  }

  ::grpc::ServerUnaryReactor* ServerMetadata(::grpc::CallbackServerContext* ctx,
                                             const inference::ServerMetadataRequest*,
                                             inference::ServerMetadataResponse* resp) override {
    resp->set_name(protocol::kServerName);
    resp->set_version(protocol::ServerVersion());
    for (const auto& e : protocol::ServerExtensions()) resp->add_extensions(e);
    return Reply(ctx, Status::Ok());
  }

  ::grpc::ServerUnaryReactor* ModelMetadata(::grpc::CallbackServerContext* ctx,
                                            const inference::ModelMetadataRequest* req,
                                            inference::ModelMetadataResponse* resp) override {
    auto md = s_.core.Metadata(req->name(), req->version());
    if (!md) return Reply(ctx, md.status());
    resp->set_name(md->name);
    for (const auto& v : md->versions) resp->add_versions(v);
    resp->set_platform(md->platform);
    FillTensors(md->inputs, *resp->mutable_inputs());
    FillTensors(md->outputs, *resp->mutable_outputs());
    return Reply(ctx, Status::Ok());
  }

  // ModelInfer runs on the completion-queue API: AsyncInferQueues.

  ::grpc::ServerBidiReactor<inference::ModelInferRequest, inference::ModelStreamInferResponse>* ModelStreamInfer(
      ::grpc::CallbackServerContext* ctx) override {
    return new StreamInfer(s_, ctx);
  }

  ::grpc::ServerUnaryReactor* ModelConfig(::grpc::CallbackServerContext* ctx, const inference::ModelConfigRequest* req,
                                          inference::ModelConfigResponse* resp) override {
    auto config = s_.core.ModelConfig(req->name(), req->version());
    if (!config) return Reply(ctx, config.status());
    *resp->mutable_config() = *std::move(config);
    return Reply(ctx, Status::Ok());
  }

  ::grpc::ServerUnaryReactor* ModelStatistics(::grpc::CallbackServerContext* ctx,
                                              const inference::ModelStatisticsRequest* req,
                                              inference::ModelStatisticsResponse* resp) override {
    auto stats = s_.core.Statistics(req->name(), req->version());
    if (!stats) return Reply(ctx, stats.status());
    EncodeGrpcStatistics(*stats, *resp);
    return Reply(ctx, Status::Ok());
  }

  ::grpc::ServerUnaryReactor* RepositoryIndex(::grpc::CallbackServerContext* ctx,
                                              const inference::RepositoryIndexRequest* req,
                                              inference::RepositoryIndexResponse* resp) override {
    if (auto* denied = Unauthorized(ctx, "RepositoryIndex")) return denied;
    for (const auto& m : s_.core.RepositoryIndex(req->ready())) {
      auto* e = resp->add_models();
      e->set_name(m.name);
      e->set_version(m.version);
      e->set_state(std::string(ModelStateName(m.state)));
      e->set_reason(m.reason);
    }
    return Reply(ctx, Status::Ok());
  }

  ::grpc::ServerUnaryReactor* RepositoryModelLoad(::grpc::CallbackServerContext* ctx,
                                                  const inference::RepositoryModelLoadRequest* req,
                                                  inference::RepositoryModelLoadResponse*) override {
    if (auto* denied = Unauthorized(ctx, "RepositoryModelLoad")) return denied;
    // Triton's load parameters: "config" as string_param, "file:<path>" as
    // bytes_param; unload_dependents is ignored (no ensembles).
    ModelLoadParameters parameters;
    constexpr std::string_view kFile = "file:";
    for (const auto& [key, value] : req->parameters()) {
      if (key == "unload_dependents") continue;
      if (key == "config") {
        if (value.parameter_choice_case() != inference::ModelRepositoryParameter::kStringParam) {
          return Reply(ctx, InvalidArgument("load parameter 'config' must be a string_param holding the model "
                                            "configuration's JSON"));
        }
        parameters.config_json = value.string_param();
        continue;
      }
      if (key.compare(0, kFile.size(), kFile) == 0) {
        if (value.parameter_choice_case() != inference::ModelRepositoryParameter::kBytesParam) {
          return Reply(ctx, InvalidArgument(fmt::format("load parameter '{}' must be a bytes_param holding the "
                                                        "file's bytes",
                                                        key)));
        }
        parameters.files[key.substr(kFile.size())] = value.bytes_param();
        continue;
      }
      return Reply(ctx, Unimplemented(fmt::format("load parameter '{}' is not supported; a load takes 'config' and "
                                                  "'file:<version>/<name>'",
                                                  key)));
    }
    return Control(ctx, req->model_name(), std::move(parameters));
  }

  ::grpc::ServerUnaryReactor* RepositoryModelUnload(::grpc::CallbackServerContext* ctx,
                                                    const inference::RepositoryModelUnloadRequest* req,
                                                    inference::RepositoryModelUnloadResponse*) override {
    if (auto* denied = Unauthorized(ctx, "RepositoryModelUnload")) return denied;
    return Control(ctx, req->model_name(), std::nullopt);
  }

  ::grpc::ServerUnaryReactor* SystemSharedMemoryStatus(::grpc::CallbackServerContext* ctx,
                                                       const inference::SystemSharedMemoryStatusRequest* req,
                                                       inference::SystemSharedMemoryStatusResponse* resp) override {
    auto regions = s_.settings.system_shm.Regions(req->name());
    if (!regions) return Reply(ctx, regions.status());
    for (const auto& r : *regions) {
      auto& e = (*resp->mutable_regions())[r.name];
      e.set_name(r.name);
      e.set_key(r.key);
      e.set_offset(r.offset);
      e.set_byte_size(r.byte_size);
    }
    return Reply(ctx, Status::Ok());
  }
  ::grpc::ServerUnaryReactor* SystemSharedMemoryRegister(::grpc::CallbackServerContext* ctx,
                                                         const inference::SystemSharedMemoryRegisterRequest* req,
                                                         inference::SystemSharedMemoryRegisterResponse*) override {
    if (auto* denied = Unauthorized(ctx, "SystemSharedMemoryRegister")) return denied;
    return Reply(ctx, s_.settings.system_shm.Register(req->name(), req->key(), req->offset(), req->byte_size()));
  }
  ::grpc::ServerUnaryReactor* SystemSharedMemoryUnregister(::grpc::CallbackServerContext* ctx,
                                                           const inference::SystemSharedMemoryUnregisterRequest* req,
                                                           inference::SystemSharedMemoryUnregisterResponse*) override {
    if (auto* denied = Unauthorized(ctx, "SystemSharedMemoryUnregister")) return denied;
    s_.settings.system_shm.Unregister(req->name());
    return Reply(ctx, Status::Ok());
  }
  ::grpc::ServerUnaryReactor* CudaSharedMemoryStatus(::grpc::CallbackServerContext* ctx,
                                                     const inference::CudaSharedMemoryStatusRequest* req,
                                                     inference::CudaSharedMemoryStatusResponse* resp) override {
    auto regions = s_.settings.system_shm.Regions(req->name(), SharedMemoryKind::kCuda);
    if (!regions) return Reply(ctx, regions.status());
    for (const auto& r : *regions) {
      auto& e = (*resp->mutable_regions())[r.name];
      e.set_name(r.name);
      e.set_device_id(static_cast<uint64_t>(r.device_id));
      e.set_byte_size(r.byte_size);
    }
    return Reply(ctx, Status::Ok());
  }
  ::grpc::ServerUnaryReactor* CudaSharedMemoryRegister(::grpc::CallbackServerContext* ctx,
                                                       const inference::CudaSharedMemoryRegisterRequest* req,
                                                       inference::CudaSharedMemoryRegisterResponse*) override {
    if (auto* denied = Unauthorized(ctx, "CudaSharedMemoryRegister")) return denied;
    if (req->device_id() < 0 || req->device_id() > std::numeric_limits<int>::max()) {
      return Reply(ctx, InvalidArgument("device_id " + std::to_string(req->device_id()) + " is not a GPU"));
    }
    return Reply(ctx, s_.settings.system_shm.RegisterCuda(req->name(), req->raw_handle(),
                                                          static_cast<int>(req->device_id()), req->byte_size()));
  }
  ::grpc::ServerUnaryReactor* CudaSharedMemoryUnregister(::grpc::CallbackServerContext* ctx,
                                                         const inference::CudaSharedMemoryUnregisterRequest* req,
                                                         inference::CudaSharedMemoryUnregisterResponse*) override {
    if (auto* denied = Unauthorized(ctx, "CudaSharedMemoryUnregister")) return denied;
    s_.settings.system_shm.Unregister(req->name(), SharedMemoryKind::kCuda);
    return Reply(ctx, Status::Ok());
  }

  ::grpc::ServerUnaryReactor* TraceSetting(::grpc::CallbackServerContext* ctx,
                                           const inference::TraceSettingRequest* req,
                                           inference::TraceSettingResponse* resp) override {
    if (auto* denied = Unauthorized(ctx, "TraceSetting")) return denied;
    if (!req->model_name().empty()) {
      auto md = s_.core.Metadata(req->model_name(), "");
      if (!md && md.status().code() == Code::kNotFound) return Reply(ctx, md.status());
    }
    if (req->settings_size() > 0) {
      Status st = s_.settings.trace.Update(req->model_name(), TraceChangesFromGrpc(*req));
      if (!st.ok()) return Reply(ctx, st);
    }
    TraceSettingsToGrpc(s_.settings.trace.Get(req->model_name()), *resp);
    return Reply(ctx, Status::Ok());
  }

  ::grpc::ServerUnaryReactor* LogSettings(::grpc::CallbackServerContext* ctx, const inference::LogSettingsRequest* req,
                                          inference::LogSettingsResponse* resp) override {
    if (auto* denied = Unauthorized(ctx, "LogSettings")) return denied;
    if (req->settings_size() > 0) {
      auto changes = LogChangesFromGrpc(*req);
      if (!changes) return Reply(ctx, changes.status());
      Status st = s_.settings.log.Update(*changes);
      if (!st.ok()) return Reply(ctx, st);
    }
    LogSettingsToGrpc(s_.settings.log.Get(), *resp);
    return Reply(ctx, Status::Ok());
  }

 private:
  // Load (with its parameters) or, for nullopt, unload; they may take
  // seconds: they run on the blocking pool.
  ::grpc::ServerUnaryReactor* Control(::grpc::CallbackServerContext* ctx, const std::string& model,
                                      std::optional<ModelLoadParameters> load) {
    auto* reactor = ctx->DefaultReactor();
    if (model.empty()) {
      reactor->Finish(ToGrpc(InvalidArgument("model_name is empty; name the model to load or unload")));
      return reactor;
    }
    boost::asio::post(s_.blocking, [this, reactor, model, load = std::move(load)] {
      Status st = load ? s_.core.LoadModel(model, *load) : s_.core.UnloadModel(model);
      reactor->Finish(ToGrpc(st));
    });
    return reactor;
  }

  // nullptr when the call may go on; otherwise the reactor it was finished
  // with, UNAUTHENTICATED (GrpcOptions::auth_token).
  ::grpc::ServerUnaryReactor* Unauthorized(::grpc::CallbackServerContext* ctx, std::string_view rpc) const {
    if (s_.options.auth_token.empty()) return nullptr;
    const auto& md = ctx->client_metadata();
    auto it = md.find("authorization");
    const std::string_view given = it == md.end() ? std::string_view() : std::string_view(it->second.data(), it->second.size());
    if (BearerTokenMatches(given, s_.options.auth_token)) return nullptr;
    auto* reactor = ctx->DefaultReactor();
    reactor->Finish(::grpc::Status(::grpc::StatusCode::UNAUTHENTICATED,
                                   fmt::format("{} needs the metadata 'authorization: Bearer <token>' with the token of "
                                               "the server's --auth-token-file{}",
                                               rpc, given.empty() ? "" : "; the token sent is wrong")));
    return reactor;
  }

  State& s_;
};

// grpc.health.v1: SERVING while the server is ready (every model that should
// be loaded is READY), for the whole server ("") and the inference service.
class HealthService final : public grpc::health::v1::Health::CallbackService {
 public:
  explicit HealthService(State& state) : s_(state) {}
  ::grpc::ServerUnaryReactor* Check(::grpc::CallbackServerContext* ctx,
                                    const grpc::health::v1::HealthCheckRequest* req,
                                    grpc::health::v1::HealthCheckResponse* resp) override {
    if (!req->service().empty() && req->service() != "inference.GRPCInferenceService") {
      return Reply(ctx, NotFound(fmt::format("unknown service '{}'; ask for \"\" or "
                                             "\"inference.GRPCInferenceService\"",
                                             req->service())));
    }
    const bool serving = !s_.draining && s_.core.IsReady();
    resp->set_status(serving ? grpc::health::v1::HealthCheckResponse::SERVING
                             : grpc::health::v1::HealthCheckResponse::NOT_SERVING);
    return Reply(ctx, Status::Ok());
  }

 private:
  State& s_;
};

}  // namespace

Expected<std::unique_ptr<GrpcServer>> GrpcServer::Start(ModelServer& server, RuntimeSettings& settings,
                                                        GrpcOptions options) {
  std::unique_ptr<GrpcServer> g(new GrpcServer());
  g->state_ = std::make_shared<State>(server, settings, std::move(options));
  State& s = *g->state_;
  s.service = std::make_unique<InferenceService>(s);
  s.health = std::make_unique<HealthService>(s);

  const std::string host = s.options.host.find(':') != std::string::npos ? "[" + s.options.host + "]" : s.options.host;
  const std::string address = fmt::format("{}:{}", host, s.options.port);
  ::grpc::ServerBuilder builder;
  int selected_port = 0;
  builder.AddListeningPort(address, ::grpc::InsecureServerCredentials(), &selected_port);
  // gRPC sets SO_REUSEPORT by default, so a second server on a busy port
  // would start silently and get half the connections: refuse instead.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  builder.SetMaxReceiveMessageSize(static_cast<int>(std::min<size_t>(s.options.max_message_bytes, INT_MAX)));
  builder.RegisterService(s.service.get());
  builder.RegisterService(s.health.get());
  s.infer_queues = std::make_unique<AsyncInferQueues>(builder, s.options.infer_threads, s.options.busy_poll);
  s.server = builder.BuildAndStart();
  if (!s.server || selected_port == 0) {
    if (s.server) s.server->Shutdown();
    s.infer_queues->Stop();
    s.stopped = true;
    return Unavailable(fmt::format("cannot listen for gRPC on {}: the port is in use or the address is not one of "
                                   "this machine's; choose another --grpc-port (0: any free port, -1: no gRPC)",
                                   address));
  }
  s.port = static_cast<uint16_t>(selected_port);
  s.infer_queues->Start(*s.service, [&s](::grpc::ServerContext& ctx, inference::ModelInferRequest& request,
                                         inference::ModelInferResponse* response, AsyncInferQueues::Done done) {
    s.Infer(ctx, request, response, std::move(done));
  });
  return g;
}

GrpcServer::~GrpcServer() { Stop(); }

uint16_t GrpcServer::port() const { return state_->port; }

void GrpcServer::BeginDrain() { state_->draining = true; }

bool GrpcServer::WaitIdle(std::chrono::milliseconds timeout) {
  std::unique_lock lock(state_->mu);
  return state_->idle.wait_for(lock, timeout, [&] { return state_->in_flight == 0; });
}

void GrpcServer::Stop() {
  if (!state_ || state_->stopped.exchange(true)) return;
  state_->draining = true;
  // Cancels the calls still open; returns once every one was completed
  // (the workers keep completing the infers the core hands back).
  state_->server->Shutdown(std::chrono::system_clock::now());
  {
    // Shutdown has cancelled the ModelInfer calls; each is still answered
    // (Finish) once the core completes it, before the queues may close.
    std::unique_lock lock(state_->mu);
    state_->idle.wait(lock, [&] { return state_->in_flight == 0; });
  }
  state_->infer_queues->Stop();
  state_->workers.join();
  state_->blocking.join();
}

int GrpcServer::in_flight() const {
  std::lock_guard lock(state_->mu);
  return state_->in_flight;
}

}  // namespace ortgpu::serve
