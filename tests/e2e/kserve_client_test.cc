// The test client's KServe codec (e2e/kserve_client.h) against the server's
// (serve/protocol/), in-process: values the ONNX node tests lack (integer
// extremes, signed zero, denormals, NaN and infinities in every float type,
// BYTES with quotes and invalid UTF-8, empty and scalar tensors) must cross
// each way unchanged, in JSON and in binary. What JSON cannot carry is stated.
#include "e2e/kserve_client.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <optional>

#include "serve/protocol/infer_request_decoder.h"
#include "serve/protocol/infer_response_encoder.h"

namespace ortgpu::e2e {
namespace {

template <typename T>
Tensor Make(std::string name, DataType dt, std::vector<T> values, std::optional<std::vector<int64_t>> shape = {}) {
  Tensor t;
  t.name = std::move(name);
  t.dtype = dt;
  t.shape = shape.value_or(std::vector<int64_t>{static_cast<int64_t>(values.size())});
  t.data.resize(values.size() * sizeof(T));
  std::memcpy(t.data.data(), values.data(), t.data.size());
  return t;
}

Tensor Strings(std::string name, std::vector<std::string> values) {
  Tensor t;
  t.name = std::move(name);
  t.dtype = DataType::kString;
  t.shape = {static_cast<int64_t>(values.size())};
  t.strings = std::move(values);
  return t;
}

// Every value survives bit for bit, except that all NaNs read back as one
// quiet NaN in JSON.
void ExpectSame(const std::vector<Tensor>& got, const std::vector<Tensor>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    SCOPED_TRACE(want[i].name);
    EXPECT_EQ(got[i].name, want[i].name);
    EXPECT_EQ(got[i].dtype, want[i].dtype);
    EXPECT_EQ(got[i].shape, want[i].shape);
    EXPECT_EQ(got[i].strings, want[i].strings);
    ASSERT_EQ(got[i].data.size(), want[i].data.size());
    if (got[i].data == want[i].data) continue;
    for (int64_t e = 0; e < want[i].element_count(); ++e) {
      const double g = ElementAsDouble(got[i], e), w = ElementAsDouble(want[i], e);
      if (std::isnan(w)) EXPECT_TRUE(std::isnan(g)) << "element " << e;
      else EXPECT_TRUE(g == w && std::signbit(g) == std::signbit(w)) << "element " << e << ": " << g << " vs " << w;
    }
  }
}

std::vector<Tensor> EdgeTensors() {
  const float fnan = std::numeric_limits<float>::quiet_NaN(), finf = std::numeric_limits<float>::infinity();
  const double dnan = std::numeric_limits<double>::quiet_NaN(), dinf = std::numeric_limits<double>::infinity();
  return {
      Make<float>("fp32", DataType::kFloat,
                  {fnan, finf, -finf, -0.0f, 0.1f, std::numeric_limits<float>::denorm_min(),
                   std::numeric_limits<float>::max(), std::numeric_limits<float>::lowest()}),
      Make<double>("fp64", DataType::kDouble,
                   {dnan, dinf, -dinf, -0.0, 0.1, std::numeric_limits<double>::denorm_min(),
                    std::numeric_limits<double>::max()}),
      Make<uint16_t>("fp16", DataType::kFloat16,
                     {FloatToHalf(fnan), FloatToHalf(finf), FloatToHalf(-finf), 0x8000, 0x0001, 0x7bff, 0x3555}),
      Make<uint16_t>("bf16", DataType::kBfloat16,
                     {FloatToBfloat16(fnan), FloatToBfloat16(-finf), 0x8000, 0x0001, 0x7f7f, 0x3dcd}),
      Make<uint64_t>("u64", DataType::kUint64,
                     {std::numeric_limits<uint64_t>::max(), (uint64_t{1} << 53) + 1, 0}),
      Make<int64_t>("i64", DataType::kInt64,
                    {std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max(), -(int64_t{1} << 53) - 1}),
      Make<int8_t>("i8", DataType::kInt8, {-128, 127}),
      Make<uint8_t>("bool", DataType::kBool, {1, 0}),
      Make<int32_t>("scalar", DataType::kInt32, {-7}, std::vector<int64_t>{}),
      Make<float>("empty", DataType::kFloat, {}, std::vector<int64_t>{0, 3}),
      Strings("bytes", {"", "a\"b\\c", "caf\xc3\xa9", "line\nbreak"}),
  };
}

std::vector<std::string> Names(const std::vector<Tensor>& ts) {
  std::vector<std::string> names;
  for (const Tensor& t : ts) names.push_back(t.name);
  return names;
}

// Client request -> server decoder.
Expected<serve::InferRequest> SendToServer(const std::vector<Tensor>& inputs, TensorEncoding encoding) {
  ORTGPU_ASSIGN_OR_RETURN(KServeRequest r, EncodeInferRequest(inputs, Names(inputs), encoding));
  std::optional<size_t> json_length;
  for (const auto& [key, value] : r.headers) {
    if (key == serve::protocol::kInferenceHeaderContentLength) json_length = std::stoul(value);
  }
  return serve::protocol::DecodeInferRequest(r.body, json_length, "m", "1");
}

// Server encoder -> client decoder.
Expected<std::vector<Tensor>> ReceiveFromServer(const std::vector<Tensor>& outputs, bool binary) {
  serve::InferResponse response;
  response.model_name = "m";
  response.model_version = "1";
  response.outputs = outputs;
  response.output_binary.assign(outputs.size(), binary);
  ORTGPU_ASSIGN_OR_RETURN(serve::protocol::EncodedBody e, serve::protocol::EncodeInferResponse(response));
  serve::testing::HttpResult http;
  http.status = 200;
  http.body = e.body;
  if (e.json_length) http.raw.set(serve::protocol::kInferenceHeaderContentLength, std::to_string(*e.json_length));
  return DecodeInferResponse(http);
}

TEST(KServeClientTest, EdgeValuesReachTheServerUnchangedThroughJsonAndBinary) {
  const std::vector<Tensor> want = EdgeTensors();
  for (TensorEncoding encoding : {TensorEncoding::kJson, TensorEncoding::kBinary}) {
    SCOPED_TRACE(encoding == TensorEncoding::kJson ? "JSON" : "binary");
    auto got = SendToServer(want, encoding);
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    ExpectSame(got->inputs, want);
    EXPECT_EQ(got->outputs.size(), want.size());
    for (const auto& o : got->outputs) EXPECT_EQ(o.binary_data, encoding == TensorEncoding::kBinary);
  }
}

TEST(KServeClientTest, EdgeValuesComeBackFromTheServerUnchangedThroughJsonAndBinary) {
  const std::vector<Tensor> want = EdgeTensors();
  for (bool binary : {false, true}) {
    SCOPED_TRACE(binary ? "binary" : "JSON");
    auto got = ReceiveFromServer(want, binary);
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    ExpectSame(*got, want);
  }
}

TEST(KServeClientTest, BytesThatAreNotUtf8TravelOnlyInBinary) {
  const std::vector<Tensor> want = {Strings("raw", {std::string("\xff\x00\xfe", 3)})};
  auto binary = SendToServer(want, TensorEncoding::kBinary);
  ASSERT_TRUE(binary.ok());
  ExpectSame(binary->inputs, want);
  auto back = ReceiveFromServer(want, true);
  ASSERT_TRUE(back.ok());
  ExpectSame(*back, want);
  // Asked for JSON, they come in the binary section all the same: a JSON
  // string cannot carry them, and U+FFFD would lose them (issue 25).
  auto json = ReceiveFromServer(want, false);
  ASSERT_TRUE(json.ok()) << json.status().ToString();
  ExpectSame(*json, want);
}

TEST(KServeClientTest, NonFiniteTokensAreQuotedOnlyOutsideStrings) {
  EXPECT_EQ(QuoteNonFiniteTokens(R"({"NaN":[NaN,-Infinity,Infinity],"s":"a\"NaN"})"),
            R"({"NaN":["NaN","-Infinity","Infinity"],"s":"a\"NaN"})");
}

TEST(KServeClientTest, ErrorResponsesAndTruncatedBinarySectionsAreErrors) {
  serve::testing::HttpResult bad;
  bad.status = 400;
  bad.body = R"({"error":"input 'x' missing"})";
  auto r = DecodeInferResponse(bad);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("input 'x' missing"), std::string::npos);

  serve::testing::HttpResult cut;
  cut.status = 200;
  cut.body = R"({"outputs":[{"name":"y","datatype":"FP32","shape":[2],"parameters":{"binary_data_size":8}}]})";
  cut.raw.set(serve::protocol::kInferenceHeaderContentLength, std::to_string(cut.body.size()));
  cut.body += std::string(4, '\0');
  EXPECT_FALSE(DecodeInferResponse(cut).ok());
}

}  // namespace
}  // namespace ortgpu::e2e
