#include "doctor/checks_runtime.h"

#include <gtest/gtest.h>

#include "onnx/graph_derivation.h"
#include "support/vit_attention_scale.h"

namespace ortgpu::doctor {
namespace {

ProviderObservation WorkingProvider() {
  ProviderObservation o;
  o.ort_version = "1.29.0";
  o.ort_library = "/opt/ortgpu/lib/libonnxruntime.so.1";
  o.available_providers = {"CUDAExecutionProvider", "CPUExecutionProvider"};
  o.ep_library = "/opt/ortgpu/lib/libonnxruntime_providers_cuda.so";
  o.gpu_expected = true;
  o.attempted = true;
  return o;
}

RunTiming Timing(double ms) {
  RunTiming t;
  t.ok = true;
  t.median_ms = ms;
  t.first_run_ms = ms * 10;
  t.runs = 20;
  return t;
}

TEST(CheckProviderTest, WorkingCudaSessionPasses) {
  Report r;
  EXPECT_TRUE(EvaluateProvider(WorkingProvider(), r));
  EXPECT_EQ(r.Find("provider.cuda_session")->verdict, Verdict::kPass);
  EXPECT_EQ(r.ExitCode(/*require_gpu=*/true), 0);
}

TEST(CheckProviderTest, EpLoadErrorIsAGpuFailureNamingTheLibrary) {
  auto o = WorkingProvider();
  o.session_error = "Failed to load shared library";
  o.log.missing_library = "libcudnn.so.9";
  Report r;
  EXPECT_FALSE(EvaluateProvider(o, r));
  const Finding* f = r.Find("provider.cuda_session");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->verdict, Verdict::kFail);
  EXPECT_NE(f->title.find("libcudnn.so.9 not found"), std::string::npos);
  EXPECT_NE(f->fix.find("libcudnn.so.9"), std::string::npos);
  EXPECT_EQ(r.ExitCode(true), 1);
}

TEST(CheckProviderTest, NoGpuMeansSkipAndExitZeroUnlessRequired) {
  auto o = WorkingProvider();
  o.gpu_expected = false;
  o.attempted = false;
  Report r;
  EXPECT_FALSE(EvaluateProvider(o, r));
  EXPECT_EQ(r.Find("provider.cuda_session")->verdict, Verdict::kSkip);
  EXPECT_EQ(r.ExitCode(false), 0);
  EXPECT_EQ(r.ExitCode(true), 1);
}

TEST(CheckProviderTest, CpuOnlyOrtBuildFails) {
  auto o = WorkingProvider();
  o.available_providers = {"CPUExecutionProvider"};
  Report r;
  EvaluateProvider(o, r);
  EXPECT_EQ(r.Find("provider.ort")->verdict, Verdict::kFail);
  EXPECT_NE(r.Find("provider.ort")->fix.find("ORT_ROOT"), std::string::npos);
}

TEST(CheckEndToEndTest, FasterGpuWithAgreeingOutputsPasses) {
  EndToEndObservation o;
  o.cpu = Timing(10);
  o.cuda = Timing(1);
  o.max_abs_diff = 1e-5;
  o.gpu_memory_bytes = 300u << 20;
  Report r;
  EvaluateEndToEnd(o, r);
  EXPECT_EQ(r.Find("e2e.speedup")->verdict, Verdict::kPass);
  EXPECT_EQ(r.Find("e2e.speedup")->facts.at("speedup"), "10.000");
  EXPECT_EQ(r.Find("e2e.agreement")->verdict, Verdict::kPass);
  EXPECT_NE(r.Find("e2e.cuda")->seen.find("300.0 MiB"), std::string::npos);
}

TEST(CheckEndToEndTest, AvailableButNotFasterIsAWarningWithCauses) {
  EndToEndObservation o;
  o.cpu = Timing(1.0);
  o.cuda = Timing(1.1);
  PlacementSummary p;
  p.memcpy_nodes = 3;
  o.placement = p;
  Report r;
  EvaluateEndToEnd(o, r);
  const Finding* f = r.Find("e2e.speedup");
  EXPECT_EQ(f->verdict, Verdict::kWarn);
  EXPECT_NE(f->title.find("not faster than the CPU"), std::string::npos);
  EXPECT_NE(f->why.find("3 Memcpy nodes"), std::string::npos);
  EXPECT_EQ(r.ExitCode(true), 0);
}

TEST(CheckEndToEndTest, DisagreeingOutputsFail) {
  EndToEndObservation o;
  o.cpu = Timing(10);
  o.cuda = Timing(1);
  o.max_abs_diff = 0.5;
  o.max_rel_diff = 0.2;
  o.agreement_note = "output 'logits' element 3: 1.5 vs reference 1";
  Report r;
  EvaluateEndToEnd(o, r);
  EXPECT_EQ(r.Find("e2e.agreement")->verdict, Verdict::kFail);
}

// Issue 25: ssdlite320's detections on the H200 matched as sets of rows with
// one matched box 16 px apart, 0.05 of the range: within atol + rtol x range,
// so the comparison passed, yet a second rule (max_rel_diff <= rtol) failed it.
TEST(CheckEndToEndTest, Issue25OutputsTheComparisonPassedAgreeAtTheTolerance) {
  EndToEndObservation o;
  o.cpu = Timing(10);
  o.cuda = Timing(1);
  o.max_abs_diff = 16;
  o.max_rel_diff = 0.0500001;
  o.row_set_notes = {"outputs 'boxes', 'scores' compared as sets of rows: 37 rows matched of 300 on CPU and 300 on CUDA"};
  Report r;
  EvaluateEndToEnd(o, r);
  EXPECT_EQ(r.Find("e2e.agreement")->verdict, Verdict::kPass);
  EXPECT_NE(r.Find("e2e.agreement")->seen.find("37 rows matched"), std::string::npos);
}

TEST(CheckModelTest, ComputeFallbackFailsButShapeNodesDoNot) {
  ModelObservation m;
  m.path = "bert.onnx";
  m.run.cpu = Timing(40);
  m.run.cuda = Timing(4);
  PlacementSummary p;
  p.total_nodes = 100;
  CpuNode shape;
  shape.op_type = "Gather";
  shape.kind = CpuNodeKind::kShapeComputation;
  p.shape_nodes = {shape, shape};
  m.run.placement = p;
  Report ok;
  EvaluateModel(m, 1, ok);
  EXPECT_EQ(ok.Find("model.1.placement")->verdict, Verdict::kPass);
  EXPECT_NE(ok.Find("model.1.placement")->seen.find("shape computation (benign): 2 nodes (2 Gather)"),
            std::string::npos);

  CpuNode conv;
  conv.op_type = "Conv";
  conv.node_name = "conv1";
  conv.reason = "the CUDA EP has no kernel for Conv with these types";
  m.run.placement->compute_fallbacks = {conv};
  Report bad;
  EvaluateModel(m, 1, bad);
  const Finding* f = bad.Find("model.1.placement");
  EXPECT_EQ(f->verdict, Verdict::kFail);
  EXPECT_NE(f->seen.find("Conv 'conv1'"), std::string::npos);
  EXPECT_NE(f->fix.find("check Conv against the ORT CUDA EP"), std::string::npos) << f->fix;
  EXPECT_EQ(bad.ExitCode(false), 1);
}

// Issue 25: doctor refused vit_b_16 for the float scalars of its attention
// scale (computed from a Shape) that ORT keeps on the CPU.
TEST(CheckModelTest, Issue25VitAttentionScaleOnTheCpuPassesPlacement) {
  auto graph = onnx::DeriveGraph(testing::VitAttentionScaleModel());
  ASSERT_TRUE(graph.ok());
  ModelObservation m;
  m.path = "vit_b_16.onnx";
  m.run.cpu = Timing(40);
  m.run.cuda = Timing(4);
  m.run.placement = SummarizePlacement(testing::VitAttentionScaleEvents("CUDAExecutionProvider"),
                                       "CUDAExecutionProvider", {}, &*graph);
  Report ok;
  EvaluateModel(m, 1, ok);
  const Finding* f = ok.Find("model.1.placement");
  EXPECT_EQ(f->verdict, Verdict::kPass) << f->title << ": " << f->seen;
  EXPECT_NE(f->seen.find("shape computation (benign): 5 nodes (1 Cast, 1 Div, 1 Gather, 1 Shape, 1 Sqrt)"),
            std::string::npos)
      << f->seen;
  EXPECT_NE(f->seen.find("told apart by what they read in the graph ORT ran"), std::string::npos) << f->seen;
  EXPECT_EQ(f->facts.at("placement_rule"), "derivation");
  EXPECT_EQ(ok.ExitCode(/*require_gpu=*/true), 0);

  // The same op on the data path is a fallback, and the finding says what it reads.
  m.run.placement = SummarizePlacement(testing::VitAttentionScaleEvents("CPUExecutionProvider"),
                                       "CUDAExecutionProvider", {}, &*graph);
  Report bad;
  EvaluateModel(m, 1, bad);
  f = bad.Find("model.1.placement");
  EXPECT_EQ(f->verdict, Verdict::kFail);
  EXPECT_EQ(f->title, "1 compute nodes fell back to the CPU");
  EXPECT_NE(f->seen.find("Sqrt 'Sqrt_7' [float[1,4,8] -> float[1,4,8]] reads 'q_scaled', computed from the values of "
                         "input 'x'"),
            std::string::npos)
      << f->seen;
}

TEST(CheckModelTest, Issue25DetectionRowSetsAreReportedWhenOutputsAgree) {
  ModelObservation m;
  m.path = "ssdlite.onnx";
  m.run.cpu = Timing(40);
  m.run.cuda = Timing(4);
  m.run.row_set_notes = {"outputs 'boxes', 'scores', 'labels' (after TopK '/topk') compared as sets of rows: 299 rows "
                         "matched of 300 on CPU and 300 on CUDA; 1 only on CUDA, 1 only on CPU, all scored ..."};
  Report r;
  EvaluateModel(m, 1, r);
  const Finding* f = r.Find("model.1.agreement");
  EXPECT_EQ(f->verdict, Verdict::kPass);
  EXPECT_NE(f->seen.find("299 rows matched of 300 on CPU and 300 on CUDA"), std::string::npos) << f->seen;
}

TEST(CheckModelTest, LoadErrorIsOneFinding) {
  ModelObservation m;
  m.path = "broken.onnx";
  m.load_error = "Protobuf parsing failed";
  Report r;
  EvaluateModel(m, 2, r);
  ASSERT_EQ(r.findings().size(), 1u);
  EXPECT_EQ(r.findings()[0].id, "model.2.load");
  EXPECT_EQ(r.findings()[0].verdict, Verdict::kFail);
}

}  // namespace
}  // namespace ortgpu::doctor
