// perf's --shared-memory: the regions it makes, what it registers with the
// server, and that nothing stays registered, mapped or allocated after the
// run or after a refusal. The server is a recording RegisterPost; CUDA
// memory is FakeCudaIpc's.
#include "perf/shared_memory_regions.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstring>

#include <boost/beast/core/detail/base64.hpp>
#include <nlohmann/json.hpp>

#include "fakes/fake_cuda_ipc.h"

namespace ortgpu::perf {
namespace {

using nlohmann::json;

struct Posted {
  std::string target;
  json body;
};

// A server that answers every POST with `status` and records it.
struct RecordingServer {
  unsigned status = 200;
  std::vector<Posted> posted;
  RegisterPost Post() {
    return [this](const std::string& target, const std::string& body) -> Expected<FetchResult> {
      posted.push_back({target, json::parse(body)});
      if (status != 200) return FetchResult{status, R"({"error":"shared memory is not supported"})"};
      return FetchResult{200, ""};
    };
  }
};

std::vector<Tensor> TwoInputs() {
  Tensor a = Tensor::Zeros("a", DataType::kFloat, {1, 2});
  Tensor b = Tensor::Zeros("b", DataType::kInt64, {1, 3});
  const float av[2] = {1.5f, -2.5f};
  std::memcpy(a.data.data(), av, sizeof av);
  for (int i = 0; i < 3; ++i) b.data_as<int64_t>()[i] = 10 + i;
  return {a, b};
}

TEST(SharedMemoryRegions, CudaRegionsHoldTheInputsAndAreRegisteredByHandle) {
  auto fake = std::make_shared<testing::FakeCudaIpc>();
  RecordingServer server;
  SharedMemoryOptions o;
  o.mode = SharedMemoryMode::kCuda;
  o.cuda = fake;
  o.device = 1;
  o.output_bytes = 4096;
  o.prefix = "run";
  const auto inputs = TwoInputs();
  {
    auto r = SharedMemoryRegions::Create(o, inputs, 2, server.Post());
    ASSERT_TRUE(r.ok()) << r.status().message();
    EXPECT_EQ(fake->allocated_count(), 2);
    const SharedMemoryPlan& plan = (*r)->plan();
    ASSERT_EQ(plan.inputs.size(), 2u);
    EXPECT_EQ(plan.inputs[1].region, "run_input");
    EXPECT_EQ(plan.inputs[1].offset, 8u);
    EXPECT_EQ(plan.inputs[1].byte_size, 24u);
    ASSERT_EQ(plan.outputs.size(), 2u);
    EXPECT_EQ(plan.outputs[1].region, "run_output");
    EXPECT_EQ(plan.outputs[1].offset, 4096u);

    ASSERT_EQ(server.posted.size(), 2u);
    EXPECT_EQ(server.posted[0].target, "/v2/cudasharedmemory/region/run_input/register");
    EXPECT_EQ(server.posted[0].body["device_id"], 1);
    EXPECT_EQ(server.posted[0].body["byte_size"], 32);
    // The handle the server gets opens the memory that holds the inputs.
    const std::string b64 = server.posted[0].body["raw_handle"]["b64"];
    std::string handle(gpu::kCudaIpcHandleBytes + 2, '\0');
    handle.resize(boost::beast::detail::base64::decode(handle.data(), b64.data(), b64.size()).first);
    auto address = fake->Open(handle, 1);
    ASSERT_TRUE(address.ok()) << address.status().message();
    float a[2];
    std::memcpy(a, reinterpret_cast<const void*>(*address), sizeof a);
    EXPECT_EQ(a[1], -2.5f);
    int64_t b[3];
    std::memcpy(b, reinterpret_cast<const void*>(*address + 8), sizeof b);
    EXPECT_EQ(b[2], 12);
    EXPECT_EQ(server.posted[1].body["byte_size"], 8192);
    auto out = (*r)->OutputBytes();
    ASSERT_TRUE(out.ok());
    EXPECT_EQ(out->size(), 8192u);
  }
  // Unregistered and freed after the run.
  ASSERT_EQ(server.posted.size(), 4u);
  EXPECT_EQ(server.posted[2].target, "/v2/cudasharedmemory/region/run_input/unregister");
  EXPECT_EQ(server.posted[3].target, "/v2/cudasharedmemory/region/run_output/unregister");
  EXPECT_EQ(fake->allocated_count(), 0);
}

TEST(SharedMemoryRegions, SystemRegionsAreSharedMemoryObjectsRegisteredByKey) {
  RecordingServer server;
  SharedMemoryOptions o;
  o.mode = SharedMemoryMode::kSystem;
  o.output_bytes = 64;
  o.prefix = "ortgpu_perf_test_" + std::to_string(::getpid());
  const std::string key = "/" + o.prefix + "_input";
  {
    auto r = SharedMemoryRegions::Create(o, TwoInputs(), 1, server.Post());
    ASSERT_TRUE(r.ok()) << r.status().message();
    ASSERT_EQ(server.posted.size(), 2u);
    EXPECT_EQ(server.posted[0].target, "/v2/systemsharedmemory/region/" + o.prefix + "_input/register");
    EXPECT_EQ(server.posted[0].body["key"], key);
    EXPECT_EQ(server.posted[0].body["offset"], 0);
    EXPECT_EQ(server.posted[0].body["byte_size"], 32);
    // Another process (the server) sees the inputs under that key.
    const int fd = ::shm_open(key.c_str(), O_RDONLY, 0);
    ASSERT_GE(fd, 0);
    float a[2];
    ASSERT_EQ(::pread(fd, a, sizeof a, 0), static_cast<ssize_t>(sizeof a));
    ::close(fd);
    EXPECT_EQ(a[0], 1.5f);
  }
  EXPECT_EQ(server.posted.back().target, "/v2/systemsharedmemory/region/" + o.prefix + "_output/unregister");
  const int gone = ::shm_open(key.c_str(), O_RDONLY, 0);
  EXPECT_LT(gone, 0) << "the shared memory object was left behind";
  if (gone >= 0) ::close(gone);
}

TEST(SharedMemoryRegions, ARefusalSaysWhatTheServerNeedsAndLeavesNothingBehind) {
  auto fake = std::make_shared<testing::FakeCudaIpc>();
  RecordingServer server;
  server.status = 400;
  SharedMemoryOptions o;
  o.mode = SharedMemoryMode::kCuda;
  o.cuda = fake;
  auto r = SharedMemoryRegions::Create(o, TwoInputs(), 1, server.Post());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kFailedPrecondition);
  EXPECT_NE(r.status().message().find("HTTP 400: shared memory is not supported"), std::string::npos)
      << r.status().message();
  EXPECT_NE(r.status().message().find("CUDA shared memory extension"), std::string::npos);
  EXPECT_EQ(fake->allocated_count(), 0);
}

TEST(SharedMemoryRegions, BytesInputsAndUnknownModesAreRefused) {
  RecordingServer server;
  SharedMemoryOptions o;
  o.mode = SharedMemoryMode::kSystem;
  Tensor s = Tensor::Zeros("s", DataType::kString, {1});
  auto r = SharedMemoryRegions::Create(o, {s}, 1, server.Post());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("BYTES"), std::string::npos);
  EXPECT_TRUE(server.posted.empty());
  EXPECT_FALSE(ParseSharedMemoryMode("gpu").ok());
  EXPECT_EQ(*ParseSharedMemoryMode("cuda"), SharedMemoryMode::kCuda);
}

}  // namespace
}  // namespace ortgpu::perf
