// The cap on how many bytes of outputs one inference may return
// (ServerOptions::max_output_bytes, --max-output-bytes): without it a
// request of 60 bytes can ask a model with value-dependent output shapes for
// 20 GB, which the server would then encode into a reply.
//
// Checked twice: before the run, from the completed config, when every
// output's dims are fixed (the rows of a batching model come from the
// request), so such a request is refused before it costs the GPU anything;
// and after the run, on the outputs themselves, before anything is encoded.
// Both answer InvalidArgument (400) naming the model, the bytes and the flag.
//
// Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <string>

#include "serve/inference.h"
#include "serve/repository/model_config.h"
#include "status/status.h"

namespace ortgpu::serve {

// OK when the outputs `request` asks for (all when it names none) cannot
// pass `limit` bytes, or when some of their sizes are only known after the
// run. `limit` 0: no cap. String outputs count from the run only.
Status CheckOutputSizeBeforeRun(const inference::ModelConfig& config, const InferRequest& request, uint64_t limit);

// OK when `response`'s outputs hold at most `limit` bytes (0: no cap).
Status CheckOutputSizeAfterRun(const InferResponse& response, uint64_t limit);

// `done`, with CheckOutputSizeAfterRun applied to a successful response
// first (an over-limit response is answered with the error and dropped).
// `limit` 0 returns `done` unchanged.
InferCallback WithOutputSizeLimit(InferCallback done, uint64_t limit);

}  // namespace ortgpu::serve
