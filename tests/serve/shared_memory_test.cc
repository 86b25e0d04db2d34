// SharedMemoryRegistry and the request path over it for CUDA regions, the
// device faked on the host (FakeCudaIpc): a CUDA region's fixed-size inputs
// become device views with no copy to the host (issue 10), checked like host
// bytes; strings are copied once; a region unregistered while a request is
// in flight stays mapped until the request is done.
#include "serve/shared_memory.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>

#include "fakes/fake_cuda_ipc.h"

namespace ortgpu::serve {
namespace {

using ::testing::HasSubstr;
using ortgpu::testing::FakeCudaIpc;

class CudaRegionTest : public ::testing::Test {
 protected:
  CudaRegionTest() : registry_(ipc_) {
    handle_ = ipc_->Export(64, /*device=*/0);
    EXPECT_TRUE(registry_.RegisterCuda("g0", handle_, 0, 64).ok());
  }
  // A request for x [1, 4] FP32 read from g0 at `offset`, `bytes` bytes.
  InferRequest Request(uint64_t offset, uint64_t bytes, DataType dtype = DataType::kFloat) {
    InferRequest r;
    Tensor t;
    t.name = "x";
    t.dtype = dtype;
    t.shape = {1, 4};
    r.inputs.push_back(t);
    r.shared_memory_inputs["x"] = {{"shared_memory_region", "\"g0\""},
                                   {"shared_memory_offset", std::to_string(offset)},
                                   {"shared_memory_byte_size", std::to_string(bytes)}};
    return r;
  }
  std::shared_ptr<FakeCudaIpc> ipc_ = std::make_shared<FakeCudaIpc>();
  SharedMemoryRegistry registry_;
  std::string handle_;
};

TEST_F(CudaRegionTest, AnInputBecomesADeviceViewWithNoHostCopy) {
  auto r = Request(16, 16);
  ASSERT_TRUE(ReadSharedMemoryInputs(r, registry_).ok());
  const Tensor& x = r.inputs[0];
  ASSERT_TRUE(x.on_device());
  EXPECT_TRUE(x.data.empty());
  EXPECT_EQ(x.byte_size(), 16u);
  EXPECT_EQ(x.device->address, reinterpret_cast<uint64_t>(ipc_->Memory(handle_).data()) + 16);
  EXPECT_EQ(x.device->device, 0);
  EXPECT_THAT(x.device->where, HasSubstr("'g0'"));
  EXPECT_TRUE(ValidateTensorSize(x).ok());
  EXPECT_EQ(ipc_->to_host_count(), 0);
}

// Where host bytes are needed (a CPU instance, an unbatched model) the view
// copies them once through the IPC that mapped the region.
TEST_F(CudaRegionTest, AViewCopiesItsBytesToTheHostThroughTheIpcWhenAsked) {
  auto& mem = ipc_->Memory(handle_);
  for (size_t i = 0; i < mem.size(); ++i) mem[i] = static_cast<uint8_t>(i);
  auto r = Request(16, 16);
  ASSERT_TRUE(ReadSharedMemoryInputs(r, registry_).ok());
  Tensor x = r.inputs[0];
  ASSERT_TRUE(CopyToHost(x, "a CPU instance").ok());
  EXPECT_FALSE(x.on_device());
  EXPECT_EQ(ipc_->to_host_count(), 1);
  ASSERT_EQ(x.data.size(), 16u);
  for (size_t i = 0; i < 16; ++i) EXPECT_EQ(x.data[i], static_cast<uint8_t>(16 + i));
  EXPECT_TRUE(ValidateTensorSize(x).ok());
}

TEST_F(CudaRegionTest, SizesAndRangesAreCheckedAsForHostBytes) {
  auto wrong = Request(0, 12);
  Status st = ReadSharedMemoryInputs(wrong, registry_);
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  EXPECT_THAT(st.message(), HasSubstr("shared_memory_byte_size is 12, but shape [1x4] of FP32 needs 16"));
  auto outside = Request(56, 16);
  st = ReadSharedMemoryInputs(outside, registry_);
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  EXPECT_THAT(st.message(), HasSubstr("holds 64 bytes; offset 56 + 16 bytes is outside it"));
  auto beyond = Request(1ull << 40, 16);
  EXPECT_EQ(ReadSharedMemoryInputs(beyond, registry_).code(), Code::kInvalidArgument);
  auto unknown = Request(0, 16);
  unknown.shared_memory_inputs["x"]["shared_memory_region"] = "\"nope\"";
  EXPECT_EQ(ReadSharedMemoryInputs(unknown, registry_).code(), Code::kNotFound);
}

TEST_F(CudaRegionTest, ARegionUnregisteredInFlightStaysMappedUntilTheRequestIsDone) {
  auto r = Request(0, 16);
  ASSERT_TRUE(ReadSharedMemoryInputs(r, registry_).ok());
  registry_.Unregister("g0", SharedMemoryKind::kCuda);
  EXPECT_EQ(ipc_->open_count(), 1);  // the request's view holds it
  EXPECT_EQ(registry_.Regions("", SharedMemoryKind::kCuda)->size(), 0u);
  auto later = Request(0, 16);
  EXPECT_EQ(ReadSharedMemoryInputs(later, registry_).code(), Code::kNotFound);
  r.inputs.clear();
  EXPECT_EQ(ipc_->open_count(), 0);
}

// Strings are parsed on the host: a BYTES input in a CUDA region is copied
// to the host once.
TEST_F(CudaRegionTest, AStringInputIsCopiedToTheHostOnce) {
  uint8_t* m = ipc_->Memory(handle_).data();
  for (int i = 0; i < 4; ++i) {
    const uint32_t n = 1;
    std::memcpy(m + i * 5, &n, 4);
    m[i * 5 + 4] = static_cast<uint8_t>('a' + i);
  }
  auto r = Request(0, 20, DataType::kString);
  ASSERT_TRUE(ReadSharedMemoryInputs(r, registry_).ok());
  EXPECT_FALSE(r.inputs[0].on_device());
  EXPECT_EQ(r.inputs[0].strings, (std::vector<std::string>{"a", "b", "c", "d"}));
  EXPECT_EQ(ipc_->to_host_count(), 1);
}

// An output the instance wrote into its CUDA region already (a
// placeholder) is only recorded; others are written host to device.
TEST_F(CudaRegionTest, OutputsResolveToTheRegionAndWrittenOnesAreOnlyRecorded) {
  InferRequest r;
  r.outputs.push_back({"y", false, {{"shared_memory_region", "\"g0\""}, {"shared_memory_byte_size", "16"},
                                    {"shared_memory_offset", "32"}}});
  r.outputs.push_back({"z", false, {{"shared_memory_region", "\"g0\""}, {"shared_memory_byte_size", "8"},
                                    {"classification", "2"}}});
  ASSERT_TRUE(ResolveDeviceOutputs(r, registry_).ok());
  ASSERT_EQ(r.device_outputs.size(), 1u);  // classified outputs stay on the host
  EXPECT_EQ(r.device_outputs.at("y").address, reinterpret_cast<uint64_t>(ipc_->Memory(handle_).data()) + 32);
  EXPECT_EQ(r.device_outputs.at("y").size, 16u);

  InferResponse response;
  Tensor written;
  written.name = "y";
  written.dtype = DataType::kFloat;
  written.shape = {1, 4};
  written.device = DeviceView{};
  response.outputs.push_back(written);
  ASSERT_TRUE(WriteSharedMemoryOutputs(response, {r.outputs[0]}, registry_).ok());
  EXPECT_EQ(ipc_->to_device_count(), 0);
  EXPECT_EQ(response.output_parameters[0].at("shared_memory_byte_size"), "16");

  response.outputs[0] = Tensor::Zeros("y", DataType::kFloat, {1, 4});
  ASSERT_TRUE(WriteSharedMemoryOutputs(response, {r.outputs[0]}, registry_).ok());
  EXPECT_EQ(ipc_->to_device_count(), 1);  // the host fallback
}

}  // namespace
}  // namespace ortgpu::serve
