// Triton's system shared memory extension over HTTP: register, status and
// unregister a region, then an infer whose input is read from it and whose
// output is written into it; the same for CUDA regions (device memory faked).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>

#include <nlohmann/json.hpp>

#include "serve/http/front_end_fixture.h"
#include "fakes/fake_cuda_ipc.h"
#include "serve/protocol/base64.h"
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
  // Name, datatype and shape alone, as Triton answers (issue 25: Triton's
  // C++ client reads any parameters on an output as a binary section).
  EXPECT_EQ(out, (nlohmann::json{{"name", "x"}, {"datatype", "FP32"}, {"shape", {1, 2}}})) << r.body;
  float back[2];
  std::memcpy(back, shm.bytes() + 32, sizeof back);
  EXPECT_EQ(back[0], 0.25f);
  EXPECT_EQ(back[1], 9.0f);

  r = c.Post("/v2/systemsharedmemory/region/r0/unregister", "");
  ASSERT_EQ(r.status, 200u);
  r = c.Post("/v2/models/echo/infer", request);
  EXPECT_EQ(r.status, 404u);
  EXPECT_THAT(r.body, HasSubstr("Unable to find shared memory region: 'r0'"));
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
  r = c.Post("/v2/cudasharedmemory/region/g0/register", R"({"raw_handle": {"b64": "ab!c"}, "device_id": 0, "byte_size": 8})");
  EXPECT_EQ(r.status, 400u);
  EXPECT_THAT(r.body, HasSubstr("base64"));
  r = c.Post("/v2/cudasharedmemory/region/g0/register", R"({"device_id": 0, "byte_size": 8})");
  EXPECT_EQ(r.status, 400u);
  EXPECT_THAT(r.body, HasSubstr("raw_handle"));
}

// Triton's CUDA shared memory extension, with the device memory faked on
// the host: a client registers its cudaIpcMemHandle (base64 in JSON), the
// input is read from that memory and the output written into it.
TEST_F(SharedMemoryEndpointsTest, InputsAndOutputsTravelThroughACudaRegion) {
  auto ipc = std::make_shared<ortgpu::testing::FakeCudaIpc>();
  settings_.system_shm.SetCudaIpc(ipc);
  const std::string handle = ipc->Export(64, /*device=*/0);
  const float in[2] = {1.5f, -2.0f};
  std::memcpy(ipc->Memory(handle).data(), in, sizeof in);
  TestHttpClient c(port());
  auto r = c.Post("/v2/cudasharedmemory/region/g0/register",
                  nlohmann::json{{"raw_handle", {{"b64", protocol::EncodeBase64(handle)}}}, {"device_id", 0},
                                 {"byte_size", 64}}
                      .dump());
  ASSERT_EQ(r.status, 200u) << r.body;
  r = c.Get("/v2/cudasharedmemory/status");
  ASSERT_EQ(r.status, 200u);
  const auto status = nlohmann::json::parse(r.body);
  ASSERT_EQ(status.size(), 1u);
  EXPECT_EQ(status[0], (nlohmann::json{{"name", "g0"}, {"device_id", 0}, {"byte_size", 64}}));
  // A CUDA region is not a system one.
  EXPECT_EQ(c.Get("/v2/systemsharedmemory/region/g0/status").status, 404u);

  const std::string request =
      R"({"inputs":[{"name":"x","datatype":"FP32","shape":[1,2],)"
      R"("parameters":{"shared_memory_region":"g0","shared_memory_byte_size":8}}],)"
      R"("outputs":[{"name":"x","parameters":{"shared_memory_region":"g0","shared_memory_byte_size":8,)"
      R"("shared_memory_offset":16}}]})";
  r = c.Post("/v2/models/echo/infer", request);
  ASSERT_EQ(r.status, 200u) << r.body;
  EXPECT_FALSE(nlohmann::json::parse(r.body)["outputs"][0].contains("data")) << r.body;
  float back[2];
  std::memcpy(back, ipc->Memory(handle).data() + 16, sizeof back);
  EXPECT_EQ(back[0], 1.5f);
  EXPECT_EQ(back[1], -2.0f);
  EXPECT_EQ(ipc->to_host_count(), 0);  // the input stayed on the "device" (issue 10)

  // A second registration under the name, or a handle of another size, is refused.
  r = c.Post("/v2/cudasharedmemory/region/g0/register",
             nlohmann::json{{"raw_handle", {{"b64", protocol::EncodeBase64(handle)}}}, {"byte_size", 64}}.dump());
  EXPECT_EQ(r.status, 409u) << r.body;
  r = c.Post("/v2/cudasharedmemory/region/g1/register",
             nlohmann::json{{"raw_handle", {{"b64", protocol::EncodeBase64("short")}}}, {"byte_size", 64}}.dump());
  EXPECT_EQ(r.status, 400u) << r.body;
  EXPECT_THAT(r.body, HasSubstr("64 bytes"));

  r = c.Post("/v2/cudasharedmemory/region/g0/unregister", "");
  ASSERT_EQ(r.status, 200u);
  EXPECT_EQ(ipc->open_count(), 0);  // the handle is closed
  EXPECT_EQ(c.Get("/v2/cudasharedmemory/status").body, "[]");
}

}  // namespace
}  // namespace ortgpu::serve
