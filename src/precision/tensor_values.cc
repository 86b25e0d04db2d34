#include "precision/tensor_values.h"

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "onnx.pb.h"
#include "ort/tensor.h"

namespace ortgpu::precision {

float ClipToFloat16Range(float x, float min_positive, float max_finite) {
  if (!std::isfinite(x) || x == 0.0f) return x;
  const float a = std::fabs(x);
  if (a > max_finite) return std::copysign(max_finite, x);
  if (a < min_positive) return std::copysign(min_positive, x);
  return x;
}

Status ToFloat16(::onnx::TensorProto& t, float min_positive, float max_finite, int64_t& clipped) {
  if (t.data_type() != ::onnx::TensorProto::FLOAT) return Status::Ok();
  if (t.data_location() == ::onnx::TensorProto::EXTERNAL) {
    return FailedPrecondition(fmt::format("initializer '{}' still has its data in an external file; read the model with "
                                          "its external data first",
                                          t.name()));
  }
  int64_t n = 1;
  for (int64_t d : t.dims()) n *= d;
  std::vector<float> values;
  if (t.float_data_size() > 0) {
    values.assign(t.float_data().begin(), t.float_data().end());
  } else {
    values.resize(t.raw_data().size() / sizeof(float));
    if (!values.empty()) std::memcpy(values.data(), t.raw_data().data(), values.size() * sizeof(float));
  }
  if (static_cast<int64_t>(values.size()) != n) {
    return InvalidArgument(fmt::format("float tensor '{}' holds {} values but its shape has {}; the model is damaged",
                                       t.name(), values.size(), n));
  }
  std::string raw(values.size() * 2, '\0');
  for (size_t i = 0; i < values.size(); ++i) {
    const float c = ClipToFloat16Range(values[i], min_positive, max_finite);
    if (c != values[i]) ++clipped;
    const uint16_t h = FloatToHalf(c);
    std::memcpy(&raw[i * 2], &h, 2);
  }
  t.clear_float_data();
  t.set_raw_data(std::move(raw));
  t.set_data_type(::onnx::TensorProto::FLOAT16);
  return Status::Ok();
}

}  // namespace ortgpu::precision
