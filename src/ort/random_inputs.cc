#include "ort/random_inputs.h"

#include <algorithm>
#include <random>

#include <fmt/format.h>

namespace ortgpu {
namespace {

std::string Lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

template <typename T>
void FillInts(Tensor& t, std::mt19937_64& rng, IntRange r) {
  std::uniform_int_distribution<int64_t> dist(r.lo, std::max(r.lo, r.hi - 1));
  T* p = t.data_as<T>();
  for (int64_t i = 0; i < t.element_count(); ++i) p[i] = static_cast<T>(dist(rng));
}

template <typename T>
void FillReals(Tensor& t, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  T* p = t.data_as<T>();
  // Complex types hold two reals per element.
  const int64_t n = t.byte_size() / sizeof(T);
  for (int64_t i = 0; i < n; ++i) p[i] = static_cast<T>(dist(rng));
}

}  // namespace

IntRange DefaultIntRange(const std::string& name, DataType type) {
  const std::string n = Lower(name);
  if (n.find("mask") != std::string::npos) return {1, 2};
  if (n.find("type_ids") != std::string::npos || n.find("segment") != std::string::npos) return {0, 1};
  if (type == DataType::kInt8) return {-128, 128};
  if (type == DataType::kUint8) return {0, 256};
  return {0, 100};
}

void FillRandom(Tensor& t, uint64_t seed, IntRange r) {
  std::mt19937_64 rng(seed);
  switch (t.dtype) {
    case DataType::kFloat: FillReals<float>(t, rng); break;
    case DataType::kDouble: FillReals<double>(t, rng); break;
    case DataType::kComplex64: FillReals<float>(t, rng); break;
    case DataType::kComplex128: FillReals<double>(t, rng); break;
    case DataType::kFloat16:
    case DataType::kBfloat16: {
      std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
      auto* p = t.data_as<uint16_t>();
      for (int64_t i = 0; i < t.element_count(); ++i) {
        p[i] = t.dtype == DataType::kFloat16 ? FloatToHalf(dist(rng)) : FloatToBfloat16(dist(rng));
      }
      break;
    }
    case DataType::kInt8: FillInts<int8_t>(t, rng, r); break;
    case DataType::kUint8: FillInts<uint8_t>(t, rng, r); break;
    case DataType::kInt16: FillInts<int16_t>(t, rng, r); break;
    case DataType::kUint16: FillInts<uint16_t>(t, rng, r); break;
    case DataType::kInt32: FillInts<int32_t>(t, rng, r); break;
    case DataType::kUint32: FillInts<uint32_t>(t, rng, r); break;
    case DataType::kInt64: FillInts<int64_t>(t, rng, r); break;
    case DataType::kUint64: FillInts<uint64_t>(t, rng, r); break;
    case DataType::kBool: FillInts<uint8_t>(t, rng, {0, 2}); break;
    case DataType::kString:
      for (size_t i = 0; i < t.strings.size(); ++i) t.strings[i] = "ortgpu " + std::to_string(rng() % 1000);
      break;
    default: break;
  }
}


Status CheckShapeFits(const TensorInfo& input, const std::vector<int64_t>& shape, const std::string& source) {
  if (shape.size() != input.shape.size()) {
    return InvalidArgument(source + " gives input '" + input.name + "' shape " + ShapeToString(shape) + " but the model expects rank " +
                           std::to_string(input.shape.size()) + " (" + ShapeToString(input.shape) + ")");
  }
  for (size_t d = 0; d < shape.size(); ++d) {
    if (input.shape[d] >= 0 && input.shape[d] != shape[d]) {
      return InvalidArgument(source + " gives input '" + input.name + "' shape " + ShapeToString(shape) + " but the model expects " +
                             ShapeToString(input.shape) + " (dimension " + std::to_string(d) + " is fixed at " +
                             std::to_string(input.shape[d]) + ")");
    }
  }
  return Status::Ok();
}

namespace {

std::string Flag(std::string_view flag, const std::string& name, const std::vector<int64_t>& dims) {
  return std::string(flag) + " " + name + ":" + ShapeToString(dims);
}

// "x (?x3x?: batch, width), mask (?)" for messages.
std::string DescribeInputs(const std::vector<TensorInfo>& inputs) {
  std::string out;
  for (const auto& in : inputs) {
    std::string names;
    for (const auto& d : in.dim_names) {
      if (!d.empty()) names += (names.empty() ? "" : ", ") + d;
    }
    out += (out.empty() ? "" : ", ") + in.name + " (" + ShapeToString(in.shape) + (names.empty() ? "" : ": " + names) +
           ")";
  }
  return out;
}

}  // namespace

ShapeFlags ShapeFlagsFor(const std::vector<TensorInfo>& inputs, const ShapeFlags& shapes) {
  ShapeFlags mine;
  for (const auto& [name, dims] : shapes) {
    for (const auto& in : inputs) {
      if (in.name == name || std::find(in.dim_names.begin(), in.dim_names.end(), name) != in.dim_names.end()) {
        mine[name] = dims;
      }
    }
  }
  return mine;
}

Status CheckShapeFlags(const std::vector<TensorInfo>& inputs, const ShapeFlags& shapes, std::string_view flag) {
  for (const auto& flag_shape : shapes) {
    // Not a structured binding: clang 14 (the fuzz build's) cannot capture one in a lambda.
    const std::string& name = flag_shape.first;
    const auto& dims = flag_shape.second;
    const auto input = std::find_if(inputs.begin(), inputs.end(), [&](const TensorInfo& i) { return i.name == name; });
    if (input != inputs.end()) {
      ORTGPU_RETURN_IF_ERROR(CheckShapeFits(*input, dims, Flag(flag, name, dims)));
      continue;
    }
    const bool is_dim = std::any_of(inputs.begin(), inputs.end(), [&](const TensorInfo& i) {
      return std::find(i.dim_names.begin(), i.dim_names.end(), name) != i.dim_names.end();
    });
    if (!is_dim) {
      return InvalidArgument(Flag(flag, name, dims) + ": the model has no input or symbolic dimension '" + name +
                             "'; its inputs: " + DescribeInputs(inputs) +
                             ". Give an input's full shape (NAME:1x3x224x224) or a symbolic dimension's size "
                             "(batch:8)");
    }
    if (dims.size() != 1 || dims[0] < 1) {
      return InvalidArgument(Flag(flag, name, dims) + ": '" + name +
                             "' is a symbolic dimension, so it takes one size of at least 1 (e.g. " +
                             std::string(flag) + " " + name + ":8)");
    }
  }
  return Status::Ok();
}

Status CheckInputSize(const std::string& name, DataType dtype, const std::vector<int64_t>& shape,
                      const std::string& source, uint64_t limit) {
  const uint64_t element = dtype == DataType::kString ? sizeof(std::string) : std::max<size_t>(ElementSize(dtype), 1);
  // Multiplied in long double so that no product of int64 dims can wrap.
  long double bytes = static_cast<long double>(element);
  for (int64_t d : shape) {
    if (d < 0) {
      return InvalidArgument(source + " gives input '" + name + "' shape " + ShapeToString(shape) +
                             " with a negative dimension; every dimension must be a size");
    }
    bytes *= static_cast<long double>(d);
  }
  if (bytes > static_cast<long double>(limit)) {
    return InvalidArgument(fmt::format("{} makes input '{}' shape {} of {}: {:.3g} bytes, above the limit of {} GiB per "
                                       "input; give smaller dimensions (--shape, --batch)",
                                       source, name, ShapeToString(shape), ShortName(dtype),
                                       static_cast<double>(bytes), limit >> 30));
  }
  return Status::Ok();
}

Expected<std::vector<int64_t>> ResolveInputShape(const TensorInfo& input, const ShapeFlags& shapes,
                                                 UnsizedDims unsized, std::vector<std::string>* defaulted,
                                                 std::string_view flag) {
  if (auto given = shapes.find(input.name); given != shapes.end()) {
    ORTGPU_RETURN_IF_ERROR(CheckShapeFits(input, given->second, Flag(flag, input.name, given->second)));
    return given->second;
  }
  std::vector<int64_t> shape = input.shape;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] >= 0) continue;
    const std::string dim_name = d < input.dim_names.size() ? input.dim_names[d] : "";
    auto named = dim_name.empty() ? shapes.end() : shapes.find(dim_name);
    if (named != shapes.end() && named->second.size() == 1) {
      shape[d] = named->second[0];
      continue;
    }
    const int64_t size = d == 0 ? unsized.leading : unsized.others;
    if (size < 0) {
      return InvalidArgument("input '" + input.name + "' has symbolic dimension " + std::to_string(d) +
                             (dim_name.empty() ? "" : " ('" + dim_name + "')") + " (shape " +
                             ShapeToString(input.shape) + "); give its size with " + std::string(flag) + " " +
                             (dim_name.empty() ? input.name + ":<dims>" : dim_name + ":<size>"));
    }
    shape[d] = size;
    if (defaulted != nullptr) {
      defaulted->push_back(input.name + "[" + std::to_string(d) + "]" + (dim_name.empty() ? "" : "=" + dim_name));
    }
  }
  return shape;
}

}  // namespace ortgpu
