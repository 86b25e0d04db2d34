// KServe v2 inference request decoding: the body of
// POST /v2/models/{m}[/versions/{v}]/infer, JSON with the optional Triton
// binary tensor extension, turned into an InferRequest.
//
// Pure functions with no shared state (a thread-local simdjson parser is
// reused for speed); safe to call from any thread.
//
// Wire format (docs/PROTOCOL.md has examples):
//   {"id": "...", "parameters": {...},
//    "inputs": [{"name", "shape", "datatype", "parameters": {"binary_data_size": N},
//                "data": [flat or nested array]}],
//    "outputs": [{"name", "parameters": {"binary_data": bool}}]}
// With the header Inference-Header-Content-Length: J, the first J bytes of
// the body are the JSON and the rest is the binary section; inputs carrying
// parameters.binary_data_size take that many bytes from it, in input order.
// BYTES elements in binary are a 4-byte little-endian length and the bytes.
//
// Decisions (tested in tests/serve/protocol/):
//   - Bare NaN / Infinity tokens are not JSON and are rejected as malformed,
//     as Triton does. Floating-point inputs (FP16, BF16, FP32, FP64) accept
//     the strings "NaN", "Infinity" and "-Infinity" instead, so every value
//     can be sent in JSON; binary data passes any bit pattern through.
//   - Integers must be JSON integers within the datatype's range (300 for
//     UINT8 is an error, 1.5 for INT32 is an error). Finite floats too large
//     for FP16/BF16/FP32 are an error instead of silently becoming Infinity.
//   - BOOL takes true/false only.
//   - BYTES elements are bytes: a JSON string's escapes (\u0000 included)
//     and the binary extension's length prefixes keep every one. JSON text
//     is UTF-8, so a body with other bytes in it is refused with a message
//     pointing to binary_data_size, which carries any bytes.
//   - Nested data arrays are flattened in row-major order; only the total
//     element count is checked against the shape.
//   - parameters.classification on an output is kept in its parameters;
//     the front end classifies the output (serve/classification.h).
//   - An input whose parameters name a shared_memory_region carries no data
//     here: its parameters go to InferRequest::shared_memory_inputs and the
//     front end reads the region (serve/shared_memory.h). An output's
//     shared memory parameters stay in its RequestedOutput::parameters.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "serve/inference.h"
#include "status/expected.h"

namespace ortgpu::serve::protocol {

// The HTTP header of the binary tensor extension (request and response).
inline constexpr std::string_view kInferenceHeaderContentLength = "Inference-Header-Content-Length";

// Parses the value of Inference-Header-Content-Length: a decimal byte count.
// InvalidArgument naming the value otherwise.
Expected<size_t> ParseInferenceHeaderLength(std::string_view value);

// Decodes `body`. `json_length` is the parsed Inference-Header-Content-Length
// (nullopt when the header is absent: the whole body is JSON). `model` and
// `version` come from the URL and are copied into the request.
// Every inconsistency is InvalidArgument with a message naming the input and
// the problem; unsupported features are Unimplemented.
// With `body_owner` (which must keep `body`'s bytes alive and unchanged)
// binary tensors borrow their bytes from the body instead of copying them:
// the bytes of a request are then moved once, from the socket into the body.
Expected<InferRequest> DecodeInferRequest(std::string_view body, std::optional<size_t> json_length,
                                          std::string model, std::string version,
                                          std::shared_ptr<const void> body_owner = nullptr);

}  // namespace ortgpu::serve::protocol
