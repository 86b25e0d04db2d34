// Tests of the host Tensor helpers in ort/tensor.h.
#include "ort/tensor.h"

#include <gtest/gtest.h>

namespace ortgpu {
namespace {

TEST(ValidateTensorSizeTest, AcceptsExactlyTheBytesTheShapeCallsFor) {
  Tensor t = Tensor::Zeros("x", DataType::kFloat, {2, 3});
  EXPECT_TRUE(ValidateTensorSize(t).ok());
  t.data.pop_back();
  Status st = ValidateTensorSize(t);
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  EXPECT_NE(st.message().find("needs 24 bytes, got 23"), std::string::npos) << st.message();
}

// Regression (review item 6): elements * element size wrapped around 2^64, so
// an INT64 tensor of shape [2^61] (2^64 bytes, i.e. 0 after wrapping) with no
// data passed.
TEST(ValidateTensorSizeTest, AByteSizeThatOverflowsIsRefusedNamingTheTensor) {
  Tensor t;
  t.name = "ids";
  t.dtype = DataType::kInt64;
  t.shape = {int64_t{1} << 61};
  Status st = ValidateTensorSize(t);
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  EXPECT_NE(st.message().find("'ids'"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("2^64 bytes"), std::string::npos) << st.message();

  t.dtype = DataType::kComplex128;  // 16 bytes: 2^60 elements wrap as well
  t.shape = {int64_t{1} << 60};
  EXPECT_EQ(ValidateTensorSize(t).code(), Code::kInvalidArgument);

  t.dtype = DataType::kUint8;  // 2^61 bytes: no overflow, only missing data
  t.shape = {int64_t{1} << 61};
  st = ValidateTensorSize(t);
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  EXPECT_NE(st.message().find("got 0"), std::string::npos) << st.message();
}

}  // namespace
}  // namespace ortgpu
