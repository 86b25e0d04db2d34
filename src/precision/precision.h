// The whole float16 pipeline `ortgpu convert` (and bench, in-process) runs
// on a float32 model: convert, keep in float32 what ORT would run on the
// CPU in float16 (the placement-aware pass), judge every output against true
// float32 (TF32 off), and with Target::kMixed keep in float32 the nodes that
// break the budget (mixed.h). Thread-compatible; ORT is reached only through
// the seams of evaluate.h.
#pragma once

#include <string_view>
#include <vector>

#include "fusion/fusion.h"
#include "onnx.pb.h"
#include "ort/accuracy.h"
#include "precision/convert.h"
#include "precision/evaluate.h"
#include "precision/mixed.h"

namespace ortgpu::precision {

enum class Target { kFp16, kMixed };
Expected<Target> ParseTarget(std::string_view text);  // "fp16", "mixed"
std::string_view TargetName(Target t);

struct PrecisionOptions {
  Target target = Target::kFp16;
  ConvertOptions convert;
  PrecisionBudget budget;
  // Conversions repeated at most this many times while ORT places newly
  // converted nodes on the CPU.
  int placement_rounds = 3;
  int max_evaluations = 80;  // of the mixed search
  // Fuse attention and skip layer normalisation before converting
  // (fusion/fusion.h): what the CUDA EP runs fastest in float16. The fused
  // model is judged like any other; when it does not run or breaks the
  // budget, the conversion is made again without fusing, and says so.
  bool fuse = false;
  // With `fuse`: pack attention's Q, K and V projections into one MatMul
  // (fusion::FusionOptions; the CPU provider cannot run the packed form).
  bool pack_qkv = true;
};

struct PrecisionSeams {
  // Runs the fp32 model for the reference (true float32: Float32Reference).
  // Null: no accuracy check (conversion only; Target::kMixed needs it).
  ModelRunner* reference = nullptr;
  // Runs converted models.
  ModelRunner* candidate = nullptr;
  // Null: no placement pass (the CPU provider, where there is nothing to move).
  PlacementObserver* placement = nullptr;
};

struct PrecisionResult {
  ::onnx::ModelProto model;  // the converted model (the input, unchanged, when already float16)
  ConversionReport report;
  std::vector<KeptNode> kept_for_placement;  // nodes ORT put on the CPU in float16
  std::vector<KeptNode> kept_for_accuracy;   // the mixed search's culprits
  bool checked = false;                      // accuracy was measured
  DeviationReport deviation;                 // of the final model against float32
  std::vector<std::string> violations;       // of the budget by the final model
  std::vector<std::string> fp16_violations;  // Target::kMixed: what all-float16 broke
  int evaluations = 0;                       // models converted and run by the search
  std::string note;                          // the search's, when it stopped short
  fusion::FusionReport fusion;               // the fusions the model kept (none when dropped)
  std::string fusion_dropped;                // why fusions made were not kept ("" when kept or none)
  bool within_budget() const { return violations.empty(); }
};

// `fp32` is taken by value: move a model in that is not needed after (it
// can be gigabytes). `inputs` feed the accuracy check and the placement run (generated or the
// user's). Errors: a model that does not convert or does not run (ORT's
// message), Target::kMixed without runners.
Expected<PrecisionResult> ConvertPrecision(::onnx::ModelProto fp32, const std::vector<Tensor>& inputs,
                                           const PrecisionOptions& options, const PrecisionSeams& seams);

}  // namespace ortgpu::precision
