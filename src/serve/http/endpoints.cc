#include "serve/http/endpoints.h"

#include <algorithm>
#include <atomic>
#include <new>

#include <boost/asio/post.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "serve/config_json.h"
#include "serve/protocol/base64.h"
#include "serve/protocol/client_text.h"
#include "serve/protocol/infer_request_decoder.h"
#include "serve/protocol/infer_response_encoder.h"
#include "serve/infer_extensions.h"
#include "serve/http/content_encoding.h"
#include "serve/http/raw_binary_request.h"
#include "serve/http/settings_json.h"
#include "serve/protocol/server_metadata.h"
#include "serve/protocol/statistics_json.h"

namespace ortgpu::serve {
namespace {

using protocol::Endpoint;

// The error reply with the message as clients may see it (paths relative
// to the server's repository, protocol/client_text.h).
HttpReply ServerErrorReply(const ModelServer& server, const Status& status) {
  return ErrorReply(Status(status.code(), protocol::ClientText(status.message(), server.ClientTextRoots())));
}

HttpReply JsonReply(const nlohmann::json& j) {
  HttpReply r;
  r.body = j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  return r;
}

// 200 with an empty body for true; `if_false` otherwise.
HttpReply BoolReply(bool value, const Status& if_false) {
  if (!value) return ErrorReply(if_false);
  HttpReply r;
  r.content_type.clear();
  return r;
}

std::string VersionText(const std::string& version) {
  return version.empty() ? "(latest)" : version;
}

nlohmann::json TensorsJson(const std::vector<TensorMetadata>& tensors) {
  nlohmann::json arr = nlohmann::json::array();
  for (const auto& t : tensors) arr.push_back({{"name", t.name}, {"datatype", t.datatype}, {"shape", t.shape}});
  return arr;
}

HttpReply Metadata(ModelServer& server, const protocol::Route& route) {
  auto md = server.Metadata(route.model, route.version);
  if (!md) return ServerErrorReply(server, md.status());
  return JsonReply({{"name", md->name},
                    {"versions", md->versions},
                    {"platform", md->platform},
                    {"inputs", TensorsJson(md->inputs)},
                    {"outputs", TensorsJson(md->outputs)}});
}

HttpReply RepositoryIndex(ModelServer& server, std::string_view body) {
  bool ready_only = false;
  if (!body.empty()) {
    auto j = nlohmann::json::parse(body.begin(), body.end(), nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded() || !j.is_object()) {
      return ErrorReply(InvalidArgument("repository index body must be a JSON object such as {\"ready\": true}"));
    }
    if (j.contains("ready")) {
      if (!j["ready"].is_boolean()) return ErrorReply(InvalidArgument("repository index 'ready' must be a boolean"));
      ready_only = j["ready"].get<bool>();
    }
  }
  nlohmann::json arr = nlohmann::json::array();
  const std::vector<std::string> roots = server.ClientTextRoots();
  for (const ModelVersionStatus& s : server.RepositoryIndex(ready_only)) {
    nlohmann::json e = {{"name", s.name}, {"version", s.version}, {"state", ModelStateName(s.state)}};
    e["reason"] = protocol::ClientText(s.reason, roots);
    arr.push_back(std::move(e));
  }
  return JsonReply(arr);
}

// GET (no body) reads the settings; POST applies its body first.
HttpReply Logging(const EndpointRequest& request) {
  if (request.settings == nullptr) return ErrorReply(Unimplemented("this server has no logging settings"));
  auto changes = LogChangesFromJson(request.body.view());
  if (!changes) return ErrorReply(changes.status());
  if (!changes->empty()) {
    Status st = request.settings->log.Update(*changes);
    if (!st.ok()) return ErrorReply(st);
  }
  return JsonReply(LogSettingsToJson(request.settings->log.Get()));
}

HttpReply TraceSetting(ModelServer& server, const EndpointRequest& request) {
  if (request.settings == nullptr) return ErrorReply(Unimplemented("this server has no trace settings"));
  const std::string& model = request.route.model;
  if (!model.empty()) {
    auto md = server.Metadata(model, request.route.version);
    if (!md && md.status().code() == Code::kNotFound) return ErrorReply(md.status());
  }
  auto changes = TraceChangesFromJson(request.body.view());
  if (!changes) return ErrorReply(changes.status());
  if (!changes->empty()) {
    Status st = request.settings->trace.Update(model, *changes);
    if (!st.ok()) return ErrorReply(st);
  }
  return JsonReply(TraceSettingsToJson(request.settings->trace.Get(model)));
}

// A load or unload body may carry Triton's parameters ({"parameters":
// {"config": "<JSON>", "file:1/model.onnx": "<base64>"}}). A load applies
// config and file: (the core checks what they say); both ignore
// unload_dependents (no ensembles: nothing depends on a model). Any other
// parameter is refused naming it, not silently ignored.
Expected<ModelLoadParameters> DecodeLoadParameters(std::string_view body, bool load) {
  ModelLoadParameters out;
  if (body.empty()) return out;
  auto j = nlohmann::json::parse(body.begin(), body.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    return InvalidArgument("the load/unload body must be a JSON object such as {\"parameters\": {}}");
  }
  if (!j.contains("parameters")) return out;
  if (!j["parameters"].is_object()) return InvalidArgument("the load/unload 'parameters' must be an object");
  constexpr std::string_view kFile = "file:";
  for (const auto& [key, value] : j["parameters"].items()) {
    if (key == "unload_dependents") continue;
    if (load && key == "config") {
      if (!value.is_string()) {
        return InvalidArgument(fmt::format("load parameter 'config' is a JSON {}; send the model configuration as a "
                                           "string holding its JSON, as Triton's clients do",
                                           value.type_name()));
      }
      out.config_json = value.get<std::string>();
      continue;
    }
    if (load && key.compare(0, kFile.size(), kFile) == 0) {
      if (!value.is_string()) {
        return InvalidArgument(fmt::format("load parameter '{}' is a JSON {}; send the file's bytes as a base64 string",
                                           key, value.type_name()));
      }
      auto bytes = protocol::DecodeBase64(value.get_ref<const std::string&>());
      if (!bytes) return bytes.status().WithContext(fmt::format("load parameter '{}' is not base64", key));
      out.files[key.substr(kFile.size())] = std::move(bytes).value();
      continue;
    }
    return Unimplemented(fmt::format("{} parameter '{}' is not supported; {}", load ? "load" : "unload", key,
                                     load ? "a load takes 'config' and 'file:<version>/<name>'"
                                          : "an unload takes none (unload_dependents is ignored)"));
  }
  return out;
}

HttpReply SharedMemory(const EndpointRequest& request) {
  using protocol::Endpoint;
  const Endpoint e = request.route.endpoint;
  if (request.settings == nullptr) return ErrorReply(Unimplemented("this server has no shared memory"));
  SharedMemoryRegistry& shm = request.settings->system_shm;
  const bool cuda = e == Endpoint::kCudaShmStatus || e == Endpoint::kCudaShmRegister || e == Endpoint::kCudaShmUnregister;
  const SharedMemoryKind kind = cuda ? SharedMemoryKind::kCuda : SharedMemoryKind::kSystem;
  if (e == Endpoint::kSystemShmUnregister || e == Endpoint::kCudaShmUnregister) {
    shm.Unregister(request.route.region, kind);
    return JsonReply(nlohmann::json::object());
  }
  const std::string_view body = request.body.view();
  if (e == Endpoint::kSystemShmRegister) {
    auto j = nlohmann::json::parse(body.begin(), body.end(), nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded() || !j.is_object() || !j.contains("key") || !j["key"].is_string() ||
        !j.contains("byte_size") || !j["byte_size"].is_number_unsigned() ||
        (j.contains("offset") && !j["offset"].is_number_unsigned())) {
      return ErrorReply(InvalidArgument("the register body must be a JSON object such as "
                                        R"({"key": "/shm-name", "offset": 0, "byte_size": 1024})"));
    }
    Status st = shm.Register(request.route.region, j["key"].get<std::string>(), j.value("offset", uint64_t{0}),
                             j["byte_size"].get<uint64_t>());
    return st.ok() ? JsonReply(nlohmann::json::object()) : ErrorReply(st);
  }
  if (e == Endpoint::kCudaShmRegister) {
    auto j = nlohmann::json::parse(body.begin(), body.end(), nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded() || !j.is_object() || !j.contains("raw_handle") || !j["raw_handle"].is_object() ||
        !j["raw_handle"].contains("b64") || !j["raw_handle"]["b64"].is_string() || !j.contains("byte_size") ||
        !j["byte_size"].is_number_unsigned() || (j.contains("device_id") && !j["device_id"].is_number_unsigned())) {
      return ErrorReply(InvalidArgument("the register body must be a JSON object such as "
                                        R"({"raw_handle": {"b64": "<base64 of the cudaIpcMemHandle_t>"}, )"
                                        R"("device_id": 0, "byte_size": 1024})"));
    }
    auto handle = protocol::DecodeBase64(j["raw_handle"]["b64"].get<std::string>());
    if (!handle) return ErrorReply(handle.status().WithContext("raw_handle.b64"));
    Status st = shm.RegisterCuda(request.route.region, *handle, j.value("device_id", 0),
                                 j["byte_size"].get<uint64_t>());
    return st.ok() ? JsonReply(nlohmann::json::object()) : ErrorReply(st);
  }
  auto regions = shm.Regions(request.route.region, kind);
  if (!regions) return ErrorReply(regions.status());
  nlohmann::json arr = nlohmann::json::array();
  for (const auto& r : *regions) {
    if (cuda) {
      arr.push_back({{"name", r.name}, {"device_id", r.device_id}, {"byte_size", r.byte_size}});
    } else {
      arr.push_back({{"name", r.name}, {"key", r.key}, {"offset", r.offset}, {"byte_size", r.byte_size}});
    }
  }
  return JsonReply(arr);
}

void Infer(ModelServer& server, EndpointRequest request, ReplyCallback reply) {
  const protocol::Route& route = request.route;
  auto coding = ParseContentEncoding(request.content_encoding);
  if (!coding) {
    reply(ErrorReply(coding.status()));
    return;
  }
  if (*coding != ContentCoding::kIdentity) {
    // The limit is on what the body decompresses to, not on what was sent.
    auto plain = Decompress(request.body.view(), *coding, request.max_body_bytes);
    if (!plain) {
      HttpReply r = ErrorReply(plain.status());
      if (plain.status().code() == Code::kResourceExhausted) r.status = 413;
      reply(std::move(r));
      return;
    }
    request.body = RequestBody::Copy(*plain);
  }
  const std::optional<ContentCoding> answer_coding = ChooseResponseCoding(request.accept_encoding);
  std::optional<size_t> json_length;
  if (request.inference_header_length) {
    auto n = protocol::ParseInferenceHeaderLength(*request.inference_header_length);
    if (!n) {
      reply(ErrorReply(n.status()));
      return;
    }
    json_length = *n;
  }
  // The request's binary tensors borrow the body (no copy); it is freed
  // when the last of them is.
  auto decoded = json_length == 0u ? RawBinaryRequest(server, route, request.body)
                                   : protocol::DecodeInferRequest(request.body.view(), json_length, route.model,
                                                                  route.version, request.body.owner());
  request.body = {};
  if (decoded) {
    decoded->deadline_ns = request.deadline_ns;
    decoded->cancelled = std::move(request.cancelled);
  }
  SharedMemoryRegistry* shm = request.settings != nullptr ? &request.settings->system_shm : nullptr;
  if (decoded) {
    if (Status st = PrepareExtensions(*decoded, shm); !st.ok()) decoded = st;
  }
  if (!decoded) {
    HttpReply r = ErrorReply(decoded.status());
    r.model = route.model;
    reply(std::move(r));
    return;
  }
  // What ResolveOutputBinary needs once the response is back, without the
  // inputs (which move to the core).
  InferRequest shape_of_request;
  shape_of_request.outputs = decoded->outputs;
  shape_of_request.binary_data_output = decoded->binary_data_output;
  std::string model = route.model;
  server.Infer(std::move(decoded).value(),
               [&server, reply = std::move(reply), req = std::move(shape_of_request), model, shm,
                answer_coding](Expected<InferResponse> result) {
                 if (!result) {
                   HttpReply r = ServerErrorReply(server, result.status());
                   r.model = model;
                   reply(std::move(r));
                   return;
                 }
                 // Encoded later, on the connection's strand (HttpReply::finish).
                 HttpReply deferred;
                 deferred.model = model;
                 deferred.finish = [response = std::make_shared<InferResponse>(std::move(result).value()), req,
                                    model, shm, answer_coding, &server]() {
                   Status written = FinishExtensions(server, req.outputs, *response, shm);
                   response->output_binary = protocol::ResolveOutputBinary(req, *response);
                   auto encoded = written.ok() ? protocol::EncodeInferResponse(*response)
                                               : Expected<protocol::EncodedBody>(written);
                   HttpReply r;
                   if (!encoded) {
                     r = ErrorReply(encoded.status());
                   } else {
                     r.content_type = std::move(encoded->content_type);
                     r.inference_header_length = encoded->json_length;  // of the JSON before compression
                     auto packed = answer_coding ? Compress(protocol::FlattenBody(*encoded), *answer_coding)
                                                 : Expected<std::string>(Unimplemented("no coding asked for"));
                     if (packed) {
                       // The whole body, its borrowed binary sections included, compressed.
                       r.body = std::move(packed).value();
                       r.content_encoding = std::string(ContentCodingName(*answer_coding));
                     } else {
                       r.body = std::move(encoded->body);
                       r.body_tail = std::move(encoded->tail);
                     }
                   }
                   r.model = model;
                   return r;
                 };
                 reply(std::move(deferred));
               });
}

}  // namespace

HttpReply ErrorReply(const Status& status, HttpRefusal refusal) {
  HttpReply r;
  r.status = static_cast<unsigned>(HttpStatusFor(status.code(), refusal));
  r.body = protocol::EncodeError(Status(status.code(), protocol::ClientText(status.message())));
  return r;
}

std::string ServerMetadataJson() {
  nlohmann::json j = {{"name", protocol::kServerName},
                      {"version", protocol::ServerVersion()},
                      {"extensions", protocol::ServerExtensions()}};
  return j.dump();
}

namespace {

// Where an infer request's body is decoded: on the network thread that read
// it, or on the decode pool (large all-JSON bodies take tens of ms per MiB
// to parse, which would hold a network thread that health checks need).
enum class DecodeSite { kNetworkThread, kDecodePool };

// Chooses where `request` (an infer) is decoded, from the size of the body
// the decoder will parse, that is after decompression: an all-JSON body
// over `inline_bytes` goes to the pool. A compressed body is inflated here
// up to `inline_bytes` (the request then carries the plain body and no
// Content-Encoding); one that inflates past that goes to the pool as it
// came, and is inflated there up to max_body_bytes, so no body inflates
// past `inline_bytes` on the calling thread.
DecodeSite ChooseDecodeSite(EndpointRequest& request, size_t inline_bytes) {
  auto coding = ParseContentEncoding(request.content_encoding);
  if (coding && *coding != ContentCoding::kIdentity) {
    auto plain = Decompress(request.body.view(), *coding, std::min(inline_bytes, request.max_body_bytes));
    if (!plain) {
      // Too large to inflate here: on the pool, up to --max-body-bytes.
      // Not valid compressed data: Infer answers why, having stopped where
      // it stops here.
      return plain.status().code() == Code::kResourceExhausted ? DecodeSite::kDecodePool
                                                               : DecodeSite::kNetworkThread;
    }
    request.body = RequestBody::Copy(*plain);
    request.content_encoding.clear();
  }
  const bool all_json = !request.inference_header_length;
  return all_json && request.body.size() > inline_bytes ? DecodeSite::kDecodePool : DecodeSite::kNetworkThread;
}

void RunEndpoint(ModelServer& server, EndpointRequest request, boost::asio::thread_pool& blocking,
                 ReplyCallback reply) {
  const protocol::Route& route = request.route;
  switch (route.endpoint) {
    case Endpoint::kHealthLive:
      reply(BoolReply(server.IsLive(), Unavailable("server is not live")));
      return;
    case Endpoint::kHealthReady:
      reply(BoolReply(!request.draining && server.IsReady(),
                      Unavailable(request.draining ? "server is shutting down"
                                                   : "server is not ready: some models are not loaded yet")));
      return;
    case Endpoint::kServerMetadata: {
      HttpReply r;
      r.body = ServerMetadataJson();
      reply(std::move(r));
      return;
    }
    case Endpoint::kModelMetadata: reply(Metadata(server, route)); return;
    case Endpoint::kModelReady: {
      auto ready = server.IsModelReady(route.model, route.version);
      if (!ready) {
        reply(ServerErrorReply(server, ready.status()));
        return;
      }
      reply(BoolReply(*ready, FailedPrecondition(fmt::format("model '{}' version {} is not ready", route.model,
                                                             VersionText(route.version)))));
      return;
    }
    case Endpoint::kModelConfig: {
      auto config = server.ModelConfig(route.model, route.version);
      reply(config ? JsonReply(TritonConfigJson(*config)) : ServerErrorReply(server, config.status()));
      return;
    }
    case Endpoint::kModelStats:
    case Endpoint::kAllModelStats: {
      auto stats = server.Statistics(route.model, route.version);
      reply(stats ? JsonReply(protocol::StatisticsToJson(*stats)) : ServerErrorReply(server, stats.status()));
      return;
    }
    case Endpoint::kRepositoryIndex: reply(RepositoryIndex(server, request.body.view())); return;
    case Endpoint::kRepositoryLoad:
    case Endpoint::kRepositoryUnload: {
      const bool load = route.endpoint == Endpoint::kRepositoryLoad;
      auto parameters = DecodeLoadParameters(request.body.view(), load);
      if (!parameters) {
        reply(ErrorReply(parameters.status()));
        return;
      }
      boost::asio::post(blocking, [&server, route, load, parameters = std::move(parameters).value(),
                                   reply = std::move(reply)] {
        Status st = load ? server.LoadModel(route.model, parameters) : server.UnloadModel(route.model);
        if (!st.ok()) {
          reply(ServerErrorReply(server, st));
          return;
        }
        HttpReply r;
        r.content_type.clear();
        r.model = route.model;
        reply(std::move(r));
      });
      return;
    }
    case Endpoint::kInfer: Infer(server, std::move(request), std::move(reply)); return;
    case Endpoint::kLogging: reply(Logging(request)); return;
    case Endpoint::kTraceSetting: reply(TraceSetting(server, request)); return;
    case Endpoint::kSystemShmStatus:
    case Endpoint::kSystemShmRegister:
    case Endpoint::kSystemShmUnregister:
    case Endpoint::kCudaShmStatus:
    case Endpoint::kCudaShmRegister:
    case Endpoint::kCudaShmUnregister: reply(SharedMemory(request)); return;
  }
  reply(ErrorReply(Internal("unhandled endpoint")));
}

// RunEndpoint, with what it may throw answered instead of ending the thread.
void RunGuarded(ModelServer& server, EndpointRequest request, boost::asio::thread_pool& blocking,
                ReplyCallback reply) {
  // The callback is kept aside: one that RunEndpoint consumed before it
  // threw has not been called, and the request still needs its answer.
  struct Pending {
    ReplyCallback reply;
    std::atomic<bool> answered{false};
  };
  auto pending = std::make_shared<Pending>();
  pending->reply = std::move(reply);
  auto once = [pending](HttpReply r) {
    if (!pending->answered.exchange(true)) pending->reply(std::move(r));
  };
  try {
    RunEndpoint(server, std::move(request), blocking, once);
  } catch (const std::bad_alloc&) {
    once(ErrorReply(ResourceExhausted("the server ran out of memory handling this request; send a smaller one")));
  } catch (const std::exception& e) {
    once(ErrorReply(Internal(fmt::format("unexpected error handling the request: {}", e.what()))));
  }
}

}  // namespace

void DispatchEndpoint(ModelServer& server, EndpointRequest request, EndpointPools pools, ReplyCallback reply) {
  if (request.route.endpoint == Endpoint::kInfer &&
      ChooseDecodeSite(request, pools.decode_elsewhere_bytes) == DecodeSite::kDecodePool) {
    // A large all-JSON body takes tens of ms per MiB to decode (and a large
    // compressed one as long to inflate): on the decode pool, so that the
    // network threads keep answering health checks and small requests.
    boost::asio::post(pools.decode, [&server, &blocking = pools.blocking, request = std::move(request),
                                     reply = std::move(reply)]() mutable {
      RunGuarded(server, std::move(request), blocking, std::move(reply));
    });
    return;
  }
  RunGuarded(server, std::move(request), pools.blocking, std::move(reply));
}

}  // namespace ortgpu::serve
