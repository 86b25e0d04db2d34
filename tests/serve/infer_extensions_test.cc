// The inference extensions both front ends call around the core
// (serve/infer_extensions.h): a region input recorded by either decoder is
// read the same way, so HTTP and gRPC say the same thing of the same
// mistake; outputs bound for CUDA regions become device destinations; the
// response step acts only on the outputs that ask for it.
#include "serve/infer_extensions.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "fakes/fake_cuda_ipc.h"
#include "serve/grpc/grpc_codec.h"

namespace ortgpu::serve {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ortgpu::testing::FakeCudaIpc;

class InferExtensionsTest : public ::testing::Test {
 protected:
  InferExtensionsTest() : registry_(ipc_) {
    handle_ = ipc_->Export(64, /*device=*/0);
    EXPECT_TRUE(registry_.RegisterCuda("g0", handle_, 0, 64).ok());
  }
  // x [1, 4] FP32 as gRPC sends it, in region g0 with `bytes` bytes.
  inference::ModelInferRequest GrpcRequest(int64_t bytes) {
    inference::ModelInferRequest req;
    req.set_model_name("m");
    auto* in = req.add_inputs();
    in->set_name("x");
    in->set_datatype("FP32");
    in->add_shape(1);
    in->add_shape(4);
    (*in->mutable_parameters())["shared_memory_region"].set_string_param("g0");
    (*in->mutable_parameters())["shared_memory_byte_size"].set_int64_param(bytes);
    return req;
  }
  std::shared_ptr<FakeCudaIpc> ipc_ = std::make_shared<FakeCudaIpc>();
  SharedMemoryRegistry registry_;
  std::string handle_;
};

TEST_F(InferExtensionsTest, AGrpcRegionInputIsRecordedByTheCodecAndReadByThePreparation) {
  auto req = GrpcRequest(16);
  auto decoded = DecodeGrpcInferRequest(req, &registry_);
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  ASSERT_EQ(decoded->shared_memory_inputs.count("x"), 1u);  // recorded, not read yet
  EXPECT_FALSE(decoded->inputs[0].on_device());
  ASSERT_TRUE(PrepareExtensions(*decoded, &registry_).ok());
  EXPECT_TRUE(decoded->shared_memory_inputs.empty());
  ASSERT_TRUE(decoded->inputs[0].on_device());  // a CUDA region's bytes stay on the device
  EXPECT_EQ(decoded->inputs[0].byte_size(), 16u);
}

TEST_F(InferExtensionsTest, ARegionOfTheWrongSizeIsNamedAsOverHttp) {
  auto req = GrpcRequest(12);
  auto decoded = DecodeGrpcInferRequest(req, &registry_);
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  Status st = PrepareExtensions(*decoded, &registry_);
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  // ReadSharedMemoryInputs' own words, which HTTP's requests get too.
  EXPECT_THAT(st.message(), HasSubstr("input 'x': shared_memory_byte_size is 12, but shape [1x4] of FP32 needs 16"));
}

TEST_F(InferExtensionsTest, WithoutSharedMemoryARegionInputIsUnimplementedAndNamed) {
  InferRequest r;
  Tensor t;
  t.name = "x";
  t.dtype = DataType::kFloat;
  t.shape = {1, 4};
  r.inputs.push_back(t);
  r.shared_memory_inputs["x"] = {{"shared_memory_region", "\"g0\""}, {"shared_memory_byte_size", "16"}};
  Status st = PrepareExtensions(r, nullptr);
  EXPECT_EQ(st.code(), Code::kUnimplemented);
  EXPECT_THAT(st.message(), HasSubstr("input 'x': this server has no shared memory"));
  InferRequest plain;
  EXPECT_TRUE(PrepareExtensions(plain, nullptr).ok());
}

TEST_F(InferExtensionsTest, AnOutputInACudaRegionBecomesADeviceDestination) {
  InferRequest r;
  RequestedOutput y{"y", false, {{"shared_memory_region", "\"g0\""}, {"shared_memory_byte_size", "16"}}};
  RequestedOutput z{"z", false, {{"classification", "2"}}};
  r.outputs = {y, z};
  ASSERT_TRUE(PrepareExtensions(r, &registry_).ok());
  EXPECT_EQ(r.device_outputs.count("y"), 1u);
  EXPECT_EQ(r.device_outputs.count("z"), 0u);
  std::vector<std::string> names;
  for (const auto& o : ExtendedOutputs({y, z, RequestedOutput{"w", true, {}}})) names.push_back(o.name);
  EXPECT_THAT(names, ElementsAre("y", "z"));  // w asks for nothing after the core
}

}  // namespace
}  // namespace ortgpu::serve
