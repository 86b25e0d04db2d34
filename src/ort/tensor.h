// Tensor: a host-memory tensor as ortgpu moves it between the network, files
// and ONNX Runtime: an element type, a shape, and the bytes in row-major
// order (or, for STRING/BYTES tensors, one std::string per element).
//
// DataType uses ONNX's TensorProto.DataType numbering, so it converts to and
// from ORT's ONNXTensorElementDataType with a cast. A Tensor owns its data;
// it is a value type with no internal synchronisation.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "status/expected.h"

namespace ortgpu {

enum class DataType : int {
  kUndefined = 0,
  kFloat = 1,
  kUint8 = 2,
  kInt8 = 3,
  kUint16 = 4,
  kInt16 = 5,
  kInt32 = 6,
  kInt64 = 7,
  kString = 8,
  kBool = 9,
  kFloat16 = 10,
  kDouble = 11,
  kUint32 = 12,
  kUint64 = 13,
  kComplex64 = 14,
  kComplex128 = 15,
  kBfloat16 = 16,
};

// Bytes per element; 0 for kString and kUndefined.
size_t ElementSize(DataType t);
// ONNX's spelling as ORT prints it: "tensor(float)".
std::string OnnxTypeName(DataType t);
// KServe v2 / Triton datatype: "FP32", "INT64", "BYTES", "BF16"; "" if none.
std::string_view KServeName(DataType t);
// Parses a KServe datatype name ("FP32").
std::optional<DataType> DataTypeFromKServe(std::string_view name);
// Triton config.pbtxt data_type: "TYPE_FP32", "TYPE_STRING".
std::string_view TritonConfigName(DataType t);
std::optional<DataType> DataTypeFromTritonConfig(std::string_view name);
// Short lower-case name used on the command line and in reports: "float32".
std::string_view ShortName(DataType t);

// Number of elements of a fully known shape (every dim >= 0); 1 for a scalar.
// Returns nullopt on a negative dim or overflow.
std::optional<int64_t> ElementCount(const std::vector<int64_t>& shape);
// "1x3x224x224"; symbolic dims (-1) print as "?".
std::string ShapeToString(const std::vector<int64_t>& shape);
// Parses "1x3x224x224" (also "1,3,224,224"); "" or "scalar" is a scalar.
Expected<std::vector<int64_t>> ParseShape(std::string_view text);
// Parses a --shape flag value "NAME:DIMS" ("input_ids:1x128") into `out`.
Status ParseShapeFlag(const std::string& text, std::map<std::string, std::vector<int64_t>>& out);

struct Tensor {
  std::string name;
  DataType dtype = DataType::kUndefined;
  std::vector<int64_t> shape;
  std::vector<uint8_t> data;          // ElementCount * ElementSize bytes (non-string)
  std::vector<std::string> strings;   // ElementCount elements (kString only)

  int64_t element_count() const { return ElementCount(shape).value_or(0); }
  size_t byte_size() const { return data.size(); }

  template <typename T>
  T* data_as() { return reinterpret_cast<T*>(data.data()); }
  template <typename T>
  const T* data_as() const { return reinterpret_cast<const T*>(data.data()); }

  // A tensor of `shape` filled with zeros (empty strings for kString).
  // REQUIRES: every dim of `shape` >= 0.
  static Tensor Zeros(std::string name, DataType dtype, std::vector<int64_t> shape);
};

// Checks that `t` holds exactly the bytes (or strings) its dtype and shape
// call for; the message names the tensor, the expected and the actual size.
Status ValidateTensorSize(const Tensor& t);

// Converts one element to double, for comparisons and reports (fp16/bf16
// decoded). REQUIRES: t.dtype is numeric or bool; i < element_count().
double ElementAsDouble(const Tensor& t, int64_t i);

// IEEE half <-> float.
float HalfToFloat(uint16_t h);
uint16_t FloatToHalf(float f);
float Bfloat16ToFloat(uint16_t b);
uint16_t FloatToBfloat16(float f);

}  // namespace ortgpu
