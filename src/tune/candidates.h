// The candidate space of `ortgpu tune` (issue 28, docs/TUNE.md): the engine
// choices measured in-process (precision, NHWC, CUDA graphs, cuDNN search,
// batch sizes) and the served candidates built on them (instances, preferred
// batch size or padding, queue delay, workers), with the validity rules known
// before anything runs. Each rule that removes a choice says why (Rejected).
// Pure functions over values; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "bench/precisions.h"
#include "status/expected.h"

namespace ortgpu::tune {

// The precision serve's `precision` model parameter names. tf32 is what ORT's
// CUDA EP does by default, so it is the default here.
// The precisions bench measures (bench/precisions.h): one enum and one
// spelling for bench, tune and serve's `precision` parameter.
using bench::ParsePrecision;
using bench::Precision;
using bench::PrecisionName;

// The CUDA EP's cudnn_conv_algo_search; EXHAUSTIVE is ORT's default.
enum class ConvAlgoSearch { kExhaustive, kHeuristic };
std::string_view ConvAlgoSearchName(ConvAlgoSearch s);

// What changes the engine: measured in-process, latency against batch size.
// Defaults are ORT's (and serve's) own.
struct EngineChoice {
  Precision precision = Precision::kTf32;
  bool prefer_nhwc = false;
  bool cuda_graphs = false;
  ConvAlgoSearch conv_search = ConvAlgoSearch::kExhaustive;

  // "tf32 nhwc=0 graphs=0 conv=EXHAUSTIVE": stable, the history's key.
  std::string Key() const;
  bool operator==(const EngineChoice&) const = default;
};

// A configuration to serve: one engine choice plus what the server adds.
struct ServedCandidate {
  EngineChoice engine;
  int instances = 1;                      // instance_group count
  int64_t batch = 1;                      // the preferred batch size
  bool pad_to_preferred = false;          // pad batches to `batch` (serve's pad_to_preferred_batch_size)
  int64_t max_queue_delay_us = 0;         // dynamic_batching.max_queue_delay_microseconds
  int workers_per_instance = kDefaultWorkers;

  // serve's default: two workers per GPU instance of a batching model.
  static constexpr int kDefaultWorkers = 2;

  // Engine key plus "inst=2 batch=32 pad=1 delay=100us workers=2".
  std::string Key() const;
  bool operator==(const ServedCandidate&) const = default;
};

// What is known of the model and the machine before measuring.
struct ModelTraits {
  // 0: the model does not batch (every candidate runs batch 1).
  int64_t max_batch_size = 0;
  // An input or output dim other than the batch is variable (a sequence
  // length): CUDA graphs need every shape fixed.
  bool variable_non_batch_dim = false;
  // Every input and output can be bound to device buffers of fixed address
  // (CUDA graphs replay on the addresses they captured).
  bool io_bindable = true;
  // Precisions within the accuracy budget (tf32 and fp32 always are; the
  // converted ones only once judged against it).
  std::vector<Precision> precisions_within_budget = {Precision::kTf32, Precision::kFp32};
  // GPU memory the candidates may use, and the estimate of what they need:
  // weights per instance plus activations per batch row per worker
  // (converted precisions halve both). Unset limit: no memory rule.
  std::optional<int64_t> gpu_memory_limit_bytes;
  int64_t weight_bytes = 0;
  int64_t activation_bytes_per_row = 0;
};

// The axes searched, each with its values in the order tried.
struct SpaceOptions {
  std::vector<Precision> precisions = {Precision::kTf32, Precision::kFp32, Precision::kFp16, Precision::kMixed};
  std::vector<bool> prefer_nhwc = {false, true};
  std::vector<bool> cuda_graphs = {false, true};
  std::vector<ConvAlgoSearch> conv_searches = {ConvAlgoSearch::kExhaustive, ConvAlgoSearch::kHeuristic};
  std::vector<int64_t> batches = {1, 2, 4, 8, 16, 32, 64, 128};
  std::vector<int> instances = {1, 2, 4};
  std::vector<bool> padding = {false, true};
  std::vector<int64_t> queue_delays_us = {0, 100, 500, 2000};
  std::vector<int> workers = {1, 2};
};

// A choice left out, and why ("CUDA graphs need fixed shapes; input dim 1
// is variable").
struct Rejected {
  std::string candidate;
  std::string reason;
};

struct EngineSpace {
  std::vector<EngineChoice> choices;  // valid engine choices, defaults first
  std::vector<int64_t> batches;       // valid batch sizes, ascending
  std::vector<Rejected> rejected;
};

// The engine choices and batch sizes worth measuring in-process. Rules:
// a precision outside the accuracy budget is not a candidate; CUDA graphs need
// fixed shapes (no variable non-batch dim) and bound I/O; a batch above
// max_batch_size (1 for a model that does not batch) or whose memory estimate
// exceeds the limit with one instance is not.
EngineSpace BuildEngineSpace(const ModelTraits& traits, const SpaceOptions& options);

// The served candidates for `engines` at `batches`, with the served rules:
// CUDA graphs are served only on padded batches (serve captures one graph per
// padded size and worker), padding and queue delays need a batching model,
// and instances x workers x batch must fit the memory limit. Rejections are
// appended to `rejected` (nullable).
std::vector<ServedCandidate> BuildServedCandidates(const std::vector<EngineChoice>& engines,
                                                   const std::vector<int64_t>& batches, const ModelTraits& traits,
                                                   const SpaceOptions& options, std::vector<Rejected>* rejected);

// The memory estimate the rules use for `c` (bytes).
int64_t EstimatedMemoryBytes(const ServedCandidate& c, const ModelTraits& traits);

// "Simpler", in this explicit order, the first difference deciding:
//   1. fewer instances;
//   2. no CUDA graphs;
//   3. fewer knobs away from their defaults (precision tf32, NHWC off,
//      EXHAUSTIVE, no padding, no queue delay, serve's workers);
//   4. a shorter queue delay;
//   5. a smaller batch.
// Ties (equal on all five) are not simpler either way.
bool SimplerThan(const ServedCandidate& a, const ServedCandidate& b);
int KnobsAwayFromDefaults(const ServedCandidate& c);

}  // namespace ortgpu::tune
