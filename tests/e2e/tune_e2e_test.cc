// End-to-end test of `ortgpu tune` (issue 28) on the CPU provider: the real
// binary tunes the small MLP with a short budget and few evaluations (its
// served measurements start the real `ortgpu serve` as a child); then what a
// user checks: the HTML report is written, a rerun with the same history
// measures nothing new (and prints the report as JSON with --json), the
// written folder can be tuned again as a folder (its config's own fields
// kept), and it is served by `ortgpu serve` with the model READY and no
// warning.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/tensor_files.h"
#include "e2e/mlp_model.h"
#include "e2e/serve_process.h"
#include "onnx/model_builder.h"
#include "serve/http/test_http_client.h"
#include "support/temp_dir.h"

namespace ortgpu::e2e {
namespace {

using namespace std::chrono_literals;
using serve::testing::TestHttpClient;
using testing_support::TempDir;
using ::testing::HasSubstr;
using ::testing::Not;
namespace fs = std::filesystem;

// `max_evaluations` 0: no limit (the CPU space is tiny: about 10 measurements).
std::vector<std::string> TuneArgs(const TempDir& dir, int max_evaluations) {
  return {"tune",      dir.Path("mlp.onnx"),       "--provider", "cpu",  "--latency-budget-ms",
          "200",       "--output",                 dir.Path("repo/mlp"), "--history", dir.Path("history.jsonl"),
          "--concurrency", "2", "--max-evaluations", std::to_string(max_evaluations)};
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(TuneE2eTest, WritesAConfigServeLoadsWithoutWarningAndResumesFromItsHistory) {
  TempDir dir;
  const std::string model = MlpModel();
  dir.File("mlp.onnx", model);

  // Stopped by the limit: a winner among what was measured, and a note.
  const Outcome first = RunOrtgpu(TuneArgs(dir, 4));
  ASSERT_EQ(first.exit_code, 0) << first.output;
  EXPECT_THAT(first.output, HasSubstr("measurements: 4 new, 0 from the history"));
  EXPECT_THAT(first.output, HasSubstr("a rerun with the same history continues"));
  EXPECT_THAT(first.output, HasSubstr("winner: "));
  EXPECT_THAT(first.output, HasSubstr("report: " + dir.Path("repo/mlp/tune_report.html")));
  EXPECT_THAT(ReadFile(dir.Path("repo/mlp/tune_report.html")), HasSubstr("id=\"tune-report\""));

  // Continued to the end: the first run's measurements reused, not taken again.
  const Outcome second = RunOrtgpu(TuneArgs(dir, 0));
  ASSERT_EQ(second.exit_code, 0) << second.output;
  // Every measurement the first run counted as new (repeats taken on the
  // same server start included) is what the second finds in the history.
  EXPECT_THAT(second.output, HasSubstr("new, 4 from the history")) << first.output;
  EXPECT_THAT(second.output, HasSubstr("winner: "));

  // Finished: a rerun measures nothing new; --json prints the report.
  std::vector<std::string> json_args = TuneArgs(dir, 0);
  json_args.push_back("--json");
  const Outcome third = RunOrtgpu(json_args);
  ASSERT_EQ(third.exit_code, 0) << third.output;
  EXPECT_THAT(third.output, Not(HasSubstr("serving "))) << third.output;
  const size_t json_at = third.output.find("{\n");
  ASSERT_NE(json_at, std::string::npos) << third.output;
  const nlohmann::json report = nlohmann::json::parse(third.output.substr(json_at, third.output.rfind('}') - json_at + 1));
  EXPECT_EQ(report["measurements"]["new"], 0);
  EXPECT_FALSE(report["winner"].is_null());
  EXPECT_FALSE(report["served"].empty());
  EXPECT_EQ(report["provider"], "cpu");

  ASSERT_TRUE(fs::exists(dir.Path("repo/mlp/config.pbtxt")));
  ASSERT_TRUE(fs::exists(dir.Path("repo/mlp/1/model.onnx")));
  EXPECT_EQ(fs::file_size(dir.Path("mlp.onnx")), model.size());  // the user's file is untouched
  EXPECT_FALSE(fs::exists(dir.Path("repo/mlp/.tune-scratch")));

  // The written folder tuned as a folder (no --output: in place), from the
  // same history: a field the user added is kept, the change is said.
  {
    std::ofstream config(dir.Path("repo/mlp/config.pbtxt"), std::ios::app);
    config << "parameters { key: \"share_weights\" value: { string_value: \"auto\" } }\n";
  }
  const Outcome folder = RunOrtgpu({"tune", dir.Path("repo/mlp/"), "--provider", "cpu", "--latency-budget-ms", "200",
                                    "--history", dir.Path("history.jsonl"), "--concurrency", "2"});
  ASSERT_EQ(folder.exit_code, 0) << folder.output;
  EXPECT_THAT(folder.output, HasSubstr("measurements: 0 new,"));
  const std::string retuned = ReadFile(dir.Path("repo/mlp/config.pbtxt"));
  EXPECT_THAT(retuned, HasSubstr("# Tuned from " + dir.Path("repo/mlp/config.pbtxt")));
  EXPECT_THAT(retuned, HasSubstr("share_weights"));
  EXPECT_THAT(ReadFile(dir.Path("repo/mlp/config.pbtxt.before-tune")), HasSubstr("share_weights"));

  // --cpu is not given: the written instance_group says KIND_CPU itself.
  ServeProcess serve({"serve", "--model-repository", dir.Path("repo"), "--http-port", "0", "--metrics-port", "0"});
  ASSERT_TRUE(serve.WaitForPorts(60s)) << serve.output();
  const std::string out = serve.output();
  EXPECT_THAT(out, Not(HasSubstr("warn"))) << out;
  EXPECT_THAT(out, HasSubstr("READY")) << out;
  TestHttpClient c(serve.http_port);
  EXPECT_EQ(c.Get("/v2/models/mlp/ready").status, 200u) << out;
}

// ids [batch, seq] int64 -> Gather from a 50-row embedding -> ReduceMean
// over seq -> y [batch, 4]: ids of 50 and more fail, and seq is symbolic.
std::string EmbeddingModel() {
  onnx::ModelBuilder b;
  b.AddInput("ids", DataType::kInt64, {-1, -1}, {"batch", "seq"});
  b.AddOutput("y", DataType::kFloat, {-1, 4}, {"batch"});
  b.AddFloatInitializer("table", {50, 4}, 0.5f, 1);
  b.AddNode("Gather", {"table", "ids"}, {"e"});
  b.AddNode("ReduceMean", {"e"}, {"y"}, {{"keepdims", 0}}, {{"axes", {1}}});
  return b.Serialize();
}

// BERT's flags on the CPU: --shape names the sequence dim, --int-range keeps
// the ids within the table; both reach bench, perf and serve's warm-up.
TEST(TuneE2eTest, ShapeAndIntRangeReachTheInProcessAndTheServedMeasurements) {
  TempDir dir;
  dir.File("emb.onnx", EmbeddingModel());
  const Outcome o = RunOrtgpu({"tune", dir.Path("emb.onnx"), "--provider", "cpu", "--latency-budget-ms", "200",
                               "--output", dir.Path("repo/emb"), "--concurrency", "2", "--max-served", "1",
                               "--shape", "seq:16", "--int-range", "ids:0:50"});
  ASSERT_EQ(o.exit_code, 0) << o.output;
  EXPECT_THAT(o.output, HasSubstr("winner: ")) << o.output;
  EXPECT_THAT(o.output, Not(HasSubstr("failed"))) << o.output;
  EXPECT_THAT(o.output, HasSubstr("not served: the cap of 1 served candidates")) << o.output;
  std::ifstream history(dir.Path("repo/emb/tune_history.jsonl"));
  const std::string lines((std::istreambuf_iterator<char>(history)), {});
  EXPECT_THAT(lines, HasSubstr("inputs=seq:16,ids:0:50")) << lines;
}

// --input: real ids from a file, with no --shape or --int-range: the random
// ids bench and perf would make without it ([0, 100)) overflow the table, so
// a clean run shows the file reached the in-process and the served
// measurements (and serve's warm-up, one row of its shape); the history
// names the data by its digest.
TEST(TuneE2eTest, AnInputFileReachesTheInProcessAndTheServedMeasurements) {
  TempDir dir;
  dir.File("emb.onnx", EmbeddingModel());
  Tensor ids = Tensor::Zeros("ids", DataType::kInt64, {3, 12});
  for (int i = 0; i < 36; ++i) ids.data_as<int64_t>()[i] = (i * 7) % 50;
  const std::string file = dir.File("ids.npy", *bench::SerializeNpy(ids));
  const Outcome o = RunOrtgpu({"tune", dir.Path("emb.onnx"), "--provider", "cpu", "--latency-budget-ms", "200",
                               "--output", dir.Path("repo/emb"), "--concurrency", "2", "--max-served", "1",
                               "--input", "ids=" + file});
  ASSERT_EQ(o.exit_code, 0) << o.output;
  EXPECT_THAT(o.output, HasSubstr("winner: ")) << o.output;
  EXPECT_THAT(o.output, Not(HasSubstr("failed"))) << o.output;
  const std::string lines = ReadFile(dir.Path("repo/emb/tune_history.jsonl"));
  EXPECT_THAT(lines, ::testing::ContainsRegex("inputs=ids=[0-9a-f]{16}")) << lines;

  const Outcome unknown = RunOrtgpu({"tune", dir.Path("emb.onnx"), "--provider", "cpu", "--latency-budget-ms", "200",
                                     "--output", dir.Path("repo/emb2"), "--input", "tokens=" + file});
  EXPECT_NE(unknown.exit_code, 0) << unknown.output;
  EXPECT_THAT(unknown.output, HasSubstr("--input names 'tokens', which the model does not have; its inputs: ids"))
      << unknown.output;
}

TEST(TuneE2eTest, ABudgetOfZeroIsBadUsageThatSaysWhatTheBudgetIs) {
  TempDir dir;
  dir.File("mlp.onnx", MlpModel());
  const Outcome o = RunOrtgpu({"tune", dir.Path("mlp.onnx"), "--provider", "cpu", "--latency-budget-ms", "0",
                               "--output", dir.Path("repo/mlp")});
  EXPECT_EQ(o.exit_code, 2) << o.output;
  EXPECT_THAT(o.output, HasSubstr("--latency-budget-ms must be above 0 (the p99")) << o.output;
  EXPECT_FALSE(fs::exists(dir.Path("repo/mlp/config.pbtxt")));

  // A bad accuracy budget or shape is bad usage too, named by its flag.
  const Outcome accuracy = RunOrtgpu({"tune", dir.Path("mlp.onnx"), "--provider", "cpu", "--latency-budget-ms", "20",
                                      "--output", dir.Path("repo/mlp"), "--accuracy", "cosine=2x"});
  EXPECT_EQ(accuracy.exit_code, 2) << accuracy.output;
  EXPECT_THAT(accuracy.output, HasSubstr("--accuracy")) << accuracy.output;
  const Outcome shape = RunOrtgpu({"tune", dir.Path("mlp.onnx"), "--provider", "cpu", "--latency-budget-ms", "20",
                                   "--output", dir.Path("repo/mlp"), "--shape", "x"});
  EXPECT_EQ(shape.exit_code, 2) << shape.output;
  EXPECT_THAT(shape.output, HasSubstr("--shape")) << shape.output;
}

}  // namespace
}  // namespace ortgpu::e2e
