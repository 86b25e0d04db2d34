// Accuracy: compares a configuration's outputs with the CPU reference's, the
// check that a faster setting did not change the answer. Pure; thread-safe.
#pragma once

#include <string>
#include <vector>

#include "ort/tensor.h"

namespace ortgpu::bench {

struct Tolerance {
  // An element passes when |actual - reference| <= atol + rtol * |reference|.
  // The defaults admit TF32 matrix products (the CUDA EP's default) on
  // float32 models.
  double atol = 1e-3;
  double rtol = 1e-2;
};

struct Accuracy {
  bool checked = false;  // false when there was no reference to compare with
  bool passed = true;
  double max_abs_error = 0;
  double max_rel_error = 0;  // |a - r| / |r| over elements with r != 0
  // Where it failed first: "output 'logits' element 17: 0.51 vs reference 0.49".
  std::string note;
};

// Outputs are matched by name; a missing output, a shape or type difference
// fails. Strings must be equal; NaN matches only NaN.
Accuracy CompareOutputs(const std::vector<Tensor>& actual, const std::vector<Tensor>& reference, const Tolerance& tolerance);

}  // namespace ortgpu::bench
