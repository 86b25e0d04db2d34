#include "ort/input_staging.h"

#include <cstring>

#include <gtest/gtest.h>

#include "onnx/model_builder.h"
#include "ort/builtin_session.h"

namespace ortgpu {
namespace {

using test::BuiltinSession;

Tensor Image(int64_t batch, float scale) {
  Tensor t = Tensor::Zeros("image", DataType::kFloat, {batch, 3, 64, 64});
  for (int64_t i = 0; i < t.element_count(); ++i) t.data_as<float>()[i] = static_cast<float>(i % 13) * scale;
  return t;
}

// The batch path of `serve`: rows written into reused buffers, any batch
// size up to the maximum, the same outputs as Session::Run on Tensors.
TEST(InputStagingTest, StagedBatchesOfEverySizeMatchSessionRun) {
  auto s = BuiltinSession();
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

// x [batch, 4] -> "double" = x + x and "square" = x * x.
std::unique_ptr<Session> TwoOutputs() {
  onnx::ModelBuilder b;
  b.AddInput("x", DataType::kFloat, {-1, 4}, {"batch"});
  b.AddOutput("double", DataType::kFloat, {-1, 4}, {"batch"});
  b.AddOutput("square", DataType::kFloat, {-1, 4}, {"batch"});
  b.AddNode("Add", {"x", "x"}, {"double"});
  b.AddNode("Mul", {"x", "x"}, {"square"});
  SessionOptions o;
  o.intra_op_threads = 1;
  auto s = Session::LoadFromBytes(b.Serialize(), o, "two-outputs");
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  return s.ok() ? std::move(s).value() : nullptr;
}

// A batch fetches only the outputs its requests asked for, and hands them
// back in the memory ORT wrote them to (borrowed, not copied again).
TEST(InputStagingTest, OnlyTheAskedOutputsAreFetchedAndNotCopied) {
  auto s = TwoOutputs();
  ASSERT_NE(s, nullptr);
  auto staging = InputStaging::Create(*s, {{"x", DataType::kFloat, {4}}}, 2);
  ASSERT_TRUE(staging.ok()) << staging.status().ToString();
  float* x = reinterpret_cast<float*>((*staging)->data(0));
  for (int i = 0; i < 8; ++i) x[i] = static_cast<float>(i);
  auto square = (*staging)->Run(*s, 2, {}, {"square"});
  ASSERT_TRUE(square.ok()) << square.status().ToString();
  ASSERT_EQ(square->size(), 1u);
  EXPECT_EQ((*square)[0].name, "square");
  EXPECT_EQ((*square)[0].shape, (std::vector<int64_t>{2, 4}));
  const Tensor& got = (*square)[0];
  EXPECT_TRUE(got.data.borrowed());
  EXPECT_FLOAT_EQ(got.data_as<float>()[3], 9.0f);
  auto both = (*staging)->Run(*s, 1);
  ASSERT_TRUE(both.ok()) << both.status().ToString();
  ASSERT_EQ(both->size(), 2u);
  EXPECT_EQ((*both)[0].name, "double");
  EXPECT_FLOAT_EQ((*both)[0].data_as<float>()[3], 6.0f);
  EXPECT_EQ((*both)[1].name, "square");
}

TEST(InputStagingTest, ReshapedViewAndBadSizesAreErrors) {
  auto s = BuiltinSession();
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
