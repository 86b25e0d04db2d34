// The gRPC codec: ModelInferRequest -> InferRequest (raw and typed contents,
// BYTES, parameters, every inconsistency named) and InferResponse ->
// ModelInferResponse.
#include "serve/grpc/grpc_codec.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>

namespace ortgpu::serve {
namespace {

using ::testing::HasSubstr;

inference::ModelInferRequest::InferInputTensor* AddInput(inference::ModelInferRequest& req, const std::string& name,
                                                          const std::string& datatype, std::vector<int64_t> shape) {
  auto* in = req.add_inputs();
  in->set_name(name);
  in->set_datatype(datatype);
  for (int64_t d : shape) in->add_shape(d);
  return in;
}

std::string Serialized(const std::vector<std::string>& elements) {
  std::string out;
  for (const auto& e : elements) {
    const auto n = static_cast<uint32_t>(e.size());
    out.append(reinterpret_cast<const char*>(&n), 4);
    out += e;
  }
  return out;
}

TEST(GrpcCodecTest, RawContentsAreMovedIntoBorrowingTensors) {
  inference::ModelInferRequest req;
  req.set_model_name("m");
  req.set_model_version("2");
  AddInput(req, "a", "INT32", {2});
  AddInput(req, "s", "BYTES", {2});
  const int32_t values[] = {7, -9};
  req.add_raw_input_contents(std::string(reinterpret_cast<const char*>(values), sizeof values));
  req.add_raw_input_contents(Serialized({"hi", ""}));
  auto r = DecodeGrpcInferRequest(req);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->model_version, "2");
  ASSERT_EQ(r->inputs.size(), 2u);
  EXPECT_TRUE(r->inputs[0].data.borrowed());
  EXPECT_EQ(r->inputs[0].data_as<int32_t>()[1], -9);
  EXPECT_THAT(r->inputs[1].strings, ::testing::ElementsAre("hi", ""));
  EXPECT_TRUE(req.raw_input_contents(0).empty());  // moved, not copied
}

TEST(GrpcCodecTest, TypedContentsUseTritonsFieldPerDatatype) {
  inference::ModelInferRequest req;
  req.set_model_name("m");
  AddInput(req, "i8", "INT8", {2})->mutable_contents()->add_int_contents(-3);
  req.mutable_inputs(0)->mutable_contents()->add_int_contents(4);
  AddInput(req, "u64", "UINT64", {1})->mutable_contents()->add_uint64_contents(1ull << 40);
  AddInput(req, "b", "BOOL", {1})->mutable_contents()->add_bool_contents(true);
  AddInput(req, "s", "BYTES", {1})->mutable_contents()->add_bytes_contents("word");
  auto r = DecodeGrpcInferRequest(req);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->inputs[0].data_as<int8_t>()[0], -3);
  EXPECT_EQ(r->inputs[1].data_as<uint64_t>()[0], 1ull << 40);
  EXPECT_EQ(r->inputs[2].data[0], 1);
  EXPECT_EQ(r->inputs[3].strings[0], "word");
}

TEST(GrpcCodecTest, InconsistenciesAreNamed) {
  auto expect_error = [](inference::ModelInferRequest req, const std::string& text, Code code = Code::kInvalidArgument) {
    auto r = DecodeGrpcInferRequest(req);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), code);
    EXPECT_THAT(r.status().message(), HasSubstr(text));
  };
  inference::ModelInferRequest base;
  base.set_model_name("m");

  auto out_of_range = base;
  AddInput(out_of_range, "x", "INT8", {1})->mutable_contents()->add_int_contents(300);
  expect_error(out_of_range, "int_contents value 300 is out of range for INT8");

  auto count = base;
  AddInput(count, "x", "FP32", {3})->mutable_contents()->add_fp32_contents(1);
  expect_error(count, "input 'x': 1 elements were sent, but shape [3] needs 3");

  auto fp16 = base;
  AddInput(fp16, "x", "FP16", {1})->mutable_contents()->add_fp32_contents(1);
  expect_error(fp16, "FP16 has no typed contents field");

  auto no_data = base;
  AddInput(no_data, "x", "FP32", {1});
  expect_error(no_data, "input 'x' has no data");

  auto mixed = base;
  AddInput(mixed, "x", "FP32", {1})->mutable_contents()->add_fp32_contents(1);
  mixed.add_raw_input_contents(std::string(4, '\0'));
  expect_error(mixed, "sets contents while the request uses raw_input_contents");

  auto truncated = base;
  AddInput(truncated, "s", "BYTES", {1});
  truncated.add_raw_input_contents(std::string("\x05\0\0\0ab", 6));
  expect_error(truncated, "says 5 bytes but only 2 remain");

  auto negative = base;
  AddInput(negative, "x", "FP32", {-1})->mutable_contents()->add_fp32_contents(1);
  expect_error(negative, "negative dimension");

  auto twice = base;
  AddInput(twice, "x", "FP32", {1})->mutable_contents()->add_fp32_contents(1);
  AddInput(twice, "x", "FP32", {1})->mutable_contents()->add_fp32_contents(1);
  expect_error(twice, "input 'x' is given twice");

  auto shm = base;
  auto* in = AddInput(shm, "x", "FP32", {1});
  (*in->mutable_parameters())["shared_memory_region"].set_string_param("r");
  expect_error(shm, "shared_memory_byte_size is required");
  (*in->mutable_parameters())["shared_memory_byte_size"].set_int64_param(4);
  expect_error(shm, "this server has no shared memory", Code::kUnimplemented);

}

TEST(GrpcCodecTest, ResponseOutputsAreRawInOutputOrder) {
  InferResponse r;
  r.model_name = "m";
  r.model_version = "1";
  r.id = "q";
  r.parameters["sequence_end"] = "true";
  Tensor f;
  f.name = "f";
  f.dtype = DataType::kFloat;
  f.shape = {1};
  f.data.resize(4);
  const float v = 2.5f;
  std::memcpy(f.data.data(), &v, 4);
  Tensor s;
  s.name = "s";
  s.dtype = DataType::kString;
  s.shape = {2};
  s.strings = {"ab", "c"};
  r.outputs = {f, s};
  inference::ModelInferResponse out;
  ASSERT_TRUE(EncodeGrpcInferResponse(r, out).ok());
  ASSERT_EQ(out.outputs_size(), 2);
  EXPECT_EQ(out.outputs(1).datatype(), "BYTES");
  EXPECT_EQ(out.raw_output_contents(1), Serialized({"ab", "c"}));
  EXPECT_TRUE(out.parameters().at("sequence_end").bool_param());
}

// An output the instance wrote into a CUDA region device to device comes
// back as a placeholder with the shape and no bytes (found on the H200: every
// CUDA shared memory request got a 500).
TEST(GrpcCodecTest, AnOutputWrittenIntoACudaRegionIsSentWithoutBytes) {
  InferResponse r;
  r.model_name = "m";
  r.model_version = "1";
  Tensor y;
  y.name = "output";
  y.dtype = DataType::kFloat;
  y.shape = {1, 1000};
  y.device = DeviceView{};
  r.outputs = {y};
  r.output_parameters.resize(1);
  r.output_parameters[0]["shared_memory_region"] = "\"out\"";
  r.output_parameters[0]["shared_memory_byte_size"] = "4000";
  inference::ModelInferResponse out;
  ASSERT_TRUE(EncodeGrpcInferResponse(r, out).ok());
  ASSERT_EQ(out.outputs_size(), 1);
  EXPECT_EQ(out.outputs(0).parameters().at("shared_memory_byte_size").int64_param(), 4000);
  EXPECT_TRUE(out.raw_output_contents(0).empty());
}

TEST(GrpcCodecTest, ParametersKeepTheirKind) {
  inference::InferParameter p;
  p.set_string_param("a \"quoted\" word");
  EXPECT_EQ(GrpcParameterFromJsonText(GrpcParameterToJsonText(p)).string_param(), "a \"quoted\" word");
  p.set_int64_param(-5);
  EXPECT_EQ(GrpcParameterToJsonText(p), "-5");
  EXPECT_EQ(GrpcParameterFromJsonText("-5").int64_param(), -5);
  EXPECT_TRUE(GrpcParameterFromJsonText("true").bool_param());
  EXPECT_EQ(GrpcParameterFromJsonText("0.5").string_param(), "0.5");
}

// ModelStatistics over gRPC carries what the HTTP form does, field for field.
TEST(GrpcCodecTest, StatisticsAreEncodedFieldForField) {
  StatsSnapshot s;
  s.name = "m";
  s.version = "1";
  s.last_inference_ms = 42;
  s.inference_count = 5;
  s.execution_count = 2;
  s.compute_infer = {2, 900};
  s.batches[4].compute_input = {1, 10};
  inference::ModelStatisticsResponse out;
  EncodeGrpcStatistics({s}, out);
  ASSERT_EQ(out.model_stats_size(), 1);
  const auto& m = out.model_stats(0);
  EXPECT_EQ(m.name(), "m");
  EXPECT_EQ(m.version(), "1");
  EXPECT_EQ(m.last_inference(), 42u);
  EXPECT_EQ(m.inference_count(), 5u);
  EXPECT_EQ(m.execution_count(), 2u);
  EXPECT_EQ(m.inference_stats().compute_infer().ns(), 900u);
  ASSERT_EQ(m.batch_stats_size(), 1);
  EXPECT_EQ(m.batch_stats(0).batch_size(), 4u);
  EXPECT_EQ(m.batch_stats(0).compute_input().count(), 1u);
}

// Issue 27: the same memory_usage entries as the HTTP form.
TEST(GrpcCodecTest, StatisticsCarryTheMemoryUsage) {
  StatsSnapshot s;
  s.name = "m";
  s.version = "1";
  s.memory_usage = {{"GPU", 1, 3000}, {"GPU_OTHER", 1, 500}};
  inference::ModelStatisticsResponse out;
  EncodeGrpcStatistics({s}, out);
  const auto& m = out.model_stats(0);
  ASSERT_EQ(m.memory_usage_size(), 2);
  EXPECT_EQ(m.memory_usage(0).type(), "GPU");
  EXPECT_EQ(m.memory_usage(0).id(), 1);
  EXPECT_EQ(m.memory_usage(0).byte_size(), 3000u);
  EXPECT_EQ(m.memory_usage(1).type(), "GPU_OTHER");
}

}  // namespace
}  // namespace ortgpu::serve
