// The request encoder and the metadata parse: what goes on the wire.
#include "perf/request_builder.h"

#include <gtest/gtest.h>

#include <cstring>

#include <nlohmann/json.hpp>

namespace ortgpu::perf {
namespace {

const char* kAddSubMetadata =
    R"({"name":"add_sub","platform":"onnxruntime_onnx","versions":["1"],
        "inputs":[{"name":"INPUT0","datatype":"FP32","shape":[-1,4]},{"name":"INPUT1","datatype":"FP32","shape":[-1,4]}],
        "outputs":[{"name":"OUTPUT0","datatype":"FP32","shape":[-1,4]},{"name":"OUTPUT1","datatype":"FP32","shape":[-1,4]}]})";

ModelInfo AddSub() {
  auto m = ParseModelInfo(kAddSubMetadata, R"({"max_batch_size": 8})");
  EXPECT_TRUE(m.ok()) << m.status().message();
  m->name = "add_sub";
  return *m;
}

TEST(ParseModelInfo, ReadsInputsOutputsAndMaxBatchSize) {
  const ModelInfo m = AddSub();
  ASSERT_EQ(m.inputs.size(), 2u);
  EXPECT_EQ(m.inputs[0].name, "INPUT0");
  EXPECT_EQ(m.inputs[0].dtype, DataType::kFloat);
  EXPECT_EQ(m.inputs[0].shape, (std::vector<int64_t>{-1, 4}));
  EXPECT_EQ(m.outputs, (std::vector<std::string>{"OUTPUT0", "OUTPUT1"}));
  EXPECT_EQ(m.max_batch_size, 8);
}

TEST(ParseModelInfo, UnknownDatatypeIsAnErrorThatNamesIt) {
  auto m = ParseModelInfo(R"({"inputs":[{"name":"x","datatype":"FP8","shape":[1]}]})", "");
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("FP8"), std::string::npos);
}

TEST(EncodeInferRequest, BinaryBodyIsTheJsonHeaderThenTheRawBytes) {
  const ModelInfo m = AddSub();
  auto inputs = MakeRequestInputs(m, {}, 3);
  ASSERT_TRUE(inputs.ok()) << inputs.status().message();
  ASSERT_EQ((*inputs)[0].shape, (std::vector<int64_t>{3, 4}));
  auto r = EncodeInferRequest(m, *inputs, TensorFormat::kBinary, "h:1");
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->head.starts_with("POST /v2/models/add_sub/infer HTTP/1.1\r\nHost: h:1\r\n"));
  EXPECT_NE(r->head.find("Inference-Header-Content-Length: " + std::to_string(r->json_header.size()) + "\r\n"), std::string::npos);
  EXPECT_NE(r->head.find("Content-Length: " + std::to_string(r->body.size()) + "\r\n\r\n"), std::string::npos);
  EXPECT_EQ(r->body.size(), r->json_header.size() + 2 * 12 * sizeof(float));
  auto header = nlohmann::json::parse(r->json_header);
  EXPECT_EQ(header["inputs"][0]["shape"], nlohmann::json({3, 4}));
  EXPECT_EQ(header["inputs"][1]["parameters"]["binary_data_size"], 48);
  EXPECT_EQ(header["outputs"][0]["parameters"]["binary_data"], true);
  // The bytes after the header are INPUT0's then INPUT1's, unchanged.
  EXPECT_EQ(std::memcmp(r->body.data() + r->json_header.size(), (*inputs)[0].data.data(), 48), 0);
  EXPECT_EQ(std::memcmp(r->body.data() + r->json_header.size() + 48, (*inputs)[1].data.data(), 48), 0);
}

TEST(EncodeInferRequest, SharedMemoryNamesTheRegionsAndCarriesNoTensorBytes) {
  const ModelInfo m = AddSub();
  auto inputs = MakeRequestInputs(m, {}, 1);
  ASSERT_TRUE(inputs.ok());
  SharedMemoryPlan plan;
  plan.inputs = {{"in", 0, 16}, {"in", 16, 16}};
  plan.outputs = {{"out", 0, 100}, {"out", 100, 100}};
  auto r = EncodeInferRequest(m, *inputs, TensorFormat::kBinary, "h:1", &plan);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->body, r->json_header);  // JSON only
  EXPECT_NE(r->head.find("Content-Type: application/json"), std::string::npos);
  auto header = nlohmann::json::parse(r->json_header);
  EXPECT_FALSE(header["inputs"][1].contains("data"));
  EXPECT_EQ(header["inputs"][1]["parameters"]["shared_memory_region"], "in");
  EXPECT_EQ(header["inputs"][1]["parameters"]["shared_memory_offset"], 16);
  EXPECT_EQ(header["inputs"][1]["parameters"]["shared_memory_byte_size"], 16);
  EXPECT_EQ(header["outputs"][1]["parameters"]["shared_memory_region"], "out");
  EXPECT_EQ(header["outputs"][1]["parameters"]["shared_memory_offset"], 100);
  EXPECT_FALSE(header["outputs"][1]["parameters"].contains("binary_data"));

  plan.outputs.pop_back();
  EXPECT_FALSE(EncodeInferRequest(m, *inputs, TensorFormat::kBinary, "h:1", &plan).ok());
}

TEST(EncodeInferRequest, JsonTensorsCarryTheValues) {
  ModelInfo m = AddSub();
  m.version = "1";
  std::vector<Tensor> inputs = {Tensor::Zeros("INPUT0", DataType::kFloat, {1, 2}), Tensor::Zeros("INPUT1", DataType::kInt64, {1, 2})};
  inputs[0].data_as<float>()[0] = 0.5f;
  inputs[0].data_as<float>()[1] = -2.25f;
  inputs[1].data_as<int64_t>()[1] = 30000;
  auto r = EncodeInferRequest(m, inputs, TensorFormat::kJson, "h:1");
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->head.starts_with("POST /v2/models/add_sub/versions/1/infer HTTP/1.1"));
  EXPECT_EQ(r->head.find("Inference-Header-Content-Length"), std::string::npos);
  auto body = nlohmann::json::parse(r->body);
  EXPECT_EQ(body["inputs"][0]["data"], nlohmann::json({0.5, -2.25}));
  EXPECT_EQ(body["inputs"][1]["datatype"], "INT64");
  EXPECT_EQ(body["inputs"][1]["data"], nlohmann::json({0, 30000}));
  EXPECT_EQ(body["outputs"][1]["parameters"]["binary_data"], false);
}

TEST(EncodeInferRequest, BytesInBinaryAreLengthPrefixed) {
  ModelInfo m;
  m.name = "s";
  Tensor t = Tensor::Zeros("text", DataType::kString, {2});
  t.strings = {"ab", ""};
  auto r = EncodeInferRequest(m, {t}, TensorFormat::kBinary, "h:1");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->body.substr(r->json_header.size()), std::string("\x02\0\0\0ab\0\0\0\0", 10));
}

TEST(MakeRequestInputs, ShapeFlagsAndIntRangesApply) {
  auto m = ParseModelInfo(R"({"inputs":[{"name":"ids","datatype":"INT64","shape":[-1,-1]}]})", R"({"max_batch_size":4})");
  ASSERT_TRUE(m.ok());
  bench::InputSpec spec;
  ASSERT_TRUE(bench::ParseShapeFlag("ids:2x16", spec).ok());
  ASSERT_TRUE(bench::ParseIntRangeFlag("ids:5:6", spec).ok());
  auto inputs = MakeRequestInputs(*m, spec, 2);
  ASSERT_TRUE(inputs.ok()) << inputs.status().message();
  EXPECT_EQ((*inputs)[0].shape, (std::vector<int64_t>{2, 16}));
  for (int i = 0; i < 32; ++i) EXPECT_EQ((*inputs)[0].data_as<int64_t>()[i], 5);
}

TEST(ParseHttpUrl, AcceptsHttpAndRefusesOtherSchemesNamingTheFlag) {
  auto e = ParseHttpUrl("http://example:8001/metrics", "--metrics-url");
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->host, "example");
  EXPECT_EQ(e->port, 8001);
  EXPECT_EQ(e->path, "/metrics");
  EXPECT_EQ(ParseHttpUrl("localhost", "--url")->port, 8000);
  auto grpc = ParseHttpUrl("grpc://h:8001", "--url");
  ASSERT_FALSE(grpc.ok());
  EXPECT_NE(grpc.status().message().find("--url"), std::string::npos);
  EXPECT_FALSE(ParseHttpUrl("http://h:99999", "--url").ok());
}

}  // namespace
}  // namespace ortgpu::perf
