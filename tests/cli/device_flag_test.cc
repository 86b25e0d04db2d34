// --device of doctor and bench (src/cli/device_flag.cc): what parses, and a
// GPU that is not visible refused with what is (issue 30 item 6: on a
// one-GPU host, --device 1 said only "CUDA EP failed to initialise").
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "cli/commands.h"

namespace ortgpu::cli {
namespace {

using ::testing::HasSubstr;

serve::VisibleGpus Gpus(int n, std::optional<std::string> cvd = std::nullopt) {
  serve::VisibleGpus g;
  for (int i = 0; i < n; ++i) {
    g.uuids.push_back("GPU-" + std::to_string(i));
    g.names.push_back("NVIDIA H200");
  }
  g.cuda_visible_devices = std::move(cvd);
  return g;
}

TEST(ParseDeviceFlag, AnOrdinalOrAll) {
  EXPECT_EQ(**ParseDeviceFlag("1"), 1);
  EXPECT_FALSE(ParseDeviceFlag("all")->has_value());
  for (const char* bad : {"", "-1", "1x", "gpu0", "99999999999"}) {
    auto r = ParseDeviceFlag(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_THAT(r.status().message(), HasSubstr("give a GPU (a CUDA ordinal: 0, 1, ...) or all"));
  }
}

TEST(CheckDeviceVisible, AVisibleGpuPasses) {
  EXPECT_TRUE(CheckDeviceVisible("0", 0, Gpus(1)).ok());
  EXPECT_TRUE(CheckDeviceVisible("3", 3, Gpus(4)).ok());
}

TEST(CheckDeviceVisible, AGpuPastTheVisibleOnesSaysWhatIsVisible) {
  Status one = CheckDeviceVisible("1", 1, Gpus(1));
  EXPECT_EQ(one.code(), Code::kInvalidArgument);
  EXPECT_THAT(one.message(), HasSubstr("--device 1: 1 GPU is visible (CUDA_VISIBLE_DEVICES unset), numbered 0 "));
  EXPECT_THAT(one.message(), HasSubstr("give one of those or all"));
  Status masked = CheckDeviceVisible("2", 2, Gpus(2, "1,3"));
  EXPECT_THAT(masked.message(), HasSubstr("2 GPUs are visible (CUDA_VISIBLE_DEVICES=1,3), numbered 0..1"));
  EXPECT_THAT(masked.message(), HasSubstr("count after CUDA_VISIBLE_DEVICES"));
}

}  // namespace
}  // namespace ortgpu::cli
