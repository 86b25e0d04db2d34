#include "perf/request_builder.h"

#include <charconv>
#include <cstring>

#include <nlohmann/json.hpp>

namespace ortgpu::perf {
namespace {

using nlohmann::json;

void AppendNumber(std::string& out, double v, DataType t) {
  char buf[64];
  std::to_chars_result r{};
  if (t == DataType::kFloat || t == DataType::kFloat16 || t == DataType::kBfloat16) {
    r = std::to_chars(buf, buf + sizeof buf, static_cast<float>(v));
  } else if (t == DataType::kDouble) {
    r = std::to_chars(buf, buf + sizeof buf, v);
  } else if (t == DataType::kUint64) {
    r = std::to_chars(buf, buf + sizeof buf, static_cast<uint64_t>(v));
  } else {
    r = std::to_chars(buf, buf + sizeof buf, static_cast<int64_t>(v));
  }
  out.append(buf, r.ptr);
}

// The flat "data" array of `t` in JSON. Random inputs are finite, so no
// NaN/Infinity spelling is needed; real data with them must go binary.
std::string JsonData(const Tensor& t) {
  std::string out = "[";
  const int64_t n = t.element_count();
  for (int64_t i = 0; i < n; ++i) {
    if (i > 0) out += ',';
    if (t.dtype == DataType::kString) {
      out += json(t.strings[static_cast<size_t>(i)]).dump(-1, ' ', false, json::error_handler_t::replace);
    } else if (t.dtype == DataType::kBool) {
      out += t.data[static_cast<size_t>(i)] ? "true" : "false";
    } else {
      AppendNumber(out, ElementAsDouble(t, i), t.dtype);
    }
  }
  return out + "]";
}

// BYTES in binary: each element a 4-byte little-endian length, then its bytes.
std::string BinaryData(const Tensor& t) {
  if (t.dtype != DataType::kString) return std::string(reinterpret_cast<const char*>(t.data.data()), t.data.size());
  std::string out;
  for (const auto& s : t.strings) {
    const auto len = static_cast<uint32_t>(s.size());
    for (int b = 0; b < 4; ++b) out += static_cast<char>((len >> (8 * b)) & 0xff);
    out += s;
  }
  return out;
}

}  // namespace

std::string ModelPath(const std::string& model, const std::string& version, const std::string& suffix) {
  std::string p = "/v2/models/" + model;
  if (!version.empty()) p += "/versions/" + version;
  return p + suffix;
}

Expected<ModelInfo> ParseModelInfo(const std::string& metadata_json, const std::string& config_json) {
  json md = json::parse(metadata_json, nullptr, false);
  if (md.is_discarded() || !md.is_object()) return InvalidArgument("the model metadata is not a JSON object: " + metadata_json.substr(0, 200));
  ModelInfo m;
  m.name = md.value("name", "");
  m.platform = md.value("platform", "");
  if (!md.contains("inputs") || !md["inputs"].is_array() || md["inputs"].empty()) {
    return InvalidArgument("the model metadata lists no inputs, so perf cannot build a request: " + metadata_json.substr(0, 200));
  }
  for (const auto& in : md["inputs"]) {
    TensorInfo t;
    t.name = in.value("name", "");
    const std::string datatype = in.value("datatype", "");
    auto dtype = DataTypeFromKServe(datatype);
    if (t.name.empty() || !dtype) {
      return InvalidArgument("the model metadata has an input perf does not understand (name '" + t.name + "', datatype '" +
                             datatype + "'); KServe datatypes are BOOL, UINT8..64, INT8..64, FP16, BF16, FP32, FP64, BYTES");
    }
    t.dtype = *dtype;
    if (in.contains("shape") && in["shape"].is_array()) {
      for (const auto& d : in["shape"]) t.shape.push_back(d.is_number_integer() ? d.get<int64_t>() : -1);
    }
    t.dim_names.assign(t.shape.size(), "");
    t.type_text = OnnxTypeName(t.dtype);
    m.inputs.push_back(std::move(t));
  }
  if (md.contains("outputs") && md["outputs"].is_array()) {
    for (const auto& out : md["outputs"]) m.outputs.push_back(out.value("name", ""));
  }
  if (!config_json.empty()) {
    json cfg = json::parse(config_json, nullptr, false);
    if (cfg.is_object() && cfg.contains("max_batch_size") && cfg["max_batch_size"].is_number_integer()) {
      m.max_batch_size = cfg["max_batch_size"].get<int64_t>();
    }
  }
  return m;
}

Expected<ModelInfo> FetchModelInfo(const HttpEndpoint& endpoint, const std::string& model, const std::string& version,
                                   std::chrono::milliseconds timeout) {
  ORTGPU_ASSIGN_OR_RETURN(FetchResult md, Fetch(endpoint, ModelPath(model, version, ""), timeout));
  if (md.status == 404 || md.status == 400) {
    return NotFound("the server at http://" + endpoint.authority() + " has no ready model '" + model + "' (HTTP " +
                    std::to_string(md.status) + ": " + md.body.substr(0, 200) +
                    "); list its models with: curl -X POST http://" + endpoint.authority() + "/v2/repository/index");
  }
  if (md.status != 200) {
    return Unavailable("GET " + ModelPath(model, version, "") + " answered HTTP " + std::to_string(md.status) + ": " +
                       md.body.substr(0, 200));
  }
  std::string config;
  auto cfg = Fetch(endpoint, ModelPath(model, version, "/config"), timeout);
  if (cfg.ok() && cfg->status == 200) config = std::move(cfg->body);
  ORTGPU_ASSIGN_OR_RETURN(ModelInfo info, ParseModelInfo(md.body, config));
  info.config_json = std::move(config);
  if (info.name.empty()) info.name = model;
  info.name = model;  // the name requests are sent to
  info.version = version;
  return info;
}

Expected<std::vector<Tensor>> MakeRequestInputs(const ModelInfo& model, const bench::InputSpec& spec, int64_t rows) {
  std::vector<TensorInfo> inputs = model.inputs;
  if (model.max_batch_size > 0) {
    // The batch dim is variable whatever the metadata prints for it.
    for (auto& in : inputs) {
      if (!in.shape.empty()) in.shape[0] = -1;
    }
  }
  return bench::MakeInputs(inputs, spec, rows);
}

std::string SharedMemoryParametersJson(const RegionRef& ref) {
  return "{\"shared_memory_region\":" + json(ref.region).dump() + ",\"shared_memory_offset\":" +
         std::to_string(ref.offset) + ",\"shared_memory_byte_size\":" + std::to_string(ref.byte_size) + "}";
}

Expected<EncodedRequest> EncodeInferRequest(const ModelInfo& model, const std::vector<Tensor>& inputs, TensorFormat format,
                                            const std::string& host, const SharedMemoryPlan* shm) {
  if (shm != nullptr && (shm->inputs.size() != inputs.size() || shm->outputs.size() != model.outputs.size())) {
    return InvalidArgument("the shared memory plan does not have a region for every input and output");
  }
  const bool binary = format == TensorFormat::kBinary && shm == nullptr;
  std::string header = "{\"inputs\":[";
  std::string binary_body;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& t = inputs[i];
    ORTGPU_RETURN_IF_ERROR(ValidateTensorSize(t));
    if (i > 0) header += ',';
    header += "{\"name\":" + json(t.name).dump() + ",\"datatype\":\"" + std::string(KServeName(t.dtype)) + "\",\"shape\":" +
              json(t.shape).dump();
    if (shm != nullptr) {
      header += ",\"parameters\":" + SharedMemoryParametersJson(shm->inputs[i]) + "}";
    } else if (binary) {
      const std::string bytes = BinaryData(t);
      header += ",\"parameters\":{\"binary_data_size\":" + std::to_string(bytes.size()) + "}}";
      binary_body += bytes;
    } else {
      header += ",\"data\":" + JsonData(t) + "}";
    }
  }
  header += "],\"outputs\":[";
  for (size_t i = 0; i < model.outputs.size(); ++i) {
    if (i > 0) header += ',';
    header += "{\"name\":" + json(model.outputs[i]).dump() + ",\"parameters\":" +
              (shm != nullptr ? SharedMemoryParametersJson(shm->outputs[i])
                              : std::string("{\"binary_data\":") + (binary ? "true" : "false") + "}") +
              "}";
  }
  header += "]}";
  EncodedRequest r;
  r.json_header = header;
  r.body = header + binary_body;
  r.head = "POST " + ModelPath(model.name, model.version, "/infer") + " HTTP/1.1\r\nHost: " + host + "\r\n";
  if (binary) {
    r.head += "Content-Type: application/octet-stream\r\nInference-Header-Content-Length: " + std::to_string(header.size()) + "\r\n";
  } else {
    r.head += "Content-Type: application/json\r\n";
  }
  r.head += "Content-Length: " + std::to_string(r.body.size()) + "\r\n\r\n";
  return r;
}

}  // namespace ortgpu::perf
