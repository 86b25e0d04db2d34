#include "serve/repository/model_config.h"

#include <gtest/gtest.h>

#include "serve/repository/model_repository.h"

namespace ortgpu::serve {
namespace {

constexpr const char* kFullConfig = R"pb(
name: "resnet"
platform: "onnxruntime_onnx"
max_batch_size: 8
input [ { name: "image" data_type: TYPE_FP32 dims: [ 3, 224, 224 ] reshape { shape: [ 3, 224, 224 ] } } ]
output [ { name: "logits" data_type: TYPE_FP32 dims: [ 1000 ] } ]
instance_group [ { count: 2 kind: KIND_GPU gpus: [ 0, 1 ] }, { count: 1 kind: KIND_CPU } ]
dynamic_batching {
  preferred_batch_size: [ 4, 8 ]
  max_queue_delay_microseconds: 100
  default_queue_policy { max_queue_size: 16 }
}
version_policy { specific { versions: [ 1, 3 ] } }
model_warmup [ { name: "w" batch_size: 2 inputs { key: "image" value { data_type: TYPE_FP32 dims: [ 3, 224, 224 ] zero_data: true } } } ]
parameters { key: "require_gpu" value { string_value: "true" } }
optimization { execution_accelerators { gpu_execution_accelerator [ { name: "cuda" parameters { key: "cudnn_conv_algo_search" value: "HEURISTIC" } } ] } }
)pb";

TEST(ModelConfigTest, ParsesEveryHonouredFieldWithoutWarnings) {
  auto parsed = ParseModelConfig(kFullConfig, "resnet/config.pbtxt");
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  const auto& c = parsed->config;
  EXPECT_TRUE(parsed->warnings.empty()) << parsed->warnings[0];
  EXPECT_EQ(c.name(), "resnet");
  EXPECT_EQ(c.max_batch_size(), 8);
  EXPECT_EQ(c.input(0).dims_size(), 3);
  EXPECT_EQ(c.input(0).reshape().shape_size(), 3);
  EXPECT_EQ(c.instance_group(0).kind(), inference::ModelInstanceGroup::KIND_GPU);
  EXPECT_EQ(c.instance_group(0).gpus_size(), 2);
  EXPECT_EQ(c.dynamic_batching().preferred_batch_size_size(), 2);
  EXPECT_EQ(c.dynamic_batching().max_queue_delay_microseconds(), 100u);
  EXPECT_EQ(c.dynamic_batching().default_queue_policy().max_queue_size(), 16u);
  EXPECT_EQ(c.model_warmup(0).batch_size(), 2u);
  EXPECT_TRUE(ParameterIsTrue(ConfigParameters(c)["require_gpu"]));
  EXPECT_EQ(c.optimization().execution_accelerators().gpu_execution_accelerator(0).parameters().at(
                "cudnn_conv_algo_search"),
            "HEURISTIC");
  EXPECT_EQ(SelectVersions(c.version_policy(), {1, 2, 3, 4}), (std::vector<int64_t>{1, 3}));
}

TEST(ModelConfigTest, UnknownAndUnhonouredFieldsAreWarnedAboutAndIgnored) {
  auto parsed = ParseModelConfig("name: \"m\"\nfrobnicate: 3\nsequence_batching { }\n", "m/config.pbtxt");
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  ASSERT_EQ(parsed->warnings.size(), 2u);
  EXPECT_NE(parsed->warnings[0].find("m/config.pbtxt:2:"), std::string::npos) << parsed->warnings[0];
  EXPECT_NE(parsed->warnings[0].find("frobnicate"), std::string::npos) << parsed->warnings[0];
  EXPECT_NE(parsed->warnings[1].find("sequence_batching"), std::string::npos) << parsed->warnings[1];
  EXPECT_EQ(parsed->config.name(), "m");
}

TEST(ModelConfigTest, BadSyntaxNamesTheLine) {
  auto parsed = ParseModelConfig("name: \"m\"\nmax_batch_size: 8\ninput [ { name: \"x\" \n", "m/config.pbtxt");
  ASSERT_FALSE(parsed.ok());
  EXPECT_EQ(parsed.status().code(), Code::kInvalidArgument);
  EXPECT_NE(parsed.status().message().find("m/config.pbtxt:4:"), std::string::npos) << parsed.status().message();
}

TensorInfo Info(std::string name, DataType t, std::vector<int64_t> shape) {
  TensorInfo i;
  i.name = std::move(name);
  i.dtype = t;
  i.shape = std::move(shape);
  return i;
}

TEST(ModelConfigTest, WithoutConfigTheModelsTensorsCompleteItAndBatchingIsOn) {
  inference::ModelConfig c;
  ASSERT_TRUE(CompleteConfig({Info("x", DataType::kFloat, {-1, 4})}, {Info("y", DataType::kInt64, {-1, 2})},
                             ConfigGiven{}, {}, c)
                  .ok());
  EXPECT_EQ(c.max_batch_size(), 4);
  EXPECT_TRUE(c.has_dynamic_batching());
  ASSERT_EQ(c.input_size(), 1);
  EXPECT_EQ(c.input(0).data_type(), inference::TYPE_FP32);
  EXPECT_EQ(std::vector<int64_t>(c.input(0).dims().begin(), c.input(0).dims().end()), (std::vector<int64_t>{4}));
  EXPECT_EQ(c.output(0).data_type(), inference::TYPE_INT64);
}

TEST(ModelConfigTest, FixedShapeModelGetsNoBatching) {
  inference::ModelConfig c;
  ASSERT_TRUE(CompleteConfig({Info("x", DataType::kFloat, {2, 4})}, {Info("y", DataType::kFloat, {2, 4})}, ConfigGiven{}, {}, c).ok());
  EXPECT_EQ(c.max_batch_size(), 0);
  EXPECT_EQ(c.input(0).dims_size(), 2);
}

TEST(ModelConfigTest, ConfigThatContradictsTheModelSaysWhatToChange) {
  inference::ModelConfig c;
  c.set_max_batch_size(8);
  auto* in = c.add_input();
  in->set_name("x");
  in->set_data_type(inference::TYPE_FP16);
  Status st = CompleteConfig({Info("x", DataType::kFloat, {-1, 4})}, {Info("y", DataType::kFloat, {-1, 4})}, ConfigGiven{true, true}, {}, c);
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  EXPECT_NE(st.message().find("change data_type to TYPE_FP32"), std::string::npos) << st.message();

  inference::ModelConfig fixed;
  fixed.set_max_batch_size(8);
  st = CompleteConfig({Info("x", DataType::kFloat, {2, 4})}, {Info("y", DataType::kFloat, {2, 4})}, ConfigGiven{true, true}, {}, fixed);
  EXPECT_NE(st.message().find("set max_batch_size: 0"), std::string::npos) << st.message();
}

TEST(ModelConfigTest, Issue9AConfigHoldingOnlyModelWarmupKeepsTheModelsBatching) {
  auto parsed = ParseModelConfig(R"pb(
    model_warmup [ { name: "w" batch_size: 1 inputs { key: "x" value { data_type: TYPE_FP32 dims: [ 4 ] zero_data: true } } } ]
  )pb", "m/config.pbtxt");
  ASSERT_TRUE(parsed.ok());
  inference::ModelConfig c = parsed->config;
  std::vector<std::string> completed;
  ASSERT_TRUE(CompleteConfig({Info("x", DataType::kFloat, {-1, 4})}, {Info("y", DataType::kFloat, {-1, 4})},
                             ConfigGiven{true, false}, {}, c, &completed)
                  .ok());
  EXPECT_EQ(c.max_batch_size(), 4);
  EXPECT_TRUE(c.has_dynamic_batching());
  EXPECT_EQ(completed, (std::vector<std::string>{"max_batch_size 4 with dynamic_batching", "input x", "output y"}));
}

TEST(ModelConfigTest, BatchingIsNotCompletedWhenTheConfigSetsItOrGivesFullRankDims) {
  inference::ModelConfig zero;  // max_batch_size: 0 written out
  ASSERT_TRUE(CompleteConfig({Info("x", DataType::kFloat, {-1, 4})}, {Info("y", DataType::kFloat, {-1, 4})},
                             ConfigGiven{true, true}, {}, zero)
                  .ok());
  EXPECT_EQ(zero.max_batch_size(), 0);
  inference::ModelConfig full_rank;
  auto* in = full_rank.add_input();
  in->set_name("x");
  in->add_dims(-1);
  in->add_dims(4);
  ASSERT_TRUE(CompleteConfig({Info("x", DataType::kFloat, {-1, 4})}, {Info("y", DataType::kFloat, {-1, 4})},
                             ConfigGiven{true, false}, {}, full_rank)
                  .ok());
  EXPECT_EQ(full_rank.max_batch_size(), 0);
  EXPECT_EQ(full_rank.output(0).dims_size(), 2);
}

TEST(ModelConfigTest, MaxBatchSizeIsSetOnlyByAFieldLine) {
  EXPECT_TRUE(SetsMaxBatchSize("name: \"m\"\nmax_batch_size: 0\n"));
  EXPECT_TRUE(SetsMaxBatchSize("  max_batch_size :8"));
  EXPECT_FALSE(SetsMaxBatchSize("# max_batch_size: 8\ninput []"));
  EXPECT_FALSE(SetsMaxBatchSize("model_warmup [ { name: \"max_batch_size\" } ]"));
}

TEST(ModelConfigTest, Issue9GraphLevelMapsToOrtsOptimizationLevelAsTritonReadsIt) {
  for (auto [text, want] : {std::pair{"", OptimizationLevel::kAll},
                            std::pair{"optimization { graph { level: -1 } }", OptimizationLevel::kBasic},
                            std::pair{"optimization { graph { level: 1 } }", OptimizationLevel::kExtended},
                            std::pair{"optimization { graph { level: 2 } }", OptimizationLevel::kDisable}}) {
    auto parsed = ParseModelConfig(text, "m/config.pbtxt");
    ASSERT_TRUE(parsed.ok());
    EXPECT_TRUE(parsed->warnings.empty()) << text << ": " << parsed->warnings[0];
    auto level = GraphOptimizationLevel(parsed->config);
    ASSERT_TRUE(level.ok());
    EXPECT_EQ(*level, want) << text;
  }
  auto bad = ParseModelConfig("optimization { graph { level: 7 } }", "m/config.pbtxt");
  ASSERT_TRUE(bad.ok());
  EXPECT_NE(GraphOptimizationLevel(bad->config).status().message().find("use -1 (basic), 1 (extended), 2 (none)"),
            std::string::npos);
}

TEST(VersionPolicyTest, LatestAllAndSpecific) {
  inference::ModelVersionPolicy p;
  EXPECT_EQ(SelectVersions(p, {3, 1, 2}), (std::vector<int64_t>{3}));
  p.mutable_latest()->set_num_versions(2);
  EXPECT_EQ(SelectVersions(p, {3, 1, 2}), (std::vector<int64_t>{2, 3}));
  p.mutable_all();
  EXPECT_EQ(SelectVersions(p, {3, 1, 2}), (std::vector<int64_t>{1, 2, 3}));
  p.mutable_specific()->add_versions(2);
  p.mutable_specific()->add_versions(7);
  EXPECT_EQ(SelectVersions(p, {3, 1, 2}), (std::vector<int64_t>{2}));
}

TEST(ModelConfigTest, EveryWayOfAskingForCudaGraphsIsRecognised) {
  for (const char* text : {
           R"pb(optimization { cuda { graphs: true } })pb",
           R"pb(optimization { execution_accelerators { gpu_execution_accelerator [
                  { name: "cuda" parameters { key: "enable_cuda_graph" value: "1" } } ] } })pb",
           R"pb(parameters { key: "enable_cuda_graph" value { string_value: "true" } })pb"}) {
    auto parsed = ParseModelConfig(text, "m/config.pbtxt");
    ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
    EXPECT_NE(CudaGraphRequest(parsed->config), "") << text;
  }
  auto plain = ParseModelConfig("max_batch_size: 4", "m/config.pbtxt");
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(CudaGraphRequest(plain->config), "");
}

TEST(ModelConfigTest, PaddingWithoutDynamicBatchingIsWarnedAboutAndIgnored) {
  auto parsed = ParseModelConfig(R"pb(
    max_batch_size: 8
    parameters { key: "pad_to_preferred_batch_size" value { string_value: "true" } }
  )pb", "m/config.pbtxt");
  ASSERT_TRUE(parsed.ok());
  ASSERT_EQ(parsed->warnings.size(), 1u);
  EXPECT_NE(parsed->warnings[0].find("'pad_to_preferred_batch_size' pads the batches of the dynamic batcher"),
            std::string::npos)
      << parsed->warnings[0];
  auto with_batching = ParseModelConfig(R"pb(
    max_batch_size: 8
    dynamic_batching { preferred_batch_size: [ 4 ] }
    parameters { key: "pad_to_preferred_batch_size" value { string_value: "true" } }
  )pb", "m/config.pbtxt");
  ASSERT_TRUE(with_batching.ok());
  EXPECT_TRUE(with_batching->warnings.empty()) << with_batching->warnings[0];
}

}  // namespace
}  // namespace ortgpu::serve
