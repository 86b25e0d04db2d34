// Warm-up inputs generated for a model whose config has no model_warmup:
// candidates a real model is likely to accept, tried in order until one
// runs, so that readiness still means "ran on its device" without asking
// every user for a model_warmup (docs/SERVING.md, Warm-up).
//
// A candidate gives every variable dim (the config's -1 dims, the batch dim
// excepted, which is 1) one size, in the order 1, 2, 16, 64: a reflect Pad
// needs an axis of at least 2, a stride-4 detector multiples of 4. Within a
// candidate, floats are deterministic values in [0, 1); integers are their
// name's hint (a sample rate: "sr", "sample_rate", "sampling_rate" ->
// 16000) or 1, never 0, so a branch on them takes its usual path and an
// index stays valid; booleans are true; strings are "1", non-empty and a
// number, so a Cast of strings parses. Inputs the user supplies (serve
// --warmup-input NAME=FILE.npy) are used as given in every candidate, and
// sizes the user gives (serve --warmup-shape, the --shape grammar of
// ort/random_inputs.h: an input's full shape or a symbolic dim's size) are
// kept in every candidate.
//
// Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "model_config.pb.h"
#include "ort/random_inputs.h"
#include "ort/session.h"
#include "ort/tensor.h"
#include "status/expected.h"

namespace ortgpu::serve {

// The sizes a candidate gives every variable dim, in the order tried.
inline constexpr int64_t kWarmupDimSizes[] = {1, 2, 16, 64};
// Candidates whose inputs together pass this many bytes are skipped.
inline constexpr int64_t kMaxGeneratedWarmupBytes = int64_t{256} << 20;

struct WarmupCandidate {
  std::vector<Tensor> inputs;  // batch dim 1 first when the config batches
  // "variable dims 16, sr=16000", for the log and the warning.
  std::string description;
};

// The value an integer input gets from its name (16000 for a sample rate),
// or 1.
int64_t IntegerHint(const std::string& input_name);

// What the user says about warm-up inputs.
struct WarmupHints {
  // Tensors by input name, as a request would send them (batch dim included
  // when the config batches).
  std::map<std::string, Tensor> inputs;
  // --warmup-shape flags that apply to this model (ShapeFlagsFor).
  ShapeFlags shapes;
  // The model's own inputs, for the names of its symbolic dims; may be
  // empty (then only input names in `shapes` apply).
  std::vector<TensorInfo> model_inputs;
};

// The candidates for a completed config, in the order to try.
// InvalidArgument when a given tensor's type or rank does not match the
// config's input, or a shape flag does not fit (naming --warmup-shape).
Expected<std::vector<WarmupCandidate>> GenerateWarmupCandidates(const inference::ModelConfig& config,
                                                                const WarmupHints& hints);

// What the candidates try, for messages: "variable dims 1, 2, 16 and 64,
// integer inputs 1 (16000 for a sample rate), strings \"1\"".
std::string DescribeWarmupCandidates();

}  // namespace ortgpu::serve
