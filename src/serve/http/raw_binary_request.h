// Triton's raw binary request: with Inference-Header-Content-Length: 0 the
// whole body is the model's one input and there is no JSON header. The
// server works out the rest, as Triton does:
//   - the datatype is the input's;
//   - the shape is the input's with the batch dim (when the model batches)
//     1 and its one variable dim taking what the body's size leaves; with no
//     variable dim the batch dim takes it (rows of a fixed shape: ortgpu
//     accepts this, Triton answers 400); with more than one variable dim
//     the shape cannot be known and the request is a 400 naming the input
//     (never a guess);
//   - a BYTES input must have shape [1]: the body is its one element;
//   - every output comes back binary (the response has
//     Inference-Header-Content-Length), since the client sent no JSON that
//     could ask for anything else.
// docs/PROTOCOL.md ("Raw binary requests"). Pure functions over the
// ModelServer's metadata; any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "serve/http/endpoints.h"
#include "serve/inference.h"
#include "serve/model_server.h"
#include "serve/protocol/route.h"
#include "status/expected.h"

namespace ortgpu::serve {

// The shape a raw body of `body_bytes` bytes gives `input` (its metadata:
// the batch dim first when `batched`). InvalidArgument naming the input
// when the shape cannot be known or the body does not fit it.
Expected<std::vector<int64_t>> RawInputShape(const TensorMetadata& input, bool batched, size_t body_bytes);

// The InferRequest of a raw binary body sent to `route`'s model: its one
// input borrows `body` (no copy), and binary_data_output is set.
// NotFound for an unknown model; InvalidArgument when the model has more
// than one input or RawInputShape refuses the body.
Expected<InferRequest> RawBinaryRequest(const ModelServer& server, const protocol::Route& route,
                                        const RequestBody& body);

}  // namespace ortgpu::serve
