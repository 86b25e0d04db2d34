#include "tune/config_writer.h"

#include <google/protobuf/text_format.h>
#include <gtest/gtest.h>

#include "serve/repository/model_config.h"

namespace ortgpu::tune {
namespace {

// The written text read back by serve's own parser, which must have nothing
// to warn about.
inference::ModelConfig ReadBack(const std::string& text) {
  Expected<serve::ParsedConfig> parsed = serve::ParseModelConfig(text, "config.pbtxt");
  EXPECT_TRUE(parsed.ok()) << parsed.status().ToString() << "\n" << text;
  if (!parsed.ok()) return {};
  EXPECT_TRUE(parsed->warnings.empty()) << parsed->warnings.front() << "\n" << text;
  EXPECT_EQ(serve::CudaGraphRequest(parsed->config).empty(), text.find("enable_cuda_graph") == std::string::npos);
  return parsed->config;
}

std::map<std::string, std::string> CudaParameters(const inference::ModelConfig& c) {
  std::map<std::string, std::string> out;
  for (const auto& a : c.optimization().execution_accelerators().gpu_execution_accelerator()) {
    if (a.name() == "cuda") out.insert(a.parameters().begin(), a.parameters().end());
  }
  return out;
}

TEST(ConfigWriter, TheHandFoundResnetConfiguration) {
  ServedCandidate c{.instances = 2, .batch = 32, .pad_to_preferred = true, .max_queue_delay_us = 100};
  c.engine.prefer_nhwc = true;
  c.engine.cuda_graphs = true;
  c.engine.conv_search = ConvAlgoSearch::kHeuristic;
  c.engine.precision = Precision::kFp16;
  const std::string text =
      TunedConfigPbtxt(c, {.model_name = "resnet50", .max_batch_size = 32, .comments = {"tuned by ortgpu"}});
  EXPECT_EQ(text.rfind("# tuned by ortgpu\n", 0), 0u) << text;
  const inference::ModelConfig config = ReadBack(text);
  EXPECT_EQ(config.name(), "resnet50");
  EXPECT_EQ(config.max_batch_size(), 32);
  ASSERT_EQ(config.dynamic_batching().preferred_batch_size_size(), 1);
  EXPECT_EQ(config.dynamic_batching().preferred_batch_size(0), 32);
  EXPECT_EQ(config.dynamic_batching().max_queue_delay_microseconds(), 100u);
  ASSERT_EQ(config.instance_group_size(), 1);
  EXPECT_EQ(config.instance_group(0).count(), 2);
  EXPECT_EQ(config.instance_group(0).kind(), inference::ModelInstanceGroup::KIND_GPU);
  EXPECT_EQ(CudaParameters(config), (std::map<std::string, std::string>{
                                        {"prefer_nhwc", "1"}, {"enable_cuda_graph", "1"}, {"cudnn_conv_algo_search", "HEURISTIC"}}));
  EXPECT_EQ(config.parameters().at("precision").string_value(), "fp16");
  EXPECT_EQ(config.parameters().at("pad_to_preferred_batch_size").string_value(), "true");
  EXPECT_EQ(config.parameters().count("workers_per_instance"), 0u);
}

TEST(ConfigWriter, DefaultsWriteNothingExtraButUnpaddedOnAGpu) {
  const inference::ModelConfig config = ReadBack(TunedConfigPbtxt(ServedCandidate{.batch = 8}, {.max_batch_size = 4}));
  EXPECT_EQ(config.max_batch_size(), 8);  // at least the batch
  EXPECT_FALSE(config.has_optimization());
  // serve pads GPU instances' batches by default: unpadded must say so.
  ASSERT_EQ(config.parameters().size(), 1u);
  EXPECT_EQ(config.parameters().at("pad_to_preferred_batch_size").string_value(), "false");
  EXPECT_TRUE(config.name().empty());
  const inference::ModelConfig cpu = ReadBack(TunedConfigPbtxt(
      ServedCandidate{.batch = 8}, {.max_batch_size = 4, .instance_kind = inference::ModelInstanceGroup::KIND_CPU}));
  EXPECT_TRUE(cpu.parameters().empty());
}

TEST(ConfigWriter, FusionPaddingEveryBatchAndTheAccuracyBudgetAreWritten) {
  ServedCandidate c{.batch = 32, .pad_to_preferred = true, .adaptive_padding = false};
  c.engine.precision = Precision::kFp16;
  c.engine.prefer_nhwc = true;
  c.engine.fuse_conv_bias = true;
  ConfigWriterOptions o;
  o.max_batch_size = 32;
  o.precision_budget = "cosine=0.99,top1=0.98,rel=0.1,nonfinite=deny";
  const inference::ModelConfig config = ReadBack(TunedConfigPbtxt(c, o));
  EXPECT_EQ(CudaParameters(config), (std::map<std::string, std::string>{{"prefer_nhwc", "1"}, {"fuse_conv_bias", "1"}}));
  EXPECT_EQ(config.parameters().at("adaptive_padding").string_value(), "false");
  EXPECT_EQ(config.parameters().at("precision_budget").string_value(), o.precision_budget);
  // tf32 is not converted: no budget to write.
  c.engine.precision = Precision::kTf32;
  EXPECT_EQ(ReadBack(TunedConfigPbtxt(c, o)).parameters().count("precision_budget"), 0u);
}

TEST(ConfigWriter, TuningOnTheCpuWritesCpuInstances) {
  const inference::ModelConfig config = ReadBack(TunedConfigPbtxt(
      ServedCandidate{.instances = 2, .batch = 4},
      {.max_batch_size = 4, .instance_kind = inference::ModelInstanceGroup::KIND_CPU}));
  ASSERT_EQ(config.instance_group_size(), 1);
  EXPECT_EQ(config.instance_group(0).count(), 2);
  EXPECT_EQ(config.instance_group(0).kind(), inference::ModelInstanceGroup::KIND_CPU);
}

TEST(ConfigWriter, AModelThatDoesNotBatchHasNoDynamicBatching) {
  const inference::ModelConfig config =
      ReadBack(TunedConfigPbtxt(ServedCandidate{.instances = 2, .workers_per_instance = 1}, {.max_batch_size = 0}));
  EXPECT_EQ(config.max_batch_size(), 0);
  EXPECT_FALSE(config.has_dynamic_batching());
  EXPECT_EQ(config.parameters().at("workers_per_instance").string_value(), "1");
}

TEST(ConfigWriter, KeepsTheFixedFieldsOfAnExistingConfig) {
  inference::ModelConfig base;
  ASSERT_TRUE(google::protobuf::TextFormat::ParseFromString(R"(
    name: "bert" max_batch_size: 16
    input [ { name: "input_ids" data_type: TYPE_INT64 dims: [ -1 ] } ]
    instance_group [ { count: 4 kind: KIND_GPU } ]
    parameters { key: "precision" value: { string_value: "fp16" } }
    parameters { key: "share_weights" value: { string_value: "true" } }
    optimization { execution_accelerators { gpu_execution_accelerator [ { name: "cuda"
      parameters { key: "prefer_nhwc" value: "1" } parameters { key: "gpu_mem_limit" value: "8000000000" } } ] } }
  )", &base));
  const inference::ModelConfig config = ReadBack(TunedConfigPbtxt(ServedCandidate{.batch = 8}, {.base = base}));
  EXPECT_EQ(config.name(), "bert");
  EXPECT_EQ(config.max_batch_size(), 16);
  ASSERT_EQ(config.input_size(), 1);
  EXPECT_EQ(config.input(0).name(), "input_ids");
  ASSERT_EQ(config.instance_group_size(), 1);
  EXPECT_EQ(config.instance_group(0).count(), 1);
  EXPECT_EQ(config.parameters().count("precision"), 0u);  // the winner is tf32, ORT's default
  EXPECT_EQ(config.parameters().at("share_weights").string_value(), "true");
  EXPECT_EQ(CudaParameters(config), (std::map<std::string, std::string>{{"gpu_mem_limit", "8000000000"}}));
}

TEST(ConfigWriter, AddsNoEmptyCudaAcceleratorToAnExistingConfig) {
  inference::ModelConfig base;
  base.set_max_batch_size(8);
  base.mutable_optimization()->mutable_graph()->set_level(1);
  const inference::ModelConfig config = ReadBack(TunedConfigPbtxt(ServedCandidate{.batch = 8}, {.base = base}));
  EXPECT_EQ(config.optimization().graph().level(), 1);
  EXPECT_EQ(config.optimization().execution_accelerators().gpu_execution_accelerator_size(), 0);
}

}  // namespace
}  // namespace ortgpu::tune
