// Tensor cores by compute capability (issue 26's table).
#include "gpu/tensor_cores.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace ortgpu::gpu {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

TEST(TensorCoresTest, EachGenerationAddsItsPrecisions) {
  EXPECT_THAT(TensorCoresFor(70).dense, ElementsAre("fp16"));
  EXPECT_EQ(TensorCoresFor(72).generation, "Volta");
  EXPECT_THAT(TensorCoresFor(75).dense, ElementsAre("fp16", "int8", "int4"));
  for (int ampere : {80, 86, 87}) {
    const TensorCores tc = TensorCoresFor(ampere);
    EXPECT_EQ(tc.generation, "Ampere") << ampere;
    EXPECT_TRUE(tc.has("tf32") && tc.has("bf16")) << ampere;
    EXPECT_FALSE(tc.has("fp8")) << ampere;
  }
  EXPECT_TRUE(TensorCoresFor(89).has("fp8"));
  EXPECT_EQ(TensorCoresFor(89).generation, "Ada Lovelace");
  EXPECT_THAT(TensorCoresFor(90).dense, ElementsAre("fp16", "bf16", "tf32", "fp8", "int8"));
  for (int blackwell : {100, 103, 120, 121}) {
    EXPECT_EQ(TensorCoresFor(blackwell).generation, "Blackwell") << blackwell;
    EXPECT_TRUE(TensorCoresFor(blackwell).has("fp4")) << blackwell;
  }
  EXPECT_FALSE(TensorCoresFor(90).has("fp4"));
}

TEST(TensorCoresTest, NoTensorCoresBeforeVolta) {
  for (int cc : {0, 52, 60, 61}) {
    const TensorCores tc = TensorCoresFor(cc);
    EXPECT_FALSE(tc.any()) << cc;
    EXPECT_THAT(tc.dense, IsEmpty());
    EXPECT_EQ(tc.generation, "pre-Volta");
    EXPECT_FALSE(tc.note.empty());
  }
}

TEST(TensorCoresTest, HopperDroppedInt4) {
  EXPECT_TRUE(TensorCoresFor(86).has("int4"));
  EXPECT_FALSE(TensorCoresFor(90).has("int4"));
}

}  // namespace
}  // namespace ortgpu::gpu
