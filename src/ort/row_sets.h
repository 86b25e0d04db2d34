// Row sets: compares outputs whose rows two runs may list in another order
// or cut at another count (detections after NonMaxSuppression, TopK,
// NonZero), the part of ort/accuracy.h that judges such outputs.
//
// The outputs of one group share their leading dimension (boxes [N,4],
// scores [N], labels [N]); row i is their slices [i, ...] together. Rows
// are matched one to one regardless of order, each element within the
// tolerance of ort/accuracy.h (|a - r| <= atol + rtol x its output's
// range), higher-scored reference rows choosing first (the closest
// candidate). The rule for rows left unmatched:
//   - without a score column (a rank-1 floating output of the group, the
//     one named *score* if several), every row must match;
//   - with one, an unmatched row passes when it is a near-tie at the end of
//     the lists: its score is at most the lowest score either run kept plus
//     a tie margin (twice the largest score difference between matched
//     rows, at least 1e-6 of the scores' range). Where a list ends (a count
//     limit like detections_per_img, or a score threshold) rounding may put
//     a tied row on either side; any unmatched row scored above that is a
//     real difference in what was detected, and fails.
// Pure functions; thread-safe.
#pragma once

#include <string>
#include <vector>

#include "onnx/graph_derivation.h"
#include "ort/accuracy.h"
#include "ort/session.h"
#include "ort/tensor.h"

namespace ortgpu {

struct RowSetMatch {
  std::vector<std::string> outputs;  // the group, in model order
  std::string score_output;          // "" when the group has none
  int64_t actual_rows = 0;
  int64_t reference_rows = 0;
  int64_t matched = 0;
  std::vector<int64_t> only_actual;     // row indices without a match
  std::vector<int64_t> only_reference;
  double cut_off = 0;     // the lowest score either run kept
  double tie_margin = 0;
  bool passed = true;
  double max_abs_error = 0;  // over matched rows
  double max_rel_error = 0;
  // "outputs 'boxes', 'scores', 'labels': 97 of 100 rows matched (any
  // order); 3 only on CUDA, 2 only on CPU, all scored within 1.2e-05 of
  // the lowest score either run kept (0.0103): near-ties ..."
  std::string note;
};

// Words for the note.
struct RowSetLabels {
  std::string actual = "the run";        // "CUDA"
  std::string reference = "the reference";  // "CPU"
  std::string why;                       // "after NonMaxSuppression '/nms'"; may be empty
};

// REQUIRES: actual[k] and reference[k] are the same output (same name,
// dtype, rank >= 1 and trailing dims), numeric; every actual[k] has the
// same leading dim, every reference[k] too.
RowSetMatch MatchRowSet(const std::vector<const Tensor*>& actual, const std::vector<const Tensor*>& reference,
                        const Tolerance& tolerance, const RowSetLabels& labels);

// The RowSets of a model with these outputs: those `graph` computes after a
// selection op ("after NonMaxSuppression '/nms'"), and those whose leading
// dim is symbolic. `graph` may be null (then only the latter).
RowSets RowSetsFor(const std::vector<TensorInfo>& outputs, const onnx::GraphDerivation* graph);

}  // namespace ortgpu
