// The numeric precisions `ortgpu bench` measures a model at (--precision,
// and the sweep's `precision` axis), and the accuracy against true float32
// every output of bench carries for each:
//
//   fp32   the model as it is with TF32 off (the CUDA option use_tf32=0)
//   tf32   the model as it is under the CUDA EP's default (TF32 on): what
//          bench measured before --precision, and still does without it
//   fp16   the model converted by precision::ConvertPrecision (Target::kFp16)
//   mixed  the same with the nodes that break the budget kept in float32
//
// The CPU has no TF32: there tf32 is fp32 (EffectivePrecision). Value types
// and pure functions; thread-safe.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ort/accuracy.h"
#include "ort/session_options.h"
#include "status/expected.h"

namespace ortgpu::bench {

enum class Precision { kFp32, kTf32, kFp16, kMixed };
std::string_view PrecisionName(Precision p);  // "fp32", "tf32", "fp16", "mixed"
// The error names the value and lists the valid ones.
Expected<Precision> ParsePrecision(std::string_view text);

// What bench measures when no precision is asked: tf32 on CUDA and
// TensorRT (their default), fp32 on the CPU.
Precision DefaultPrecision(Provider provider);
// `p` as `provider` runs it: tf32 is fp32 on the CPU, the rest unchanged.
Precision EffectivePrecision(Provider provider, Precision p);
// fp16 and mixed: a converted model, below the provider's default precision.
bool IsConverted(Precision p);

// How far one precision's outputs are from true float32 on bench's inputs,
// summarised over every output (OutputDeviation has them one by one).
struct PrecisionAccuracy {
  // false: not judged (--no-check, no --precision asked, or a model already
  // in float16 left unchanged); `note` says why.
  bool checked = false;
  // fp32 itself: the reference, equal to it by definition.
  bool reference = false;
  double min_cosine = 1;     // least row cosine over every output
  double max_rel_error = 0;  // largest error as a share of an output's range
  // Least top-1 agreement over classifier-shaped ([batch, classes]) outputs;
  // nullopt when the model has none.
  std::optional<double> top1_agreement;
  bool within_budget = true;
  std::vector<std::string> violations;  // BudgetViolations' lines
  std::string note;
};

// Summarises a deviation from float32 against `budget`.
PrecisionAccuracy SummariseDeviation(const DeviationReport& deviation, const PrecisionBudget& budget);
// The accuracy of fp32 itself.
PrecisionAccuracy ReferenceAccuracy();

// True when bench may recommend a result of precision `p` with `accuracy`:
// never outside the budget; a converted precision only when judged.
bool Recommendable(Precision p, const PrecisionAccuracy& accuracy);

// Short cells for tables: "0.999910" / "-", "0.0012" / "-", "100%" / "-",
// and the budget verdict "yes", "NO", "ref" (fp32) or "-" (not judged).
std::string CosineCell(const PrecisionAccuracy& a);
std::string RelErrorCell(const PrecisionAccuracy& a);
std::string Top1Cell(const PrecisionAccuracy& a);
std::string BudgetCell(const PrecisionAccuracy& a);

// "min cosine 0.99991, max rel error 0.0012, top-1 100%": what a precision
// changed, for the recommendation and the config fragment.
std::string DescribeAccuracy(const PrecisionAccuracy& a);

}  // namespace ortgpu::bench
