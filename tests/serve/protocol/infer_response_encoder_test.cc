#include "serve/protocol/infer_response_encoder.h"

#include <cmath>
#include <cstring>
#include <utility>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "serve/protocol/infer_request_decoder.h"

namespace ortgpu::serve::protocol {
namespace {

using ::testing::HasSubstr;

template <typename T>
Tensor Make(std::string name, DataType dt, std::vector<T> values) {
  Tensor t;
  t.name = std::move(name);
  t.dtype = dt;
  t.shape = {static_cast<int64_t>(values.size())};
  t.data.resize(values.size() * sizeof(T));
  std::memcpy(t.data.data(), values.data(), t.data.size());
  return t;
}

InferResponse Response(std::vector<Tensor> outputs) {
  InferResponse r;
  r.model_name = "m";
  r.model_version = "1";
  r.outputs = std::move(outputs);
  return r;
}

TEST(EncodeInferResponseTest, JsonBodyHasTheKServeFields) {
  InferResponse r = Response({Make<float>("y", DataType::kFloat, {1.5f, -2.0f})});
  r.id = "req-1";
  r.parameters["sequence_end"] = "true";
  auto e = EncodeInferResponse(r);
  ASSERT_TRUE(e.ok());
  EXPECT_FALSE(e->json_length.has_value());
  EXPECT_EQ(e->content_type, "application/json");
  EXPECT_EQ(e->body,
            R"({"model_name":"m","model_version":"1","id":"req-1","parameters":{"sequence_end":true},)"
            R"("outputs":[{"name":"y","datatype":"FP32","shape":[2],"data":[1.5,-2]}]})");
}

// An output the instance wrote into a CUDA region device to device comes
// back as a placeholder with the shape and no bytes (found on the H200: every
// CUDA shared memory request got a 500 "needs 4000 bytes, got 0").
TEST(EncodeInferResponseTest, AnOutputWrittenIntoACudaRegionIsSentWithoutBytes) {
  Tensor y;
  y.name = "output";
  y.dtype = DataType::kFloat;
  y.shape = {1, 1000};
  y.device = DeviceView{};
  InferResponse r = Response({y});
  r.output_parameters.resize(1);
  r.output_parameters[0]["shared_memory_region"] = "\"out\"";
  r.output_parameters[0]["shared_memory_byte_size"] = "4000";
  auto e = EncodeInferResponse(r);
  ASSERT_TRUE(e.ok()) << e.status().message();
  EXPECT_THAT(e->body, HasSubstr(R"({"name":"output","datatype":"FP32","shape":[1,1000]})"));
  EXPECT_THAT(e->body, ::testing::Not(HasSubstr("\"data\"")));
  // Without a region, the same placeholder is an error, not an empty output.
  r.output_parameters.clear();
  EXPECT_FALSE(EncodeInferResponse(r).ok());
}

TEST(EncodeInferResponseTest, NonFiniteFloatsAreNanAndInfinityTokens) {
  auto e = EncodeInferResponse(Response({Make<double>("y", DataType::kDouble, {NAN, INFINITY, -INFINITY, 0.1})}));
  ASSERT_TRUE(e.ok());
  EXPECT_THAT(e->body, HasSubstr(R"("data":[NaN,Infinity,-Infinity,0.1])"));
}

// "-0" reads back as the integer 0 in Python, nlohmann and tritonclient, so
// the sign of a negative zero was lost in JSON responses (found by the HTTP
// conformance client, tests/e2e/kserve_client_test.cc).
TEST(EncodeInferResponseTest, NegativeZeroKeepsItsSignInJson) {
  auto e = EncodeInferResponse(Response({Make<float>("f", DataType::kFloat, {-0.0f, 0.0f, -2.0f}),
                                         Make<double>("d", DataType::kDouble, {-0.0}),
                                         Make<uint16_t>("h", DataType::kFloat16, {0x8000})}));
  ASSERT_TRUE(e.ok());
  EXPECT_THAT(e->body, HasSubstr(R"("data":[-0.0,0,-2])"));
  auto j = nlohmann::json::parse(e->body);
  ASSERT_EQ(j["outputs"].size(), 3u) << e->body;
  for (const auto& out : j["outputs"]) {
    const double v = out["data"][0].get<double>();
    EXPECT_TRUE(v == 0 && std::signbit(v)) << out["name"];
  }
}

TEST(EncodeInferResponseTest, BoolAndFp16AndBytes) {
  Tensor s;
  s.name = "s";
  s.dtype = DataType::kString;
  s.shape = {2};
  s.strings = {"a\"b", std::string("\x01\0", 2)};
  auto e = EncodeInferResponse(Response({Make<uint8_t>("b", DataType::kBool, {1, 0}),
                                         Make<uint16_t>("h", DataType::kFloat16, {FloatToHalf(0.5f)}), s}));
  ASSERT_TRUE(e.ok());
  EXPECT_THAT(e->body, HasSubstr(R"("data":[true,false])"));
  EXPECT_THAT(e->body, HasSubstr(R"("datatype":"FP16","shape":[1],"data":[0.5])"));
  EXPECT_THAT(e->body, HasSubstr(R"("data":["a\"b","\u0001\u0000"])"));  // control characters escaped
  EXPECT_TRUE(nlohmann::json::accept(e->body));
}

TEST(EncodeInferResponseTest, BinaryOutputsFollowTheJson) {
  Tensor s;
  s.name = "s";
  s.dtype = DataType::kString;
  s.shape = {1};
  s.strings = {"xyz"};
  InferResponse r = Response({Make<int32_t>("a", DataType::kInt32, {1, 2}), Make<int32_t>("b", DataType::kInt32, {3}), s});
  r.output_binary = {true, false, true};
  auto e = EncodeInferResponse(r);
  ASSERT_TRUE(e.ok());
  ASSERT_TRUE(e->json_length.has_value());
  EXPECT_EQ(e->content_type, "application/octet-stream");
  auto j = nlohmann::json::parse(e->body.substr(0, *e->json_length));
  EXPECT_EQ(j["outputs"][0]["parameters"]["binary_data_size"], 8);
  EXPECT_FALSE(j["outputs"][0].contains("data"));
  EXPECT_EQ(j["outputs"][1]["data"], nlohmann::json::array({3}));
  EXPECT_EQ(j["outputs"][2]["parameters"]["binary_data_size"], 7);
  std::string bin = e->body.substr(*e->json_length);
  ASSERT_EQ(bin.size(), 15u);
  int32_t v[2];
  std::memcpy(v, bin.data(), 8);
  EXPECT_EQ(v[0], 1);
  EXPECT_EQ(v[1], 2);
  EXPECT_EQ(bin.substr(8), std::string("\x03\0\0\0xyz", 7));
}

// Issue 25: every byte of a BYTES element reaches the client, NUL included,
// in JSON (an escape) and in binary (the length prefix).
TEST(EncodeInferResponseTest, Issue25BytesKeepNulBytes) {
  Tensor s;
  s.name = "s";
  s.dtype = DataType::kString;
  s.strings = {std::string("he\0llo", 6), std::string(1, '\0'), ""};
  s.shape = {3};
  auto json = EncodeInferResponse(Response({s}));
  ASSERT_TRUE(json.ok());
  EXPECT_FALSE(json->json_length.has_value());
  EXPECT_THAT(json->body, HasSubstr(R"("data":["he\u0000llo","\u0000",""])"));
  EXPECT_EQ(nlohmann::json::parse(json->body)["outputs"][0]["data"], nlohmann::json(s.strings));

  InferResponse r = Response({s});
  r.output_binary = {true};
  auto binary = EncodeInferResponse(r);
  ASSERT_TRUE(binary.ok());
  ASSERT_TRUE(binary->json_length.has_value());
  EXPECT_EQ(FlattenBody(*binary).substr(*binary->json_length),
            std::string("\x06\0\0\0he\0llo\x01\0\0\0\0\0\0\0\0", 19));
}

// Issue 25: a JSON string is UTF-8 text, so a BYTES output holding other
// bytes goes to the binary section even when JSON was asked for (Triton
// writes them raw, which is not JSON; U+FFFD would lose them). The other
// outputs stay JSON.
TEST(EncodeInferResponseTest, Issue25BytesThatAreNotUtf8AreSentBinary) {
  Tensor s;
  s.name = "s";
  s.dtype = DataType::kString;
  s.strings = {"ok", std::string("\xff\0\xc3", 3)};
  s.shape = {2};
  auto e = EncodeInferResponse(Response({Make<int32_t>("a", DataType::kInt32, {5}), s}));
  ASSERT_TRUE(e.ok());
  ASSERT_TRUE(e->json_length.has_value());
  EXPECT_EQ(e->content_type, "application/octet-stream");
  const std::string body = FlattenBody(*e);
  auto j = nlohmann::json::parse(body.substr(0, *e->json_length));
  EXPECT_EQ(j["outputs"][0]["data"], nlohmann::json::array({5}));
  EXPECT_FALSE(j["outputs"][1].contains("data"));
  EXPECT_EQ(j["outputs"][1]["parameters"]["binary_data_size"], 13);
  EXPECT_EQ(body.substr(*e->json_length), std::string("\x02\0\0\0ok\x03\0\0\0\xff\0\xc3", 13));
}

// Outputs that borrow a batch's buffer are not copied into the body: they
// follow it as views (written with writev), in order, and what follows a
// view joins the tail too.
TEST(EncodeInferResponseTest, BorrowedBinaryOutputsAreWrittenFromTheirOwnBuffers) {
  Tensor batch = Make<int32_t>("a", DataType::kInt32, {1, 2, 3, 4});
  batch.data.Share();
  Tensor a = batch;
  a.shape = {2};
  a.data = batch.data.Slice(8, 8);  // rows 3 and 4 of a batch
  Tensor s;
  s.name = "s";
  s.dtype = DataType::kString;
  s.shape = {1};
  s.strings = {"xyz"};
  InferResponse r = Response({a, Make<int32_t>("b", DataType::kInt32, {5}), s});
  r.output_binary = {true, true, true};
  auto e = EncodeInferResponse(r);
  ASSERT_TRUE(e.ok());
  ASSERT_TRUE(e->json_length.has_value());
  EXPECT_EQ(e->body.size(), *e->json_length);  // nothing copied after the JSON
  ASSERT_EQ(e->tail.size(), 3u);
  const TensorBytes& view = e->tail[0];
  EXPECT_EQ(view.data(), std::as_const(batch.data).data() + 8);  // the batch's own bytes
  std::string bin = FlattenBody(*e).substr(*e->json_length);
  ASSERT_EQ(bin.size(), 8u + 4u + 7u);
  int32_t v[3];
  std::memcpy(v, bin.data(), 12);
  EXPECT_EQ(v[0], 3);
  EXPECT_EQ(v[1], 4);
  EXPECT_EQ(v[2], 5);
  EXPECT_EQ(bin.substr(12), std::string("\x03\0\0\0xyz", 7));
}

TEST(EncodeInferResponseTest, BadOutputTensorIsInternal) {
  Tensor t = Make<float>("y", DataType::kFloat, {1.0f});
  t.shape = {3};
  auto e = EncodeInferResponse(Response({t}));
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.status().code(), Code::kInternal);
  EXPECT_THAT(e.status().message(), HasSubstr("'y'"));
}

TEST(EncodeInferResponseTest, ErrorBody) {
  EXPECT_EQ(EncodeError(NotFound("model 'x' \"missing\"")), R"({"error":"model 'x' \"missing\""})");
}

TEST(ResolveOutputBinaryTest, PerOutputOverridesRequestLevel) {
  InferRequest req;
  req.binary_data_output = true;
  req.outputs = {{"a", false, {{"binary_data", "false"}}}};
  InferResponse resp = Response({Make<float>("a", DataType::kFloat, {1}), Make<float>("b", DataType::kFloat, {1})});
  EXPECT_EQ(ResolveOutputBinary(req, resp), (std::vector<bool>{false, true}));
  req.binary_data_output = false;
  req.outputs = {{"b", true, {{"binary_data", "true"}}}};
  EXPECT_EQ(ResolveOutputBinary(req, resp), (std::vector<bool>{false, true}));
}

// Issue 25: an output the request names is binary only when its own
// binary_data says so; binary_data_output is the default for the outputs it
// does not name (Triton's http_server.cc and L0_http/test.sh: OUTPUT0 with
// binary_data false and OUTPUT1 with none both come back as JSON).
TEST(ResolveOutputBinaryTest, Issue25NamedOutputsIgnoreBinaryDataOutput) {
  InferRequest req;
  req.binary_data_output = true;
  req.outputs = {{"a", false, {}}, {"b", false, {{"binary_data", "false"}}}};
  InferResponse resp = Response({Make<float>("a", DataType::kFloat, {1}), Make<float>("b", DataType::kFloat, {1})});
  EXPECT_EQ(ResolveOutputBinary(req, resp), (std::vector<bool>{false, false}));
  // The flags the core set do not matter.
  resp.output_binary = {true, true};
  EXPECT_EQ(ResolveOutputBinary(req, resp), (std::vector<bool>{false, false}));
  req.outputs = {};
  EXPECT_EQ(ResolveOutputBinary(req, resp), (std::vector<bool>{true, true}));
}

// Issue 25: an output in a system shared memory region is sent as Triton
// sends it (name, datatype, shape): with a parameters object Triton's C++
// HTTP client (perf_analyzer --shared-memory system -i http) looks for
// binary_data_size in it and fails every request.
TEST(EncodeInferResponseTest, Issue25AnOutputInASharedMemoryRegionHasNoParameters) {
  InferResponse r = Response({Make<float>("y", DataType::kFloat, {1, 2}), Make<float>("z", DataType::kFloat, {3})});
  r.output_parameters.resize(1);
  r.output_parameters[0]["shared_memory_region"] = "\"out\"";
  r.output_parameters[0]["shared_memory_byte_size"] = "8";
  r.output_binary = {false, true};
  auto e = EncodeInferResponse(r);
  ASSERT_TRUE(e.ok()) << e.status().message();
  const std::string json = e->body.substr(0, e->json_length.value_or(e->body.size()));
  const auto j = nlohmann::json::parse(json);
  EXPECT_EQ(j["outputs"][0], (nlohmann::json{{"name", "y"}, {"datatype", "FP32"}, {"shape", {2}}}));
  EXPECT_EQ(j["outputs"][1]["parameters"], (nlohmann::json{{"binary_data_size", 4}}));
  EXPECT_EQ(e->body.size() - json.size(), 4u);  // z's bytes only
}

// Every datatype: request JSON -> InferRequest -> response (echo) -> JSON and
// binary; both must give back the same values.
TEST(CodecRoundTripTest, EveryDatatypeThroughJsonAndBinary) {
  struct Case {
    const char* datatype;
    const char* data;
  };
  const Case cases[] = {
      {"BOOL", "[true,false]"},      {"UINT8", "[0,255]"},
      {"UINT16", "[0,65535]"},       {"UINT32", "[0,4294967295]"},
      {"UINT64", "[0,18446744073709551615]"},
      {"INT8", "[-128,127]"},        {"INT16", "[-32768,32767]"},
      {"INT32", "[-2147483648,2147483647]"},
      {"INT64", "[-9223372036854775808,9223372036854775807]"},
      {"FP16", "[0.5,-65504]"},      {"BF16", "[0.5,-3]"},
      {"FP32", "[0.1,-3.4028235e+38]"},
      {"FP64", "[0.1,1e-300]"},      {"BYTES", R"(["a","\u00e9\n"])"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.datatype);
    std::string body = std::string(R"({"inputs":[{"name":"x","datatype":")") + c.datatype +
                       R"(","shape":[2],"data":)" + c.data + "}]}";
    auto req = DecodeInferRequest(body, std::nullopt, "m", "");
    ASSERT_TRUE(req.ok()) << req.status().ToString();
    InferResponse resp = Response({req->inputs[0]});
    auto json = EncodeInferResponse(resp);
    ASSERT_TRUE(json.ok());
    auto j = nlohmann::json::parse(json->body);
    EXPECT_EQ(j["outputs"][0]["data"], nlohmann::json::parse(c.data));
    EXPECT_EQ(j["outputs"][0]["datatype"], c.datatype);

    // Binary: the response's binary section fed back as a binary request.
    resp.output_binary = {true};
    auto bin = EncodeInferResponse(resp);
    ASSERT_TRUE(bin.ok());
    std::string payload = bin->body.substr(*bin->json_length);
    std::string req2 = std::string(R"({"inputs":[{"name":"x","datatype":")") + c.datatype +
                       R"(","shape":[2],"parameters":{"binary_data_size":)" + std::to_string(payload.size()) +
                       "}}]}";
    auto back = DecodeInferRequest(req2 + payload, req2.size(), "m", "");
    ASSERT_TRUE(back.ok()) << back.status().ToString();
    EXPECT_EQ(back->inputs[0].data, req->inputs[0].data);
    EXPECT_EQ(back->inputs[0].strings, req->inputs[0].strings);
  }
}

}  // namespace
}  // namespace ortgpu::serve::protocol
