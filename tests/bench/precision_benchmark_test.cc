// bench --precision end to end in the library, on the CPU provider (which
// runs float16 models): each precision made once, judged against fp32, and
// a precision outside the budget measured but never recommended.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "bench/benchmark.h"
#include "bench/report.h"
#include "precision/precision_test_models.h"

namespace ortgpu::bench {
namespace {

// x [batch, 4] -> MatMul -> Add -> Relu -> y; and, with `overflow`, a second
// output z = x * 1e5, which float16 cannot hold (clipped to 65504).
std::string Model(bool overflow) {
  ::onnx::ModelProto m = precision::test_models::MatMulAddRelu();
  if (overflow) {
    auto* g = m.mutable_graph();
    ::onnx::TensorProto k;
    k.set_name("k");
    k.set_data_type(::onnx::TensorProto::FLOAT);
    k.add_float_data(1e5f);
    *g->add_initializer() = k;
    ::onnx::NodeProto mul;
    mul.set_op_type("Mul");
    for (const char* in : {"x", "k"}) mul.add_input(in);
    mul.add_output("z");
    *g->add_node() = mul;
    *g->add_output() = g->input(0);  // z is shaped as x
    g->mutable_output(1)->set_name("z");
  }
  return m.SerializeAsString();
}

BenchOptions Options(bool overflow) {
  BenchOptions o;
  o.model_path = overflow ? "overflow.onnx" : "mlp.onnx";
  o.model_bytes = Model(overflow);
  o.session.intra_op_threads = 1;
  o.load.iterations = 5;
  o.load.warmup = 1;
  return o;
}

TEST(PrecisionBenchmarkTest, Issue26EachPrecisionIsMeasuredAndJudgedAgainstFp32) {
  BenchOptions o = Options(false);
  o.precisions = {Precision::kTf32, Precision::kFp32, Precision::kFp16};
  o.batches = {1, 2};
  auto report = RunBenchmark(o);
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_TRUE(report->ok());
  ASSERT_EQ(report->results.size(), 4u) << "tf32 is fp32 on the CPU: fp32 and fp16, at two batches";
  for (const auto& r : report->results) {
    ASSERT_TRUE(r.error.ok()) << r.error.ToString();
    EXPECT_TRUE(r.accuracy.passed) << r.accuracy.note;
    const PrecisionAccuracy& a = r.precision_accuracy;
    ASSERT_TRUE(a.checked);
    if (r.config.variant.precision == Precision::kFp32) {
      EXPECT_TRUE(r.config.variant.is_default);
      EXPECT_TRUE(a.reference);
    } else {
      EXPECT_EQ(r.config.variant.precision, Precision::kFp16);
      EXPECT_EQ(r.config.variant.name, "precision=fp16");
      EXPECT_FALSE(a.reference);
      EXPECT_TRUE(a.within_budget);
      EXPECT_GT(a.min_cosine, 0.999);
      EXPECT_LT(a.max_rel_error, 0.05);
    }
  }
  EXPECT_FALSE(report->precision_budget.empty());
  auto has_note = [&](const std::string& text) {
    return std::any_of(report->notes.begin(), report->notes.end(),
                       [&](const std::string& n) { return n.find(text) != std::string::npos; });
  };
  EXPECT_TRUE(has_note("on the CPU provider tf32 is fp32"));
  EXPECT_TRUE(has_note("fp16: 3 of 3 nodes float16, 0 kept float32"));
  const std::string table = RenderTable(*report);
  EXPECT_NE(table.find(" fp16 "), std::string::npos) << table;
  EXPECT_NE(table.find("budget"), std::string::npos);
}

TEST(PrecisionBenchmarkTest, Issue26SweepNeverRecommendsAPrecisionOutsideTheBudget) {
  BenchOptions o = Options(true);
  o.sweep = true;
  o.sweep_axes = {"io=served"};
  o.precisions = {Precision::kFp32, Precision::kFp16, Precision::kMixed};
  auto report = RunBenchmark(o);
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_TRUE(report->ok()) << "out of budget is marked, not a failure";
  int fp16 = 0;
  for (const auto& r : report->results) {
    ASSERT_TRUE(r.error.ok()) << r.error.ToString();
    if (r.config.variant.precision == Precision::kFp16) {
      ++fp16;
      EXPECT_FALSE(r.precision_accuracy.within_budget);
      EXPECT_NE(r.precision_accuracy.violations.front().find("output 'z'"), std::string::npos);
    }
    if (r.config.variant.precision == Precision::kMixed) EXPECT_TRUE(r.precision_accuracy.within_budget);
  }
  EXPECT_EQ(fp16, 1);
  ASSERT_TRUE(report->recommendation && report->recommendation->throughput);
  for (const auto& pick : {report->recommendation->latency, report->recommendation->throughput}) {
    ASSERT_TRUE(pick);
    EXPECT_NE(report->results[pick->index].config.variant.precision, Precision::kFp16);
  }
  EXPECT_EQ(report->recommendation->config_pbtxt.find("string_value: \"fp16\""), std::string::npos);
  const bool noted = std::any_of(report->notes.begin(), report->notes.end(), [](const std::string& n) {
    return n.find("fp16 is outside the accuracy budget (output 'z'") != std::string::npos;
  });
  EXPECT_TRUE(noted);
}

TEST(PrecisionBenchmarkTest, Issue26WithoutPrecisionNothingChangesAndCpuIsFp32) {
  auto report = RunBenchmark(Options(false));
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  ASSERT_EQ(report->results.size(), 1u);
  EXPECT_EQ(report->results[0].config.variant.precision, Precision::kFp32);
  EXPECT_TRUE(report->results[0].precision_accuracy.reference);
  EXPECT_TRUE(report->precision_budget.empty());
}

TEST(PrecisionBenchmarkTest, Issue26BadPrecisionRequestsAreClearErrors) {
  BenchOptions mixed = Options(false);
  mixed.precisions = {Precision::kMixed};
  mixed.check_accuracy = false;
  auto r = RunBenchmark(mixed);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("drop --no-check"), std::string::npos) << r.status().message();

  BenchOptions twice = Options(false);
  twice.sweep = true;
  twice.sweep_axes = {"precision=fp16"};
  twice.precisions = {Precision::kFp32};
  r = RunBenchmark(twice);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("give them once"), std::string::npos) << r.status().message();

  BenchOptions trt = Options(false);
  trt.session.provider = Provider::kTensorRt;
  trt.precisions = {Precision::kFp16};
  r = RunBenchmark(trt);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("TensorRT makes its own precision choices"), std::string::npos);
}

}  // namespace
}  // namespace ortgpu::bench
