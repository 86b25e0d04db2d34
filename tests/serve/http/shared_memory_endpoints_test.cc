// Triton's system shared memory extension over HTTP: register, status and
// unregister a region, then an infer whose input is read from it and whose
// output is written into it; the CUDA endpoints answer clearly.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>

#include <nlohmann/json.hpp>

#include "serve/http/front_end_fixture.h"
#include "support/shm_object.h"

namespace ortgpu::serve {
namespace {

using ::testing::HasSubstr;
using ortgpu::testing::ShmObject;
using serve::testing::TestHttpClient;

using SharedMemoryEndpointsTest = serve::testing::FrontEndTest;

TEST_F(SharedMemoryEndpointsTest, InputsAndOutputsTravelThroughARegion) {
  ShmObject shm(64);
  ASSERT_TRUE(shm.ok());
  const float in[2] = {0.25f, 9.0f};
  std::memcpy(shm.bytes(), in, sizeof in);
  TestHttpClient c(port());
  auto r = c.Post("/v2/systemsharedmemory/region/r0/register",
                  nlohmann::json{{"key", shm.key()}, {"offset", 0}, {"byte_size", 64}}.dump());
  ASSERT_EQ(r.status, 200u) << r.body;
  r = c.Get("/v2/systemsharedmemory/status");
  ASSERT_EQ(r.status, 200u);
  const auto status = nlohmann::json::parse(r.body);
  ASSERT_EQ(status.size(), 1u);
  EXPECT_EQ(status[0]["name"], "r0");
  EXPECT_EQ(status[0]["byte_size"], 64);

  const std::string request =
      R"({"inputs":[{"name":"x","datatype":"FP32","shape":[1,2],)"
      R"("parameters":{"shared_memory_region":"r0","shared_memory_byte_size":8}}],)"
      R"("outputs":[{"name":"x","parameters":{"shared_memory_region":"r0","shared_memory_byte_size":8,)"
      R"("shared_memory_offset":32}}]})";
  r = c.Post("/v2/models/echo/infer", request);
  ASSERT_EQ(r.status, 200u) << r.body;
  const auto out = nlohmann::json::parse(r.body)["outputs"][0];
  EXPECT_FALSE(out.contains("data")) << r.body;
  EXPECT_EQ(out["parameters"]["shared_memory_region"], "r0");
  EXPECT_EQ(out["parameters"]["shared_memory_byte_size"], 8);
  float back[2];
  std::memcpy(back, shm.bytes() + 32, sizeof back);
  EXPECT_EQ(back[0], 0.25f);
  EXPECT_EQ(back[1], 9.0f);

  r = c.Post("/v2/systemsharedmemory/region/r0/unregister", "");
  ASSERT_EQ(r.status, 200u);
  r = c.Post("/v2/models/echo/infer", request);
  EXPECT_EQ(r.status, 404u);
  EXPECT_THAT(r.body, HasSubstr("Unable to find system shared memory region: 'r0'"));
}

TEST_F(SharedMemoryEndpointsTest, BadRegistrationsAndCudaAnswerClearly) {
  TestHttpClient c(port());
  auto r = c.Post("/v2/systemsharedmemory/region/r1/register", R"({"offset": 0})");
  EXPECT_EQ(r.status, 400u);
  r = c.Post("/v2/systemsharedmemory/region/r1/register", R"({"key": "/ortgpu-none", "byte_size": 8})");
  EXPECT_EQ(r.status, 404u);
  EXPECT_THAT(r.body, HasSubstr("Unable to open shared memory region"));
  r = c.Get("/v2/systemsharedmemory/region/r1/status");
  EXPECT_EQ(r.status, 404u);
  r = c.Get("/v2/cudasharedmemory/status");
  EXPECT_EQ(r.status, 200u);
  EXPECT_EQ(r.body, "[]");
  r = c.Post("/v2/cudasharedmemory/region/g0/register", R"({"raw_handle": {"b64": ""}, "device_id": 0, "byte_size": 8})");
  EXPECT_EQ(r.status, 501u);
}

}  // namespace
}  // namespace ortgpu::serve
