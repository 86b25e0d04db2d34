#include "bench/inputs.h"

#include <algorithm>
#include <cstring>
#include <random>

#include "bench/tensor_files.h"
#include "ort/random_inputs.h"

namespace ortgpu::bench {
namespace {

Expected<int64_t> ParseInt(const std::string& text, const std::string& flag) {
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || errno != 0) return InvalidArgument(flag + ": '" + text + "' is not an integer");
  return static_cast<int64_t>(v);
}

void Fill(Tensor& t, const InputSpec& spec, uint32_t salt) {
  auto range_it = spec.int_ranges.find(t.name);
  const IntRange r = range_it != spec.int_ranges.end() ? range_it->second : DefaultIntRange(t.name, t.dtype);
  FillRandom(t, spec.seed * 0x9E3779B97F4A7C15ull + salt, r);
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

}  // namespace

Status ParseShapeFlag(const std::string& text, InputSpec& spec) {
  // NAME is an input ("input_ids:1x128") or a symbolic dimension ("sequence:128").
  return ortgpu::ParseShapeFlag(text, spec.shapes);
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
  // The grammar doctor and serve's warm-up share; a symbolic dim other than
  // the batch must be given.
  return ResolveInputShape(input, spec.shapes, UnsizedDims{batch, -1});
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
  ORTGPU_RETURN_IF_ERROR(CheckShapeFlags(inputs, spec.shapes));
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
        std::vector<int64_t> tiled = t.shape;
        tiled[0] = batch;
        ORTGPU_RETURN_IF_ERROR(CheckInputSize(in.name, in.dtype, tiled, "--batch " + std::to_string(batch)));
        t = TileBatch(t, batch);
      }
      ORTGPU_RETURN_IF_ERROR(CheckShapeFits(in, t.shape, "--input " + file->second));
      out.push_back(std::move(t));
      continue;
    }
    ORTGPU_ASSIGN_OR_RETURN(std::vector<int64_t> shape, ResolveShape(in, spec, batch));
    for (size_t d = 0; d < shape.size(); ++d) {
      if (in.shape[d] < 0 && shape[d] < 1) {
        return InvalidArgument("input '" + in.name + "' gets shape " + ShapeToString(shape) + ": dimension " +
                               std::to_string(d) + " is " + std::to_string(shape[d]) +
                               "; a --shape value must be at least 1");
      }
    }
    ORTGPU_RETURN_IF_ERROR(CheckInputSize(in.name, in.dtype, shape, "--shape/--batch"));
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
