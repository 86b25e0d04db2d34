// Request checks against a model's completed configuration, run on the
// caller's thread before a request is queued, so a bad request gets an
// InvalidArgument naming the problem instead of failing a whole batch.
// Pure function; thread-safe.
#pragma once

#include "model_config.pb.h"
#include "serve/inference.h"
#include "status/status.h"

namespace ortgpu::serve {

// Names, datatypes, shapes (dims exclude the batch dimension when
// max_batch_size > 0; batch in 1..max_batch_size and equal across inputs),
// byte sizes, missing, extra and duplicate inputs, unknown requested outputs.
Status ValidateRequest(const inference::ModelConfig& config, const InferRequest& request);

}  // namespace ortgpu::serve
