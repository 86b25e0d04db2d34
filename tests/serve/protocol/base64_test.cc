// DecodeBase64 / EncodeBase64: the load parameters' file: bytes over HTTP.
#include "serve/protocol/base64.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace ortgpu::serve::protocol {
namespace {

using ::testing::HasSubstr;

TEST(Base64Test, RoundTripsEveryLengthAndByte) {
  std::string bytes;
  for (int i = 0; i < 256; ++i) bytes.push_back(static_cast<char>(i));
  for (size_t n = 0; n <= 7; ++n) {
    const std::string part = bytes.substr(250 - n, n);
    auto back = DecodeBase64(EncodeBase64(part));
    ASSERT_TRUE(back.ok()) << back.status().ToString();
    EXPECT_EQ(*back, part);
  }
  EXPECT_EQ(EncodeBase64("onnx"), "b25ueA==");
  EXPECT_EQ(*DecodeBase64(EncodeBase64(bytes)), bytes);
}

TEST(Base64Test, PaddingMayBeLeftOut) {
  EXPECT_EQ(*DecodeBase64("b25ueA"), "onnx");
  EXPECT_EQ(*DecodeBase64("b25ueA=="), "onnx");
  EXPECT_EQ(*DecodeBase64(""), "");
}

TEST(Base64Test, BadTextSaysWhereAndWhy) {
  auto r = DecodeBase64("b25u eA");
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("character 4"));
  EXPECT_THAT(DecodeBase64("b25ueA=").status().message(), HasSubstr("not a multiple of 4"));
  EXPECT_THAT(DecodeBase64("b=25").status().message(), HasSubstr("character 1"));
  EXPECT_THAT(DecodeBase64("b25ue").status().message(), HasSubstr("cut short"));
}

}  // namespace
}  // namespace ortgpu::serve::protocol
