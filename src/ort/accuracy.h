// Accuracy: compares outputs with a reference run's (the CPU provider's), the
// check that a GPU or a faster setting did not change the answer. Used by
// `doctor` (CUDA vs CPU agreement) and `bench` (every configuration).
// Pure functions; thread-safe.
#pragma once

#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "ort/tensor.h"
#include "status/expected.h"

namespace ortgpu {

struct Tolerance {
  // An element passes when |actual - reference| <= atol + rtol * scale, where
  // scale is the largest |reference| of that output. Measuring against the
  // output's range rather than each element keeps outputs near zero from
  // failing on rounding noise. rtol 5% admits TF32 matrix products (the CUDA
  // EP default, use_tf32=1) through 50-layer float32 networks, and still
  // catches a wrong kernel or layout, which is off by the order of the range.
  double atol = 1e-3;
  double rtol = 5e-2;
};

struct Accuracy {
  bool checked = false;  // false when there was no reference to compare with
  bool passed = true;
  double max_abs_error = 0;
  // max |a - r| / scale over outputs: the error as a share of the output's range.
  double max_rel_error = 0;
  // Where it failed first: "output 'logits' element 17: 0.51 vs reference 0.49".
  std::string note;
  // One line per group of outputs compared as sets of rows (RowSets),
  // passed or not: what matched and what differed (ort/row_sets.h).
  std::vector<std::string> row_set_notes;
};

// Outputs whose rows two runs may list in another order or cut at another
// count: detections after NonMaxSuppression, TopK or NonZero. Such outputs
// are compared as sets of rows (ort/row_sets.h has the rule), grouped by
// their leading dimension.
struct RowSets {
  // Output name -> why ("after NonMaxSuppression '/nms'"): always compared
  // as sets.
  std::map<std::string, std::string> outputs;
  // Outputs whose leading dimension the model leaves symbolic: compared as
  // sets when the runs differ in that dimension alone (a data-dependent
  // count), elementwise otherwise.
  std::set<std::string> dynamic_leading_dim;
  // The runs' names in notes.
  std::string actual_name = "the run";
  std::string reference_name = "the reference";
};

// Outputs are matched by name; a missing output, a shape or type difference
// fails (but for the RowSets cases above). Strings must be equal; NaN
// matches only NaN.
Accuracy CompareOutputs(const std::vector<Tensor>& actual, const std::vector<Tensor>& reference,
                        const Tolerance& tolerance, const RowSets& row_sets = {});

}  // namespace ortgpu

namespace ortgpu {

// How far a lower precision (fp16, mixed) moved one output from true fp32
// (TF32 off): the numbers a user judges a conversion by. Rows are the first
// dimension (the batch): a [batch, ...] output has one row per sample, a
// scalar or 1-D output is one row.
struct OutputDeviation {
  std::string name;
  std::string shape;              // "8x1000"
  bool compared = false;          // false: not numeric, missing or shaped differently (see note)
  double max_abs_error = 0;       // max |a - r| over finite pairs
  double max_rel_error = 0;       // max |a - r| / max |r| (the output's range)
  double cosine_min = 1;          // cosine similarity of each row with its reference row
  double cosine_mean = 1;
  int64_t rows = 0;
  // Non-finite values in the actual output where the reference had a
  // finite one (what the lower precision introduced).
  int64_t new_nan = 0;
  int64_t new_inf = 0;
  // [batch, classes] outputs (rank 2, at least 2 classes): share of rows
  // whose arg-max agrees, and mean share of the reference's top-5 (top-k for
  // fewer classes) found in the actual top-5.
  bool classifier = false;
  double top1_agreement = 1;
  double top5_overlap = 1;
  std::string note;               // why it was not compared
};

struct DeviationReport {
  std::vector<OutputDeviation> outputs;  // in reference order
};

// Compares every reference output with the actual one of the same name.
// Pure; thread-safe.
DeviationReport CompareDeviation(const std::vector<Tensor>& actual, const std::vector<Tensor>& reference);

// What a lower precision may change before ortgpu refuses it (convert --to
// mixed keeps nodes in fp32 until it holds; bench recommends a precision
// only within it). The defaults are docs/PRECISION.md's.
struct PrecisionBudget {
  double min_cosine = 0.999;   // every row of every output
  bool allow_nonfinite = false;  // a NaN or Inf the fp32 model did not give
  double min_top1 = 0.99;      // classifier outputs: arg-max agreement
  // Bound on max_rel_error (the error as a share of the output's range);
  // 0 = unbounded. Cosine cannot see a uniform scale (a constant clipped
  // from 1e5 to 65504 scales its output by 0.66 at cosine 1); this can.
  double max_rel_error = 0.05;
};

// The --budget flag's help, one text for every command that takes it.
inline constexpr const char* kPrecisionBudgetHelp =
    "Accuracy budget, KEY=VALUE,...: cosine=MIN (0.999), top1=MIN (0.99), rel=MAX (0.05; 0 = unbounded), "
    "nonfinite=allow|deny (deny)";

// Parses "cosine=0.999,top1=0.99,rel=0.05,nonfinite=allow" (any subset; the
// rest keeps the defaults); the error names the bad key and lists the keys.
Expected<PrecisionBudget> ParsePrecisionBudget(std::string_view text);
// "row cosine >= 0.999, no new NaN/Inf, top-1 agreement >= 99%, ...".
std::string DescribeBudget(const PrecisionBudget& budget);

// The ways `report` breaks `budget`, one line each naming the output and
// the figure ("output 'logits': row cosine 0.91 < 0.999"); empty: within it.
// Pure.
std::vector<std::string> BudgetViolations(const DeviationReport& report, const PrecisionBudget& budget);

}  // namespace ortgpu
