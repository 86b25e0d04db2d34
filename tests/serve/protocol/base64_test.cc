#include "serve/protocol/base64.h"

#include <gtest/gtest.h>

namespace ortgpu::serve::protocol {
namespace {

TEST(Base64Test, RoundTripsRfc4648Vectors) {
  const std::pair<const char*, const char*> vectors[] = {
      {"", ""}, {"f", "Zg=="}, {"fo", "Zm8="}, {"foo", "Zm9v"}, {"foob", "Zm9vYg=="}, {"fooba", "Zm9vYmE="},
      {"foobar", "Zm9vYmFy"}};
  for (const auto& [plain, encoded] : vectors) {
    EXPECT_EQ(EncodeBase64(plain), encoded);
    auto back = DecodeBase64(encoded);
    ASSERT_TRUE(back.ok()) << encoded;
    EXPECT_EQ(*back, plain);
  }
  const std::string binary("\x00\xff\x10\x80", 4);
  EXPECT_EQ(*DecodeBase64(EncodeBase64(binary)), binary);
}

TEST(Base64Test, BadTextIsNamed) {
  EXPECT_NE(DecodeBase64("abc").status().message().find("multiple of 4"), std::string::npos);
  EXPECT_NE(DecodeBase64("ab!d").status().message().find("position 2"), std::string::npos);
  EXPECT_FALSE(DecodeBase64("a=bc").ok());
  EXPECT_FALSE(DecodeBase64("ab=c").ok());
  EXPECT_FALSE(DecodeBase64("ab==abcd").ok());  // padding only at the end
}

}  // namespace
}  // namespace ortgpu::serve::protocol
