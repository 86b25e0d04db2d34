#include "ort/accuracy.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace ortgpu {

Accuracy CompareOutputs(const std::vector<Tensor>& actual, const std::vector<Tensor>& reference, const Tolerance& tolerance) {
  Accuracy acc;
  acc.checked = true;
  auto fail = [&acc](std::string note) {
    if (acc.passed) acc.note = std::move(note);
    acc.passed = false;
  };
  for (const Tensor& ref : reference) {
    const Tensor* a = nullptr;
    for (const Tensor& t : actual) {
      if (t.name == ref.name) a = &t;
    }
    if (a == nullptr) {
      fail("output '" + ref.name + "' is missing");
      continue;
    }
    if (a->dtype != ref.dtype || a->shape != ref.shape) {
      fail(fmt::format("output '{}' is {} {} but the reference is {} {}", ref.name, ShortName(a->dtype), ShapeToString(a->shape),
                       ShortName(ref.dtype), ShapeToString(ref.shape)));
      continue;
    }
    if (ref.dtype == DataType::kString) {
      if (a->strings != ref.strings) fail("output '" + ref.name + "' has different strings");
      continue;
    }
    if (ElementSize(ref.dtype) == 0 || ref.dtype == DataType::kComplex64 || ref.dtype == DataType::kComplex128) {
      if (a->data != ref.data) fail("output '" + ref.name + "' differs bytewise");
      continue;
    }
    const int64_t n = ref.element_count();
    double scale = 0;
    for (int64_t i = 0; i < n; ++i) {
      const double r = ElementAsDouble(ref, i);
      if (std::isfinite(r)) scale = std::max(scale, std::fabs(r));
    }
    for (int64_t i = 0; i < n; ++i) {
      const double x = ElementAsDouble(*a, i);
      const double r = ElementAsDouble(ref, i);
      if (std::isnan(x) || std::isnan(r)) {
        if (std::isnan(x) != std::isnan(r)) fail(fmt::format("output '{}' element {}: {} vs reference {}", ref.name, i, x, r));
        continue;
      }
      const double abs_err = std::fabs(x - r);
      acc.max_abs_error = std::max(acc.max_abs_error, abs_err);
      if (scale > 0) acc.max_rel_error = std::max(acc.max_rel_error, abs_err / scale);
      if (!(abs_err <= tolerance.atol + tolerance.rtol * scale)) {
        fail(fmt::format("output '{}' element {}: {:.6g} vs reference {:.6g} (tolerance atol {} + rtol {} x output range {:.4g})",
                         ref.name, i, x, r, tolerance.atol, tolerance.rtol, scale));
      }
    }
  }
  return acc;
}

}  // namespace ortgpu
