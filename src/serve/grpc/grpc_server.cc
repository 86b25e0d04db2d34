#include "serve/grpc/grpc_server.h"

#include <algorithm>
#include <climits>
#include <deque>
#include <limits>
#include <optional>
#include <thread>

#include <boost/asio/post.hpp>
#include <boost/asio/thread_pool.hpp>
#include <fmt/format.h>
#include <grpcpp/grpcpp.h>
#include <spdlog/spdlog.h>

#include "grpc_service.grpc.pb.h"
#include "health.grpc.pb.h"
#include "kserve/grpc_runtime.h"
#include "serve/infer_extensions.h"
#include "serve/grpc/grpc_call_queues.h"
#include "serve/grpc/grpc_codec.h"
#include "serve/grpc/grpc_settings.h"
#include "serve/grpc/grpc_streams.h"
#include "serve/http/request_access.h"
#include "serve/protocol/client_text.h"
#include "serve/protocol/server_metadata.h"
#include "sys/clock.h"
#include "sys/mutex.h"

namespace ortgpu::serve {
namespace {

// `st` as the client gets it: no server file path, paths under the model
// repository relative to it (protocol/client_text.h), as over HTTP.
::grpc::Status GrpcStatus(const Status& st, const ModelServer& core) {
  if (st.ok()) return ::grpc::Status::OK;
  return ::grpc::Status(static_cast<::grpc::StatusCode>(GrpcCodeFor(st.code())),
                        protocol::ClientText(st.message(), core.ClientTextRoots()));
}

// The last resort of every RPC, as the HTTP side's (http_server.cc): what an
// exception that escaped a handler becomes, so that the call is answered and
// the server keeps serving. REQUIRES: called inside a catch block.
Status CaughtException(std::string_view rpc) {
  try {
    throw;
  } catch (const std::bad_alloc&) {
    spdlog::error("gRPC {}: out of memory; the call is answered RESOURCE_EXHAUSTED, the server keeps serving", rpc);
    return ResourceExhausted(fmt::format("the server ran out of memory handling this {} call; send a smaller "
                                         "request or retry later", rpc));
  } catch (const std::exception& e) {
    spdlog::error("gRPC {} threw ({}); the call is answered INTERNAL, the server keeps serving", rpc, e.what());
    return Internal(fmt::format("unexpected error handling this {} call: {}; the server keeps serving: retry, and "
                                "report it with the server's log if it repeats", rpc, e.what()));
  } catch (...) {
    spdlog::error("gRPC {} threw an unknown exception; the call is answered INTERNAL, the server keeps serving", rpc);
    return Internal(fmt::format("unexpected error handling this {} call; the server keeps serving: retry, and "
                                "report it with the server's log if it repeats", rpc));
  }
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

// `handler` (a unary handler: ctx, request, response, done) with the last
// resort around it: an exception that escapes it answers the call
// (CaughtException) unless the handler already did, and the poller goes on
// serving. What a handler hands to another thread catches there
// (State::Infer, Rpcs::Control).
template <class Handler>
auto GuardedHandler(const ModelServer& core, std::string rpc, Handler handler) {
  return [&core, rpc = std::move(rpc), handler = std::move(handler)](::grpc::ServerContext& ctx, auto& req,
                                                                     auto* resp, CallDone done) {
    auto answered = std::make_shared<std::atomic<bool>>(false);
    CallDone once = [answered, done = std::move(done)](const ::grpc::Status& st) {
      if (!answered->exchange(true)) done(st);
    };
    try {
      handler(ctx, req, resp, once);
    } catch (...) {
      once(GrpcStatus(CaughtException(rpc), core));
    }
  };
}

class Rpcs;  // every RPC's handler, below

}  // namespace

struct GrpcServer::State {
  State(ModelServer& c, RuntimeSettings& s, GrpcOptions o)
      : core(c), settings(s), options(std::move(o)), workers(static_cast<size_t>(std::max(1, options.threads))) {}

  void Begin() EXCLUDES(mu) {
    if (queues) queues->busy_poll().RequestStarted();
    MutexLock lock(&mu);
    ++in_flight;
  }
  void End() EXCLUDES(mu) {
    if (queues) queues->busy_poll().RequestFinished();
    MutexLock lock(&mu);
    if (--in_flight == 0) idle.SignalAll();
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
    if (decoded) {
      if (Status st = PrepareExtensions(*decoded, &settings.system_shm); !st.ok()) decoded = st;
    }
    if (!decoded) {
      complete(decoded.status());
      return;
    }
    decoded->deadline_ns = DeadlineNs(ctx, options.request_timeout);
    // What the response needs of the request: the outputs to classify or
    // to write into shared memory.
    std::vector<RequestedOutput> special = ExtendedOutputs(decoded->outputs);
    auto on_done = [this, out, complete, special = std::move(special)](Expected<InferResponse> result) mutable {
      auto finish = [this, out, complete, special](Expected<InferResponse> result) {
        Status st;
        try {
          st = result.status();
          if (st.ok() && !special.empty()) st = FinishExtensions(core, special, *result, &settings.system_shm);
          if (st.ok()) st = EncodeGrpcInferResponse(*result, *out);
        } catch (...) {
          st = CaughtException("ModelInfer");
        }
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
    };
    Begin();
    try {
      core.Infer(std::move(decoded).value(), std::move(on_done));
    } catch (...) {
      // A core that throws has not taken the request, so `on_done` will not
      // run: the call is counted out here and answered by the handler's last
      // resort (GuardedHandler).
      End();
      throw;
    }
  }

  ModelServer& core;
  RuntimeSettings& settings;
  const GrpcOptions options;
  boost::asio::thread_pool workers;
  boost::asio::thread_pool blocking{1};
  std::atomic<bool> draining{false};
  std::atomic<bool> stopped{false};
  Mutex mu;
  CondVar idle;  // in_flight reached 0
  int in_flight GUARDED_BY(mu) = 0;
  uint16_t port = 0;
  inference::GRPCInferenceService::AsyncService service;
  grpc::health::v1::Health::AsyncService health;
  std::unique_ptr<Rpcs> rpcs;
  std::unique_ptr<GrpcCallQueues> queues;  // every RPC's calls
  std::unique_ptr<::grpc::Server> server;
};

namespace {

using State = GrpcServer::State;
using G = inference::GRPCInferenceService::AsyncService;
using grpc::health::v1::HealthCheckResponse;

// Every RPC's handler. Each runs on the poller that read the call and
// returns its answer, except ModelInfer and the model load/unload, which
// answer later from another thread (see the header comment).
class Rpcs {
 public:
  explicit Rpcs(State& state) : s_(state) {}

  // The queues' entries: every method of both services, so that no call is
  // left to a thread of gRPC's (grpc_call_queues.h says why).
  std::vector<GrpcCallQueues::Method> Methods(GrpcCallQueues& q, G& svc, grpc::health::v1::Health::AsyncService& health) {
    std::vector<GrpcCallQueues::Method> m;
    m.push_back(UnaryRpc(q, "ModelInfer", svc, &G::RequestModelInfer, Infer("ModelInfer"), kInferCallsAhead));
    m.push_back(StreamInferRpc(q, svc, Infer("ModelStreamInfer")));
    m.push_back(Bind(q, "ServerLive", svc, &G::RequestServerLive, &Rpcs::ServerLive));
    m.push_back(Bind(q, "ServerReady", svc, &G::RequestServerReady, &Rpcs::ServerReady));
    m.push_back(Bind(q, "ModelReady", svc, &G::RequestModelReady, &Rpcs::ModelReady));
    m.push_back(Bind(q, "ServerMetadata", svc, &G::RequestServerMetadata, &Rpcs::ServerMetadata));
    m.push_back(Bind(q, "ModelMetadata", svc, &G::RequestModelMetadata, &Rpcs::ModelMetadata));
    m.push_back(Bind(q, "ModelConfig", svc, &G::RequestModelConfig, &Rpcs::ModelConfig));
    m.push_back(Bind(q, "ModelStatistics", svc, &G::RequestModelStatistics, &Rpcs::ModelStatistics));
    m.push_back(Bind(q, "RepositoryIndex", svc, &G::RequestRepositoryIndex, &Rpcs::RepositoryIndex));
    m.push_back(UnaryRpc(q, "RepositoryModelLoad", svc, &G::RequestRepositoryModelLoad,
                         GuardedHandler(s_.core, "RepositoryModelLoad",
                                        [this](auto& ctx, auto& req, auto*, CallDone done) {
                                          Load(ctx, req, std::move(done));
                                        })));
    m.push_back(UnaryRpc(q, "RepositoryModelUnload", svc, &G::RequestRepositoryModelUnload,
                         GuardedHandler(s_.core, "RepositoryModelUnload",
                                        [this](auto& ctx, auto& req, auto*, CallDone done) {
                                          Unload(ctx, req, std::move(done));
                                        })));
    m.push_back(Bind(q, "SystemSharedMemoryStatus", svc, &G::RequestSystemSharedMemoryStatus,
                     &Rpcs::SystemSharedMemoryStatus));
    m.push_back(Bind(q, "SystemSharedMemoryRegister", svc, &G::RequestSystemSharedMemoryRegister,
                     &Rpcs::SystemSharedMemoryRegister));
    m.push_back(Bind(q, "SystemSharedMemoryUnregister", svc, &G::RequestSystemSharedMemoryUnregister,
                     &Rpcs::SystemSharedMemoryUnregister));
    m.push_back(Bind(q, "CudaSharedMemoryStatus", svc, &G::RequestCudaSharedMemoryStatus,
                     &Rpcs::CudaSharedMemoryStatus));
    m.push_back(Bind(q, "CudaSharedMemoryRegister", svc, &G::RequestCudaSharedMemoryRegister,
                     &Rpcs::CudaSharedMemoryRegister));
    m.push_back(Bind(q, "CudaSharedMemoryUnregister", svc, &G::RequestCudaSharedMemoryUnregister,
                     &Rpcs::CudaSharedMemoryUnregister));
    m.push_back(Bind(q, "TraceSetting", svc, &G::RequestTraceSetting, &Rpcs::TraceSetting));
    m.push_back(Bind(q, "LogSettings", svc, &G::RequestLogSettings, &Rpcs::LogSettings));
    m.push_back(Bind(q, "grpc.health.v1.Health/Check", health, &grpc::health::v1::Health::AsyncService::RequestCheck,
                     &Rpcs::HealthCheck));
    m.push_back(HealthWatchRpc(
        q, health,
        [this](const std::string& service) {
          try {
            return Health(service);
          } catch (...) {
            (void)CaughtException("grpc.health.v1.Health/Watch");
            return HealthCheckResponse::NOT_SERVING;
          }
        },
        s_.options.health_watch_poll));
    return m;
  }

 private:
  // Calls requested ahead on each queue for ModelInfer, so a burst of new
  // calls does not wait for a poller to request the next one.
  static constexpr int kInferCallsAhead = 8;

  InferHandler Infer(std::string rpc) {
    auto infer = [this](::grpc::ServerContext& ctx, inference::ModelInferRequest& req,
                        inference::ModelInferResponse* resp, CallDone done) {
      s_.Infer(ctx, req, resp, [this, done = std::move(done)](const Status& st) { done(ToGrpc(st)); });
    };
    return GuardedHandler(s_.core, std::move(rpc), std::move(infer));
  }

  ::grpc::Status ToGrpc(const Status& st) const { return GrpcStatus(st, s_.core); }

  // The entry of a method whose handler answers at once.
  template <class Object, class Svc, class Req, class Resp>
  GrpcCallQueues::Method Bind(GrpcCallQueues& q, std::string name, Object& service,
                              void (Svc::*request)(::grpc::ServerContext*, Req*, ::grpc::ServerAsyncResponseWriter<Resp>*,
                                                   ::grpc::CompletionQueue*, ::grpc::ServerCompletionQueue*, void*),
                              ::grpc::Status (Rpcs::*handler)(::grpc::ServerContext&, const Req&, Resp*)) {
    auto answer = [this, handler](::grpc::ServerContext& ctx, Req& req, Resp* resp, CallDone done) {
      done((this->*handler)(ctx, req, resp));
    };
    std::string rpc = name;
    return UnaryRpc(q, std::move(name), service, request, GuardedHandler(s_.core, std::move(rpc), std::move(answer)));
  }

  ::grpc::Status ServerLive(::grpc::ServerContext&, const inference::ServerLiveRequest&,
                            inference::ServerLiveResponse* resp) {
    resp->set_live(s_.core.IsLive());
    return ::grpc::Status::OK;
  }

  ::grpc::Status ServerReady(::grpc::ServerContext&, const inference::ServerReadyRequest&,
                             inference::ServerReadyResponse* resp) {
    resp->set_ready(!s_.draining && s_.core.IsReady());
    return ::grpc::Status::OK;
  }

  ::grpc::Status ModelReady(::grpc::ServerContext&, const inference::ModelReadyRequest& req,
                            inference::ModelReadyResponse* resp) {
    auto ready = s_.core.IsModelReady(req.name(), req.version());
    if (!ready) return ToGrpc(ready.status());
    resp->set_ready(*ready);
    return ::grpc::Status::OK;
  }

  ::grpc::Status ServerMetadata(::grpc::ServerContext&, const inference::ServerMetadataRequest&,
                                inference::ServerMetadataResponse* resp) {
    resp->set_name(protocol::kServerName);
    resp->set_version(protocol::ServerVersion());
    for (const auto& e : protocol::ServerExtensions()) resp->add_extensions(e);
    return ::grpc::Status::OK;
  }

  ::grpc::Status ModelMetadata(::grpc::ServerContext&, const inference::ModelMetadataRequest& req,
                               inference::ModelMetadataResponse* resp) {
    auto md = s_.core.Metadata(req.name(), req.version());
    if (!md) return ToGrpc(md.status());
    resp->set_name(md->name);
    for (const auto& v : md->versions) resp->add_versions(v);
    resp->set_platform(md->platform);
    FillTensors(md->inputs, *resp->mutable_inputs());
    FillTensors(md->outputs, *resp->mutable_outputs());
    return ::grpc::Status::OK;
  }

  ::grpc::Status ModelConfig(::grpc::ServerContext&, const inference::ModelConfigRequest& req,
                             inference::ModelConfigResponse* resp) {
    auto config = s_.core.ModelConfig(req.name(), req.version());
    if (!config) return ToGrpc(config.status());
    *resp->mutable_config() = *std::move(config);
    return ::grpc::Status::OK;
  }

  ::grpc::Status ModelStatistics(::grpc::ServerContext&, const inference::ModelStatisticsRequest& req,
                                 inference::ModelStatisticsResponse* resp) {
    auto stats = s_.core.Statistics(req.name(), req.version());
    if (!stats) return ToGrpc(stats.status());
    EncodeGrpcStatistics(*stats, *resp);
    return ::grpc::Status::OK;
  }

  ::grpc::Status RepositoryIndex(::grpc::ServerContext& ctx, const inference::RepositoryIndexRequest& req,
                                 inference::RepositoryIndexResponse* resp) {
    if (auto denied = Unauthorized(ctx, "RepositoryIndex")) return *denied;
    // A reason may name the files a load failed on: as over HTTP, no server
    // path reaches the client.
    const std::vector<std::string> roots = s_.core.ClientTextRoots();
    for (const auto& m : s_.core.RepositoryIndex(req.ready())) {
      auto* e = resp->add_models();
      e->set_name(m.name);
      e->set_version(m.version);
      e->set_state(std::string(ModelStateName(m.state)));
      e->set_reason(protocol::ClientText(m.reason, roots));
    }
    return ::grpc::Status::OK;
  }

  void Load(::grpc::ServerContext& ctx, const inference::RepositoryModelLoadRequest& req, CallDone done) {
    if (auto denied = Unauthorized(ctx, "RepositoryModelLoad")) return done(*denied);
    // Triton's load parameters: "config" as string_param, "file:<path>" as
    // bytes_param; unload_dependents is ignored (no ensembles).
    ModelLoadParameters parameters;
    constexpr std::string_view kFile = "file:";
    for (const auto& [key, value] : req.parameters()) {
      if (key == "unload_dependents") continue;
      if (key == "config") {
        if (value.parameter_choice_case() != inference::ModelRepositoryParameter::kStringParam) {
          return done(ToGrpc(InvalidArgument("load parameter 'config' must be a string_param holding the model "
                                             "configuration's JSON")));
        }
        parameters.config_json = value.string_param();
        continue;
      }
      if (key.compare(0, kFile.size(), kFile) == 0) {
        if (value.parameter_choice_case() != inference::ModelRepositoryParameter::kBytesParam) {
          return done(ToGrpc(InvalidArgument(fmt::format("load parameter '{}' must be a bytes_param holding the "
                                                         "file's bytes",
                                                         key))));
        }
        parameters.files[key.substr(kFile.size())] = value.bytes_param();
        continue;
      }
      return done(ToGrpc(Unimplemented(fmt::format("load parameter '{}' is not supported; a load takes 'config' and "
                                                   "'file:<version>/<name>'",
                                                   key))));
    }
    Control(req.model_name(), std::move(parameters), std::move(done));
  }

  void Unload(::grpc::ServerContext& ctx, const inference::RepositoryModelUnloadRequest& req, CallDone done) {
    if (auto denied = Unauthorized(ctx, "RepositoryModelUnload")) return done(*denied);
    Control(req.model_name(), std::nullopt, std::move(done));
  }

  ::grpc::Status SystemSharedMemoryStatus(::grpc::ServerContext&, const inference::SystemSharedMemoryStatusRequest& req,
                                          inference::SystemSharedMemoryStatusResponse* resp) {
    auto regions = s_.settings.system_shm.Regions(req.name());
    if (!regions) return ToGrpc(regions.status());
    for (const auto& r : *regions) {
      auto& e = (*resp->mutable_regions())[r.name];
      e.set_name(r.name);
      e.set_key(r.key);
      e.set_offset(r.offset);
      e.set_byte_size(r.byte_size);
    }
    return ::grpc::Status::OK;
  }

  ::grpc::Status SystemSharedMemoryRegister(::grpc::ServerContext& ctx,
                                            const inference::SystemSharedMemoryRegisterRequest& req,
                                            inference::SystemSharedMemoryRegisterResponse*) {
    if (auto denied = Unauthorized(ctx, "SystemSharedMemoryRegister")) return *denied;
    return ToGrpc(s_.settings.system_shm.Register(req.name(), req.key(), req.offset(), req.byte_size()));
  }

  ::grpc::Status SystemSharedMemoryUnregister(::grpc::ServerContext& ctx,
                                              const inference::SystemSharedMemoryUnregisterRequest& req,
                                              inference::SystemSharedMemoryUnregisterResponse*) {
    if (auto denied = Unauthorized(ctx, "SystemSharedMemoryUnregister")) return *denied;
    s_.settings.system_shm.Unregister(req.name());
    return ::grpc::Status::OK;
  }

  ::grpc::Status CudaSharedMemoryStatus(::grpc::ServerContext&, const inference::CudaSharedMemoryStatusRequest& req,
                                        inference::CudaSharedMemoryStatusResponse* resp) {
    auto regions = s_.settings.system_shm.Regions(req.name(), SharedMemoryKind::kCuda);
    if (!regions) return ToGrpc(regions.status());
    for (const auto& r : *regions) {
      auto& e = (*resp->mutable_regions())[r.name];
      e.set_name(r.name);
      e.set_device_id(static_cast<uint64_t>(r.device_id));
      e.set_byte_size(r.byte_size);
    }
    return ::grpc::Status::OK;
  }

  ::grpc::Status CudaSharedMemoryRegister(::grpc::ServerContext& ctx,
                                          const inference::CudaSharedMemoryRegisterRequest& req,
                                          inference::CudaSharedMemoryRegisterResponse*) {
    if (auto denied = Unauthorized(ctx, "CudaSharedMemoryRegister")) return *denied;
    if (req.device_id() < 0 || req.device_id() > std::numeric_limits<int>::max()) {
      return ToGrpc(InvalidArgument("device_id " + std::to_string(req.device_id()) + " is not a GPU"));
    }
    return ToGrpc(s_.settings.system_shm.RegisterCuda(req.name(), req.raw_handle(), static_cast<int>(req.device_id()),
                                                      req.byte_size()));
  }

  ::grpc::Status CudaSharedMemoryUnregister(::grpc::ServerContext& ctx,
                                            const inference::CudaSharedMemoryUnregisterRequest& req,
                                            inference::CudaSharedMemoryUnregisterResponse*) {
    if (auto denied = Unauthorized(ctx, "CudaSharedMemoryUnregister")) return *denied;
    s_.settings.system_shm.Unregister(req.name(), SharedMemoryKind::kCuda);
    return ::grpc::Status::OK;
  }

  ::grpc::Status TraceSetting(::grpc::ServerContext& ctx, const inference::TraceSettingRequest& req,
                              inference::TraceSettingResponse* resp) {
    if (auto denied = Unauthorized(ctx, "TraceSetting")) return *denied;
    if (!req.model_name().empty()) {
      auto md = s_.core.Metadata(req.model_name(), "");
      if (!md && md.status().code() == Code::kNotFound) return ToGrpc(md.status());
    }
    if (req.settings_size() > 0) {
      Status st = s_.settings.trace.Update(req.model_name(), TraceChangesFromGrpc(req));
      if (!st.ok()) return ToGrpc(st);
    }
    TraceSettingsToGrpc(s_.settings.trace.Get(req.model_name()), *resp);
    return ::grpc::Status::OK;
  }

  ::grpc::Status LogSettings(::grpc::ServerContext& ctx, const inference::LogSettingsRequest& req,
                             inference::LogSettingsResponse* resp) {
    if (auto denied = Unauthorized(ctx, "LogSettings")) return *denied;
    if (req.settings_size() > 0) {
      auto changes = LogChangesFromGrpc(req);
      if (!changes) return ToGrpc(changes.status());
      Status st = s_.settings.log.Update(*changes);
      if (!st.ok()) return ToGrpc(st);
    }
    LogSettingsToGrpc(s_.settings.log.Get(), *resp);
    return ::grpc::Status::OK;
  }

  // grpc.health.v1: SERVING while the server is ready (every model that
  // should be loaded is READY), for the whole server ("") and the inference
  // service; Check answers NOT_FOUND for another name, Watch SERVICE_UNKNOWN.
  HealthCheckResponse::ServingStatus Health(const std::string& service) const {
    if (!service.empty() && service != "inference.GRPCInferenceService") return HealthCheckResponse::SERVICE_UNKNOWN;
    return !s_.draining && s_.core.IsReady() ? HealthCheckResponse::SERVING : HealthCheckResponse::NOT_SERVING;
  }

  ::grpc::Status HealthCheck(::grpc::ServerContext&, const grpc::health::v1::HealthCheckRequest& req,
                             HealthCheckResponse* resp) {
    const auto status = Health(req.service());
    if (status == HealthCheckResponse::SERVICE_UNKNOWN) {
      return ToGrpc(NotFound(fmt::format("unknown service '{}'; ask for \"\" or \"inference.GRPCInferenceService\"",
                                         req.service())));
    }
    resp->set_status(status);
    return ::grpc::Status::OK;
  }

  // Load (with its parameters) or, for nullopt, unload; they may take
  // seconds: they run on the blocking pool, off the pollers.
  void Control(const std::string& model, std::optional<ModelLoadParameters> load, CallDone done) {
    if (model.empty()) {
      done(ToGrpc(InvalidArgument("model_name is empty; name the model to load or unload")));
      return;
    }
    boost::asio::post(s_.blocking, [this, model, load = std::move(load), done = std::move(done)] {
      Status st;
      try {
        st = load ? s_.core.LoadModel(model, *load) : s_.core.UnloadModel(model);
      } catch (...) {
        st = CaughtException(load ? "RepositoryModelLoad" : "RepositoryModelUnload");
      }
      done(ToGrpc(st));
    });
  }

  // nullopt when the call may go on; otherwise UNAUTHENTICATED
  // (GrpcOptions::auth_token).
  std::optional<::grpc::Status> Unauthorized(const ::grpc::ServerContext& ctx, std::string_view rpc) const {
    if (s_.options.auth_token.empty()) return std::nullopt;
    const auto& md = ctx.client_metadata();
    auto it = md.find("authorization");
    const std::string_view given =
        it == md.end() ? std::string_view() : std::string_view(it->second.data(), it->second.size());
    if (BearerTokenMatches(given, s_.options.auth_token)) return std::nullopt;
    return ::grpc::Status(::grpc::StatusCode::UNAUTHENTICATED,
                          fmt::format("{} needs the metadata 'authorization: Bearer <token>' with the token of the "
                                      "server's --auth-token-file{}",
                                      rpc, given.empty() ? "" : "; the token sent is wrong"));
  }

  State& s_;
};

}  // namespace

int DefaultGrpcPollers() { return static_cast<int>(std::clamp(std::thread::hardware_concurrency() / 4, 1u, 4u)); }

Expected<std::unique_ptr<GrpcServer>> GrpcServer::Start(ModelServer& server, RuntimeSettings& settings,
                                                        GrpcOptions options) {
  std::unique_ptr<GrpcServer> g(new GrpcServer());
  g->state_ = std::make_shared<State>(server, settings, std::move(options));
  State& s = *g->state_;

  const std::string host = s.options.host.find(':') != std::string::npos ? "[" + s.options.host + "]" : s.options.host;
  const std::string address = fmt::format("{}:{}", host, s.options.port);
  kserve::ConfigureGrpcRuntime();
  ::grpc::ServerBuilder builder;
  int selected_port = 0;
  builder.AddListeningPort(address, ::grpc::InsecureServerCredentials(), &selected_port);
  // gRPC sets SO_REUSEPORT by default, so a second server on a busy port
  // would start silently and get half the connections: refuse instead.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  builder.SetMaxReceiveMessageSize(static_cast<int>(std::min<size_t>(s.options.max_message_bytes, INT_MAX)));
  builder.RegisterService(&s.service);
  builder.RegisterService(&s.health);
  const int pollers = s.options.poller_threads > 0 ? s.options.poller_threads : DefaultGrpcPollers();
  s.queues = std::make_unique<GrpcCallQueues>(builder, pollers, s.options.busy_poll);
  s.server = builder.BuildAndStart();
  if (!s.server || selected_port == 0) {
    if (s.server) s.server->Shutdown();
    s.queues->Stop();
    s.stopped = true;
    return Unavailable(fmt::format("cannot listen for gRPC on {}: the port is in use or the address is not one of "
                                   "this machine's; choose another --grpc-port (0: any free port, -1: no gRPC)",
                                   address));
  }
  s.port = static_cast<uint16_t>(selected_port);
  s.rpcs = std::make_unique<Rpcs>(s);
  s.queues->Start(s.rpcs->Methods(*s.queues, s.service, s.health));
  return g;
}

GrpcServer::~GrpcServer() { Stop(); }

uint16_t GrpcServer::port() const { return state_->port; }

void GrpcServer::BeginDrain() { state_->draining = true; }

bool GrpcServer::WaitIdle(std::chrono::milliseconds timeout) {
  State& s = *state_;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  MutexLock lock(&s.mu);
  while (s.in_flight != 0) {
    if (!s.idle.WaitUntil(&s.mu, deadline)) return s.in_flight == 0;
  }
  return true;
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
    State& s = *state_;
    MutexLock lock(&s.mu);
    while (s.in_flight != 0) s.idle.Wait(&s.mu);
  }
  state_->queues->Stop();
  state_->workers.join();
  state_->blocking.join();
}

int GrpcServer::in_flight() const {
  MutexLock lock(&state_->mu);
  return state_->in_flight;
}

}  // namespace ortgpu::serve
