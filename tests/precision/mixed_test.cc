// The mixed-precision search and the placement-aware pass, through the
// whole pipeline (precision.h): with fakes of the two ORT seams, so the
// test says which node misbehaves in float16, and with the real CPU
// provider on a model whose one node overflows float16.
#include "precision/mixed.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <set>

#include "precision/precision.h"
#include "precision/precision_test_models.h"

namespace ortgpu::precision {
namespace {

using namespace test_models;
using ::testing::Contains;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

bool RunsInFloat16(const ::onnx::ModelProto& m, const std::string& node) {
  const auto* n = NodeNamed(m, node);
  return n != nullptr && TypeOf(m, n->output(0)) == ::onnx::TensorProto::FLOAT16;
}

// Gives the reference outputs, except that output "y" gets a NaN while any
// of `bad` runs in float16.
class FakeRunner : public ModelRunner {
 public:
  explicit FakeRunner(std::set<std::string> bad) : bad_(std::move(bad)) {}
  Expected<std::vector<Tensor>> Run(const ::onnx::ModelProto& m, const std::vector<Tensor>&) override {
    ++runs;
    auto y = FloatTensor("y", {2, 2}, {1, 2, 3, 4});
    for (const auto& b : bad_) {
      if (RunsInFloat16(m, b)) y.data_as<float>()[1] = std::numeric_limits<float>::quiet_NaN();
    }
    return std::vector<Tensor>{y, FloatTensor("z", {2, 2}, {5, 6, 7, 8})};
  }
  int runs = 0;

 private:
  std::set<std::string> bad_;
};

// Two chains of four unary nodes: x -> ... -> y and x -> ... -> z.
::onnx::ModelProto TwoChains() {
  onnx::ModelBuilder b;
  b.AddInput("x", DataType::kFloat, {2, 2});
  b.AddOutput("y", DataType::kFloat, {2, 2});
  b.AddOutput("z", DataType::kFloat, {2, 2});
  const char* ops[] = {"Relu", "Neg", "Abs", "Sigmoid"};
  std::string y = "x", z = "x";
  for (int i = 0; i < 4; ++i) {
    const std::string ny = i == 3 ? "y" : "y" + std::to_string(i), nz = i == 3 ? "z" : "z" + std::to_string(i);
    b.AddNode(ops[i], {y}, {ny});
    b.AddNode(ops[i], {z}, {nz});
    y = ny;
    z = nz;
  }
  return Parse(b.Serialize());
}

TEST(MixedSearch, KeepsExactlyTheNodeThatBreaksTheBudgetInFloat32) {
  auto m = TwoChains();
  FakeRunner runner({"Abs_4"});
  const std::vector<Tensor> reference = {FloatTensor("y", {2, 2}, {1, 2, 3, 4}), FloatTensor("z", {2, 2}, {5, 6, 7, 8})};
  auto r = SearchMixedPrecision(m, {}, {}, reference, runner, {});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_TRUE(r->within_budget) << r->note;
  ASSERT_EQ(r->kept_for_accuracy.size(), 1u);
  EXPECT_EQ(r->kept_for_accuracy[0].name, "Abs_4");
  EXPECT_THAT(r->kept_for_accuracy[0].reason, HasSubstr("output 'y'"));
  EXPECT_THAT(r->fp16_violations, Contains(HasSubstr("1 NaN")));
  EXPECT_FALSE(RunsInFloat16(r->final.model, "Abs_4"));
  EXPECT_TRUE(RunsInFloat16(r->final.model, "Neg_2")) << "the rest stays float16";
  // Only y's chain of 4 is searched: all-fp16, none, then 2 halvings, the result.
  EXPECT_LE(r->evaluations, 5);
}

TEST(MixedSearch, FindsEveryCulpritOneAfterTheOther) {
  auto m = TwoChains();
  FakeRunner runner({"Neg_2", "Sigmoid_6"});
  const std::vector<Tensor> reference = {FloatTensor("y", {2, 2}, {1, 2, 3, 4}), FloatTensor("z", {2, 2}, {5, 6, 7, 8})};
  auto r = SearchMixedPrecision(m, {}, {}, reference, runner, {});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_TRUE(r->within_budget);
  std::set<std::string> kept;
  for (const auto& k : r->kept_for_accuracy) kept.insert(k.name);
  EXPECT_EQ(kept, (std::set<std::string>{"Neg_2", "Sigmoid_6"}));
}

// z = Abs(x) (Abs_0), and one chain of `n` unary nodes x -> ... -> y,
// named Relu_1, Neg_2, Relu_3, ...
::onnx::ModelProto Chain(int n) {
  onnx::ModelBuilder b;
  b.AddInput("x", DataType::kFloat, {2, 2});
  b.AddOutput("y", DataType::kFloat, {2, 2});
  b.AddOutput("z", DataType::kFloat, {2, 2});
  b.AddNode("Abs", {"x"}, {"z"});  // z: an output that never fails
  std::string in = "x";
  for (int i = 0; i < n; ++i) {
    const std::string out = i + 1 == n ? "y" : "c" + std::to_string(i);
    b.AddNode(i % 2 == 0 ? "Relu" : "Neg", {in}, {out});
    in = out;
  }
  return Parse(b.Serialize());
}

TEST(MixedSearch, EachCulpritAfterTheFirstResumesAfterTheOneBefore) {
  // 64 candidates feed y, three culprits near its end (BERT-base's lie in
  // its last layers): the first costs all-float16, all-float32, 6 halvings
  // and the check; each next one the check and the halvings of the few
  // nodes after the one before, never the all-float32 run again.
  auto m = Chain(64);
  FakeRunner runner({"Neg_52", "Relu_57", "Neg_62"});
  const std::vector<Tensor> reference = {FloatTensor("y", {2, 2}, {1, 2, 3, 4}), FloatTensor("z", {2, 2}, {5, 6, 7, 8})};
  auto r = SearchMixedPrecision(m, {}, {}, reference, runner, {});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_TRUE(r->within_budget) << r->note;
  std::vector<std::string> kept;
  for (const auto& k : r->kept_for_accuracy) kept.push_back(k.name);
  EXPECT_EQ(kept, (std::vector<std::string>{"Neg_52", "Relu_57", "Neg_62"}));
  EXPECT_TRUE(RunsInFloat16(r->final.model, "Relu_55")) << "only the culprits stay float32";
  // 1 + (1 + 6 + 1) + (4 + 1) + (3 + 1) = 18; restarting each round from
  // all-float32 took 1 + 3 x 8 = 25.
  EXPECT_LE(r->evaluations, 18) << r->evaluations;
  EXPECT_EQ(runner.runs, r->evaluations);
}

TEST(MixedSearch, StopsAtTheEvaluationLimitAndSaysSo) {
  auto m = TwoChains();
  FakeRunner runner({"Abs_4"});
  const std::vector<Tensor> reference = {FloatTensor("y", {2, 2}, {1, 2, 3, 4}), FloatTensor("z", {2, 2}, {5, 6, 7, 8})};
  MixedSearchOptions o;
  o.max_evaluations = 1;
  auto r = SearchMixedPrecision(m, {}, {}, reference, runner, o);
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->within_budget);
  EXPECT_THAT(r->note, HasSubstr("stopped after 1 evaluations"));
}

// A float16 overflow for real, on the CPU provider: y = Relu(x) * 1e5 goes
// past 65504 (and 1e5 itself is clipped to 65504), z = x W + b does not.
// Only the Mul must stay float32.
TEST(MixedSearch, RealOverflowOnTheCpuProviderKeepsOnlyTheOverflowingMul) {
  onnx::ModelBuilder b;
  b.AddInput("x", DataType::kFloat, {-1, 8}, {"batch"});
  b.AddOutput("y", DataType::kFloat, {-1, 8}, {"batch"});
  b.AddOutput("z", DataType::kFloat, {-1, 4}, {"batch"});
  b.AddFloatValues("k", {}, {1e5f});
  b.AddFloatInitializer("w", {8, 4}, 0.5f, 1);
  b.AddFloatInitializer("bias", {4}, 0.1f, 2);
  b.AddNode("Relu", {"x"}, {"r"});
  b.AddNode("Mul", {"r", "k"}, {"y"});
  b.AddNode("MatMul", {"x", "w"}, {"h"});
  b.AddNode("Add", {"h", "bias"}, {"z"});
  auto m = Parse(b.Serialize());
  Tensor x = Tensor::Zeros("x", DataType::kFloat, {4, 8});
  for (int i = 0; i < 32; ++i) x.data_as<float>()[i] = static_cast<float>((i * 7) % 11) / 3.0f - 0.5f;
  OrtModelRunner reference(Float32Reference({})), candidate({});
  PrecisionOptions o;
  o.target = Target::kMixed;
  auto r = ConvertPrecision(m, {x}, o, {&reference, &candidate, nullptr});
  ASSERT_TRUE(r.ok()) << r.status().message();
  // The CPU provider has no float16 Mul: ORT computes it in float32 between
  // Casts it adds and drops as a pair, so no Inf shows there; the clipped
  // constant (65504 for 1e5) does, and on a GPU the Inf would too.
  ASSERT_FALSE(r->fp16_violations.empty());
  for (const auto& v : r->fp16_violations) EXPECT_THAT(v, HasSubstr("output 'y'")) << "z is fine in float16";
  ASSERT_EQ(r->kept_for_accuracy.size(), 1u);
  EXPECT_EQ(r->kept_for_accuracy[0].name, "Mul_1");
  EXPECT_EQ(r->kept_for_accuracy[0].op_type, "Mul");
  EXPECT_TRUE(r->within_budget()) << r->violations.front();
  EXPECT_EQ(Initializer(r->model, "k")->data_type(), ::onnx::TensorProto::FLOAT) << "1e5 kept, not clipped";
  EXPECT_TRUE(RunsInFloat16(r->model, "MatMul_2"));
}

TEST(ConvertPrecision, Fp16OutsideTheBudgetIsReportedNotHidden) {
  onnx::ModelBuilder b;
  b.AddInput("x", DataType::kFloat, {2, 2});
  b.AddOutput("y", DataType::kFloat, {2, 2});
  b.AddFloatValues("k", {}, {1e5f});
  b.AddNode("Mul", {"x", "k"}, {"y"});
  auto m = Parse(b.Serialize());
  OrtModelRunner reference(Float32Reference({})), candidate({});
  auto r = ConvertPrecision(m, {FloatTensor("x", {2, 2}, {1, 0.5f, -1, 0.25f})}, {}, {&reference, &candidate, nullptr});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_TRUE(r->checked);
  EXPECT_FALSE(r->within_budget());
  ASSERT_EQ(r->deviation.outputs.size(), 1u);
  EXPECT_GT(r->deviation.outputs[0].max_rel_error, 0.3) << "1e5 was clipped to 65504";
  EXPECT_GT(r->deviation.outputs[0].cosine_min, 0.999) << "a uniform scale is what cosine cannot see";
  EXPECT_THAT(r->violations, Contains(HasSubstr("max relative error")));
}

TEST(ConvertPrecision, MixedWithoutTheAccuracyCheckIsRefused) {
  PrecisionOptions o;
  o.target = Target::kMixed;
  auto r = ConvertPrecision(MatMulAddRelu(), {}, o, {});
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("--no-check"));
}

// Reports as off the target provider the watched nodes that run in
// float16, and `always` whatever their precision.
class FakePlacement : public PlacementObserver {
 public:
  FakePlacement(std::set<std::string> fp16_only, std::set<std::string> always)
      : fp16_only_(std::move(fp16_only)), always_(std::move(always)) {}
  Expected<std::set<std::string>> OffTargetNodes(const ::onnx::ModelProto& m, const std::vector<Tensor>&) override {
    ++calls;
    std::set<std::string> off = always_;
    for (const auto& n : fp16_only_) {
      if (RunsInFloat16(m, n)) off.insert(n);
    }
    return off;
  }
  int calls = 0;

 private:
  std::set<std::string> fp16_only_, always_;
};

TEST(PlacementPass, ANodeOrtPutsOnTheCpuInFloat16GoesBackToFloat32) {
  FakePlacement placement({"Add_1"}, {"Relu_2"});
  auto r = ConvertPrecision(MatMulAddRelu(), {}, {}, {nullptr, nullptr, &placement});
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->kept_for_placement.size(), 1u);
  EXPECT_EQ(r->kept_for_placement[0].name, "Add_1");
  EXPECT_EQ(r->kept_for_placement[0].op_type, "Add");
  EXPECT_THAT(r->kept_for_placement[0].reason, HasSubstr("on the CPU in float16 but not in float32"));
  EXPECT_FALSE(RunsInFloat16(r->model, "Add_1"));
  EXPECT_TRUE(RunsInFloat16(r->model, "Relu_2")) << "on the CPU in float32 too: converting it moves nothing";
  EXPECT_TRUE(RunsInFloat16(r->model, "MatMul_0"));
  EXPECT_EQ(placement.calls, 3) << "float32 baseline, first conversion, the one that confirms";
}

}  // namespace
}  // namespace ortgpu::precision
