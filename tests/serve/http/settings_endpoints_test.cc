// Triton's logging and trace extensions over HTTP: GET/POST /v2/logging
// (the log level changes at run time), /v2/trace/setting and
// /v2/models/M/trace/setting, on an HttpServer over a FakeModelServer.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "serve/http/front_end_fixture.h"

namespace ortgpu::serve {
namespace {

using ::testing::HasSubstr;
using testing::HttpResult;
using testing::TestHttpClient;

class SettingsEndpointsTest : public testing::FrontEndTest {
 protected:
  void SetUp() override {
    FrontEndTest::SetUp();
    level_ = spdlog::get_level();
  }
  void TearDown() override {
    FrontEndTest::TearDown();
    spdlog::set_level(level_);
  }
  spdlog::level::level_enum level_ = spdlog::level::info;
};

TEST_F(SettingsEndpointsTest, LoggingChangesTheLevelAtRunTime) {
  TestHttpClient c(port());
  HttpResult r = c.Get("/v2/logging");
  ASSERT_EQ(r.status, 200u) << r.body;
  EXPECT_EQ(Json(r)["log_file"], "");
  EXPECT_TRUE(Json(r).contains("log_verbose_level"));

  r = c.Post("/v2/logging", R"({"log_verbose_level": 2})");
  ASSERT_EQ(r.status, 200u) << r.body;
  EXPECT_EQ(Json(r)["log_verbose_level"], 2);
  EXPECT_EQ(spdlog::get_level(), spdlog::level::trace);

  r = c.Post("/v2/logging", R"({"log_verbose_level": 0, "log_info": false, "log_warning": true})");
  ASSERT_EQ(r.status, 200u) << r.body;
  EXPECT_EQ(spdlog::get_level(), spdlog::level::warn);

  r = c.Post("/v2/logging", R"({"log_file": "/tmp/x.log"})");
  EXPECT_EQ(r.status, 400u);
  EXPECT_THAT(Json(r)["error"].get<std::string>(), HasSubstr("stderr"));
  r = c.Post("/v2/logging", R"([1])");
  EXPECT_EQ(r.status, 400u);
  EXPECT_EQ(spdlog::get_level(), spdlog::level::warn);  // a refused change changes nothing
}

TEST_F(SettingsEndpointsTest, TraceSettingsGlobalAndPerModel) {
  TestHttpClient c(port());
  HttpResult r = c.Get("/v2/trace/setting");
  ASSERT_EQ(r.status, 200u) << r.body;
  EXPECT_EQ(Json(r)["trace_level"], nlohmann::json::array({"OFF"}));
  EXPECT_EQ(Json(r)["trace_rate"], "1000");

  r = c.Post("/v2/models/echo/trace/setting", R"({"trace_rate": "10"})");
  ASSERT_EQ(r.status, 200u) << r.body;
  EXPECT_EQ(Json(r)["trace_rate"], "10");
  r = c.Get("/v2/models/echo/versions/1/trace/setting");
  ASSERT_EQ(r.status, 200u) << r.body;
  EXPECT_EQ(Json(r)["trace_rate"], "10");
  r = c.Post("/v2/models/echo/trace/setting", R"({"trace_rate": null})");
  EXPECT_EQ(Json(r)["trace_rate"], "1000");

  r = c.Post("/v2/trace/setting", R"({"trace_level": ["TIMESTAMPS"]})");
  EXPECT_EQ(r.status, 501u);
  r = c.Get("/v2/models/nope/trace/setting");
  EXPECT_EQ(r.status, 404u);
  r = c.Post("/v2/trace/setting", R"({"trace_colour": "red"})");
  EXPECT_EQ(r.status, 400u);
}

TEST_F(SettingsEndpointsTest, OtherMethodsAre405NamingBoth) {
  TestHttpClient c(port());
  HttpResult r = c.Send(boost::beast::http::verb::put, "/v2/logging", "{}");
  EXPECT_EQ(r.status, 405u);
  EXPECT_EQ(r.header("Allow"), "GET, POST");
}

// Issue 10: a load that carries parameters (a config override, files) is
// refused naming them instead of loading the repository's files unchanged.
TEST_F(SettingsEndpointsTest, LoadParametersAreRefusedNamingThem) {
  TestHttpClient c(port());
  auto r = c.Post("/v2/repository/models/echo/load", R"({"parameters": {"config": "{\"max_batch_size\": 4}"}})");
  EXPECT_EQ(r.status, 501u);
  EXPECT_THAT(Json(r)["error"].get<std::string>(), HasSubstr("load parameter 'config'"));
  EXPECT_EQ(c.Post("/v2/repository/models/echo/load", R"({"parameters": {}})").status, 200u);
  EXPECT_EQ(c.Post("/v2/repository/models/echo/unload", R"({"parameters": {"unload_dependents": true}})").status,
            200u);
  EXPECT_EQ(c.Post("/v2/repository/models/echo/load", "[").status, 400u);
}

}  // namespace
}  // namespace ortgpu::serve
