#include "bench/inputs.h"

#include <algorithm>
#include <cstring>
#include <random>

#include "bench/tensor_files.h"

namespace ortgpu::bench {
namespace {

std::string Lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

Expected<int64_t> ParseInt(const std::string& text, const std::string& flag) {
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || errno != 0) return InvalidArgument(flag + ": '" + text + "' is not an integer");
  return static_cast<int64_t>(v);
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

IntRange DefaultRange(const std::string& name, DataType type) {
  const std::string n = Lower(name);
  if (n.find("mask") != std::string::npos) return {1, 2};
  if (n.find("type_ids") != std::string::npos || n.find("segment") != std::string::npos) return {0, 1};
  if (type == DataType::kInt8) return {-128, 128};
  if (type == DataType::kUint8) return {0, 256};
  return {0, 100};
}

void Fill(Tensor& t, const InputSpec& spec, uint32_t salt) {
  std::mt19937_64 rng(spec.seed * 0x9E3779B97F4A7C15ull + salt);
  auto range_it = spec.int_ranges.find(t.name);
  const IntRange r = range_it != spec.int_ranges.end() ? range_it->second : DefaultRange(t.name, t.dtype);
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

// Repeats or cuts `t` along dimension 0 to `batch` rows.
Tensor TileBatch(const Tensor& t, int64_t batch) {
  Tensor out = t;
  out.shape[0] = batch;
  const int64_t rows = t.shape[0];
  const int64_t row_elems = rows == 0 ? 0 : t.element_count() / rows;
  if (t.dtype == DataType::kString) {
    out.strings.resize(static_cast<size_t>(batch * row_elems));
    for (int64_t i = 0; i < batch * row_elems; ++i) out.strings[i] = t.strings[i % (rows * row_elems)];
    return out;
  }
  const size_t row_bytes = static_cast<size_t>(row_elems) * ElementSize(t.dtype);
  out.data.resize(static_cast<size_t>(batch) * row_bytes);
  for (int64_t b = 0; b < batch; ++b) {
    std::memcpy(out.data.data() + b * row_bytes, t.data.data() + (b % rows) * row_bytes, row_bytes);
  }
  return out;
}

Status CheckFits(const TensorInfo& input, const std::vector<int64_t>& shape, const std::string& source) {
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

}  // namespace

Status ParseShapeFlag(const std::string& text, InputSpec& spec) {
  const auto colon = text.rfind(':');
  if (colon == std::string::npos || colon == 0) {
    return InvalidArgument("--shape '" + text + "' is not NAME:DIMS; e.g. --shape input_ids:1x128 or --shape sequence:128");
  }
  auto dims = ParseShape(text.substr(colon + 1));
  if (!dims.ok()) return dims.status().WithContext("--shape " + text);
  spec.shapes[text.substr(0, colon)] = *dims;
  return Status::Ok();
}

Status ParseIntRangeFlag(const std::string& text, InputSpec& spec) {
  const auto c2 = text.rfind(':');
  const auto c1 = c2 == std::string::npos || c2 == 0 ? std::string::npos : text.rfind(':', c2 - 1);
  if (c1 == std::string::npos || c1 == 0) {
    return InvalidArgument("--int-range '" + text + "' is not NAME:LO:HI; e.g. --int-range input_ids:0:30000");
  }
  ORTGPU_ASSIGN_OR_RETURN(int64_t lo, ParseInt(text.substr(c1 + 1, c2 - c1 - 1), "--int-range " + text));
  ORTGPU_ASSIGN_OR_RETURN(int64_t hi, ParseInt(text.substr(c2 + 1), "--int-range " + text));
  if (hi <= lo) return InvalidArgument("--int-range " + text + ": HI must be greater than LO (values are drawn from [LO, HI))");
  spec.int_ranges[text.substr(0, c1)] = {lo, hi};
  return Status::Ok();
}

Status ParseInputFlag(const std::string& text, InputSpec& spec) {
  const auto eq = text.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == text.size()) {
    return InvalidArgument("--input '" + text + "' is not NAME=FILE; e.g. --input image=cat.npy");
  }
  spec.files[text.substr(0, eq)] = text.substr(eq + 1);
  return Status::Ok();
}

bool HasDynamicBatch(const std::vector<TensorInfo>& inputs) {
  for (const auto& in : inputs) {
    if (!in.shape.empty() && in.shape[0] < 0) return true;
  }
  return false;
}

Expected<std::vector<int64_t>> ResolveShape(const TensorInfo& input, const InputSpec& spec, int64_t batch) {
  auto given = spec.shapes.find(input.name);
  if (given != spec.shapes.end()) {
    std::vector<int64_t> shape = given->second;
    ORTGPU_RETURN_IF_ERROR(CheckFits(input, shape, "--shape"));
    return shape;
  }
  std::vector<int64_t> shape = input.shape;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] >= 0) continue;
    const std::string dim_name = d < input.dim_names.size() ? input.dim_names[d] : "";
    auto named = dim_name.empty() ? spec.shapes.end() : spec.shapes.find(dim_name);
    if (named != spec.shapes.end() && named->second.size() == 1) {
      shape[d] = named->second[0];
    } else if (d == 0) {
      shape[d] = batch;
    } else {
      std::string example = ShapeToString(input.shape);
      return InvalidArgument("input '" + input.name + "' has symbolic dimension " + std::to_string(d) +
                             (dim_name.empty() ? "" : " ('" + dim_name + "')") + " (shape " + example +
                             "); give its size with --shape " + (dim_name.empty() ? input.name + ":<dims>" : dim_name + ":<size>"));
    }
  }
  return shape;
}

Expected<std::vector<Tensor>> MakeInputs(const std::vector<TensorInfo>& inputs, const InputSpec& spec, int64_t batch) {
  auto known = [&inputs](const std::string& name) {
    return std::any_of(inputs.begin(), inputs.end(), [&](const TensorInfo& i) { return i.name == name; });
  };
  auto names = [&inputs] {
    std::string s;
    for (const auto& i : inputs) s += (s.empty() ? "" : ", ") + i.name;
    return s;
  };
  for (const auto& [name, file] : spec.files) {
    if (!known(name)) return InvalidArgument("--input names '" + name + "', which the model does not have; its inputs: " + names());
  }
  for (const auto& [name, range] : spec.int_ranges) {
    if (!known(name)) return InvalidArgument("--int-range names '" + name + "', which the model does not have; its inputs: " + names());
  }
  std::vector<Tensor> out;
  uint32_t salt = 0;
  for (const auto& in : inputs) {
    ++salt;
    if (!in.is_tensor) return Unimplemented("input '" + in.name + "' is a " + in.type_text + "; bench feeds tensors only");
    auto file = spec.files.find(in.name);
    if (file != spec.files.end()) {
      ORTGPU_ASSIGN_OR_RETURN(Tensor t, ReadTensorFile(file->second, in.name));
      if (t.dtype != in.dtype) {
        return InvalidArgument("--input " + in.name + "=" + file->second + " holds " + std::string(ShortName(t.dtype)) +
                               " but the model expects " + std::string(ShortName(in.dtype)));
      }
      if (!in.shape.empty() && in.shape[0] < 0 && !t.shape.empty() && t.shape[0] != batch && t.shape[0] > 0) {
        t = TileBatch(t, batch);
      }
      ORTGPU_RETURN_IF_ERROR(CheckFits(in, t.shape, "--input " + file->second));
      out.push_back(std::move(t));
      continue;
    }
    ORTGPU_ASSIGN_OR_RETURN(std::vector<int64_t> shape, ResolveShape(in, spec, batch));
    if (!ElementCount(shape)) return InvalidArgument("input '" + in.name + "' shape " + ShapeToString(shape) + " is too large");
    if (ElementSize(in.dtype) == 0 && in.dtype != DataType::kString) {
      return Unimplemented("input '" + in.name + "' has type " + in.type_text + ", which bench cannot generate");
    }
    Tensor t = Tensor::Zeros(in.name, in.dtype, shape);
    Fill(t, spec, salt);
    out.push_back(std::move(t));
  }
  return out;
}

}  // namespace ortgpu::bench
