// Accuracy: compares outputs with a reference run's (the CPU provider's), the
// check that a GPU or a faster setting did not change the answer. Used by
// `doctor` (CUDA vs CPU agreement) and `bench` (every configuration).
// Pure functions; thread-safe.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "ort/tensor.h"

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
