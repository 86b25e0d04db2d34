#include "serve/grpc/grpc_codec.h"

#include <algorithm>

#include <cstring>
#include <limits>
#include <memory>

#include <fmt/format.h>

namespace ortgpu::serve {
namespace {

using inference::InferTensorContents;

std::string ShapeText(const google::protobuf::RepeatedField<int64_t>& shape) {
  return fmt::format("[{}]", fmt::join(shape.begin(), shape.end(), ","));
}

// Copies `values` into `t` as elements of type T, checking each fits.
template <typename T, typename Repeated>
Status StoreValues(const Repeated& values, Tensor& t, std::string_view field) {
  t.data.resize(static_cast<size_t>(values.size()) * sizeof(T));
  T* out = t.data_as<T>();
  int i = 0;
  for (const auto v : values) {
    if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
      using V = decltype(v);
      if constexpr (std::is_signed_v<V> == std::is_signed_v<T>) {
        if (v < std::numeric_limits<T>::min() || v > std::numeric_limits<T>::max()) {
          return InvalidArgument(fmt::format("input '{}': {} value {} is out of range for {}", t.name, field, v,
                                             KServeName(t.dtype)));
        }
      }
    }
    out[i++] = static_cast<T>(v);
  }
  return Status::Ok();
}

// The typed field Triton uses for `dtype`, and how many values it holds.
Status FromContents(const InferTensorContents& c, Tensor& t) {
  switch (t.dtype) {
    case DataType::kBool: {
      t.data.resize(static_cast<size_t>(c.bool_contents_size()));
      for (int i = 0; i < c.bool_contents_size(); ++i) t.data[static_cast<size_t>(i)] = c.bool_contents(i) ? 1 : 0;
      return Status::Ok();
    }
    case DataType::kInt8: return StoreValues<int8_t>(c.int_contents(), t, "int_contents");
    case DataType::kInt16: return StoreValues<int16_t>(c.int_contents(), t, "int_contents");
    case DataType::kInt32: return StoreValues<int32_t>(c.int_contents(), t, "int_contents");
    case DataType::kInt64: return StoreValues<int64_t>(c.int64_contents(), t, "int64_contents");
    case DataType::kUint8: return StoreValues<uint8_t>(c.uint_contents(), t, "uint_contents");
    case DataType::kUint16: return StoreValues<uint16_t>(c.uint_contents(), t, "uint_contents");
    case DataType::kUint32: return StoreValues<uint32_t>(c.uint_contents(), t, "uint_contents");
    case DataType::kUint64: return StoreValues<uint64_t>(c.uint64_contents(), t, "uint64_contents");
    case DataType::kFloat: return StoreValues<float>(c.fp32_contents(), t, "fp32_contents");
    case DataType::kDouble: return StoreValues<double>(c.fp64_contents(), t, "fp64_contents");
    case DataType::kString:
      t.strings.assign(c.bytes_contents().begin(), c.bytes_contents().end());
      return Status::Ok();
    default:
      return InvalidArgument(fmt::format("input '{}': datatype {} has no typed contents field; send it in "
                                         "raw_input_contents",
                                         t.name, KServeName(t.dtype)));
  }
}

void CopyParameters(const google::protobuf::Map<std::string, inference::InferParameter>& from, Parameters& to) {
  for (const auto& [key, value] : from) to[key] = GrpcParameterToJsonText(value);
}

// The tensor's shared memory parameters when they name a region (the
// region is read after decoding, PrepareExtensions; infer_extensions.h).
// InvalidArgument when they are malformed, Unimplemented without `shm`.
Expected<std::optional<Parameters>> RegionParameters(
    const google::protobuf::Map<std::string, inference::InferParameter>& params, const std::string& where,
    const SharedMemoryRegistry* shm) {
  Parameters p;
  CopyParameters(params, p);
  ORTGPU_ASSIGN_OR_RETURN(auto ref, SharedMemoryRefFromParameters(p, where));
  if (!ref) return std::optional<Parameters>();
  if (shm == nullptr) return Unimplemented(fmt::format("{}: this server has no shared memory", where));
  return std::optional<Parameters>(std::move(p));
}

// `raw` (moved from) holds the bytes, or the input is in a shared memory
// region (`in_region`: its data is left empty, read after decoding), or
// neither: typed contents.
Expected<Tensor> DecodeInput(inference::ModelInferRequest::InferInputTensor& in, std::string* raw, bool in_region) {
  Tensor t;
  t.name = in.name();
  if (t.name.empty()) return InvalidArgument("an input has no name");
  auto dtype = DataTypeFromKServe(in.datatype());
  if (!dtype) {
    return InvalidArgument(fmt::format("input '{}': unknown datatype '{}'; use a KServe datatype such as FP32, "
                                       "INT64 or BYTES",
                                       t.name, in.datatype()));
  }
  t.dtype = *dtype;
  for (int64_t d : in.shape()) {
    if (d < 0) return InvalidArgument(fmt::format("input '{}': shape {} has a negative dimension", t.name,
                                                  ShapeText(in.shape())));
    t.shape.push_back(d);
  }
  const auto count = ElementCount(t.shape);
  if (!count) return InvalidArgument(fmt::format("input '{}': shape {} is too large", t.name, ShapeText(in.shape())));

  if (in_region) {
    if (in.has_contents()) {
      return InvalidArgument(fmt::format("input '{}' names a shared memory region and sets contents; use one", t.name));
    }
    return t;  // ReadSharedMemoryInputs checks the region's size against the shape
  }
  if (raw != nullptr) {
    if (t.dtype == DataType::kString) {
      ORTGPU_RETURN_IF_ERROR(ParseSerializedStrings(*raw, t));
    } else {
      const size_t want = static_cast<size_t>(*count) * ElementSize(t.dtype);
      if (raw->size() != want) {
        return InvalidArgument(fmt::format("input '{}': raw_input_contents holds {} bytes, but shape {} of {} needs {}",
                                           t.name, raw->size(), ShapeText(in.shape()), in.datatype(), want));
      }
      // The tensor borrows the bytes, moved out of the message: no copy.
      auto owner = std::make_shared<std::string>(std::move(*raw));
      const auto* bytes = reinterpret_cast<const uint8_t*>(owner->data());
      const size_t size = owner->size();
      t.data.Borrow(std::move(owner), bytes, size);
    }
  } else {
    if (!in.has_contents()) {
      return InvalidArgument(fmt::format("input '{}' has no data: set its contents or send raw_input_contents for "
                                         "every input",
                                         t.name));
    }
    ORTGPU_RETURN_IF_ERROR(FromContents(in.contents(), t));
  }
  const int64_t got = t.dtype == DataType::kString ? static_cast<int64_t>(t.strings.size())
                                                   : static_cast<int64_t>(t.byte_size() / ElementSize(t.dtype));
  if (got != *count) {
    return InvalidArgument(fmt::format("input '{}': {} elements were sent, but shape {} needs {}", t.name, got,
                                       ShapeText(in.shape()), *count));
  }
  return t;
}

}  // namespace

Expected<InferRequest> DecodeGrpcInferRequest(inference::ModelInferRequest& request, const SharedMemoryRegistry* shm) {
  InferRequest r;
  r.model_name = request.model_name();
  if (r.model_name.empty()) return InvalidArgument("model_name is empty; name the model to run");
  r.model_version = request.model_version();
  r.id = request.id();
  CopyParameters(request.parameters(), r.parameters);
  std::vector<std::optional<Parameters>> regions;
  int in_memory = 0;  // inputs not in a shared memory region
  for (const auto& in : request.inputs()) {
    ORTGPU_ASSIGN_OR_RETURN(auto region, RegionParameters(in.parameters(), fmt::format("input '{}'", in.name()), shm));
    if (!region) ++in_memory;
    regions.push_back(std::move(region));
  }
  const int raw_count = request.raw_input_contents_size();
  if (raw_count > 0 && raw_count != in_memory) {
    return InvalidArgument(fmt::format("the request has {} inputs outside shared memory but {} raw_input_contents; "
                                       "send one entry per such input, in input order",
                                       in_memory, raw_count));
  }
  r.inputs.reserve(static_cast<size_t>(request.inputs_size()));
  int next_raw = 0;
  for (int i = 0; i < request.inputs_size(); ++i) {
    auto& in = *request.mutable_inputs(i);
    auto& region = regions[static_cast<size_t>(i)];
    if (raw_count > 0 && !region && in.has_contents()) {
      return InvalidArgument(fmt::format("input '{}' sets contents while the request uses raw_input_contents; use "
                                         "one or the other",
                                         in.name()));
    }
    std::string* raw = raw_count > 0 && !region ? request.mutable_raw_input_contents(next_raw++) : nullptr;
    ORTGPU_ASSIGN_OR_RETURN(Tensor t, DecodeInput(in, raw, region.has_value()));
    for (const Tensor& other : r.inputs) {
      if (other.name == t.name) return InvalidArgument(fmt::format("input '{}' is given twice", t.name));
    }
    if (region) r.shared_memory_inputs[t.name] = std::move(*region);
    r.inputs.push_back(std::move(t));
  }
  for (const auto& out : request.outputs()) {
    if (out.name().empty()) return InvalidArgument("a requested output has no name");
    // Its region is checked with the inputs' (PrepareExtensions).
    ORTGPU_RETURN_IF_ERROR(RegionParameters(out.parameters(), fmt::format("output '{}'", out.name()), shm).status());
    RequestedOutput o;
    o.name = out.name();
    CopyParameters(out.parameters(), o.parameters);
    r.outputs.push_back(std::move(o));
  }
  return r;
}

Status EncodeGrpcInferResponse(const InferResponse& response, inference::ModelInferResponse& out) {
  out.set_model_name(response.model_name);
  out.set_model_version(response.model_version);
  out.set_id(response.id);
  for (const auto& [key, text] : response.parameters) (*out.mutable_parameters())[key] = GrpcParameterFromJsonText(text);
  for (size_t i = 0; i < response.outputs.size(); ++i) {
    const Tensor& t = response.outputs[i];
    const std::string_view dtype = KServeName(t.dtype);
    if (dtype.empty()) return Internal(fmt::format("output '{}' has a datatype with no KServe name", t.name));
    const bool in_region = i < response.output_parameters.size() &&
                           response.output_parameters[i].count("shared_memory_region") > 0;
    // An output written into a CUDA region device to device has no bytes here.
    if (!in_region) ORTGPU_RETURN_IF_ERROR(ValidateTensorSize(t));
    auto* o = out.add_outputs();
    o->set_name(t.name);
    o->set_datatype(std::string(dtype));
    for (int64_t d : t.shape) o->add_shape(d);
    if (in_region) {
      // Written into its region (WriteSharedMemoryOutputs); the empty entry
      // keeps the indices of the other outputs aligned.
      for (const auto& [key, text] : response.output_parameters[i]) {
        (*o->mutable_parameters())[key] = GrpcParameterFromJsonText(text);
      }
      out.add_raw_output_contents();
    } else {
      *out.add_raw_output_contents() = SerializedTensorBytes(t);
    }
  }
  return Status::Ok();
}

std::string GrpcParameterToJsonText(const inference::InferParameter& p) {
  switch (p.parameter_choice_case()) {
    case inference::InferParameter::kBoolParam: return p.bool_param() ? "true" : "false";
    case inference::InferParameter::kInt64Param: return std::to_string(p.int64_param());
    case inference::InferParameter::kStringParam: return nlohmann::json(p.string_param()).dump();
    default: return "null";
  }
}

inference::InferParameter GrpcParameterFromJsonText(const std::string& json_text) {
  inference::InferParameter p;
  auto j = nlohmann::json::parse(json_text, nullptr, /*allow_exceptions=*/false);
  if (j.is_boolean()) {
    p.set_bool_param(j.get<bool>());
  } else if (j.is_number_integer()) {
    p.set_int64_param(j.get<int64_t>());
  } else if (j.is_string()) {
    p.set_string_param(j.get<std::string>());
  } else {
    p.set_string_param(json_text);  // a double or a structure: its JSON text
  }
  return p;
}

namespace {
void SetDuration(const Duration& d, inference::StatisticDuration& out) {
  out.set_count(d.count);
  out.set_ns(d.ns);
}
}  // namespace

void EncodeGrpcStatistics(const std::vector<StatsSnapshot>& versions, inference::ModelStatisticsResponse& out) {
  for (const StatsSnapshot& v : versions) {
    inference::ModelStatistics& m = *out.add_model_stats();
    m.set_name(v.name);
    m.set_version(v.version);
    m.set_last_inference(static_cast<uint64_t>(std::max<int64_t>(0, v.last_inference_ms)));
    m.set_inference_count(v.inference_count);
    m.set_execution_count(v.execution_count);
    inference::InferStatistics& s = *m.mutable_inference_stats();
    SetDuration(v.success, *s.mutable_success());
    SetDuration(v.fail, *s.mutable_fail());
    SetDuration(v.queue, *s.mutable_queue());
    SetDuration(v.compute_input, *s.mutable_compute_input());
    SetDuration(v.compute_infer, *s.mutable_compute_infer());
    SetDuration(v.compute_output, *s.mutable_compute_output());
    for (const auto& [size, f] : v.batches) {
      inference::InferBatchStatistics& b = *m.add_batch_stats();
      b.set_batch_size(static_cast<uint64_t>(size));
      SetDuration(f.compute_input, *b.mutable_compute_input());
      SetDuration(f.compute_infer, *b.mutable_compute_infer());
      SetDuration(f.compute_output, *b.mutable_compute_output());
    }
    for (const auto& u : v.memory_usage) {
      inference::MemoryUsage& mu = *m.add_memory_usage();
      mu.set_type(u.type);
      mu.set_id(u.id);
      mu.set_byte_size(u.byte_size);
    }
  }
}

}  // namespace ortgpu::serve
