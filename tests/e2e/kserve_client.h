// The client side of KServe v2 inference over HTTP, written independently of
// the server's codec (serve/protocol/) so end-to-end tests check one against
// the other: a request encoder (JSON tensors, or the Triton binary tensor
// extension) and a response decoder (JSON data and binary sections).
//
// Wire decisions, as a Python or tritonclient client would make them:
//   - JSON floats are written as the shortest decimal of the value widened
//     to double, so FP16/BF16/FP32/FP64 arrive bit-exact; negative zero as
//     "-0.0" (as Python writes it); NaN and infinities as the strings "NaN",
//     "Infinity", "-Infinity" (the server's extension).
//   - Responses may hold the bare tokens NaN, Infinity, -Infinity, which
//     strict JSON parsers reject; the decoder quotes them first.
//   - BYTES in binary: each element a 4-byte little-endian length and bytes.
//
// Pure functions; safe to call from any thread.
#pragma once

#include <charconv>
#include <cmath>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "ort/tensor.h"
#include "serve/core/conformance_cases.h"
#include "serve/http/test_http_client.h"
#include "status/expected.h"

namespace ortgpu::e2e {

enum class TensorEncoding { kJson, kBinary };

struct KServeRequest {
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;  // Content-Type, Inference-Header-Content-Length
};

namespace kserve_detail {

inline void AppendJsonString(std::string& out, std::string_view s) {
  out += nlohmann::json(std::string(s)).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

template <typename T>
void AppendInteger(std::string& out, T v) {
  char buf[32];
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), v);
  out.append(buf, end);
}

inline void AppendReal(std::string& out, double v) {
  if (std::isnan(v)) {
    out += "\"NaN\"";
  } else if (std::isinf(v)) {
    out += v > 0 ? "\"Infinity\"" : "\"-Infinity\"";
  } else if (v == 0 && std::signbit(v)) {
    out += "-0.0";  // "-0" is the integer 0 to JSON readers, the server's included
  } else {
    char buf[64];
    auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), v);
    out.append(buf, end);
  }
}

template <typename T>
T Load(const Tensor& t, int64_t i) {
  T v;
  std::memcpy(&v, t.data.data() + static_cast<size_t>(i) * sizeof(T), sizeof(T));
  return v;
}

inline Status AppendJsonData(std::string& out, const Tensor& t) {
  out += '[';
  for (int64_t i = 0; i < t.element_count(); ++i) {
    if (i > 0) out += ',';
    switch (t.dtype) {
      case DataType::kBool: out += Load<uint8_t>(t, i) ? "true" : "false"; break;
      case DataType::kUint8: AppendInteger(out, Load<uint8_t>(t, i)); break;
      case DataType::kUint16: AppendInteger(out, Load<uint16_t>(t, i)); break;
      case DataType::kUint32: AppendInteger(out, Load<uint32_t>(t, i)); break;
      case DataType::kUint64: AppendInteger(out, Load<uint64_t>(t, i)); break;
      case DataType::kInt8: AppendInteger(out, Load<int8_t>(t, i)); break;
      case DataType::kInt16: AppendInteger(out, Load<int16_t>(t, i)); break;
      case DataType::kInt32: AppendInteger(out, Load<int32_t>(t, i)); break;
      case DataType::kInt64: AppendInteger(out, Load<int64_t>(t, i)); break;
      case DataType::kFloat16: AppendReal(out, HalfToFloat(Load<uint16_t>(t, i))); break;
      case DataType::kBfloat16: AppendReal(out, Bfloat16ToFloat(Load<uint16_t>(t, i))); break;
      case DataType::kFloat: AppendReal(out, Load<float>(t, i)); break;
      case DataType::kDouble: AppendReal(out, Load<double>(t, i)); break;
      case DataType::kString: AppendJsonString(out, t.strings[static_cast<size_t>(i)]); break;
      default: return Unimplemented("input '" + t.name + "': no JSON form for " + OnnxTypeName(t.dtype));
    }
  }
  out += ']';
  return Status::Ok();
}

inline void AppendBinaryData(std::string& out, const Tensor& t) {
  if (t.dtype != DataType::kString) {
    out.append(reinterpret_cast<const char*>(t.data.data()), t.data.size());
    return;
  }
  for (const std::string& s : t.strings) {
    const auto n = static_cast<uint32_t>(s.size());
    const char len[4] = {static_cast<char>(n & 0xff), static_cast<char>((n >> 8) & 0xff),
                         static_cast<char>((n >> 16) & 0xff), static_cast<char>((n >> 24) & 0xff)};
    out.append(len, 4);
    out += s;
  }
}

// A tensor from its binary section: raw little-endian elements, or for BYTES
// length-prefixed strings that fill `bytes` exactly.
inline Expected<Tensor> TensorFromBinary(Tensor t, std::string_view bytes) {
  const int64_t count = t.element_count();
  if (t.dtype != DataType::kString) {
    if (bytes.size() != static_cast<size_t>(count) * ElementSize(t.dtype)) {
      return InvalidArgument("output '" + t.name + "': " + std::to_string(bytes.size()) + " binary bytes for " +
                             std::to_string(count) + " elements of " + std::string(KServeName(t.dtype)));
    }
    t.data.assign(bytes.begin(), bytes.end());
    return t;
  }
  size_t pos = 0;
  for (int64_t i = 0; i < count; ++i) {
    if (bytes.size() - pos < 4) return InvalidArgument("output '" + t.name + "': BYTES data ends in a length");
    const auto* u = reinterpret_cast<const unsigned char*>(bytes.data() + pos);
    const uint32_t len = u[0] | u[1] << 8 | u[2] << 16 | static_cast<uint32_t>(u[3]) << 24;
    pos += 4;
    if (bytes.size() - pos < len) return InvalidArgument("output '" + t.name + "': BYTES element overruns");
    t.strings.emplace_back(bytes.substr(pos, len));
    pos += len;
  }
  if (pos != bytes.size()) return InvalidArgument("output '" + t.name + "': trailing binary bytes");
  return t;
}

}  // namespace kserve_detail

// Rewrites the bare tokens NaN, Infinity and -Infinity outside JSON strings
// into the strings "NaN", "Infinity", "-Infinity", so a strict parser reads
// what Python's json module would.
inline std::string QuoteNonFiniteTokens(std::string_view json) {
  std::string out;
  out.reserve(json.size());
  bool in_string = false;
  for (size_t i = 0; i < json.size(); ++i) {
    const char c = json[i];
    if (in_string) {
      out += c;
      if (c == '\\' && i + 1 < json.size()) out += json[++i];
      else if (c == '"') in_string = false;
      continue;
    }
    bool quoted = false;
    for (std::string_view token : {"NaN", "Infinity", "-Infinity"}) {
      if (json.substr(i, token.size()) == token) {
        out += '"';
        out += token;
        out += '"';
        i += token.size() - 1;
        quoted = true;
        break;
      }
    }
    if (quoted) continue;
    if (c == '"') in_string = true;
    out += c;
  }
  return out;
}

// POST /v2/models/<m>/infer body for `inputs`, requesting `outputs` by name:
// kJson puts the data in JSON; kBinary sends every input in the binary section
// (parameters.binary_data_size) and asks for every output with binary_data.
inline Expected<KServeRequest> EncodeInferRequest(const std::vector<Tensor>& inputs,
                                                  const std::vector<std::string>& outputs, TensorEncoding encoding) {
  const bool binary = encoding == TensorEncoding::kBinary;
  KServeRequest r;
  std::string& out = r.body;
  std::string binary_part;
  out += "{\"inputs\":[";
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& t = inputs[i];
    if (KServeName(t.dtype).empty()) return Unimplemented("input '" + t.name + "': no KServe datatype");
    if (i > 0) out += ',';
    out += "{\"name\":";
    kserve_detail::AppendJsonString(out, t.name);
    out += ",\"datatype\":\"";
    out += KServeName(t.dtype);
    out += "\",\"shape\":[";
    for (size_t d = 0; d < t.shape.size(); ++d) {
      if (d > 0) out += ',';
      kserve_detail::AppendInteger(out, t.shape[d]);
    }
    out += ']';
    if (binary) {
      const size_t before = binary_part.size();
      kserve_detail::AppendBinaryData(binary_part, t);
      out += ",\"parameters\":{\"binary_data_size\":";
      kserve_detail::AppendInteger(out, binary_part.size() - before);
      out += "}}";
    } else {
      out += ",\"data\":";
      ORTGPU_RETURN_IF_ERROR(kserve_detail::AppendJsonData(out, t));
      out += '}';
    }
  }
  out += "],\"outputs\":[";
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (i > 0) out += ',';
    out += "{\"name\":";
    kserve_detail::AppendJsonString(out, outputs[i]);
    out += binary ? ",\"parameters\":{\"binary_data\":true}}" : "}";
  }
  out += "]}";
  if (binary) {
    r.headers.emplace_back("Inference-Header-Content-Length", std::to_string(out.size()));
    r.headers.emplace_back("Content-Type", "application/octet-stream");
    out += binary_part;
  } else {
    r.headers.emplace_back("Content-Type", "application/json");
  }
  return r;
}

// The output tensors of an infer response: JSON `data`, or the binary section
// located by Inference-Header-Content-Length and each output's
// binary_data_size, in output order. A non-200 response is an error carrying
// its status and body.
inline Expected<std::vector<Tensor>> DecodeInferResponse(const serve::testing::HttpResult& r) {
  if (r.status != 200) return Internal("HTTP " + std::to_string(r.status) + ": " + r.body.substr(0, 300));
  std::string_view body = r.body;
  std::string_view binary;
  if (const std::string h = r.header("Inference-Header-Content-Length"); !h.empty()) {
    size_t n = 0;
    auto [end, ec] = std::from_chars(h.data(), h.data() + h.size(), n);
    if (ec != std::errc() || end != h.data() + h.size() || n > body.size()) {
      return InvalidArgument("bad Inference-Header-Content-Length '" + h + "'");
    }
    binary = body.substr(n);
    body = body.substr(0, n);
  }
  auto j = nlohmann::json::parse(QuoteNonFiniteTokens(body), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.contains("outputs")) return InvalidArgument("response is not KServe JSON: " + r.body.substr(0, 300));
  std::vector<Tensor> tensors;
  size_t used = 0;
  try {
    for (const auto& o : j["outputs"]) {
      if (!o.contains("parameters") || !o["parameters"].contains("binary_data_size")) {
        ORTGPU_ASSIGN_OR_RETURN(Tensor t, serve::testing::TensorFromKServeJson(o));
        tensors.push_back(std::move(t));
        continue;
      }
      Tensor t;
      t.name = o.at("name").get<std::string>();
      auto dt = DataTypeFromKServe(o.at("datatype").get<std::string>());
      if (!dt) return InvalidArgument("output '" + t.name + "': unknown datatype");
      t.dtype = *dt;
      t.shape = o.at("shape").get<std::vector<int64_t>>();
      const auto size = o["parameters"]["binary_data_size"].get<size_t>();
      if (size > binary.size() - used) return InvalidArgument("output '" + t.name + "': binary section too short");
      ORTGPU_ASSIGN_OR_RETURN(Tensor decoded, kserve_detail::TensorFromBinary(std::move(t), binary.substr(used, size)));
      used += size;
      tensors.push_back(std::move(decoded));
    }
  } catch (const nlohmann::json::exception& e) {
    return InvalidArgument(std::string("response JSON has an unexpected form: ") + e.what());
  }
  if (used != binary.size()) return InvalidArgument("binary section has bytes no output claims");
  return tensors;
}

}  // namespace ortgpu::e2e
