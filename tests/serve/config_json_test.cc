// GET /v2/models/M/config's JSON form: Triton's, with int64 values as numbers
// and every field present with its default.
#include "serve/config_json.h"

#include <gtest/gtest.h>

#include "model_config.pb.h"

namespace ortgpu::serve {
namespace {

TEST(TritonConfigJsonTest, Int64AreNumbersAndDefaultsArePresent) {
  inference::ModelConfig c;
  c.set_name("m");
  c.set_max_batch_size(8);
  auto* in = c.add_input();
  in->set_name("x");
  in->set_data_type(inference::TYPE_FP32);
  in->add_dims(-1);
  in->add_dims(224);
  c.mutable_dynamic_batching()->add_preferred_batch_size(4);
  c.mutable_dynamic_batching()->set_max_queue_delay_microseconds(500);
  (*c.mutable_dynamic_batching()->mutable_priority_queue_policy())[1].set_default_timeout_microseconds(7);
  c.mutable_version_policy()->mutable_specific()->add_versions(3);

  const nlohmann::json j = TritonConfigJson(c);
  EXPECT_EQ(j["name"], "m");
  EXPECT_EQ(j["max_batch_size"], 8);
  EXPECT_EQ(j["input"][0]["dims"], nlohmann::json::array({-1, 224}));
  EXPECT_TRUE(j["input"][0]["dims"][1].is_number_integer());
  EXPECT_EQ(j["input"][0]["data_type"], "TYPE_FP32");
  EXPECT_EQ(j["dynamic_batching"]["max_queue_delay_microseconds"], 500);
  EXPECT_EQ(j["dynamic_batching"]["priority_queue_policy"]["1"]["default_timeout_microseconds"], 7);
  EXPECT_EQ(j["version_policy"]["specific"]["versions"], nlohmann::json::array({3}));
  // Defaults are written, not left out.
  EXPECT_EQ(j["platform"], "");
  EXPECT_EQ(j["input"][0]["is_shape_tensor"], false);
  EXPECT_EQ(j["output"], nlohmann::json::array());
  EXPECT_EQ(j["parameters"], nlohmann::json::object());
  EXPECT_EQ(j["dynamic_batching"]["preserve_ordering"], false);
}

}  // namespace
}  // namespace ortgpu::serve
