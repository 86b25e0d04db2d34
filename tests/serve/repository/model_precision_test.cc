// The precision parameters of a served model (issue 26, part 5): parsing,
// conversion at load into the model cache, the accuracy check and its
// verdict. ORT's runs are faked (PrecisionEngineFactory); the conversion
// and the cache are real, on a small model written to a temporary folder.
#include "serve/repository/model_precision.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <memory>

#include "onnx.pb.h"
#include "onnx/model_builder.h"
#include "precision/convert.h"
#include "precision/model_file.h"
#include "support/temp_dir.h"

namespace ortgpu::serve {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;
using testing_support::TempDir;

// x [batch, 4] -> MatMul -> Relu -> y [batch, 3].
std::string Model() {
  onnx::ModelBuilder b;
  b.AddInput("x", DataType::kFloat, {-1, 4}, {"batch"});
  b.AddOutput("y", DataType::kFloat, {-1, 3}, {"batch"});
  b.AddFloatInitializer("w", {4, 3}, 0.5f, 1);
  b.AddNode("MatMul", {"x", "w"}, {"h"});
  b.AddNode("Relu", {"h"}, {"y"});
  return b.Serialize();
}

Tensor Output(float scale) {
  Tensor t = Tensor::Zeros("y", DataType::kFloat, {1, 3});
  for (int i = 0; i < 3; ++i) t.data_as<float>()[i] = static_cast<float>(i + 1) * scale;
  return t;
}

// Answers every run with fixed outputs and counts the runs.
class FakeRunner : public precision::ModelRunner {
 public:
  FakeRunner(float scale, int* runs) : scale_(scale), runs_(runs) {}
  Expected<std::vector<Tensor>> Run(const ::onnx::ModelProto&, const std::vector<Tensor>& inputs) override {
    ++*runs_;
    if (inputs.empty()) return InvalidArgument("no inputs");
    return std::vector<Tensor>{Output(scale_)};
  }

 private:
  float scale_;
  int* runs_;
};

struct FakeEngines {
  float candidate_scale = 1.0f;  // 1: the converted model answers as float32 does
  int reference_runs = 0;
  int candidate_runs = 0;
  int made = 0;
  PrecisionEngineFactory Factory() {
    return [this](const SessionOptions&) {
      ++made;
      PrecisionEngine e;
      e.reference = std::make_unique<FakeRunner>(1.0f, &reference_runs);
      e.candidate = std::make_unique<FakeRunner>(candidate_scale, &candidate_runs);
      return e;
    };
  }
};

PrecisionRequest Request(const TempDir& dir, const std::string& model, std::map<std::string, std::string> params) {
  PrecisionRequest r;
  r.model_path = model;
  auto settings = ParsePrecisionSettings(params);
  EXPECT_TRUE(settings.ok()) << settings.status().message();
  r.settings = *settings;
  r.input_choices = {{Tensor::Zeros("x", DataType::kFloat, {1, 4})}};
  r.cache_dir = dir.Path("cache");
  return r;
}

TEST(PrecisionSettingsTest, BadValuesNameTheParameterAndTheAcceptedValues) {
  auto bad = ParsePrecisionSettings({{"precision", "int8"}});
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("parameter precision is 'int8'"));
  EXPECT_THAT(bad.status().message(), HasSubstr("fp32 (true float32, TF32 off), tf32, fp16 or mixed"));
  auto check = ParsePrecisionSettings({{"precision", "fp16"}, {"precision_check", "strict"}});
  ASSERT_FALSE(check.ok());
  EXPECT_THAT(check.status().message(), HasSubstr("precision_check is 'strict'"));
  auto budget = ParsePrecisionSettings({{"precision", "fp16"}, {"precision_budget", "cosin=0.9"}});
  ASSERT_FALSE(budget.ok());
  EXPECT_THAT(budget.status().message(), HasSubstr("precision_budget"));
  EXPECT_THAT(budget.status().message(), HasSubstr("cosin"));
  auto io = ParsePrecisionSettings({{"precision_io", "fp16"}});
  ASSERT_FALSE(io.ok());
  EXPECT_THAT(io.status().message(), HasSubstr("precision is not fp16 or mixed"));
}

TEST(PrecisionSettingsTest, Fp32TurnsTf32OffAndTf32On) {
  SessionOptions so;
  so.provider = Provider::kCuda;
  ApplyPrecision(*ParsePrecisionSettings({{"precision", "fp32"}}), so);
  EXPECT_EQ(so.cuda_options["use_tf32"], "0");
  ApplyPrecision(*ParsePrecisionSettings({{"precision", "TF32"}}), so);
  EXPECT_EQ(so.cuda_options["use_tf32"], "1");
  auto none = ParsePrecisionSettings({});
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none->precision, ServedPrecision::kDefault);
  EXPECT_FALSE(none->converts());
}

TEST(ModelPrecisionTest, Fp16ConvertsIntoTheCacheNeverBesideTheModel) {
  TempDir dir;
  const std::string model = dir.File("repo/m/1/model.onnx", Model());
  FakeEngines engines;
  auto prepared = PrepareModelPrecision(Request(dir, model, {{"precision", "fp16"}}), engines.Factory());
  ASSERT_TRUE(prepared.ok()) << prepared.status().message();
  EXPECT_TRUE(prepared->outcome.converted);
  EXPECT_FALSE(prepared->outcome.from_cache);
  EXPECT_EQ(prepared->outcome.cache, "stored");
  EXPECT_TRUE(prepared->outcome.checked);
  EXPECT_TRUE(prepared->outcome.within_budget());
  EXPECT_EQ(engines.candidate_runs, 1);
  EXPECT_THAT(prepared->path, HasSubstr(dir.Path("cache")));
  EXPECT_TRUE(fs::exists(prepared->path));
  // Nothing was written next to the user's model.
  int files = 0;
  for (const auto& e : fs::directory_iterator(dir.Path("repo/m/1"))) files += e.is_regular_file();
  EXPECT_EQ(files, 1);
  EXPECT_THAT(prepared->outcome.Describe(), HasSubstr("fp16 (converted at load): min cosine 1"));
  EXPECT_THAT(prepared->outcome.AccuracyText(), HasSubstr("within_budget=true"));
}

TEST(ModelPrecisionTest, SecondLoadIsACacheHitWithoutConversionOrRuns) {
  TempDir dir;
  const std::string model = dir.File("m/1/model.onnx", Model());
  FakeEngines engines;
  auto first = PrepareModelPrecision(Request(dir, model, {{"precision", "fp16"}}), engines.Factory());
  ASSERT_TRUE(first.ok()) << first.status().message();
  const int reference_runs = engines.reference_runs, candidate_runs = engines.candidate_runs;
  auto second = PrepareModelPrecision(Request(dir, model, {{"precision", "fp16"}}), engines.Factory());
  ASSERT_TRUE(second.ok()) << second.status().message();
  EXPECT_TRUE(second->outcome.from_cache);
  EXPECT_EQ(second->outcome.cache, "hit");
  EXPECT_EQ(second->path, first->path);
  // Same generated inputs: the stored figures are reused, nothing runs.
  EXPECT_TRUE(second->outcome.reused_figures);
  EXPECT_EQ(engines.reference_runs, reference_runs);
  EXPECT_EQ(engines.candidate_runs, candidate_runs);

  // Other inputs: the cached model is checked again (no conversion).
  PrecisionRequest other = Request(dir, model, {{"precision", "fp16"}});
  other.input_choices[0][0].data_as<float>()[0] = 1;
  auto third = PrepareModelPrecision(other, engines.Factory());
  ASSERT_TRUE(third.ok()) << third.status().message();
  EXPECT_EQ(third->outcome.cache, "hit");
  EXPECT_FALSE(third->outcome.reused_figures);
  EXPECT_EQ(engines.candidate_runs, candidate_runs + 1);

  // Other settings are another entry.
  auto mixed = PrepareModelPrecision(Request(dir, model, {{"precision", "mixed"}}), engines.Factory());
  ASSERT_TRUE(mixed.ok()) << mixed.status().message();
  EXPECT_EQ(mixed->outcome.cache, "stored");
  EXPECT_NE(mixed->path, first->path);
}

TEST(ModelPrecisionTest, ACorruptCacheEntryIsConvertedAgain) {
  TempDir dir;
  const std::string model = dir.File("m/1/model.onnx", Model());
  FakeEngines engines;
  auto first = PrepareModelPrecision(Request(dir, model, {{"precision", "fp16"}}), engines.Factory());
  ASSERT_TRUE(first.ok()) << first.status().message();
  { std::ofstream(first->path, std::ios::binary | std::ios::trunc) << "not a model"; }
  auto second = PrepareModelPrecision(Request(dir, model, {{"precision", "fp16"}}), engines.Factory());
  ASSERT_TRUE(second.ok()) << second.status().message();
  EXPECT_EQ(second->outcome.cache, "stored");
  EXPECT_FALSE(second->outcome.from_cache);
  auto third = PrepareModelPrecision(Request(dir, model, {{"precision", "fp16"}}), engines.Factory());
  ASSERT_TRUE(third.ok());
  EXPECT_EQ(third->outcome.cache, "hit");
}

TEST(ModelPrecisionTest, AnUnwritableCacheConvertsIntoATemporaryFolder) {
  TempDir dir;
  const std::string model = dir.File("m/1/model.onnx", Model());
  const std::string blocker = dir.File("not_a_folder", "x");
  PrecisionRequest r = Request(dir, model, {{"precision", "fp16"}});
  r.cache_dir = blocker + "/cache";
  FakeEngines engines;
  std::string path;
  {
    auto prepared = PrepareModelPrecision(r, engines.Factory());
    ASSERT_TRUE(prepared.ok()) << prepared.status().message();
    EXPECT_EQ(prepared->outcome.cache, "not written");
    EXPECT_THAT(prepared->outcome.note, Not(HasSubstr(blocker)));
    path = prepared->path;
    EXPECT_TRUE(fs::exists(path));
    EXPECT_THAT(path, Not(HasSubstr(dir.Path("m"))));
  }
  EXPECT_FALSE(fs::exists(path)) << "the temporary copy goes with the version";
}

TEST(ModelPrecisionTest, OutOfBudgetIsRefusedWithTheMeasuredFiguresUnlessWarn) {
  TempDir dir;
  const std::string model = dir.File("m/1/model.onnx", Model());
  FakeEngines engines;
  engines.candidate_scale = 1.5f;  // rel error 50%
  auto refused = PrepareModelPrecision(
      Request(dir, model, {{"precision", "fp16"}, {"precision_budget", "cosine=1.0,rel=1e-9"}}), engines.Factory());
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), Code::kFailedPrecondition);
  EXPECT_THAT(refused.status().message(), HasSubstr("outside the accuracy budget"));
  EXPECT_THAT(refused.status().message(), HasSubstr("max_rel_error=0.5"));
  EXPECT_THAT(refused.status().message(), HasSubstr("precision mixed"));
  EXPECT_THAT(refused.status().message(), Not(HasSubstr(dir.Path(""))));

  auto warned = PrepareModelPrecision(
      Request(dir, model,
              {{"precision", "fp16"}, {"precision_budget", "cosine=1.0,rel=1e-9"}, {"precision_check", "warn"}}),
      engines.Factory());
  ASSERT_TRUE(warned.ok()) << warned.status().message();
  EXPECT_FALSE(warned->outcome.within_budget());
  EXPECT_THAT(warned->outcome.Describe(), HasSubstr("OUTSIDE the budget"));
  EXPECT_THAT(warned->outcome.AccuracyText(), HasSubstr("within_budget=false"));
}

TEST(ModelPrecisionTest, CheckOffRunsNothingAndNoInputThatRunsLeavesItUnchecked) {
  TempDir dir;
  const std::string model = dir.File("m/1/model.onnx", Model());
  FakeEngines engines;
  auto off = PrepareModelPrecision(Request(dir, model, {{"precision", "fp16"}, {"precision_check", "off"}}),
                                   engines.Factory());
  ASSERT_TRUE(off.ok()) << off.status().message();
  EXPECT_FALSE(off->outcome.checked);
  EXPECT_EQ(engines.reference_runs + engines.candidate_runs, 0);

  PrecisionRequest none = Request(dir, model, {{"precision", "fp16"}});
  none.cache_dir = "";
  none.input_choices = {{}};  // the fake refuses runs without inputs
  auto unchecked = PrepareModelPrecision(none, engines.Factory());
  ASSERT_TRUE(unchecked.ok()) << unchecked.status().message();
  EXPECT_FALSE(unchecked->outcome.checked);
  EXPECT_THAT(unchecked->outcome.note, HasSubstr("no warm-up input ran"));
  EXPECT_EQ(unchecked->outcome.cache, "off");

  none.settings.precision = ServedPrecision::kMixed;
  auto mixed = PrepareModelPrecision(none, engines.Factory());
  ASSERT_FALSE(mixed.ok());
  EXPECT_THAT(mixed.status().message(), HasSubstr("add a model_warmup"));
}

TEST(ModelPrecisionTest, BlockListsKeepOpsAndNodesInFloat32AndAreAnotherCacheEntry) {
  auto settings = ParsePrecisionSettings(
      {{"precision", "fp16"}, {"precision_op_block_list", "default, Relu"}, {"precision_node_block_list", "mm"}});
  ASSERT_TRUE(settings.ok()) << settings.status().message();
  EXPECT_EQ(settings->op_block_list.back(), "Relu");
  EXPECT_EQ(settings->op_block_list.size(), precision::DefaultOpBlockList().size() + 1);
  EXPECT_EQ(settings->node_block_list.at("mm"), "named in precision_node_block_list");
  auto unconverted = ParsePrecisionSettings({{"precision", "fp32"}, {"precision_op_block_list", "Relu"}});
  ASSERT_FALSE(unconverted.ok());
  EXPECT_THAT(unconverted.status().message(), HasSubstr("precision_op_block_list is set but precision is not fp16"));

  TempDir dir;
  const std::string model = dir.File("m/1/model.onnx", Model());  // nodes MatMul_0, Relu_1
  FakeEngines engines;
  auto plain = PrepareModelPrecision(Request(dir, model, {{"precision", "fp16"}}), engines.Factory());
  ASSERT_TRUE(plain.ok()) << plain.status().message();
  auto blocked = PrepareModelPrecision(
      Request(dir, model, {{"precision", "fp16"}, {"precision_op_block_list", "Relu"}, {"precision_node_block_list", "MatMul_0"}}),
      engines.Factory());
  ASSERT_TRUE(blocked.ok()) << blocked.status().message();
  EXPECT_NE(blocked->path, plain->path);
  auto initializer_type = [](const std::string& path) {
    auto m = precision::ReadModelFile(path);
    EXPECT_TRUE(m.ok());
    for (const auto& t : m->graph().initializer()) {
      if (t.name().rfind("w", 0) == 0) return t.data_type();
    }
    return 0;
  };
  EXPECT_EQ(initializer_type(plain->path), ::onnx::TensorProto::FLOAT16);
  EXPECT_EQ(initializer_type(blocked->path), ::onnx::TensorProto::FLOAT);
}

}  // namespace
}  // namespace ortgpu::serve
