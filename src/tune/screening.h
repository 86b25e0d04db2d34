// The engine stages of `ortgpu tune`'s search (issue 28, docs/TUNE.md):
// the precisions judged against the accuracy budget, then the engine knobs
// screened by coordinate descent at one representative batch. The full
// product of the knobs (precision x NHWC x conv+bias fusion x cuDNN search x
// CUDA graphs x batch sizes: 128 measurements for ResNet-50, over five
// minutes on the H200) is what this replaces: each knob is flipped from the
// current choice in a fixed order (precision, prefer_nhwc, fuse_conv_bias,
// cudnn_conv_algo_search, CUDA graphs), and a flip is kept only when it is
// faster by more than the noise. The order lets a knob that needs another
// (fusion needs NHWC for fp16) be tried after it; a second pass follows
// when the first kept a flip, in which a knob tried before a later change is
// tried again in its company when its trial was a close call (a failed flip,
// or a best flip within 10% either way): a 45% gain from fp16 is not undone
// by NHWC, and the measurements (seconds each, more with the fusion's plan
// building) go where the answer could change.
//
// Pure functions (the knobs and their rules) and stage functions over the
// Evaluator (evaluator.h); single-threaded.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "status/expected.h"
#include "tune/candidates.h"
#include "tune/measurement.h"

namespace ortgpu::tune {

class Evaluator;
class Measurer;
struct SearchOptions;
struct SearchResult;

// A converted precision and what its judgment said.
struct PrecisionOutcome {
  Precision precision = Precision::kFp16;
  std::optional<PrecisionVerdict> verdict;  // unset: not judged (error, or a limit stopped the search)
  std::string error;                        // the conversion or its judgment failed, and why
};

enum class Knob { kPrecision, kPreferNhwc, kFuseConvBias, kConvSearch, kCudaGraphs };
std::string_view KnobName(Knob k);  // "precision", "prefer_nhwc", "fuse_conv_bias", "conv_search", "cuda_graphs"

// The knobs in the order screened.
const std::vector<Knob>& ScreeningOrder();

// Why `k` is not screened for this model and space, or "": the space has
// one value for it; a model without Conv nodes gains nothing from NHWC,
// the conv+bias fusion or the cuDNN search; CUDA graphs need fixed shapes
// and bound I/O (GraphsRefusal).
std::string KnobSkipped(Knob k, const ModelTraits& traits, const SpaceOptions& space);

// `current` with knob `k` set to each of the space's other values (for
// precision: those within the budget, ModelTraits::precisions_within_budget),
// in the space's order.
std::vector<EngineChoice> Flips(Knob k, const EngineChoice& current, const ModelTraits& traits,
                                const SpaceOptions& space);

// One flip tried.
struct ScreenStep {
  Knob knob = Knob::kPrecision;
  EngineChoice from;   // the current choice when it was tried
  EngineChoice to;     // the flip
  double from_ms = 0;  // p50 of a batch at the screening batch
  double to_ms = 0;    // 0: the flip's measurement failed (see note)
  double gain = 0;       // (from_ms - to_ms) / from_ms
  double threshold = 0;  // what the gain had to exceed
  bool kept = false;
  std::string note;  // ORT's reason for a failure, or why the flip was not kept
};

// The gain a flip must exceed: max(min_gain, the two measurements' relative
// noise together).
double FlipThreshold(const Measurement& from, const Measurement& to, double min_gain);

// The batch the engine choices are screened at: the space's screening
// batch, or the largest valid batch below it (1 for a model that does not
// batch). REQUIRES: `valid_batches` ascending, non-empty.
int64_t ScreeningBatch(const SpaceOptions& space, const std::vector<int64_t>& valid_batches);

// Stage 1: the space's converted precisions (fp16; mixed only when fp16 is
// outside the budget or failed) judged once each (the history keeps the
// verdicts). Returns the precisions within the budget: tf32 and fp32, then
// the converted ones whose verdict is within it; nullopt when a limit
// stopped the search. Verdicts and failures are added to `result`.
Expected<std::optional<std::vector<Precision>>> JudgePrecisions(const SpaceOptions& space, const SearchOptions& options,
                                                                Measurer& measurer, Evaluator& eval,
                                                                SearchResult& result);

// Stage 2: coordinate descent from ORT's default engine choice at `batch`.
// Returns the choice kept (nullopt when even the default failed, or a limit
// stopped the search before it was measured); every flip is in
// `result.screening`, skipped knobs and failures in `result.rejected`.
Expected<std::optional<EngineChoice>> ScreenEngines(const ModelTraits& traits, const SpaceOptions& space,
                                                    const SearchOptions& options, int64_t batch, Measurer& measurer,
                                                    Evaluator& eval, SearchResult& result);

// The engine choices whose latency curve is measured: the screened one,
// then its fallback (the same without CUDA graphs when it has them, else
// ORT's default choice), `count` at most, distinct.
std::vector<EngineChoice> CurveEngines(const EngineChoice& screened, int count);

}  // namespace ortgpu::tune
