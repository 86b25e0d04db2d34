#include "ort/tensor_proto.h"

#include <cstring>

#include "onnx.pb.h"

namespace ortgpu {

Expected<Tensor> TensorFromProto(const ::onnx::TensorProto& p, const std::string& name) {
  if (p.data_location() == ::onnx::TensorProto::EXTERNAL) {
    return Unimplemented("TensorProto '" + name + "' keeps its data in an external file; ortgpu reads inline data only");
  }
  Tensor t;
  t.name = p.name().empty() ? name : p.name();
  t.dtype = static_cast<DataType>(p.data_type());
  t.shape.assign(p.dims().begin(), p.dims().end());
  const auto count = ElementCount(t.shape);
  if (!count) return InvalidArgument("TensorProto '" + t.name + "' has an invalid shape");
  const size_t n = static_cast<size_t>(*count);
  if (t.dtype == DataType::kString) {
    t.strings.assign(p.string_data().begin(), p.string_data().end());
    ORTGPU_RETURN_IF_ERROR(ValidateTensorSize(t));
    return t;
  }
  const size_t es = ElementSize(t.dtype);
  if (es == 0) return InvalidArgument("TensorProto '" + t.name + "' has data type " + std::to_string(p.data_type()) + ", which ortgpu does not read");
  if (p.has_raw_data()) {
    t.data.assign(p.raw_data().begin(), p.raw_data().end());
    ORTGPU_RETURN_IF_ERROR(ValidateTensorSize(t));
    return t;
  }
  t.data.assign(n * es, 0);
  auto put = [&](size_t i, const void* src, size_t size) { std::memcpy(t.data.data() + i * size, src, size); };
  auto mismatch = [&](size_t got) {
    return InvalidArgument("TensorProto '" + t.name + "' of shape " + ShapeToString(t.shape) + " holds " +
                           std::to_string(got) + " values, expected " + std::to_string(n));
  };
  switch (t.dtype) {
    case DataType::kFloat:
    case DataType::kComplex64: {
      const size_t want = n * (t.dtype == DataType::kComplex64 ? 2 : 1);
      if (static_cast<size_t>(p.float_data_size()) != want) return mismatch(p.float_data_size());
      for (size_t i = 0; i < want; ++i) {
        const float v = p.float_data(static_cast<int>(i));
        put(i, &v, 4);
      }
      break;
    }
    case DataType::kDouble:
    case DataType::kComplex128: {
      const size_t want = n * (t.dtype == DataType::kComplex128 ? 2 : 1);
      if (static_cast<size_t>(p.double_data_size()) != want) return mismatch(p.double_data_size());
      for (size_t i = 0; i < want; ++i) {
        const double v = p.double_data(static_cast<int>(i));
        put(i, &v, 8);
      }
      break;
    }
    case DataType::kInt64:
      if (static_cast<size_t>(p.int64_data_size()) != n) return mismatch(p.int64_data_size());
      for (size_t i = 0; i < n; ++i) {
        const int64_t v = p.int64_data(static_cast<int>(i));
        put(i, &v, 8);
      }
      break;
    case DataType::kUint32:
    case DataType::kUint64:
      if (static_cast<size_t>(p.uint64_data_size()) != n) return mismatch(p.uint64_data_size());
      for (size_t i = 0; i < n; ++i) {
        const uint64_t v = p.uint64_data(static_cast<int>(i));
        const uint32_t v32 = static_cast<uint32_t>(v);
        put(i, es == 8 ? static_cast<const void*>(&v) : &v32, es);
      }
      break;
    default:  // int32, int16, int8, uint16, uint8, bool, float16, bfloat16: int32_data
      if (static_cast<size_t>(p.int32_data_size()) != n) return mismatch(p.int32_data_size());
      for (size_t i = 0; i < n; ++i) {
        const int32_t v = p.int32_data(static_cast<int>(i));
        // Little-endian: the low `es` bytes of the int32 are the element.
        put(i, &v, es);
      }
      break;
  }
  return t;
}

}  // namespace ortgpu
