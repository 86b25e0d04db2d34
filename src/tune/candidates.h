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
  // The CUDA EP's fuse_conv_bias: cuDNN frontend's Conv+Bias(+Relu) fusion.
  // On the H200 it took fp16 NHWC ResNet-50 from 10,300 to 14,660 items/s at
  // batch 32; on fp16 NCHW the first run fails (HEURISTIC_QUERY_FAILED).
  bool fuse_conv_bias = false;

  // "tf32 nhwc=0 graphs=0 conv=EXHAUSTIVE", plus " fuse=1" when fused: stable,
  // the history's key (keys written before the fusion axis still match).
  std::string Key() const;
  bool operator==(const EngineChoice&) const = default;
};

// A configuration to serve: one engine choice plus what the server adds.
struct ServedCandidate {
  EngineChoice engine;
  int instances = 1;                      // instance_group count
  int64_t batch = 1;                      // the preferred batch size
  bool pad_to_preferred = false;          // pad batches to `batch` (serve's pad_to_preferred_batch_size)
  // With padding: serve's adaptive padding (idle batches run unpadded at
  // light sizes, each a warmed session of its own) or, false, every batch
  // padded and only `batch` warmed (serve's adaptive_padding false): the
  // same goodput under load (a busy GPU pads either way) for a sixth of the
  // load time at [32] (fuse_conv_bias + graphs on the H200: 137 s for six
  // sizes x two instances).
  bool adaptive_padding = true;
  int64_t max_queue_delay_us = 0;         // dynamic_batching.max_queue_delay_microseconds
  int workers_per_instance = kDefaultWorkers;

  // serve's default: two workers per GPU instance of a batching model.
  static constexpr int kDefaultWorkers = 2;

  // Engine key plus "inst=2 batch=32 pad=1 delay=100us workers=2", and
  // " adaptive=0" when padded without adaptive padding.
  std::string Key() const;
  bool operator==(const ServedCandidate&) const = default;

  // Whether serve makes this candidate's batches take turns on the GPU
  // (config parameter gpu_turns "auto": with CUDA graphs): one batch's graph
  // replays at a time, so a batch in flight beyond the second only waits.
  bool TakesGpuTurns() const { return engine.cuda_graphs; }
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
  // The model has Conv nodes: otherwise prefer_nhwc, fuse_conv_bias and the
  // cuDNN algorithm search change nothing and are not screened.
  bool has_conv = true;
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
  std::vector<bool> fuse_conv_bias = {false, true};
  std::vector<int64_t> batches = {1, 2, 4, 8, 16, 32, 64, 128};
  std::vector<int> instances = {1, 2};
  std::vector<bool> padding = {true, false};
  // Values of ServedCandidate::adaptive_padding for padded candidates.
  std::vector<bool> adaptive_padding = {true};
  std::vector<int64_t> queue_delays_us = {0, 500, 2000};
  std::vector<int> workers = {2, 1};
  // The batch the engine choices are screened at (capped at the largest
  // valid batch), and the batches the latency curve of the best engine
  // choices is measured at (others are interpolated; the largest valid
  // batch is always added).
  int64_t screening_batch = 32;
  std::vector<int64_t> curve_batches = {1, 8, 32, 64};
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

// The valid batch sizes of `options.batches`, ascending: not above
// max_batch_size (1 for a model that does not batch) nor over the memory
// limit with one instance. Rejections are appended to `rejected` (nullable).
std::vector<int64_t> ValidBatches(const ModelTraits& traits, const SpaceOptions& options, std::vector<Rejected>* rejected);

// Why CUDA graphs cannot run this model; "" when they can.
std::string GraphsRefusal(const ModelTraits& traits);

// Every engine choice of the space's axes that passes the rules (the
// cartesian product; the search screens them one knob at a time instead,
// screening.h). Rules:
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

// Why a served measurement is out of the memory limit: the GPU memory in use
// while it was served (serve's nv_gpu_memory_used_bytes, the whole device, at
// its highest over perf's steps) above traits.gpu_memory_limit_bytes. The
// estimate the rules above apply is a floor (the model file and the I/O per
// row), so a candidate it let through can still measure over the limit;
// such a candidate neither wins nor counts as the grid's best. "" within the
// limit, with no limit, or with nothing measured.
std::string MeasuredOverMemory(const std::optional<double>& measured_bytes, const ModelTraits& traits);
// Whether `c` needs at least the memory `measured` did: the same precision,
// CUDA graphs if `measured` had them, and at least its instances, workers
// per instance and batch (each instance holds its weights, each worker its
// activations at the batch). Used to skip what a candidate measured over
// the limit rules out.
bool NeedsAtLeastTheMemoryOf(const ServedCandidate& c, const ServedCandidate& measured);
// Why a candidate that NeedsAtLeastTheMemoryOf `over` is not served; `why`
// is MeasuredOverMemory's reason for `over`.
std::string RuledOutByMemory(const ServedCandidate& over, const std::string& why);

// "Simpler", in this explicit order, the first difference deciding:
//   1. fewer instances;
//   2. no CUDA graphs;
//   3. fewer knobs away from their defaults (precision tf32, NHWC off,
//      EXHAUSTIVE, no conv+bias fusion, no padding, no queue delay, serve's
//      workers);
//   4. a shorter queue delay;
//   5. a smaller batch.
// Ties (equal on all five) are not simpler either way.
bool SimplerThan(const ServedCandidate& a, const ServedCandidate& b);
int KnobsAwayFromDefaults(const ServedCandidate& c);

}  // namespace ortgpu::tune
