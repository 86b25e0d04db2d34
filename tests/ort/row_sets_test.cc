#include "ort/row_sets.h"

#include <gtest/gtest.h>

#include "ort/accuracy.h"

namespace ortgpu {
namespace {

// One run's detections: rows of (x1, y1, x2, y2, score, label).
struct Detection {
  float box[4];
  float score;
  int64_t label;
};

std::vector<Tensor> Detections(const std::vector<Detection>& rows) {
  const int64_t n = static_cast<int64_t>(rows.size());
  Tensor boxes = Tensor::Zeros("boxes", DataType::kFloat, {n, 4});
  Tensor scores = Tensor::Zeros("scores", DataType::kFloat, {n});
  Tensor labels = Tensor::Zeros("labels", DataType::kInt64, {n});
  for (int64_t i = 0; i < n; ++i) {
    for (int k = 0; k < 4; ++k) boxes.data_as<float>()[i * 4 + k] = rows[i].box[k];
    scores.data_as<float>()[i] = rows[i].score;
    labels.data_as<int64_t>()[i] = rows[i].label;
  }
  return {boxes, scores, labels};
}

RowSets AfterNms() {
  RowSets r;
  for (const char* name : {"boxes", "scores", "labels"}) r.outputs[name] = "after NonMaxSuppression '/nms'";
  r.actual_name = "CUDA";
  r.reference_name = "CPU";
  return r;
}

const std::vector<Detection> kCpu = {
    {{10, 10, 100, 100}, 0.95f, 1}, {{200, 40, 300, 160}, 0.80f, 3}, {{50, 220, 90, 300}, 0.40f, 1},
    {{5, 5, 20, 20}, 0.02f, 7},     {{120, 5, 140, 25}, 0.02f, 9},
};

TEST(RowSets, Issue25ReorderedEqualDetectionsPass) {
  // CUDA lists the two tied 0.02 rows the other way round, scores a hair apart.
  std::vector<Detection> cuda = {kCpu[0], kCpu[1], kCpu[2], kCpu[4], kCpu[3]};
  cuda[0].score = 0.9500003f;
  Accuracy a = CompareOutputs(Detections(cuda), Detections(kCpu), {}, AfterNms());
  EXPECT_TRUE(a.passed) << a.note;
  ASSERT_EQ(a.row_set_notes.size(), 1u);
  EXPECT_NE(a.row_set_notes[0].find("5 rows matched of 5 on CPU and 5 on CUDA (in another order)"), std::string::npos)
      << a.row_set_notes[0];
  EXPECT_NE(a.row_set_notes[0].find("after NonMaxSuppression"), std::string::npos);
  // Without RowSets the same outputs fail element by element, as before.
  EXPECT_FALSE(CompareOutputs(Detections(cuda), Detections(kCpu), {}).passed);
}

TEST(RowSets, Issue25ACountDifferingOnlyInTiedLowScoreRowsPasses) {
  // CUDA's list ends one row earlier: of the two rows tied at 0.02 it kept one.
  std::vector<Detection> cuda = {kCpu[0], kCpu[1], kCpu[2], kCpu[4]};
  Accuracy a = CompareOutputs(Detections(cuda), Detections(kCpu), {}, AfterNms());
  EXPECT_TRUE(a.passed) << a.note;
  ASSERT_EQ(a.row_set_notes.size(), 1u);
  const std::string& note = a.row_set_notes[0];
  EXPECT_NE(note.find("4 rows matched of 5 on CPU and 4 on CUDA; 0 only on CUDA, 1 only on CPU"), std::string::npos)
      << note;
  EXPECT_NE(note.find("near-ties"), std::string::npos) << note;

  // The same when the shapes differ only in a symbolic leading dim, with no graph facts.
  RowSets dynamic;
  dynamic.dynamic_leading_dim = {"boxes", "scores", "labels"};
  EXPECT_TRUE(CompareOutputs(Detections(cuda), Detections(kCpu), {}, dynamic).passed);
}

TEST(RowSets, Issue25ARealDifferenceInAHighScoreBoxFailsWithANote) {
  std::vector<Detection> cuda = kCpu;
  cuda[1].box[2] = 380;  // the 0.80 detection's right edge: 300 on CPU
  Accuracy a = CompareOutputs(Detections(cuda), Detections(kCpu), {}, AfterNms());
  EXPECT_FALSE(a.passed);
  EXPECT_NE(a.note.find("4 rows matched of 5 on CPU and 5 on CUDA; 1 only on CUDA, 1 only on CPU"), std::string::npos)
      << a.note;
  EXPECT_NE(a.note.find("row 1 (score 0.8) matches nothing"), std::string::npos) << a.note;
  EXPECT_NE(a.note.find("a real difference in what was detected"), std::string::npos) << a.note;
  EXPECT_NE(a.note.find("'boxes' element 2: 380 on CUDA vs 300 on CPU"), std::string::npos) << a.note;
}

TEST(RowSets, AMissingHighScoreDetectionFails) {
  std::vector<Detection> cuda = {kCpu[1], kCpu[2], kCpu[3], kCpu[4]};
  Accuracy a = CompareOutputs(Detections(cuda), Detections(kCpu), {}, AfterNms());
  EXPECT_FALSE(a.passed);
  EXPECT_NE(a.note.find("CPU row 0 (score 0.95) matches nothing"), std::string::npos) << a.note;
}

TEST(RowSets, WithoutAScoreOutputEveryRowMustMatch) {
  auto rows = [](std::vector<int64_t> values) {
    Tensor t = Tensor::Zeros("indices", DataType::kInt64, {static_cast<int64_t>(values.size()) / 2, 2});
    for (size_t i = 0; i < values.size(); ++i) t.data_as<int64_t>()[i] = values[i];
    return std::vector<Tensor>{t};
  };
  RowSets r;
  r.outputs["indices"] = "after NonZero 'nz'";
  EXPECT_TRUE(CompareOutputs(rows({0, 1, 2, 3}), rows({2, 3, 0, 1}), {}, r).passed);
  Accuracy a = CompareOutputs(rows({0, 1}), rows({2, 3, 0, 1}), {}, r);
  EXPECT_FALSE(a.passed);
  EXPECT_NE(a.note.find("without a score output every row must match"), std::string::npos) << a.note;
}

TEST(RowSets, MatchedRowsReportTheirLargestError) {
  std::vector<Detection> cuda = kCpu;
  cuda[0].box[0] = 10.5f;
  RowSetMatch m;
  auto got = Detections(cuda), want = Detections(kCpu);
  m = MatchRowSet({&got[0], &got[1], &got[2]}, {&want[0], &want[1], &want[2]}, {}, RowSetLabels{"CUDA", "CPU", ""});
  EXPECT_TRUE(m.passed);
  EXPECT_EQ(m.matched, 5);
  EXPECT_EQ(m.score_output, "scores");
  EXPECT_NEAR(m.max_abs_error, 0.5, 1e-6);
}

TEST(RowSets, AModelsRowSetsComeFromItsGraphAndItsSymbolicLeadingDims) {
  onnx::GraphDerivation graph;
  graph.selected_outputs["boxes"] = "NonMaxSuppression '/nms'";
  TensorInfo boxes{"boxes", DataType::kFloat, {-1, 4}}, logits{"logits", DataType::kFloat, {1, 10}};
  const RowSets rows = RowSetsFor({boxes, logits}, &graph);
  ASSERT_EQ(rows.outputs.count("boxes"), 1u);
  EXPECT_EQ(rows.outputs.at("boxes"), "after NonMaxSuppression '/nms'");
  EXPECT_EQ(rows.outputs.count("logits"), 0u);
  EXPECT_EQ(rows.dynamic_leading_dim, (std::set<std::string>{"boxes"}));
  EXPECT_TRUE(RowSetsFor({logits}, nullptr).outputs.empty());
}

}  // namespace
}  // namespace ortgpu
