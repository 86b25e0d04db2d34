#include "ort/tensor.h"

#include <cmath>
#include <cstring>
#include <limits>

namespace ortgpu {
namespace {

struct TypeRow {
  DataType type;
  size_t size;
  const char* onnx;
  const char* kserve;
  const char* triton;
  const char* short_name;
};

// One row per type, the single source of every name a type has.
constexpr TypeRow kTypes[] = {
    {DataType::kFloat, 4, "float", "FP32", "TYPE_FP32", "float32"},
    {DataType::kUint8, 1, "uint8", "UINT8", "TYPE_UINT8", "uint8"},
    {DataType::kInt8, 1, "int8", "INT8", "TYPE_INT8", "int8"},
    {DataType::kUint16, 2, "uint16", "UINT16", "TYPE_UINT16", "uint16"},
    {DataType::kInt16, 2, "int16", "INT16", "TYPE_INT16", "int16"},
    {DataType::kInt32, 4, "int32", "INT32", "TYPE_INT32", "int32"},
    {DataType::kInt64, 8, "int64", "INT64", "TYPE_INT64", "int64"},
    {DataType::kString, 0, "string", "BYTES", "TYPE_STRING", "string"},
    {DataType::kBool, 1, "bool", "BOOL", "TYPE_BOOL", "bool"},
    {DataType::kFloat16, 2, "float16", "FP16", "TYPE_FP16", "float16"},
    {DataType::kDouble, 8, "double", "FP64", "TYPE_FP64", "float64"},
    {DataType::kUint32, 4, "uint32", "UINT32", "TYPE_UINT32", "uint32"},
    {DataType::kUint64, 8, "uint64", "UINT64", "TYPE_UINT64", "uint64"},
    {DataType::kComplex64, 8, "complex64", "", "", "complex64"},
    {DataType::kComplex128, 16, "complex128", "", "", "complex128"},
    {DataType::kBfloat16, 2, "bfloat16", "BF16", "TYPE_BF16", "bfloat16"},
};

const TypeRow* Row(DataType t) {
  for (const auto& r : kTypes) {
    if (r.type == t) return &r;
  }
  return nullptr;
}

}  // namespace

size_t ElementSize(DataType t) {
  const TypeRow* r = Row(t);
  return r ? r->size : 0;
}

std::string OnnxTypeName(DataType t) {
  const TypeRow* r = Row(t);
  return std::string("tensor(") + (r ? r->onnx : "undefined") + ")";
}

std::string_view KServeName(DataType t) {
  const TypeRow* r = Row(t);
  return r ? r->kserve : "";
}

std::optional<DataType> DataTypeFromKServe(std::string_view name) {
  for (const auto& r : kTypes) {
    if (*r.kserve && name == r.kserve) return r.type;
  }
  return std::nullopt;
}

std::string_view TritonConfigName(DataType t) {
  const TypeRow* r = Row(t);
  return r ? r->triton : "TYPE_INVALID";
}

std::optional<DataType> DataTypeFromTritonConfig(std::string_view name) {
  for (const auto& r : kTypes) {
    if (*r.triton && name == r.triton) return r.type;
  }
  return std::nullopt;
}

std::string_view ShortName(DataType t) {
  const TypeRow* r = Row(t);
  return r ? r->short_name : "undefined";
}

std::optional<int64_t> ElementCount(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0) return std::nullopt;
    if (d != 0 && n > std::numeric_limits<int64_t>::max() / d) return std::nullopt;
    n *= d;
  }
  return n;
}

std::string ShapeToString(const std::vector<int64_t>& shape) {
  if (shape.empty()) return "scalar";
  std::string s;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += 'x';
    s += shape[i] < 0 ? "?" : std::to_string(shape[i]);
  }
  return s;
}

Expected<std::vector<int64_t>> ParseShape(std::string_view text) {
  std::vector<int64_t> dims;
  if (text.empty() || text == "scalar") return dims;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find_first_of("x,", start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view part = text.substr(start, end - start);
    if (part.empty()) return InvalidArgument("shape '" + std::string(text) + "' has an empty dimension; write it as 1x3x224x224");
    int64_t v = 0;
    for (char c : part) {
      if (c < '0' || c > '9') {
        return InvalidArgument("shape '" + std::string(text) + "' has a non-numeric dimension '" +
                               std::string(part) + "'; write it as 1x3x224x224");
      }
      v = v * 10 + (c - '0');
      if (v > (int64_t{1} << 40)) return InvalidArgument("shape '" + std::string(text) + "' has a dimension too large");
    }
    dims.push_back(v);
    start = end + 1;
  }
  return dims;
}

Status ParseShapeFlag(const std::string& text, std::map<std::string, std::vector<int64_t>>& out) {
  const auto colon = text.rfind(':');
  if (colon == std::string::npos || colon == 0) {
    return InvalidArgument("--shape '" + text + "' is not NAME:DIMS; e.g. --shape input_ids:1x128");
  }
  auto dims = ParseShape(text.substr(colon + 1));
  if (!dims.ok()) return dims.status().WithContext("--shape " + text);
  out[text.substr(0, colon)] = *dims;
  return Status::Ok();
}

Tensor Tensor::Zeros(std::string name, DataType dtype, std::vector<int64_t> shape) {
  Tensor t;
  t.name = std::move(name);
  t.dtype = dtype;
  t.shape = std::move(shape);
  const int64_t n = ElementCount(t.shape).value_or(0);
  if (dtype == DataType::kString) {
    t.strings.assign(static_cast<size_t>(n), std::string());
  } else {
    t.data.assign(static_cast<size_t>(n) * ElementSize(dtype), 0);
  }
  return t;
}

Status ValidateTensorSize(const Tensor& t) {
  auto n = ElementCount(t.shape);
  if (!n) return InvalidArgument("tensor '" + t.name + "' has an invalid shape " + ShapeToString(t.shape));
  if (t.dtype == DataType::kString) {
    if (static_cast<int64_t>(t.strings.size()) != *n) {
      return InvalidArgument("tensor '" + t.name + "' of shape " + ShapeToString(t.shape) + " needs " +
                             std::to_string(*n) + " strings, got " + std::to_string(t.strings.size()));
    }
    return Status::Ok();
  }
  const size_t es = ElementSize(t.dtype);
  if (es == 0) return InvalidArgument("tensor '" + t.name + "' has an unsupported data type");
  // Checked before multiplying: an INT64 [2^61] would otherwise wrap to 0
  // bytes and pass with no data.
  if (static_cast<uint64_t>(*n) > std::numeric_limits<uint64_t>::max() / es) {
    return InvalidArgument("tensor '" + t.name + "' of type " + std::string(ShortName(t.dtype)) + " and shape " +
                           ShapeToString(t.shape) + " would need more than 2^64 bytes; check the shape it was sent "
                           "with");
  }
  const uint64_t want = static_cast<uint64_t>(*n) * es;
  if (t.byte_size() != want) {
    return InvalidArgument("tensor '" + t.name + "' of type " + std::string(ShortName(t.dtype)) + " and shape " +
                           ShapeToString(t.shape) + " needs " + std::to_string(want) + " bytes, got " +
                           std::to_string(t.byte_size()));
  }
  return Status::Ok();
}

Status RequireHostBytes(const Tensor& t, const std::string& reader) {
  if (!t.on_device()) return Status::Ok();
  return InvalidArgument("input '" + t.name + "' is in " + t.device->where + " on GPU " +
                         std::to_string(t.device->device) + ", but " + reader +
                         " reads host memory only; send this input in the request body or in system shared memory, "
                         "or serve the model on a GPU instance of a batching model (max_batch_size > 0)");
}

Status CopyToHost(Tensor& t, const std::string& reader) {
  if (!t.on_device()) return Status::Ok();
  if (!t.device->to_host) return RequireHostBytes(t, reader);
  std::vector<uint8_t> bytes(t.device->size);
  if (Status st = t.device->to_host(bytes.data(), t.device->address, t.device->size); !st.ok()) {
    return st.WithContext("copying input '" + t.name + "' from " + t.device->where + " on GPU " +
                          std::to_string(t.device->device) + " to the host for " + reader);
  }
  t.data = TensorBytes(std::move(bytes));
  t.device.reset();
  return Status::Ok();
}

float HalfToFloat(uint16_t h) {
  const uint32_t sign = (h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1f;
  uint32_t mant = h & 0x3ffu;
  uint32_t bits;
  if (exp == 0) {
    if (mant == 0) {
      bits = sign;
    } else {  // subnormal: normalise
      exp = 127 - 15 + 1;
      while ((mant & 0x400u) == 0) {
        mant <<= 1;
        --exp;
      }
      mant &= 0x3ffu;
      bits = sign | (exp << 23) | (mant << 13);
    }
  } else if (exp == 0x1f) {
    bits = sign | 0x7f800000u | (mant << 13);
  } else {
    bits = sign | ((exp - 15 + 127) << 23) | (mant << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

uint16_t FloatToHalf(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t exp = (x >> 23) & 0xff;
  uint32_t mant = x & 0x7fffffu;
  if (exp == 0xff) return static_cast<uint16_t>(sign | 0x7c00u | (mant ? 0x200u : 0));
  int e = static_cast<int>(exp) - 127 + 15;
  if (e >= 0x1f) return static_cast<uint16_t>(sign | 0x7c00u);
  if (e <= 0) {
    if (e < -10) return static_cast<uint16_t>(sign);
    mant |= 0x800000u;
    const int shift = 14 - e;
    uint32_t half = mant >> shift;
    const uint32_t rem = mant & ((1u << shift) - 1);
    const uint32_t mid = 1u << (shift - 1);
    if (rem > mid || (rem == mid && (half & 1))) ++half;
    return static_cast<uint16_t>(sign | half);
  }
  uint32_t half = sign | (static_cast<uint32_t>(e) << 10) | (mant >> 13);
  const uint32_t rem = mant & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (half & 1))) ++half;
  return static_cast<uint16_t>(half);
}

float Bfloat16ToFloat(uint16_t b) {
  const uint32_t bits = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

uint16_t FloatToBfloat16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  if (std::isnan(f)) return static_cast<uint16_t>((x >> 16) | 0x40);
  const uint32_t rounding = 0x7fffu + ((x >> 16) & 1);
  return static_cast<uint16_t>((x + rounding) >> 16);
}

double ElementAsDouble(const Tensor& t, int64_t i) {
  const uint8_t* p = t.data.data() + static_cast<size_t>(i) * ElementSize(t.dtype);
  auto load = [p](auto v) {
    std::memcpy(&v, p, sizeof(v));
    return v;
  };
  switch (t.dtype) {
    case DataType::kFloat: return load(float{});
    case DataType::kDouble: return load(double{});
    case DataType::kUint8: return load(uint8_t{});
    case DataType::kInt8: return load(int8_t{});
    case DataType::kUint16: return load(uint16_t{});
    case DataType::kInt16: return load(int16_t{});
    case DataType::kInt32: return load(int32_t{});
    case DataType::kInt64: return static_cast<double>(load(int64_t{}));
    case DataType::kUint32: return load(uint32_t{});
    case DataType::kUint64: return static_cast<double>(load(uint64_t{}));
    case DataType::kBool: return load(uint8_t{}) ? 1.0 : 0.0;
    case DataType::kFloat16: return HalfToFloat(load(uint16_t{}));
    case DataType::kBfloat16: return Bfloat16ToFloat(load(uint16_t{}));
    default: return 0.0;
  }
}

}  // namespace ortgpu
