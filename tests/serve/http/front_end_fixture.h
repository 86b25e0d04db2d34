// FrontEndTest: an HttpServer on port 0 over a FakeModelServer ("echo": one
// input x, FP32 [-1, 2]) with its own RuntimeSettings (logging, trace and
// shared memory state), for the tests of the Triton extensions over HTTP.
#pragma once

#include <gtest/gtest.h>

#include <memory>

#include <nlohmann/json.hpp>

#include "fakes/fake_model_server.h"
#include "serve/http/http_server.h"
#include "serve/http/test_http_client.h"

namespace ortgpu::serve::testing {

class FrontEndTest : public ::testing::Test {
 protected:
  void SetUp() override {
    HttpOptions o;
    o.port = 0;
    o.threads = 1;
    o.settings = &settings_;
    auto s = HttpServer::Start(fake_, o);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    server_ = std::move(s).value();
  }
  void TearDown() override { server_->Stop(); }
  uint16_t port() const { return server_->port(); }
  static nlohmann::json Json(const HttpResult& r) { return nlohmann::json::parse(r.body, nullptr, false); }

  FakeModelServer fake_;
  RuntimeSettings settings_;
  std::unique_ptr<HttpServer> server_;
};

}  // namespace ortgpu::serve::testing
