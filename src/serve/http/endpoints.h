// The KServe v2 endpoints as functions from a routed request to a reply,
// independent of sockets: HttpServer's connections call DispatchEndpoint
// and write whatever reply comes back. Endpoints and codes: docs/PROTOCOL.md.
//
// Thread-safety: DispatchEndpoint may be called from any thread; it calls
// the ModelServer, whose methods are thread-safe.
#pragma once

#include <functional>
#include <optional>
#include <string>

#include <boost/asio/thread_pool.hpp>

#include "serve/model_server.h"
#include "serve/protocol/route.h"

namespace ortgpu::serve {

struct HttpReply {
  unsigned status = 200;
  std::string body;
  std::string content_type = "application/json";
  std::optional<size_t> inference_header_length;  // binary tensor extension
  std::string model;                               // for the access log; "" if none
  // When set, the reply is not final yet: the connection calls it on its
  // own strand and writes what it returns. An infer's response is encoded
  // this way, so the instance worker that completed the request only hands
  // the outputs over and goes back to the GPU.
  std::function<HttpReply()> finish;
};

// Called exactly once with the reply; possibly before DispatchEndpoint
// returns, possibly later from another thread.
using ReplyCallback = std::function<void(HttpReply)>;

struct EndpointRequest {
  protocol::Route route;
  std::string body;
  std::optional<std::string> inference_header_length;  // header value, if sent
  std::string content_encoding;                        // header value, "" if none
  bool draining = false;                               // health/ready reports not ready
  // Infer only: when the HTTP layer stops waiting (steady clock, ns; 0: no
  // limit). The scheduler drops the request unrun once it has passed.
  int64_t deadline_ns = 0;
};

// The error reply for `status`: {"error": message} with HttpStatusFor.
HttpReply ErrorReply(const Status& status);

// {"name":"ortgpu","version":...,"extensions":[...]}
std::string ServerMetadataJson();

// Runs the endpoint. Decoding and validation run on the calling thread;
// model load/unload (which may take seconds) run on `blocking`.
void DispatchEndpoint(ModelServer& server, EndpointRequest request, boost::asio::thread_pool& blocking,
                      ReplyCallback reply);

}  // namespace ortgpu::serve
