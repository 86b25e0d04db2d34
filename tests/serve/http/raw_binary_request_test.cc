// Issue 10: Triton's raw binary request. With Inference-Header-Content-Length: 0
// the whole body is the one input of the model (its datatype from the model,
// the variable dim from the body's size); a model with more inputs, or a body
// that does not fit, is a 400 that says why.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>

#include <nlohmann/json.hpp>

#include "serve/http/front_end_fixture.h"

namespace ortgpu::serve {
namespace {

using ::testing::HasSubstr;
using testing::TestHttpClient;

using RawBinaryRequestTest = testing::FrontEndTest;

TEST_F(RawBinaryRequestTest, TheBodyIsTheOneInput) {
  TestHttpClient c(port());
  const float v[4] = {1, 2, 3, 4};
  auto r = c.Post("/v2/models/echo/infer", std::string(reinterpret_cast<const char*>(v), sizeof v),
                  {{"Inference-Header-Content-Length", "0"}, {"Content-Type", "application/octet-stream"}});
  ASSERT_EQ(r.status, 200u) << r.body;
  const auto j = nlohmann::json::parse(r.body);
  EXPECT_EQ(j["outputs"][0]["name"], "x");
  EXPECT_EQ(j["outputs"][0]["shape"], nlohmann::json::array({2, 2}));
  EXPECT_EQ(j["outputs"][0]["data"], nlohmann::json::array({1.0, 2.0, 3.0, 4.0}));
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

}  // namespace
}  // namespace ortgpu::serve
