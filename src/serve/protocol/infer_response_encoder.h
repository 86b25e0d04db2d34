// KServe v2 response encoding: an InferResponse (or an error Status) turned
// into the HTTP body the client reads, with the Triton binary tensor
// extension when binary outputs were asked for.
//
// Pure functions; safe to call from any thread.
//
// Decisions (tested in tests/serve/protocol/):
//   - Non-finite floats in JSON output are written as the bare tokens NaN,
//     Infinity and -Infinity (what Python's json module, rapidjson with
//     kParseNanAndInfFlag and tritonclient accept). Strict JSON parsers
//     reject them; clients that need exact floats ask for binary output.
//   - Floats are written in the shortest form that reads back to the same
//     value (std::to_chars); FP16/BF16 are widened to FP32 first. Negative
//     zero is written "-0.0" ("-0" reads back as the integer 0).
//   - BYTES elements are bytes, every one kept (NUL included). In JSON they
//     are strings, control characters escaped (\u0000). A BYTES output
//     holding an element that is not UTF-8 is sent in the binary section
//     (binary_data_size) even when JSON was asked for: a JSON string cannot
//     carry those bytes, and Triton's clients read either form (Triton
//     itself writes them raw, which is not JSON).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "serve/inference.h"
#include "status/expected.h"

namespace ortgpu::serve::protocol {

struct EncodedBody {
  // The JSON part, and binary sections that were copied into it.
  std::string body;
  // Binary sections that follow `body` on the wire, left in the output
  // tensors' own buffers so the connection writes them scatter-gather
  // (writev) instead of concatenating them: the outputs the scheduler
  // split from a batch borrow its buffer, and so do these. Empty for JSON
  // responses and for outputs that own their bytes, which are appended to
  // `body` as before.
  std::vector<TensorBytes> tail;
  // Set when the body has a binary section: the value of the
  // Inference-Header-Content-Length response header (length of the JSON part).
  std::optional<size_t> json_length;
  std::string content_type = "application/json";
};

// Which outputs of `response` go to the binary section (Triton's binary
// data extension as Triton implements it): an output the request names is
// binary when its own `binary_data` is true, whatever `binary_data_output`
// says; the request-level `binary_data_output` decides for the outputs it
// does not name (all of them when it names none). The flags the core set
// are not consulted.
std::vector<bool> ResolveOutputBinary(const InferRequest& request, const InferResponse& response);

// `body` followed by `tail`, as one string (for callers that need it whole).
std::string FlattenBody(const EncodedBody& encoded);

// Encodes `response`, with `response.output_binary` choosing binary outputs
// (missing entries mean JSON; a BYTES output that is not UTF-8 is binary).
// Internal if an output tensor's data does not match its shape or its
// datatype has no KServe name.
Expected<EncodedBody> EncodeInferResponse(const InferResponse& response);

// {"error": "<message>"}: the body of every failed request.
std::string EncodeError(const Status& status);

// Appends `s` as a JSON string literal (quotes included), replacing invalid
// UTF-8 with U+FFFD.
void AppendJsonString(std::string& out, std::string_view s);

}  // namespace ortgpu::serve::protocol
