// Float32 -> float16 conversion of one ONNX TensorProto's values, with
// float16's range enforced the way ORT's float16.py does it: a finite value
// beyond max_finite becomes +-max_finite and a non-zero one closer to zero
// than min_positive becomes +-min_positive (never Inf, never a flushed 0);
// NaN, Inf and 0 stay. Pure; thread-safe.
#pragma once

#include <cstdint>

#include "status/status.h"

namespace onnx {
class TensorProto;
}

namespace ortgpu::precision {

// Rewrites a FLOAT tensor as FLOAT16 (raw_data, little-endian); adds the
// number of values clipped to `clipped`. Any other type is left as it is.
// Error: a tensor whose data is still external (read it in first) or whose
// byte count does not match its dims.
Status ToFloat16(::onnx::TensorProto& t, float min_positive, float max_finite, int64_t& clipped);

// The clipping of one value (exposed for tests).
float ClipToFloat16Range(float x, float min_positive, float max_finite);

}  // namespace ortgpu::precision
