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

// Issue 10: a load's parameters reach the server decoded (config as sent,
// file: bytes from base64); malformed ones are a 400 that says why, other
// parameters a 501 naming them.
TEST_F(SettingsEndpointsTest, LoadParametersAreDecodedForTheServer) {
  TestHttpClient c(port());
  auto r = c.Post("/v2/repository/models/echo/load",
                  R"({"parameters": {"config": "{\"max_batch_size\": 4}", "file:1/model.onnx": "b25ueA=="}})");
  EXPECT_EQ(r.status, 200u) << r.body;
  const ModelLoadParameters got = fake_.last_load_parameters();
  EXPECT_EQ(got.config_json.value_or(""), R"({"max_batch_size": 4})");
  ASSERT_EQ(got.files.size(), 1u);
  EXPECT_EQ(got.files.at("1/model.onnx"), "onnx");

  r = c.Post("/v2/repository/models/echo/load", R"({"parameters": {"file:1/model.onnx": "b25ue%"}})");
  EXPECT_EQ(r.status, 400u);
  EXPECT_THAT(Json(r)["error"].get<std::string>(), HasSubstr("load parameter 'file:1/model.onnx' is not base64"));
  r = c.Post("/v2/repository/models/echo/load", R"({"parameters": {"config": {"max_batch_size": 4}}})");
  EXPECT_EQ(r.status, 400u);
  EXPECT_THAT(Json(r)["error"].get<std::string>(), HasSubstr("load parameter 'config' is a JSON object"));
  r = c.Post("/v2/repository/models/echo/load", R"({"parameters": {"priority": 1}})");
  EXPECT_EQ(r.status, 501u);
  EXPECT_THAT(Json(r)["error"].get<std::string>(), HasSubstr("load parameter 'priority'"));
  EXPECT_EQ(c.Post("/v2/repository/models/echo/load", R"({"parameters": {}})").status, 200u);
  EXPECT_TRUE(fake_.last_load_parameters().empty());
  EXPECT_EQ(c.Post("/v2/repository/models/echo/unload", R"({"parameters": {"unload_dependents": true}})").status,
            200u);
  EXPECT_EQ(c.Post("/v2/repository/models/echo/unload", R"({"parameters": {"config": "{}"}})").status, 501u);
  EXPECT_EQ(c.Post("/v2/repository/models/echo/load", "[").status, 400u);
}

}  // namespace
}  // namespace ortgpu::serve
