// Tests of the host Tensor helpers in ort/tensor.h.
#include "ort/tensor.h"

#include <gtest/gtest.h>

namespace ortgpu {
namespace {

// TensorBytes: borrowed bytes are read in place; writing copies them first,
// so the buffer they came from is never changed.
TEST(TensorBytesTest, BorrowedBytesAreSharedAndCopiedOnWrite) {
  auto buffer = std::make_shared<std::vector<uint8_t>>(std::vector<uint8_t>{1, 2, 3, 4});
  TensorBytes bytes;
  bytes.Borrow(buffer, buffer->data() + 1, 2);
  EXPECT_TRUE(bytes.borrowed());
  EXPECT_EQ(static_cast<const TensorBytes&>(bytes).data(), buffer->data() + 1);
  EXPECT_EQ(bytes.size(), 2u);
  TensorBytes copy = bytes;  // shares the buffer
  EXPECT_EQ(static_cast<const TensorBytes&>(copy).data(), buffer->data() + 1);
  EXPECT_TRUE(copy == bytes);
  copy.data()[0] = 9;  // a write: copy first
  EXPECT_FALSE(copy.borrowed());
  EXPECT_EQ((*buffer)[1], 2);
  EXPECT_EQ(copy[0], 9);
  EXPECT_EQ(copy[1], 3);
  bytes.assign(bytes.begin(), bytes.end());  // from its own borrowed bytes
  EXPECT_FALSE(bytes.borrowed());
  EXPECT_TRUE(bytes == TensorBytes({2, 3}));
  bytes.insert(bytes.end(), copy.begin(), copy.end());
  EXPECT_TRUE(bytes == TensorBytes({2, 3, 9, 3}));
}

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
