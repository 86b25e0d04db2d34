// libFuzzer target over the KServe v2 request path: URL routing, the infer
// request decoder (JSON and the binary tensor extension) and, for requests
// that decode, the response encoder fed with the decoded tensors. The
// decoder must return a Status for every input: no crash, no sanitizer
// report, no unbounded allocation.
//
// Input layout: byte 0 bit 0 set -> bytes 1..2 (little-endian) are the
// Inference-Header-Content-Length, clamped to the body; the rest is the body.
// The body is also tried as a request target for MatchRoute.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "serve/protocol/infer_request_decoder.h"
#include "serve/protocol/infer_response_encoder.h"
#include "serve/protocol/route.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ortgpu::serve;
  if (size < 3) return 0;
  std::optional<size_t> json_length;
  if (data[0] & 1) json_length = static_cast<size_t>(data[1]) | static_cast<size_t>(data[2]) << 8;
  std::string_view body(reinterpret_cast<const char*>(data + 3), size - 3);
  if (json_length && *json_length > body.size()) json_length = body.size();

  auto route = protocol::MatchRoute(body.substr(0, 512));
  (void)route;

  auto request = protocol::DecodeInferRequest(body, json_length, "m", "");
  if (!request.ok()) return 0;
  InferResponse response;
  response.model_name = request->model_name;
  response.id = request->id;
  response.outputs = request->inputs;
  response.output_binary = protocol::ResolveOutputBinary(*request, response);
  auto encoded = protocol::EncodeInferResponse(response);
  if (!encoded.ok()) __builtin_trap();  // decoded tensors are always encodable
  return 0;
}
