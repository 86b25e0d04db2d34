// Issues 10 and 25: Triton's raw binary request. With
// Inference-Header-Content-Length: 0 the whole body is the one input of the
// model (its datatype from the model; the batch dim 1 and the one variable
// dim from the body's size) and every output comes back binary; a model with
// more inputs, a shape that cannot be known, or a body that does not fit is
// a 400 that says why.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>

#include <nlohmann/json.hpp>

#include "serve/http/front_end_fixture.h"
#include "serve/http/raw_binary_request.h"

namespace ortgpu::serve {
namespace {

using ::testing::HasSubstr;
using testing::TestHttpClient;

using RawBinaryRequestTest = testing::FrontEndTest;

std::string Bytes(const std::vector<float>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(float));
}

// Triton answers a raw binary request with binary outputs and an
// Inference-Header-Content-Length header; tritonclient and Triton's QA
// (test_raw_binary, test_byte) read the outputs after that many bytes.
// ortgpu answered JSON, and those clients failed with KeyError.
TEST_F(RawBinaryRequestTest, Issue25RawBinaryRequestGetsBinaryResponse) {
  TestHttpClient c(port());
  const std::string body = Bytes({1, 2, 3, 4});
  auto r = c.Post("/v2/models/echo/infer", body,
                  {{"Inference-Header-Content-Length", "0"}, {"Content-Type", "application/octet-stream"}});
  ASSERT_EQ(r.status, 200u) << r.body;
  const std::string header_length = r.header("Inference-Header-Content-Length");
  ASSERT_FALSE(header_length.empty()) << r.body;
  const size_t json_length = std::stoul(header_length);
  const auto j = nlohmann::json::parse(r.body.substr(0, json_length));
  EXPECT_EQ(j["outputs"][0]["name"], "x");
  EXPECT_EQ(j["outputs"][0]["shape"], nlohmann::json::array({2, 2}));
  EXPECT_EQ(j["outputs"][0]["parameters"]["binary_data_size"], 16);
  EXPECT_FALSE(j["outputs"][0].contains("data"));
  EXPECT_EQ(r.body.substr(json_length), body);
  const InferRequest seen = fake_.last_request();
  ASSERT_EQ(seen.inputs.size(), 1u);
  EXPECT_EQ(seen.inputs[0].dtype, DataType::kFloat);
}

TEST_F(RawBinaryRequestTest, ABodyThatDoesNotFitIs400) {
  TestHttpClient c(port());
  auto r = c.Post("/v2/models/echo/infer", std::string(6, '\0'), {{"Inference-Header-Content-Length", "0"}});
  EXPECT_EQ(r.status, 400u);
  EXPECT_THAT(r.body, HasSubstr("raw binary body of 6 bytes does not fit input 'x'"));
  r = c.Post("/v2/models/nope/infer", std::string(8, '\0'), {{"Inference-Header-Content-Length", "0"}});
  EXPECT_EQ(r.status, 404u);
}

// Triton's rule (its core, infer_request.cc, and L0_http's raw binary
// tests): the batch dim is 1 and the one variable dim takes the body.
TEST(RawInputShapeTest, TheVariableDimTakesTheBodyAndTheBatchDimIsOne) {
  // onnx_zero_1_float32 of Triton's QA: max_batch_size 8, dims [-1].
  auto shape = RawInputShape({"INPUT0", "FP32", {-1, -1}}, /*batched=*/true, 32);
  ASSERT_TRUE(shape.ok()) << shape.status().message();
  EXPECT_EQ(*shape, (std::vector<int64_t>{1, 8}));
  shape = RawInputShape({"INPUT0", "FP32", {-1, -1, 4}}, true, 48);
  ASSERT_TRUE(shape.ok());
  EXPECT_EQ(*shape, (std::vector<int64_t>{1, 3, 4}));
  shape = RawInputShape({"INPUT0", "FP32", {-1, 3}}, false, 24);
  ASSERT_TRUE(shape.ok());
  EXPECT_EQ(*shape, (std::vector<int64_t>{2, 3}));
  // Fixed dims: the batch dim takes the rows (Triton would answer 400).
  shape = RawInputShape({"x", "FP32", {-1, 2}}, true, 16);
  ASSERT_TRUE(shape.ok());
  EXPECT_EQ(*shape, (std::vector<int64_t>{2, 2}));
  shape = RawInputShape({"x", "FP32", {3}}, false, 12);
  ASSERT_TRUE(shape.ok());
  EXPECT_EQ(*shape, (std::vector<int64_t>{3}));
  EXPECT_FALSE(RawInputShape({"x", "FP32", {3}}, false, 8).ok());
  // BYTES of shape [1] (onnx_zero_1_object_1_element): the body is the element.
  shape = RawInputShape({"INPUT0", "BYTES", {-1, 1}}, true, 3);
  ASSERT_TRUE(shape.ok());
  EXPECT_EQ(*shape, (std::vector<int64_t>{1, 1}));
}

// With two variable dims ortgpu fitted 2x2 FP16 to [1,1,4], a shape the
// client never stated; Triton answers 400 (test_multi_variable_dimensions).
TEST(RawInputShapeTest, Issue25TwoVariableDimsAre400NamingTheInput) {
  // onnx_zero_1_float16: max_batch_size 8, dims [-1, -1].
  auto shape = RawInputShape({"INPUT0", "FP16", {-1, -1, -1}}, /*batched=*/true, 8);
  ASSERT_FALSE(shape.ok());
  EXPECT_EQ(shape.status().code(), Code::kInvalidArgument);
  EXPECT_THAT(shape.status().message(),
              HasSubstr("The shape of the raw input 'INPUT0' can not be deduced because there are more than one "
                        "variable-sized dimension"));
  EXPECT_THAT(shape.status().message(), HasSubstr("send a JSON header with the shape"));
  EXPECT_FALSE(RawInputShape({"INPUT0", "FP32", {-1, -1}}, /*batched=*/false, 16).ok());
  // BYTES with a variable dim (onnx_zero_1_object): Triton's message, too.
  shape = RawInputShape({"INPUT0", "BYTES", {-1, -1}}, true, 3);
  ASSERT_FALSE(shape.ok());
  EXPECT_THAT(shape.status().message(),
              HasSubstr("For BYTE datatype raw input 'INPUT0', the model must have input shape [1]"));
}

}  // namespace
}  // namespace ortgpu::serve
