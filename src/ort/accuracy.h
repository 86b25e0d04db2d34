// Accuracy: compares outputs with a reference run's (the CPU provider's), the
// check that a GPU or a faster setting did not change the answer. Used by
// `doctor` (CUDA vs CPU agreement) and `bench` (every configuration).
// Pure functions; thread-safe.
#pragma once

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
};

// Outputs are matched by name; a missing output, a shape or type difference
// fails. Strings must be equal; NaN matches only NaN.
Accuracy CompareOutputs(const std::vector<Tensor>& actual, const std::vector<Tensor>& reference,
                        const Tolerance& tolerance);

}  // namespace ortgpu
