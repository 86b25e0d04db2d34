// The KServe v2 endpoints as functions from a routed request to a reply,
// independent of sockets: HttpServer's connections call DispatchEndpoint
// and write whatever reply comes back. Endpoints and codes: docs/PROTOCOL.md.
//
// Thread-safety: DispatchEndpoint may be called from any thread; it calls
// the ModelServer, whose methods are thread-safe.
#pragma once

#include <atomic>
#include <cstring>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <boost/asio/thread_pool.hpp>

#include "serve/front_end_defaults.h"
#include "serve/model_server.h"
#include "serve/protocol/route.h"
#include "serve/runtime_settings.h"

namespace ortgpu::serve {

struct HttpReply {
  unsigned status = 200;
  std::string body;
  // Written after `body` from the tensors' own buffers (scatter-gather):
  // an infer response's borrowed binary outputs (EncodedBody::tail).
  std::vector<TensorBytes> body_tail;
  std::string content_type = "application/json";
  std::optional<size_t> inference_header_length;  // binary tensor extension
  std::string content_encoding;                    // Content-Encoding of `body`; "" when identity
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

// A request body as the connection read it: one buffer allocated from the
// Content-Length without being zero-filled (so its memory is committed only
// as the bytes arrive), shared with the binary tensors decoded from it.
// Copying a RequestBody shares the buffer.
class RequestBody {
 public:
  RequestBody() = default;
  // An uninitialised buffer of `size` bytes. Throws std::bad_alloc.
  static RequestBody Allocate(size_t size) {
    RequestBody b;
    b.bytes_ = std::make_shared_for_overwrite<char[]>(size);
    b.size_ = size;
    return b;
  }
  static RequestBody Copy(std::string_view bytes) {
    RequestBody b = Allocate(bytes.size());
    if (!bytes.empty()) std::memcpy(b.bytes_.get(), bytes.data(), bytes.size());
    return b;
  }
  char* data() { return bytes_.get(); }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  std::string_view view() const { return {bytes_.get(), size_}; }
  // What keeps the bytes alive, for tensors that borrow them.
  std::shared_ptr<const void> owner() const { return bytes_; }

 private:
  std::shared_ptr<char[]> bytes_;
  size_t size_ = 0;
};

struct EndpointRequest {
  protocol::Route route;
  RequestBody body;
  std::optional<std::string> inference_header_length;  // header value, if sent
  std::string content_encoding;                        // header value, "" if none
  std::string accept_encoding;                         // header value, "" if none
  // Infer only: the limit on the body once decompressed (--max-body-bytes).
  size_t max_body_bytes = kDefaultMaxBodyBytes;
  bool draining = false;                               // health/ready reports not ready
  // Infer only: when the HTTP layer stops waiting (steady clock, ns; 0: no
  // limit). The scheduler drops the request unrun once it has passed.
  int64_t deadline_ns = 0;
  // The logging and trace settings (HttpOptions::settings); null: 501.
  RuntimeSettings* settings = nullptr;
  // Infer only: InferRequest::cancelled, owned by the connection.
  std::shared_ptr<const std::atomic<bool>> cancelled;
};

// The error reply for `status`: {"error": message} (protocol::ClientText
// of it) with HttpStatusFor(status.code(), refusal).
HttpReply ErrorReply(const Status& status, HttpRefusal refusal = HttpRefusal::kNone);

// {"name":"ortgpu","version":...,"extensions":[...]}
std::string ServerMetadataJson();

// All-JSON infer bodies above this (once decompressed), and compressed
// bodies that inflate past it, are decoded on EndpointPools::decode.
inline constexpr size_t kDecodeElsewhereBytes = size_t{1} << 20;

// The pools an endpoint hands work to besides the calling thread; the
// front end owns them.
struct EndpointPools {
  boost::asio::thread_pool& blocking;  // model load and unload (seconds)
  boost::asio::thread_pool& decode;    // large infer bodies (DispatchEndpoint)
  size_t decode_elsewhere_bytes = kDecodeElsewhereBytes;
};

// Runs the endpoint: the one call a front end makes per request. An infer
// is decoded and validated on the calling thread, or on `pools.decode` when
// its body, once decompressed, is all JSON and over decode_elsewhere_bytes
// (tens of ms per MiB to parse, which would hold a network thread that
// health checks need); a compressed body is inflated on the calling thread
// only up to that size; model load/unload (which may take seconds) run
// on `pools.blocking`. `reply` is called exactly once, including when the
// endpoint throws (std::bad_alloc decoding or encoding an absurd request:
// 503; anything else: 500), so the calling thread never ends on a request.
void DispatchEndpoint(ModelServer& server, EndpointRequest request, EndpointPools pools, ReplyCallback reply);

}  // namespace ortgpu::serve
