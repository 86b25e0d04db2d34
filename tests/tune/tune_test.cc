// RunTune's pieces that need no measurement (tune/tune.h, tune/tool_measurer.h):
// the model's facts, the CPU space, the model folder written beside the
// user's file, and the options refused before anything runs.
#include "tune/tune.h"

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "bench/tensor_files.h"
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

// x [batch, 1, 8, 8] -> Conv (one 3x3 filter) -> y.
std::string ConvModel() {
  onnx::ModelBuilder b;
  b.AddInput("x", DataType::kFloat, {-1, 1, 8, 8}, {"batch", "", "", ""});
  b.AddOutput("y", DataType::kFloat, {-1, 1, 6, 6}, {"batch", "", "", ""});
  b.AddFloatInitializer("w", {1, 1, 3, 3}, 0.1f, 1);
  b.AddNode("Conv", {"x", "w"}, {"y"});
  return b.Serialize();
}

TEST(TuneTest, TraitsFromModelSayWhetherItHasConvolutions) {
  TempDir dir;
  const SpaceOptions space = SpaceFor(Provider::kCpu);
  auto conv = TraitsFromModel(dir.File("conv.onnx", ConvModel()), space);
  ASSERT_TRUE(conv.ok()) << conv.status().message();
  EXPECT_TRUE(conv->has_conv);
  auto relu = TraitsFromModel(dir.File("relu.onnx", ReluModel(8)), space);
  ASSERT_TRUE(relu.ok());
  EXPECT_FALSE(relu->has_conv);
}

// BERT's case: --shape seq:128 names a dim, perf sees the served model's -1
// dims; each input it concerns gets its full shape at one row.
TEST(TuneTest, ServedShapesResolveDimNamesToEachInputsShapeAtOneRow) {
  TensorInfo ids;
  ids.name = "input_ids";
  ids.shape = {-1, -1};
  ids.dim_names = {"batch", "seq"};
  TensorInfo other;
  other.name = "image";
  other.shape = {-1, 3};
  other.dim_names = {"batch", ""};
  bench::InputSpec spec;
  ASSERT_TRUE(bench::ParseShapeFlag("seq:128", spec).ok());
  auto shapes = ServedShapes({ids, other}, spec);
  ASSERT_TRUE(shapes.ok()) << shapes.status().message();
  ASSERT_EQ(shapes->size(), 1u);
  EXPECT_EQ(shapes->at("input_ids"), (std::vector<int64_t>{1, 128}));
  EXPECT_TRUE(ServedShapes({ids}, bench::InputSpec{})->empty());
}

// --input: the file's shape wins, cut to one row when the model batches;
// a name the model lacks and a dtype it does not take are refused before
// anything is measured.
TEST(TuneTest, ServedShapesTakeAnInputFilesShapeAtOneRow) {
  TempDir dir;
  Tensor ids = Tensor::Zeros("input_ids", DataType::kInt64, {4, 96});
  const std::string file = dir.File("ids.npy", *bench::SerializeNpy(ids));
  TensorInfo in;
  in.name = "input_ids";
  in.dtype = DataType::kInt64;
  in.shape = {-1, -1};
  in.dim_names = {"batch", "seq"};
  bench::InputSpec spec;
  ASSERT_TRUE(bench::ParseInputFlag("input_ids=" + file, spec).ok());
  auto shapes = ServedShapes({in}, spec);
  ASSERT_TRUE(shapes.ok()) << shapes.status().message();
  EXPECT_EQ(shapes->at("input_ids"), (std::vector<int64_t>{1, 96}));

  bench::InputSpec unknown;
  ASSERT_TRUE(bench::ParseInputFlag("mask=" + file, unknown).ok());
  auto refused = ServedShapes({in}, unknown);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("its inputs: input_ids"), std::string::npos) << refused.status().message();

  in.dtype = DataType::kFloat;
  auto wrong = ServedShapes({in}, spec);
  ASSERT_FALSE(wrong.ok());
  EXPECT_NE(wrong.status().message().find("holds int64 but the model expects float"), std::string::npos)
      << wrong.status().message();
}

TEST(TuneTest, InputsTagNamesAFileByItsContentNotItsPath) {
  TempDir dir;
  Tensor x = Tensor::Zeros("x", DataType::kFloat, {1, 8});
  const std::string a = dir.File("a.npy", *bench::SerializeNpy(x));
  const std::string moved = dir.File("elsewhere/b.npy", *bench::SerializeNpy(x));
  x.data_as<float>()[0] = 1;
  const std::string changed = dir.File("c.npy", *bench::SerializeNpy(x));
  auto tag = [](const std::string& path) {
    bench::InputSpec spec;
    EXPECT_TRUE(bench::ParseInputFlag("x=" + path, spec).ok());
    return InputsTag(spec);
  };
  ASSERT_TRUE(tag(a).ok());
  EXPECT_EQ(tag(a)->rfind("inputs=x=", 0), 0u) << *tag(a);
  EXPECT_EQ(tag(a)->size(), std::string("inputs=x=").size() + 16);
  EXPECT_EQ(*tag(a), *tag(moved));
  EXPECT_NE(*tag(a), *tag(changed));
  auto missing = tag(dir.Path("none.npy"));
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("--input x="), std::string::npos) << missing.status().message();
}

TEST(TuneTest, TagsNameTheBudgetAndTheInputs) {
  EXPECT_EQ(BudgetTag(PrecisionBudget{}), "cosine=0.999,top1=0.99,rel=0.05,nonfinite=deny");
  bench::InputSpec spec;
  EXPECT_EQ(*InputsTag(spec), "");
  ASSERT_TRUE(bench::ParseShapeFlag("seq:128", spec).ok());
  ASSERT_TRUE(bench::ParseIntRangeFlag("input_ids:0:30000", spec).ok());
  EXPECT_EQ(*InputsTag(spec), "inputs=seq:128,input_ids:0:30000");
}

TEST(TuneTest, MedianNoiseShrinksWithSamplesAndIgnoresOutliers) {
  EXPECT_EQ(MedianRelativeNoise({5.0}), 0);
  std::vector<double> few = {4.9, 5.0, 5.1, 5.0, 4.95, 5.05};
  std::vector<double> many;
  for (int i = 0; i < 10; ++i) many.insert(many.end(), few.begin(), few.end());
  EXPECT_GT(MedianRelativeNoise(few), MedianRelativeNoise(many));
  std::vector<double> spiky = many;
  spiky.push_back(80);  // one 80 ms stall
  EXPECT_NEAR(MedianRelativeNoise(spiky), MedianRelativeNoise(many), 0.005);
  EXPECT_LT(MedianRelativeNoise(many), 0.02);
}

TEST(TuneTest, TheCpuSpaceIsTheDefaultEngineOnly) {
  const SpaceOptions cpu = SpaceFor(Provider::kCpu);
  EXPECT_EQ(cpu.precisions, std::vector<Precision>{Precision::kTf32});
  EXPECT_EQ(cpu.cuda_graphs, std::vector<bool>{false});
  EXPECT_EQ(SpaceFor(Provider::kCuda).batches, SpaceOptions().batches);
  // On CUDA padded candidates pad every batch: one warmed size, not six.
  EXPECT_EQ(SpaceFor(Provider::kCuda).adaptive_padding, std::vector<bool>{false});
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

TEST(TuneTest, InProcessMeasuresEveryBatchAskedWithBenchOnTheCpu) {
  TempDir dir;
  ToolMeasurerOptions o;
  o.model_path = dir.File("m.onnx", ReluModel(8));
  o.provider = Provider::kCpu;
  o.warmup = 1;
  o.iterations = 5;
  ToolMeasurer measurer(o);
  auto all = measurer.InProcess(EngineChoice{}, {1, 4});
  ASSERT_EQ(all.size(), 2u);
  for (size_t i = 0; i < all.size(); ++i) {
    const auto& m = all[i];
    const double batch = i == 0 ? 1 : 4;
    ASSERT_TRUE(m.ok()) << m.status().message();
    EXPECT_GT(m->latency_ms, 0);
    EXPECT_NEAR(m->items_per_s, batch * 1000.0 / m->latency_ms, 1e-6 * m->items_per_s);
    EXPECT_GE(m->rel_noise, 0);
  }
}

TEST(TuneTest, InProcessOfAMissingModelIsAnErrorThatNamesIt) {
  ToolMeasurerOptions o;
  o.model_path = "/nonexistent/m.onnx";
  o.provider = Provider::kCpu;
  ToolMeasurer measurer(o);
  auto all = measurer.InProcess(EngineChoice{}, {1});
  ASSERT_EQ(all.size(), 1u);
  const auto& m = all.front();
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
