#include "serve/repository/warmup_inputs.h"

#include <algorithm>
#include <optional>
#include <cctype>
#include <random>

#include "serve/repository/model_config.h"

namespace ortgpu::serve {
namespace {

std::string Lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

bool IsInteger(DataType t) {
  switch (t) {
    case DataType::kInt8:
    case DataType::kInt16:
    case DataType::kInt32:
    case DataType::kInt64:
    case DataType::kUint8:
    case DataType::kUint16:
    case DataType::kUint32:
    case DataType::kUint64: return true;
    default: return false;
  }
}

void SetInteger(Tensor& t, int64_t i, int64_t v) {
  switch (t.dtype) {
    case DataType::kInt8: t.data_as<int8_t>()[i] = static_cast<int8_t>(v); break;
    case DataType::kInt16: t.data_as<int16_t>()[i] = static_cast<int16_t>(v); break;
    case DataType::kInt32: t.data_as<int32_t>()[i] = static_cast<int32_t>(v); break;
    case DataType::kInt64: t.data_as<int64_t>()[i] = v; break;
    case DataType::kUint8: t.data_as<uint8_t>()[i] = static_cast<uint8_t>(v); break;
    case DataType::kUint16: t.data_as<uint16_t>()[i] = static_cast<uint16_t>(v); break;
    case DataType::kUint32: t.data_as<uint32_t>()[i] = static_cast<uint32_t>(v); break;
    case DataType::kUint64: t.data_as<uint64_t>()[i] = static_cast<uint64_t>(v); break;
    default: break;
  }
}

// One generated input of `shape`; `seed` makes the floats of each input differ.
Tensor Generated(const std::string& name, DataType dtype, const std::vector<int64_t>& shape, uint32_t seed) {
  Tensor t = Tensor::Zeros(name, dtype, shape);
  const int64_t n = t.element_count();
  if (dtype == DataType::kString) {
    std::fill(t.strings.begin(), t.strings.end(), "1");
    return t;
  }
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(0.0f, 1.0f);
  const int64_t hint = IntegerHint(name);
  for (int64_t i = 0; i < n; ++i) {
    switch (dtype) {
      case DataType::kFloat: t.data_as<float>()[i] = dist(rng); break;
      case DataType::kDouble: t.data_as<double>()[i] = dist(rng); break;
      case DataType::kFloat16: t.data_as<uint16_t>()[i] = FloatToHalf(dist(rng)); break;
      case DataType::kBfloat16: t.data_as<uint16_t>()[i] = FloatToBfloat16(dist(rng)); break;
      case DataType::kBool: t.data_as<uint8_t>()[i] = 1; break;
      default:
        if (IsInteger(dtype)) SetInteger(t, i, hint);
    }
  }
  return t;
}

int64_t Bytes(const Tensor& t) {
  return t.dtype == DataType::kString ? t.element_count() * 2 : static_cast<int64_t>(t.data.size());
}

}  // namespace

int64_t IntegerHint(const std::string& input_name) {
  const std::string n = Lower(input_name);
  if (n == "sr" || n.find("sample_rate") != std::string::npos || n.find("sampling_rate") != std::string::npos ||
      n.find("samplerate") != std::string::npos) {
    return 16000;
  }
  return 1;
}

std::string DescribeWarmupCandidates() {
  return "every variable dim 1, 2, 16 and 64 in turn, floats in [0, 1), integer inputs 1 (16000 for a sample "
         "rate such as 'sr'), booleans true, strings \"1\"";
}

Expected<std::vector<WarmupCandidate>> GenerateWarmupCandidates(const inference::ModelConfig& config,
                                                                const WarmupHints& hints) {
  const std::map<std::string, Tensor>& given = hints.inputs;
  const bool batched = config.max_batch_size() > 0;
  ORTGPU_RETURN_IF_ERROR(CheckShapeFlags(hints.model_inputs, hints.shapes, "--warmup-shape"));
  // The dims of config input `in` a --warmup-shape sizes: its full shape, or
  // the sizes of its named symbolic dims (-1 where none).
  auto sized_by_flags = [&](const inference::ModelInput& in) -> std::optional<std::vector<int64_t>> {
    if (auto full = hints.shapes.find(in.name()); full != hints.shapes.end()) return full->second;
    const auto model = std::find_if(hints.model_inputs.begin(), hints.model_inputs.end(),
                                    [&](const TensorInfo& t) { return t.name == in.name(); });
    if (model == hints.model_inputs.end()) return std::nullopt;
    std::vector<int64_t> dims(model->shape.size(), -1);
    bool any = false;
    for (size_t d = 0; d < dims.size() && d < model->dim_names.size(); ++d) {
      auto named = hints.shapes.find(model->dim_names[d]);
      if (named != hints.shapes.end() && !model->dim_names[d].empty()) {
        dims[d] = named->second[0];
        any = true;
      }
    }
    if (!any) return std::nullopt;
    return dims;
  };
  for (const auto& [name, t] : given) {
    const auto it = std::find_if(config.input().begin(), config.input().end(),
                                 [&](const inference::ModelInput& in) { return in.name() == name; });
    if (it == config.input().end()) continue;  // another model's input
    const DataType want = FromConfigType(it->data_type());
    const size_t rank = static_cast<size_t>(it->dims_size()) + (batched ? 1 : 0);
    if (t.dtype != want || t.shape.size() != rank) {
      return InvalidArgument("the warm-up input given for '" + name + "' is " + std::string(ShortName(t.dtype)) +
                             " " + ShapeToString(t.shape) + " but the model takes " + std::string(ShortName(want)) +
                             " of rank " + std::to_string(rank) +
                             (batched ? " (batch dimension first)" : "") + "; give a tensor as a request would send it");
    }
  }
  bool any_variable = false;  // a dim no flag sizes: the candidates differ in it
  for (const auto& in : config.input()) {
    if (given.count(in.name())) continue;
    const auto flagged = sized_by_flags(in);
    for (int k = 0; k < in.dims_size(); ++k) {
      const size_t model_dim = static_cast<size_t>(k) + (batched ? 1 : 0);
      const bool sized = flagged && model_dim < flagged->size() && (*flagged)[model_dim] >= 0;
      any_variable = any_variable || (in.dims(k) < 0 && !sized);
    }
  }
  std::vector<WarmupCandidate> out;
  for (int64_t size : kWarmupDimSizes) {
    WarmupCandidate c;
    int64_t bytes = 0;
    std::string hints;
    uint32_t seed = 1;
    for (const auto& in : config.input()) {
      if (auto it = given.find(in.name()); it != given.end()) {
        c.inputs.push_back(it->second);
        bytes += Bytes(it->second);
        continue;
      }
      std::vector<int64_t> shape;
      if (batched) shape.push_back(1);
      for (int64_t d : in.dims()) shape.push_back(d < 0 ? size : d);
      if (const auto flagged = sized_by_flags(in); flagged && flagged->size() == shape.size()) {
        for (size_t d = 0; d < shape.size(); ++d) {
          if ((*flagged)[d] >= 0) shape[d] = (*flagged)[d];
        }
      }
      const DataType dtype = FromConfigType(in.data_type());
      const auto n = ElementCount(shape);
      const int64_t each = dtype == DataType::kString ? 2 : static_cast<int64_t>(ElementSize(dtype));
      if (!n || *n > (kMaxGeneratedWarmupBytes - bytes) / std::max<int64_t>(each, 1)) {
        if (out.empty()) {
          return InvalidArgument("the generated warm-up sample of input '" + in.name() + "' has shape " +
                                 ShapeToString(shape) + ", more than the 0.25 GiB that generated warm-up samples may "
                                 "hold in all, so the model cannot be warmed up. Give config.pbtxt smaller dims, or "
                                 "a model_warmup");
        }
        bytes = kMaxGeneratedWarmupBytes + 1;
        break;
      }
      bytes += *n * each;
      c.inputs.push_back(Generated(in.name(), dtype, shape, seed++));
      if (IsInteger(dtype) && IntegerHint(in.name()) != 1) {
        hints += ", " + in.name() + "=" + std::to_string(IntegerHint(in.name()));
      }
    }
    if (bytes > kMaxGeneratedWarmupBytes) break;  // larger sizes only grow
    c.description = (any_variable ? "variable dims " + std::to_string(size) : std::string("fixed dims")) + hints;
    out.push_back(std::move(c));
    if (!any_variable) break;  // every candidate would be the same
  }
  return out;
}

}  // namespace ortgpu::serve
