#include "gpu/cuda_ipc.h"

#include <gtest/gtest.h>

#include "fakes/fake_dynamic_loader.h"

namespace ortgpu::gpu {
namespace {

// No driver, or an old one: CUDA shared memory says what is missing, and
// a handle of the wrong size is the client's error before any driver call.
TEST(CudaIpcTest, WithoutADriverOrWithAnOldOneRegistrationSaysWhy) {
  testing::FakeDynamicLoader loader;
  loader.FailOpen("libcuda.so.1", "libcuda.so.1: cannot open shared object file: No such file or directory");
  auto ipc = MakeDriverCudaIpc(loader);
  auto opened = ipc->Open(std::string(kCudaIpcHandleBytes, '\0'), 0);
  ASSERT_FALSE(opened.ok());
  EXPECT_EQ(opened.status().code(), Code::kUnavailable);
  EXPECT_NE(opened.status().message().find("CUDA shared memory needs the NVIDIA driver"), std::string::npos)
      << opened.status().message();
  EXPECT_EQ(ipc->Open("short", 0).status().code(), Code::kInvalidArgument);

  testing::FakeDynamicLoader old;
  old.AddLibrary("libcuda.so.1", {"/usr/lib/libcuda.so.1", {}});  // no entry points at all
  auto ipc_old = MakeDriverCudaIpc(old);
  opened = ipc_old->Open(std::string(kCudaIpcHandleBytes, '\0'), 0);
  ASSERT_FALSE(opened.ok());
  EXPECT_NE(opened.status().message().find("cuIpcOpenMemHandle_v2"), std::string::npos) << opened.status().message();
  EXPECT_NE(opened.status().message().find("newer NVIDIA driver"), std::string::npos);
}

}  // namespace
}  // namespace ortgpu::gpu
