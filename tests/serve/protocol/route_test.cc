#include "serve/protocol/route.h"

#include <gtest/gtest.h>

namespace ortgpu::serve::protocol {
namespace {

Route Match(std::string_view target) {
  auto r = MatchRoute(target);
  EXPECT_TRUE(r.ok()) << target << ": " << r.status().ToString();
  return r.ok() ? *r : Route{};
}

Code Fail(std::string_view target) {
  auto r = MatchRoute(target);
  EXPECT_FALSE(r.ok()) << target;
  return r.status().code();
}

TEST(MatchRouteTest, ServerEndpoints) {
  EXPECT_EQ(Match("/v2").endpoint, Endpoint::kServerMetadata);
  EXPECT_EQ(Match("/v2/").endpoint, Endpoint::kServerMetadata);
  EXPECT_EQ(Match("/v2/health/live").endpoint, Endpoint::kHealthLive);
  EXPECT_EQ(Match("/v2/health/ready?x=1").endpoint, Endpoint::kHealthReady);
  EXPECT_EQ(Match("/v2/models/stats").endpoint, Endpoint::kAllModelStats);
  Route idx = Match("/v2/repository/index");
  EXPECT_EQ(idx.endpoint, Endpoint::kRepositoryIndex);
  EXPECT_EQ(idx.method, "POST");
}

TEST(MatchRouteTest, ModelEndpointsWithAndWithoutVersion) {
  Route r = Match("/v2/models/resnet");
  EXPECT_EQ(r.endpoint, Endpoint::kModelMetadata);
  EXPECT_EQ(r.model, "resnet");
  EXPECT_EQ(r.version, "");
  r = Match("/v2/models/resnet/versions/3/infer");
  EXPECT_EQ(r.endpoint, Endpoint::kInfer);
  EXPECT_EQ(r.method, "POST");
  EXPECT_EQ(r.version, "3");
  EXPECT_EQ(Match("/v2/models/resnet/versions/3").endpoint, Endpoint::kModelMetadata);
  EXPECT_EQ(Match("/v2/models/resnet/ready").endpoint, Endpoint::kModelReady);
  EXPECT_EQ(Match("/v2/models/resnet/config").endpoint, Endpoint::kModelConfig);
  EXPECT_EQ(Match("/v2/models/resnet/versions/2/stats").endpoint, Endpoint::kModelStats);
  r = Match("/v2/repository/models/my%20model/unload");
  EXPECT_EQ(r.endpoint, Endpoint::kRepositoryUnload);
  EXPECT_EQ(r.model, "my model");
  EXPECT_EQ(Match("/v2/repository/models/a/load").endpoint, Endpoint::kRepositoryLoad);
}

TEST(MatchRouteTest, UnknownPathsAreNotFound) {
  EXPECT_EQ(Fail("/"), Code::kNotFound);
  EXPECT_EQ(Fail("/v1/models/a"), Code::kNotFound);
  EXPECT_EQ(Fail("/v2/models/a/predict"), Code::kNotFound);
  EXPECT_EQ(Fail("/v2/models/a/versions/1/infer/x"), Code::kNotFound);
  EXPECT_EQ(Fail("/v2/health"), Code::kNotFound);
  EXPECT_EQ(Fail("v2"), Code::kNotFound);
}

TEST(MatchRouteTest, PathTricksInModelNamesAreRejected) {
  EXPECT_EQ(Fail("/v2/models/../infer"), Code::kInvalidArgument);
  EXPECT_EQ(Fail("/v2/models/%2e%2e/infer"), Code::kInvalidArgument);
  EXPECT_EQ(Fail("/v2/models/%2E%2E"), Code::kInvalidArgument);
  EXPECT_EQ(Fail("/v2/models/a%2Fb/infer"), Code::kInvalidArgument);
  EXPECT_EQ(Fail("/v2/models/a%5cb/ready"), Code::kInvalidArgument);
  EXPECT_EQ(Fail("/v2/models/a%00b/ready"), Code::kInvalidArgument);
  EXPECT_EQ(Fail("/v2/models/./ready"), Code::kInvalidArgument);
  EXPECT_EQ(Fail("/v2/repository/models/%2e%2e/load"), Code::kInvalidArgument);
  EXPECT_EQ(Fail("/v2/models/a%zz/ready"), Code::kInvalidArgument);
  EXPECT_EQ(Fail("/v2/models/a%2/ready"), Code::kInvalidArgument);
  EXPECT_EQ(Fail("/v2/models//ready"), Code::kInvalidArgument);
  EXPECT_EQ(Fail(std::string("/v2/models/") + std::string(300, 'a')), Code::kInvalidArgument);
}

TEST(MatchRouteTest, VersionsMustBeIntegers) {
  EXPECT_EQ(Fail("/v2/models/a/versions/x/infer"), Code::kInvalidArgument);
  EXPECT_EQ(Fail("/v2/models/a/versions/-1"), Code::kInvalidArgument);
  EXPECT_EQ(Fail("/v2/models/a/versions"), Code::kInvalidArgument);
}

}  // namespace
}  // namespace ortgpu::serve::protocol
