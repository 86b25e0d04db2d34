#include "serve/protocol/infer_response_encoder.h"

#include <charconv>
#include <cmath>
#include <cstring>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <simdjson.h>

namespace ortgpu::serve::protocol {
namespace {

template <typename T>
void AppendNumber(std::string& out, T v) {
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), v);
  out.append(buf, end);
}

template <typename F>
void AppendFloat(std::string& out, F v) {
  if (std::isnan(v)) {
    out += "NaN";
  } else if (std::isinf(v)) {
    out += v > 0 ? "Infinity" : "-Infinity";
  } else if (v == 0 && std::signbit(v)) {
    // to_chars writes "-0", which JSON readers (Python, nlohmann, tritonclient)
    // take as the integer 0: the sign would be lost.
    out += "-0.0";
  } else {
    AppendNumber(out, v);
  }
}

template <typename T>
T Load(const Tensor& t, int64_t i) {
  T v;
  std::memcpy(&v, t.data.data() + static_cast<size_t>(i) * sizeof(T), sizeof(T));
  return v;
}

void AppendElement(std::string& out, const Tensor& t, int64_t i) {
  switch (t.dtype) {
    case DataType::kBool: out += Load<uint8_t>(t, i) ? "true" : "false"; break;
    case DataType::kUint8: AppendNumber(out, Load<uint8_t>(t, i)); break;
    case DataType::kUint16: AppendNumber(out, Load<uint16_t>(t, i)); break;
    case DataType::kUint32: AppendNumber(out, Load<uint32_t>(t, i)); break;
    case DataType::kUint64: AppendNumber(out, Load<uint64_t>(t, i)); break;
    case DataType::kInt8: AppendNumber(out, Load<int8_t>(t, i)); break;
    case DataType::kInt16: AppendNumber(out, Load<int16_t>(t, i)); break;
    case DataType::kInt32: AppendNumber(out, Load<int32_t>(t, i)); break;
    case DataType::kInt64: AppendNumber(out, Load<int64_t>(t, i)); break;
    case DataType::kFloat16: AppendFloat(out, HalfToFloat(Load<uint16_t>(t, i))); break;
    case DataType::kBfloat16: AppendFloat(out, Bfloat16ToFloat(Load<uint16_t>(t, i))); break;
    case DataType::kFloat: AppendFloat(out, Load<float>(t, i)); break;
    case DataType::kDouble: AppendFloat(out, Load<double>(t, i)); break;
    case DataType::kString: AppendJsonString(out, t.strings[static_cast<size_t>(i)]); break;
    default: out += "null"; break;
  }
}

void AppendParameters(std::string& out, const Parameters& p) {
  out += '{';
  bool first = true;
  for (const auto& [key, json_text] : p) {
    if (!first) out += ',';
    first = false;
    AppendJsonString(out, key);
    out += ':';
    out += json_text.empty() ? "null" : json_text;
  }
  out += '}';
}

// The binary form of a tensor: its raw bytes, or for BYTES each element as a
// 4-byte little-endian length and its bytes.
void AppendBinary(std::string& out, const Tensor& t) {
  if (t.dtype != DataType::kString) {
    out.append(reinterpret_cast<const char*>(t.data.data()), t.data.size());
    return;
  }
  for (const std::string& s : t.strings) {
    uint32_t n = static_cast<uint32_t>(s.size());
    char len[4] = {static_cast<char>(n & 0xff), static_cast<char>((n >> 8) & 0xff),
                   static_cast<char>((n >> 16) & 0xff), static_cast<char>((n >> 24) & 0xff)};
    out.append(len, 4);
    out += s;
  }
}

// A BYTES tensor holding an element that is not UTF-8: a JSON string cannot
// carry it without losing bytes, so it is sent in the binary section.
bool NotJsonText(const Tensor& t) {
  if (t.dtype != DataType::kString) return false;
  for (const std::string& s : t.strings) {
    if (!simdjson::validate_utf8(s.data(), s.size())) return true;
  }
  return false;
}

size_t BinarySize(const Tensor& t) {
  if (t.dtype != DataType::kString) return t.data.size();
  size_t n = 0;
  for (const std::string& s : t.strings) n += 4 + s.size();
  return n;
}

}  // namespace

void AppendJsonString(std::string& out, std::string_view s) {
  out += nlohmann::json(std::string(s)).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::vector<bool> ResolveOutputBinary(const InferRequest& request, const InferResponse& response) {
  std::vector<bool> binary(response.outputs.size(), request.binary_data_output);
  for (size_t i = 0; i < response.outputs.size(); ++i) {
    for (const RequestedOutput& r : request.outputs) {
      // A named output is binary only when it says so itself (Triton's
      // http_server.cc and L0_http): binary_data_output is the default for
      // the outputs the request does not name.
      if (r.name == response.outputs[i].name) binary[i] = r.binary_data;
    }
  }
  return binary;
}

Expected<EncodedBody> EncodeInferResponse(const InferResponse& response) {
  // An output written into a shared memory region is sent as its name,
  // datatype and shape alone, as Triton sends it: no data and no
  // parameters (Triton's C++ HTTP client takes any parameters object on an
  // output for a binary section and requires binary_data_size in it).
  auto in_shared_memory = [&](size_t i) {
    return i < response.output_parameters.size() && response.output_parameters[i].count("shared_memory_region") > 0;
  };
  for (size_t i = 0; i < response.outputs.size(); ++i) {
    const Tensor& t = response.outputs[i];
    if (KServeName(t.dtype).empty()) {
      return Internal(fmt::format("output '{}' has type {}, which the KServe protocol cannot carry", t.name,
                                  OnnxTypeName(t.dtype)));
    }
    if (!ElementCount(t.shape)) {
      return Internal(fmt::format("output '{}' has shape [{}], which is not concrete", t.name,
                                  ShapeToString(t.shape)));
    }
    // Bytes the instance wrote into a CUDA region device to device are not
    // here (the placeholder has none): only what is sent is checked.
    if (in_shared_memory(i)) continue;
    Status size = ValidateTensorSize(t);
    if (!size.ok()) return Internal(size.message());
  }
  EncodedBody encoded;
  std::string& out = encoded.body;
  out.reserve(256);
  out += "{\"model_name\":";
  AppendJsonString(out, response.model_name);
  out += ",\"model_version\":";
  AppendJsonString(out, response.model_version);
  if (!response.id.empty()) {
    out += ",\"id\":";
    AppendJsonString(out, response.id);
  }
  if (!response.parameters.empty()) {
    out += ",\"parameters\":";
    AppendParameters(out, response.parameters);
  }
  // Binary outputs: those asked for, and BYTES outputs with elements that
  // are not UTF-8 (NotJsonText), so that every byte reaches the client.
  std::vector<bool> binary_out(response.outputs.size());
  for (size_t i = 0; i < response.outputs.size(); ++i) {
    const bool asked = i < response.output_binary.size() && response.output_binary[i];
    binary_out[i] = !in_shared_memory(i) && (asked || NotJsonText(response.outputs[i]));
  }
  out += ",\"outputs\":[";
  bool any_binary = false;
  for (size_t i = 0; i < response.outputs.size(); ++i) {
    const Tensor& t = response.outputs[i];
    const bool binary = binary_out[i];
    if (i > 0) out += ',';
    out += "{\"name\":";
    AppendJsonString(out, t.name);
    out += ",\"datatype\":\"";
    out += KServeName(t.dtype);
    out += "\",\"shape\":[";
    for (size_t d = 0; d < t.shape.size(); ++d) {
      if (d > 0) out += ',';
      AppendNumber(out, t.shape[d]);
    }
    out += ']';
    if (in_shared_memory(i)) {
      out += '}';
      continue;
    }
    if (binary) {
      any_binary = true;
      out += ",\"parameters\":{\"binary_data_size\":";
      AppendNumber(out, BinarySize(t));
      out += "}}";
      continue;
    }
    out += ",\"data\":[";
    int64_t n = t.element_count();
    for (int64_t e = 0; e < n; ++e) {
      if (e > 0) out += ',';
      AppendElement(out, t, e);
    }
    out += "]}";
  }
  out += "]}";
  if (any_binary) {
    encoded.json_length = out.size();
    encoded.content_type = "application/octet-stream";
    for (size_t i = 0; i < response.outputs.size(); ++i) {
      if (!binary_out[i]) continue;
      const Tensor& t = response.outputs[i];
      if (t.dtype != DataType::kString && (t.data.borrowed() || !encoded.tail.empty())) {
        // A view of the tensor's buffer (shared, not copied); once the tail
        // has begun, every later section joins it to keep the order.
        encoded.tail.push_back(t.data);  // a borrowed TensorBytes copies as a view
      } else if (!encoded.tail.empty()) {
        std::string bytes;
        AppendBinary(bytes, t);
        encoded.tail.emplace_back(std::vector<uint8_t>(bytes.begin(), bytes.end()));
      } else {
        AppendBinary(out, t);
      }
    }
  }
  return encoded;
}

std::string FlattenBody(const EncodedBody& encoded) {
  std::string out = encoded.body;
  for (const auto& t : encoded.tail) out.append(reinterpret_cast<const char*>(t.data()), t.size());
  return out;
}

std::string EncodeError(const Status& status) {
  std::string out = "{\"error\":";
  AppendJsonString(out, status.ok() ? std::string("ok") : status.message());
  out += '}';
  return out;
}

}  // namespace ortgpu::serve::protocol
