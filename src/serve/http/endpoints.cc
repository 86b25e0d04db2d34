#include "serve/http/endpoints.h"

#include <boost/asio/post.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "serve/protocol/client_text.h"
#include "serve/protocol/infer_request_decoder.h"
#include "serve/protocol/infer_response_encoder.h"

namespace ortgpu::serve {
namespace {

using protocol::Endpoint;

#ifndef ORTGPU_VERSION
#define ORTGPU_VERSION "0.0.0"
#endif

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

void Infer(ModelServer& server, EndpointRequest request, ReplyCallback reply) {
  const protocol::Route& route = request.route;
  if (!request.content_encoding.empty() && request.content_encoding != "identity") {
    reply(ErrorReply(Unimplemented(fmt::format(
        "Content-Encoding '{}' is not supported; send the request body uncompressed", request.content_encoding))));
    return;
  }
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
  auto decoded = protocol::DecodeInferRequest(request.body.view(), json_length, route.model, route.version,
                                              request.body.owner());
  request.body = {};
  if (decoded) {
    decoded->deadline_ns = request.deadline_ns;
    decoded->cancelled = std::move(request.cancelled);
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
  server.Infer(std::move(decoded).value(), [&server, reply = std::move(reply), req = std::move(shape_of_request),
                                             model](Expected<InferResponse> result) {
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
                                    model]() {
                   response->output_binary = protocol::ResolveOutputBinary(req, *response);
                   auto encoded = protocol::EncodeInferResponse(*response);
                   HttpReply r;
                   if (!encoded) {
                     r = ErrorReply(encoded.status());
                   } else {
                     r.body = std::move(encoded->body);
                     r.body_tail = std::move(encoded->tail);
                     r.content_type = std::move(encoded->content_type);
                     r.inference_header_length = encoded->json_length;
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
  nlohmann::json j = {{"name", "ortgpu"},
                      {"version", ORTGPU_VERSION},
                      {"extensions",
                       {"binary_tensor_data", "statistics", "model_repository", "model_configuration",
                        "schedule_policy"}}};
  return j.dump();
}

void DispatchEndpoint(ModelServer& server, EndpointRequest request, boost::asio::thread_pool& blocking,
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
      reply(config ? JsonReply(*config) : ServerErrorReply(server, config.status()));
      return;
    }
    case Endpoint::kModelStats:
    case Endpoint::kAllModelStats: {
      auto stats = server.Statistics(route.model, route.version);
      reply(stats ? JsonReply(*stats) : ServerErrorReply(server, stats.status()));
      return;
    }
    case Endpoint::kRepositoryIndex: reply(RepositoryIndex(server, request.body.view())); return;
    case Endpoint::kRepositoryLoad:
    case Endpoint::kRepositoryUnload: {
      boost::asio::post(blocking, [&server, route, reply = std::move(reply)] {
        Status st = route.endpoint == Endpoint::kRepositoryLoad ? server.LoadModel(route.model)
                                                                : server.UnloadModel(route.model);
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
  }
  reply(ErrorReply(Internal("unhandled endpoint")));
}

}  // namespace ortgpu::serve
