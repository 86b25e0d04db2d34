#include "ort/input_staging.h"

#include <cstring>

#include <gtest/gtest.h>

#include "onnx/model_builder.h"

namespace ortgpu {
namespace {

std::unique_ptr<Session> Builtin() {
  SessionOptions o;
  o.intra_op_threads = 1;
  auto s = Session::LoadFromBytes(onnx::BuiltinCheckModel(), o, "builtin");
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  return s.ok() ? std::move(s).value() : nullptr;
}

Tensor Image(int64_t batch, float scale) {
  Tensor t = Tensor::Zeros("image", DataType::kFloat, {batch, 3, 64, 64});
  for (int64_t i = 0; i < t.element_count(); ++i) t.data_as<float>()[i] = static_cast<float>(i % 13) * scale;
  return t;
}

// The batch path of `serve`: rows written into reused buffers, any batch
// size up to the maximum, the same outputs as Session::Run on Tensors.
TEST(InputStagingTest, StagedBatchesOfEverySizeMatchSessionRun) {
  auto s = Builtin();
  ASSERT_NE(s, nullptr);
  auto staging = InputStaging::Create(*s, {{"image", DataType::kFloat, {3, 64, 64}}}, 4);
  ASSERT_TRUE(staging.ok()) << staging.status().ToString();
  EXPECT_FALSE((*staging)->pinned());  // the CPU EP has no pinned allocator
  EXPECT_EQ((*staging)->row_bytes(0), 3u * 64 * 64 * sizeof(float));
  for (int64_t rows : {4, 1, 3}) {
    Tensor image = Image(rows, 0.01f * static_cast<float>(rows));
    std::memcpy((*staging)->data(0), image.data.data(), image.byte_size());
    auto staged = (*staging)->Run(*s, rows);
    ASSERT_TRUE(staged.ok()) << staged.status().ToString();
    auto direct = s->Run({image});
    ASSERT_TRUE(direct.ok());
    ASSERT_EQ(staged->size(), 1u);
    EXPECT_EQ((*staged)[0].name, "logits");
    EXPECT_EQ((*staged)[0].shape, (std::vector<int64_t>{rows, 10}));
    EXPECT_EQ((*staged)[0].data, (*direct)[0].data) << rows << " rows";
  }
}

TEST(InputStagingTest, ReshapedViewAndBadSizesAreErrors) {
  auto s = Builtin();
  ASSERT_NE(s, nullptr);
  auto staging = InputStaging::Create(*s, {{"image", DataType::kFloat, {3 * 64 * 64}}}, 2);
  ASSERT_TRUE(staging.ok()) << staging.status().ToString();
  std::memset((*staging)->data(0), 0, 2 * (*staging)->row_bytes(0));
  // config.pbtxt's reshape: rows of 12288 floats run as [2,3,64,64].
  auto out = (*staging)->Run(*s, 2, {{2, 3, 64, 64}});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ((*out)[0].shape, (std::vector<int64_t>{2, 10}));
  EXPECT_FALSE((*staging)->Run(*s, 3).ok());                     // more rows than the buffers hold
  EXPECT_FALSE((*staging)->Run(*s, 2, {{2, 3, 64, 63}}).ok());   // a shape that does not hold the rows
  auto strings = InputStaging::Create(*s, {{"text", DataType::kString, {1}}}, 2);
  ASSERT_FALSE(strings.ok());
  EXPECT_NE(strings.status().message().find("strings"), std::string::npos);
}

}  // namespace
}  // namespace ortgpu
