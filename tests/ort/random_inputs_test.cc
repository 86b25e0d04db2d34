#include "ort/random_inputs.h"

#include <gtest/gtest.h>

namespace ortgpu {
namespace {

TEST(RandomInputsTest, IntegersStayInTheRangeAndTheSeedRepeatsTheValues) {
  Tensor a = Tensor::Zeros("input_ids", DataType::kInt64, {4, 128});
  FillRandom(a, 7, {5, 9});
  for (int64_t i = 0; i < a.element_count(); ++i) {
    EXPECT_GE(a.data_as<int64_t>()[i], 5);
    EXPECT_LT(a.data_as<int64_t>()[i], 9);
  }
  Tensor b = Tensor::Zeros("input_ids", DataType::kInt64, {4, 128});
  FillRandom(b, 7, {5, 9});
  EXPECT_EQ(a.data, b.data);
}

TEST(RandomInputsTest, DefaultRangesKeepMasksOnAndIndicesSmall) {
  EXPECT_EQ(DefaultIntRange("attention_mask", DataType::kInt64).lo, 1);
  EXPECT_EQ(DefaultIntRange("token_type_ids", DataType::kInt64).hi, 1);
  EXPECT_EQ(DefaultIntRange("ids", DataType::kInt64).hi, 100);
}

TEST(RandomInputsTest, ShapeCheckNamesTheFixedDimension) {
  TensorInfo in;
  in.name = "image";
  in.shape = {-1, 3, 224, 224};
  EXPECT_TRUE(CheckShapeFits(in, {8, 3, 224, 224}, "--shape").ok());
  Status st = CheckShapeFits(in, {8, 3, 224, 225}, "--shape");
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  EXPECT_NE(st.message().find("dimension 3 is fixed at 224"), std::string::npos) << st.message();
  EXPECT_NE(CheckShapeFits(in, {8, 3}, "--shape").message().find("expects rank 4"), std::string::npos);
}

}  // namespace
}  // namespace ortgpu
