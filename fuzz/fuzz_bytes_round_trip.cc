// libFuzzer target over a BYTES tensor's whole trip through the server
// (issue 25): a request carrying arbitrary elements (NUL and bytes that are
// not UTF-8 included) is decoded (JSON or the binary extension), run through
// an ONNX Runtime Identity session on the CPU, and encoded as the response;
// the response, read as a client reads it, must hold every element byte for
// byte. Traps on any difference.
//
// Input layout: byte 0 holds flags (bit 0: the input in the binary
// extension, else JSON; bit 1: the output asked in binary; bit 2: JSON
// escapes every ASCII byte as \u00XX). Then elements, each a length byte L
// and L bytes (the last one cut short where the input ends), at most 64.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>
#include <simdjson.h>

#include "onnx/model_builder.h"
#include "ort/session.h"
#include "serve/protocol/infer_request_decoder.h"
#include "serve/protocol/infer_response_encoder.h"

namespace {

using ortgpu::DataType;

constexpr size_t kMaxElements = 64;

const ortgpu::Session& IdentitySession() {
  static const std::unique_ptr<ortgpu::Session> session = [] {
    ortgpu::onnx::ModelBuilder b;
    b.AddInput("text", DataType::kString, {-1}, {"n"});
    b.AddOutput("echo", DataType::kString, {-1}, {"n"});
    b.AddNode("Identity", {"text"}, {"echo"});
    ortgpu::SessionOptions options;
    options.intra_op_threads = 1;
    options.inter_op_threads = 1;
    auto s = ortgpu::Session::LoadFromBytes(b.Serialize(), options, "identity_string");
    if (!s.ok()) __builtin_trap();
    return std::move(s).value();
  }();
  return *session;
}

void AppendLe32(std::string& out, uint32_t n) {
  for (int i = 0; i < 4; ++i) out += static_cast<char>((n >> (8 * i)) & 0xff);
}

// A JSON string literal of `s` as a client would write it: quotes,
// backslashes and control characters escaped, and with `escape_ascii` every
// ASCII byte as \u00XX; other bytes as they are.
void AppendJsonString(std::string& out, std::string_view s, bool escape_ascii) {
  static const char* kHex = "0123456789abcdef";
  out += '"';
  for (char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || (escape_ascii && u < 0x80)) {
      out += "\\u00";
      out += kHex[u >> 4];
      out += kHex[u & 15];
    } else if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else {
      out += c;
    }
  }
  out += '"';
}

// The elements of output 0 as a client reads them: JSON strings, or the
// binary section located by the JSON part's length and binary_data_size.
std::vector<std::string> ClientRead(const ortgpu::serve::protocol::EncodedBody& encoded) {
  const std::string body = ortgpu::serve::protocol::FlattenBody(encoded);
  const size_t json_size = encoded.json_length.value_or(body.size());
  auto j = nlohmann::json::parse(body.substr(0, json_size), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) __builtin_trap();  // the JSON part is always JSON
  const auto& out = j["outputs"][0];
  std::vector<std::string> elements;
  if (!out.contains("parameters") || !out["parameters"].contains("binary_data_size")) {
    for (const auto& e : out["data"]) elements.push_back(e.get<std::string>());
    return elements;
  }
  std::string_view bin = std::string_view(body).substr(json_size);
  if (out["parameters"]["binary_data_size"].get<size_t>() != bin.size()) __builtin_trap();
  size_t pos = 0;
  while (pos < bin.size()) {
    if (bin.size() - pos < 4) __builtin_trap();
    const auto* u = reinterpret_cast<const unsigned char*>(bin.data() + pos);
    const uint32_t n = u[0] | u[1] << 8 | u[2] << 16 | static_cast<uint32_t>(u[3]) << 24;
    pos += 4;
    if (bin.size() - pos < n) __builtin_trap();
    elements.emplace_back(bin.substr(pos, n));
    pos += n;
  }
  return elements;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ortgpu::serve;
  if (size < 1) return 0;
  const bool binary_input = data[0] & 1;
  const bool binary_output = data[0] & 2;
  const bool escape_ascii = data[0] & 4;
  std::vector<std::string> elements;
  bool all_utf8 = true;
  for (size_t pos = 1; pos < size && elements.size() < kMaxElements;) {
    const size_t n = std::min<size_t>(data[pos], size - pos - 1);
    elements.emplace_back(reinterpret_cast<const char*>(data + pos + 1), n);
    all_utf8 = all_utf8 && simdjson::validate_utf8(elements.back().data(), n);
    pos += 1 + n;
  }

  std::string body = R"({"inputs":[{"name":"text","datatype":"BYTES","shape":[)" + std::to_string(elements.size()) +
                     "]";
  std::optional<size_t> json_length;
  std::string section;
  if (binary_input) {
    for (const std::string& s : elements) {
      AppendLe32(section, static_cast<uint32_t>(s.size()));
      section += s;
    }
    body += R"(,"parameters":{"binary_data_size":)" + std::to_string(section.size()) + "}";
  } else {
    body += R"(,"data":[)";
    for (size_t i = 0; i < elements.size(); ++i) {
      if (i > 0) body += ',';
      AppendJsonString(body, elements[i], escape_ascii);
    }
    body += ']';
  }
  body += R"(}],"outputs":[{"name":"echo","parameters":{"binary_data":)";
  body += binary_output ? "true}}]}" : "false}}]}";
  if (binary_input) {
    json_length = body.size();
    body += section;
  }

  auto request = protocol::DecodeInferRequest(body, json_length, "echo_bytes", "");
  if (!binary_input && !all_utf8) {
    // JSON is UTF-8 text: other bytes are refused, never taken in altered.
    if (request.ok() || request.status().code() != ortgpu::Code::kInvalidArgument) __builtin_trap();
    return 0;
  }
  if (!request.ok() || request->inputs.size() != 1 || request->inputs[0].strings != elements) __builtin_trap();

  auto outputs = IdentitySession().Run(request->inputs);
  if (!outputs.ok() || outputs->size() != 1 || (*outputs)[0].strings != elements) __builtin_trap();

  InferResponse response;
  response.model_name = "echo_bytes";
  response.model_version = "1";
  response.outputs = std::move(outputs).value();
  response.output_binary = protocol::ResolveOutputBinary(*request, response);
  auto encoded = protocol::EncodeInferResponse(response);
  if (!encoded.ok()) __builtin_trap();
  // Asked for JSON, UTF-8 text stays JSON; anything else comes binary.
  if (encoded->json_length.has_value() != (binary_output || !all_utf8)) __builtin_trap();
  if (ClientRead(*encoded) != elements) __builtin_trap();
  return 0;
}
