// Automatic mixed precision: when float16 breaks the accuracy budget, find
// the nodes responsible and keep only those in float32.
//
// The search is a bisection over node sets, as ORT's and onnxconverter-
// common's auto_mixed_precision do, made cheaper with the per-output error
// as the signal: only the converted nodes that feed an output outside the
// budget are candidates. With the candidates in graph order, the search
// finds the shortest prefix whose conversion (the rest kept float32) breaks
// the budget; the last node of that prefix is a culprit. It is kept in
// float32 and the search repeats until the model is within budget. The
// first culprit costs about log2(candidates) + 2 evaluations; each next one,
// while the same outputs fail, resumes after the one before (that prefix was
// measured within the budget) and costs 1 + log2(the candidates after it).
// Thread-compatible.
#pragma once

#include <vector>

#include "onnx.pb.h"
#include "ort/accuracy.h"
#include "precision/convert.h"
#include "precision/evaluate.h"

namespace ortgpu::precision {

struct MixedSearchOptions {
  PrecisionBudget budget;
  // Each evaluation converts the model and runs it once; the search stops
  // after this many and says so.
  int max_evaluations = 80;
};

struct Evaluation {
  ::onnx::ModelProto model;
  ConversionReport report;
  DeviationReport deviation;
  std::vector<std::string> violations;  // BudgetViolations
};

// Converts `fp32` with `options`, runs it, compares with `reference`.
Expected<Evaluation> Evaluate(const ::onnx::ModelProto& fp32, const ConvertOptions& options,
                              const std::vector<Tensor>& inputs, const std::vector<Tensor>& reference,
                              ModelRunner& runner, const PrecisionBudget& budget);

struct MixedSearchResult {
  Evaluation final;                        // the model chosen, its report and accuracy
  std::vector<KeptNode> kept_for_accuracy;  // the culprits, with the figure each broke
  std::vector<std::string> fp16_violations;  // what all-float16 broke (empty: it was within budget)
  int evaluations = 0;
  bool within_budget = false;
  std::string note;                         // why the search stopped short, when it did
};

// `options.node_block_list` holds nodes already kept (the placement pass's);
// the culprits are added to it.
Expected<MixedSearchResult> SearchMixedPrecision(const ::onnx::ModelProto& fp32, const ConvertOptions& options,
                                                 const std::vector<Tensor>& inputs,
                                                 const std::vector<Tensor>& reference, ModelRunner& runner,
                                                 const MixedSearchOptions& search);

}  // namespace ortgpu::precision
