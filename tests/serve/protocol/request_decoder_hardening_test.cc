// Hardening of the KServe request decoder (issue 11): ragged nested data is
// refused, and malformed bodies get a precise error without a second DOM
// being built (a large one without being scanned twice at all).
#include "serve/protocol/infer_request_decoder.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace ortgpu::serve::protocol {
namespace {

using ::testing::HasSubstr;

Expected<InferRequest> Decode(const std::string& json) { return DecodeInferRequest(json, std::nullopt, "m", ""); }

std::string OneInput(const std::string& shape, const std::string& data) {
  return R"({"inputs":[{"name":"x","datatype":"FP32","shape":)" + shape + R"(,"data":)" + data + "}]}";
}

TEST(RequestDecoderHardeningTest, RaggedDataIsRefusedEvenWhenItsLeafCountFits) {
  auto r = Decode(OneInput("[1,4]", "[[1,2,3],[4]]"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kInvalidArgument);
  EXPECT_THAT(r.status().message(), HasSubstr("ragged"));
  EXPECT_FALSE(Decode(OneInput("[2,2]", "[[1,2],3,4]")).ok());
  EXPECT_FALSE(Decode(OneInput("[4]", "[1,[2,3],4]")).ok());
  EXPECT_FALSE(Decode(OneInput("[2,2]", "[[[1,2]],[[3,4]]]")).ok());
}

TEST(RequestDecoderHardeningTest, FlatAndExactlyNestedDataAreAccepted) {
  EXPECT_TRUE(Decode(OneInput("[2,2]", "[1,2,3,4]")).ok());
  EXPECT_TRUE(Decode(OneInput("[2,2]", "[[1,2],[3,4]]")).ok());
  EXPECT_TRUE(Decode(OneInput("[1,2,2]", "[[[1,2],[3,4]]]")).ok());
  EXPECT_TRUE(Decode(OneInput("[0]", "[]")).ok());
}

TEST(RequestDecoderHardeningTest, MalformedSmallBodyNamesTheBytePosition) {
  auto r = Decode(R"({"inputs":[{"name":"x",)");
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("at byte"));
}

TEST(RequestDecoderHardeningTest, MalformedLargeBodyIsRefusedWithoutASecondParse) {
  // 2 MiB of numbers, then a syntax error: above the size whose error is
  // located by a second scan.
  std::string body = R"({"inputs":[{"name":"x","datatype":"FP32","shape":[1048576],"data":[)";
  for (int i = 0; i < 1048576; ++i) body += "1,";
  body += "]]}";
  auto r = Decode(body);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kInvalidArgument);
  EXPECT_THAT(r.status().message(), HasSubstr("not valid JSON"));
  EXPECT_THAT(r.status().message(), ::testing::Not(HasSubstr("at byte")));
}

}  // namespace
}  // namespace ortgpu::serve::protocol
