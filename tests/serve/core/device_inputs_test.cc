// Inputs whose bytes are in device memory (a CUDA shared memory region's
// DeviceView) reaching the real server core: validated like host inputs
// (shape and byte size), copied to the host once for a CPU instance, and
// refused clearly where they cannot be copied, with the server serving on
// (issue 10).
#include <cstring>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "serve/core/test_repository.h"
#include "serve/server_core.h"

namespace ortgpu::serve {
namespace {

using ::testing::HasSubstr;
using testing::CpuOptions;
using testing::Floats;
using testing::InferSync;
using testing::Input;
using testing::Request;
using testing::ScaleModel;
using testing::Start;
using testing::TempRepository;

Tensor OnDevice(Tensor t, size_t bytes) {
  auto memory = std::make_shared<std::vector<uint8_t>>(t.data.begin(), t.data.end());
  memory->resize(bytes);
  DeviceView v;
  v.address = reinterpret_cast<uint64_t>(memory->data());
  v.size = bytes;
  v.device = 0;
  v.where = "CUDA shared memory region 'g0'";
  v.owner = memory;
  t.data.clear();
  t.device = std::move(v);
  return t;
}

TEST(DeviceInputsTest, ACpuModelCopiesADeviceInputToTheHostOnce) {
  TempRepository repo;
  repo.AddModel("m", 1, ScaleModel(2));
  auto core = Start(CpuOptions(repo));
  ASSERT_NE(core, nullptr);
  Tensor in = OnDevice(Input({1, 2, 3, 4}), 16);
  auto copies = std::make_shared<int>(0);
  in.device->to_host = [copies](void* dst, uint64_t address, size_t size) {
    ++*copies;
    std::memcpy(dst, reinterpret_cast<const void*>(address), size);
    return Status::Ok();
  };
  auto r = InferSync(*core, Request("m", {in}));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(Floats(r->outputs[0]), (std::vector<float>{2, 4, 6, 8}));
  EXPECT_EQ(*copies, 1);
}

TEST(DeviceInputsTest, ADeviceInputThatCannotBeCopiedIsRefusedClearlyAndTheModelServesOn) {
  TempRepository repo;
  repo.AddModel("m", 1, ScaleModel(2));
  auto core = Start(CpuOptions(repo));
  ASSERT_NE(core, nullptr);
  auto r = InferSync(*core, Request("m", {OnDevice(Input({1, 2, 3, 4}), 16)}));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kInvalidArgument);
  EXPECT_THAT(r.status().message(), HasSubstr("input 'x' is in CUDA shared memory region 'g0' on GPU 0"));
  EXPECT_THAT(r.status().message(), HasSubstr("reads host memory only"));

  // The byte size is checked as for host bytes, before anything runs.
  r = InferSync(*core, Request("m", {OnDevice(Input({1, 2, 3, 4}), 12)}));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kInvalidArgument);
  EXPECT_THAT(r.status().message(), HasSubstr("needs 16 bytes, got 12"));

  auto ok = InferSync(*core, Request("m", {Input({1, 2, 3, 4})}));
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ(Floats(ok->outputs[0]), (std::vector<float>{2, 4, 6, 8}));
}

}  // namespace
}  // namespace ortgpu::serve
