// RunTune's pieces that need no measurement (tune/tune.h, tune/tool_measurer.h):
// the model's facts, the CPU space, the model folder written beside the
// user's file, and the options refused before anything runs.
#include "tune/tune.h"

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "onnx/model_builder.h"
#include "support/temp_dir.h"
#include "tune/tool_measurer.h"

namespace ortgpu::tune {
namespace {

using testing_support::TempDir;
namespace fs = std::filesystem;

// x [batch, features] -> Relu -> y; `features` -1 makes it variable.
std::string ReluModel(int64_t features) {
  onnx::ModelBuilder b;
  b.AddInput("x", DataType::kFloat, {-1, features}, {"batch", features < 0 ? "seq" : ""});
  b.AddOutput("y", DataType::kFloat, {-1, features}, {"batch", features < 0 ? "seq" : ""});
  b.AddNode("Relu", {"x"}, {"y"});
  return b.Serialize();
}

TEST(TuneTest, TraitsFromModelReadBatchingAndVariableDims) {
  TempDir dir;
  const SpaceOptions space = SpaceFor(Provider::kCpu);
  auto fixed = TraitsFromModel(dir.File("fixed.onnx", ReluModel(8)), space);
  ASSERT_TRUE(fixed.ok()) << fixed.status().message();
  EXPECT_EQ(fixed->max_batch_size, 4);  // the CPU space's largest batch
  EXPECT_FALSE(fixed->variable_non_batch_dim);

  auto variable = TraitsFromModel(dir.File("seq.onnx", ReluModel(-1)), space);
  ASSERT_TRUE(variable.ok()) << variable.status().message();
  EXPECT_TRUE(variable->variable_non_batch_dim);
}

TEST(TuneTest, TheCpuSpaceIsTheDefaultEngineOnly) {
  const SpaceOptions cpu = SpaceFor(Provider::kCpu);
  EXPECT_EQ(cpu.precisions, std::vector<Precision>{Precision::kTf32});
  EXPECT_EQ(cpu.cuda_graphs, std::vector<bool>{false});
  EXPECT_EQ(SpaceFor(Provider::kCuda).batches, SpaceOptions().batches);
}

TEST(TuneTest, WriteModelFolderLinksOrCopiesAndLeavesTheModelAlone) {
  TempDir dir;
  const std::string model = ReluModel(8);
  const std::string path = dir.File("m.onnx", model);
  ASSERT_TRUE(WriteModelFolder(dir.Path("repo/m"), path, "max_batch_size: 4\n").ok());
  ASSERT_TRUE(WriteModelFolder(dir.Path("repo/m"), path, "max_batch_size: 8\n").ok());  // again: replaced
  std::ifstream config(dir.Path("repo/m/config.pbtxt"));
  std::string text((std::istreambuf_iterator<char>(config)), {});
  EXPECT_EQ(text, "max_batch_size: 8\n");
  EXPECT_EQ(fs::file_size(dir.Path("repo/m/1/model.onnx")), model.size());
  EXPECT_EQ(fs::file_size(path), model.size());
}

TEST(TuneTest, InProcessMeasuresABatchWithBenchOnTheCpu) {
  TempDir dir;
  ToolMeasurerOptions o;
  o.model_path = dir.File("m.onnx", ReluModel(8));
  o.provider = Provider::kCpu;
  o.warmup = 1;
  o.iterations = 5;
  ToolMeasurer measurer(o);
  auto m = measurer.InProcess(EngineChoice{}, 4);
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_GT(m->latency_ms, 0);
  EXPECT_NEAR(m->items_per_s, 4 * 1000.0 / m->latency_ms, 1e-6 * m->items_per_s);
}

TEST(TuneTest, InProcessOfAMissingModelIsAnErrorThatNamesIt) {
  ToolMeasurerOptions o;
  o.model_path = "/nonexistent/m.onnx";
  o.provider = Provider::kCpu;
  ToolMeasurer measurer(o);
  auto m = measurer.InProcess(EngineChoice{}, 1);
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("/nonexistent/m.onnx"), std::string::npos) << m.status().message();
}

TEST(TuneTest, RefusesAnOutputThatHoldsTheModelItself) {
  TempDir dir;
  TuneOptions o;
  o.model_path = dir.File("repo/m/1/model.onnx", ReluModel(8));
  o.output_dir = dir.Path("repo/m");
  o.latency_budget_ms = 10;
  o.provider = Provider::kCpu;
  auto r = RunTune(o);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("holds the model itself"), std::string::npos) << r.status().message();
}

}  // namespace
}  // namespace ortgpu::tune
