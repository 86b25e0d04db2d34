#include "perf/served_config.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>

#include "fakes/stub_kserve_server.h"
#include "onnx/model_builder.h"
#include "perf/perf.h"
#include "perf/report.h"

namespace ortgpu::perf {
namespace {

using bench::Precision;

// The config `ortgpu serve` returns for bench's recommended ResNet-50
// fragment: [32], two GPU instances, NHWC, CUDA graphs.
constexpr const char* kResNetConfig = R"({
  "name": "resnet50", "max_batch_size": 32,
  "dynamic_batching": {"preferred_batch_size": [32], "max_queue_delay_microseconds": 2000},
  "instance_group": [{"count": 2, "kind": "KIND_GPU", "gpus": []}],
  "optimization": {"graph": {"level": 0}, "execution_accelerators": {"gpu_execution_accelerator": [
    {"name": "cuda", "parameters": {"enable_cuda_graph": "1", "prefer_nhwc": "1", "cudnn_conv_algo_search": "EXHAUSTIVE"}}]}},
  "parameters": {}
})";

Tensor Zeros(const std::string& name, DataType type, std::vector<int64_t> shape) { return Tensor::Zeros(name, type, shape); }

// Issue 25: ResNet-50 served from the sweep's fragment was compared with
// bench's defaults (host I/O, no CUDA options): "ratio 1.44". The
// in-process run now takes the served EP options, serve's CUDA-graph I/O and
// the batch the server ran.
TEST(ServedSetupTest, Issue25TheRecommendedResNetIsComparedAsServeRunsIt) {
  auto setup = ParseServedSetup(kResNetConfig);
  ASSERT_TRUE(setup.ok()) << setup.status().ToString();
  EXPECT_TRUE(setup->cuda_graphs);
  EXPECT_TRUE(setup->pads);
  const int64_t batch = ServedBatch(*setup, 1, 31.6);
  EXPECT_EQ(batch, 32) << "31.6 rows per execution, padded to the preferred 32";
  bench::InputSpec spec;
  auto run = InProcessRunFor(*setup, "/tmp/models/resnet50.onnx", Provider::kCpu,
                             {Zeros("input", DataType::kFloat, {1, 3, 224, 224})}, spec, batch);
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  const bench::BenchOptions& o = run->options;
  EXPECT_EQ(o.session.provider, Provider::kCuda) << "KIND_GPU, whatever --provider says";
  EXPECT_EQ(o.io, IoMode::kServedGraph);
  EXPECT_EQ(o.batches, (std::vector<int64_t>{32}));
  EXPECT_EQ(o.session.cuda_options, (std::map<std::string, std::string>{
                                        {"cudnn_conv_algo_search", "EXHAUSTIVE"}, {"enable_cuda_graph", "1"}, {"prefer_nhwc", "1"}}));
  EXPECT_EQ(o.inputs.shapes.at("input"), (std::vector<int64_t>{32, 3, 224, 224}));
  EXPECT_FALSE(o.check_accuracy);
  EXPECT_EQ(run->command,
            "ortgpu bench /tmp/models/resnet50.onnx --provider cuda --io served-graph --batch 32 --shape input:32x3x224x224 "
            "--cuda-option cudnn_conv_algo_search=EXHAUSTIVE --cuda-option enable_cuda_graph=1 --cuda-option prefer_nhwc=1");
}

// Issue 25: BERT was compared with shapes that were not the request's
// ("ratio 0.31"): the in-process run takes each request input's own shape,
// with the batch the server ran.
TEST(ServedSetupTest, Issue25BertIsComparedAtTheRequestsOwnShapes) {
  auto setup = ParseServedSetup(R"({"max_batch_size": 8, "dynamic_batching": {}, "instance_group": [{"kind": "KIND_GPU"}]})");
  ASSERT_TRUE(setup.ok());
  EXPECT_FALSE(setup->cuda_graphs);
  EXPECT_EQ(ServedBatch(*setup, 1, 7.6), 8) << "no preferred size: padded to max_batch_size";
  EXPECT_EQ(ServedBatch(*setup, 1, 0), 8) << "no statistics: max_batch_size";
  bench::InputSpec spec;
  spec.int_ranges["input_ids"] = {0, 30000};
  spec.shapes["seq"] = {128};
  auto run = InProcessRunFor(*setup, "bert.onnx", Provider::kCuda,
                             {Zeros("input_ids", DataType::kInt64, {1, 128}), Zeros("attention_mask", DataType::kInt64, {1, 128})},
                             spec, 8);
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  EXPECT_EQ(run->options.io, IoMode::kServed);
  EXPECT_EQ(run->options.inputs.shapes.size(), 2u) << "the request's shapes replace perf's --shape flags";
  EXPECT_EQ(run->options.inputs.shapes.at("input_ids"), (std::vector<int64_t>{8, 128}));
  EXPECT_EQ(run->options.inputs.int_ranges.at("input_ids").hi, 30000);
  EXPECT_TRUE(run->options.session.cuda_options.empty());
  EXPECT_EQ(run->command, "ortgpu bench bert.onnx --provider cuda --io served --batch 8 --shape attention_mask:8x128 "
                          "--shape input_ids:8x128 --int-range input_ids:0:30000");
}

TEST(ServedSetupTest, GraphsOnlyWhereServeUsesThemAndReshapesAndLevelsFollowTheConfig) {
  auto unbatched = ParseServedSetup(R"({"max_batch_size": 0, "parameters": {"enable_cuda_graph": {"string_value": "1"}},
                                        "optimization": {"graph": {"level": -1}}})");
  ASSERT_TRUE(unbatched.ok());
  EXPECT_FALSE(unbatched->cuda_graphs);
  EXPECT_NE(unbatched->cuda_graph_note.find("serve does not use CUDA graphs"), std::string::npos);
  EXPECT_EQ(unbatched->optimization, OptimizationLevel::kBasic);
  EXPECT_EQ(ServedBatch(*unbatched, 3, 5.0), 3) << "a model that does not batch runs the request's rows";

  auto cpu = ParseServedSetup(R"({"max_batch_size": 16, "dynamic_batching": {"preferred_batch_size": [4, 16]},
                                  "instance_group": [{"kind": "KIND_CPU"}],
                                  "input": [{"name": "x", "reshape": {"shape": [2, 2]}}]})");
  ASSERT_TRUE(cpu.ok());
  EXPECT_FALSE(cpu->pads) << "CPU instances do not pad by default";
  EXPECT_EQ(ServedBatch(*cpu, 1, 5.4), 5);
  auto run = InProcessRunFor(*cpu, "m.onnx", Provider::kCuda, {Zeros("x", DataType::kFloat, {1, 4})}, {}, 5);
  ASSERT_TRUE(run.ok());
  EXPECT_EQ(run->options.session.provider, Provider::kCpu);
  EXPECT_EQ(run->options.inputs.shapes.at("x"), (std::vector<int64_t>{5, 2, 2})) << "the config's reshape";

  EXPECT_FALSE(ParseServedSetup("[1]").ok());
  EXPECT_FALSE(ParseServedSetup(R"({"optimization": {"graph": {"level": 7}}})").ok());
}

// tune writes `precision fp16` into the config it serves: comparing that
// server with the float32 file run in float32 would credit serve with the
// conversion's speed-up (or blame it for its absence).
TEST(ServedSetupTest, TheServedPrecisionIsWhatTheInProcessRunConvertsTo) {
  auto fp16 = ParseServedSetup(R"({"max_batch_size": 16, "dynamic_batching": {"preferred_batch_size": [16]},
                                   "instance_group": [{"kind": "KIND_GPU", "count": 2}],
                                   "parameters": {"precision": {"string_value": "FP16"}}})");
  ASSERT_TRUE(fp16.ok()) << fp16.status().ToString();
  ASSERT_TRUE(fp16->precision.has_value());
  EXPECT_EQ(*fp16->precision, Precision::kFp16);
  EXPECT_TRUE(fp16->precision_note.empty());
  auto run = InProcessRunFor(*fp16, "resnet50.onnx", Provider::kCuda, {Zeros("input", DataType::kFloat, {1, 3, 8, 8})}, {}, 16);
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  EXPECT_EQ(run->options.precisions, (std::vector<Precision>{Precision::kFp16}));
  EXPECT_FALSE(run->options.check_accuracy) << "serve judged the conversion at load; this run only measures";
  EXPECT_NE(run->command.find(" --precision fp16"), std::string::npos) << run->command;

  auto mixed = ParseServedSetup(R"({"max_batch_size": 8, "parameters": {"precision": {"string_value": "mixed"},
                                    "precision_node_block_list": {"string_value": "/fc/Gemm"}}})");
  ASSERT_TRUE(mixed.ok());
  EXPECT_EQ(*mixed->precision, Precision::kMixed);
  EXPECT_NE(mixed->precision_note.find("precision_node_block_list"), std::string::npos) << mixed->precision_note;
  auto mixed_run = InProcessRunFor(*mixed, "m.onnx", Provider::kCuda, {Zeros("x", DataType::kFloat, {1, 4})}, {}, 8);
  ASSERT_TRUE(mixed_run.ok());
  EXPECT_TRUE(mixed_run->options.check_accuracy) << "mixed precision is searched by the accuracy check";

  auto none = ParseServedSetup(R"({"max_batch_size": 8})");
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->precision.has_value());
  auto plain = InProcessRunFor(*none, "m.onnx", Provider::kCuda, {Zeros("x", DataType::kFloat, {1, 4})}, {}, 8);
  ASSERT_TRUE(plain.ok());
  EXPECT_TRUE(plain->options.precisions.empty()) << "no precision named: the provider's default, as serve runs it";
  EXPECT_EQ(plain->command.find("--precision"), std::string::npos);

  auto bad = ParseServedSetup(R"({"parameters": {"precision": {"string_value": "int4"}}})");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("int4"), std::string::npos) << bad.status().message();
}

TEST(ComparisonReport, NamesWhatWasComparedNextToTheRatio) {
  PerfReport report;
  InProcessComparison c;
  c.model_path = "resnet50.onnx";
  c.provider = "cuda";
  c.config_source = "GET /v2/models/resnet50/config";
  c.io = "served-graph";
  c.cuda_options = {{"enable_cuda_graph", "1"}, {"prefer_nhwc", "1"}};
  c.shapes["input"] = {32, 3, 224, 224};
  c.batch_source = "the server ran 31.6 rows per execution in the best step, padded to its preferred batch size";
  c.command = "ortgpu bench resnet50.onnx --provider cuda --io served-graph --batch 32";
  c.rows.push_back({32, 7600, 4.2, ""});
  c.served_items_per_s = 7300;
  c.best_in_process_items_per_s = 7600;
  c.ratio = 7300.0 / 7600.0;
  report.comparison = c;
  const std::string text = RenderTable(report);
  for (const char* expected :
       {"settings from GET /v2/models/resnet50/config", "I/O: served-graph (inputs staged in pinned memory",
        "EP options: enable_cuda_graph=1 prefer_nhwc=1", "batch 32: the server ran 31.6 rows per execution",
        "shapes: input 32x3x224x224", "the same as: ortgpu bench resnet50.onnx --provider cuda --io served-graph",
        "ratio 0.96"}) {
    EXPECT_NE(text.find(expected), std::string::npos) << expected << "\n" << text;
  }
  const std::string json = RenderJson(report);
  EXPECT_NE(json.find("\"io\": \"served-graph\""), std::string::npos) << json;
  EXPECT_NE(json.find("\"prefer_nhwc\": \"1\""), std::string::npos);
  EXPECT_NE(RenderHtml(report).find("EP options: enable_cuda_graph=1 prefer_nhwc=1"), std::string::npos);
}

// perf against the stub server answering `config_json`, compared in
// process with `model` (written to a temporary file): the report.
Expected<PerfReport> CompareWithStub(const onnx::ModelBuilder& model, const std::string& config_json,
                                     Provider provider = Provider::kCuda) {
  const std::string path = ::testing::TempDir() + "served_config_test_compare.onnx";
  std::ofstream(path, std::ios::binary) << model.Serialize();
  testing::StubKServeServer stub({.config_json = config_json});
  PerfOptions o;
  o.url = "http://127.0.0.1:" + std::to_string(stub.port());
  o.model = "stub";
  o.metrics_url = "off";
  o.request_count = 20;
  o.compare_model = path;
  o.compare_provider = provider;
  auto report = RunPerf(o);
  std::remove(path.c_str());
  return report;
}

onnx::ModelBuilder FourWide(bool matmul) {
  onnx::ModelBuilder b;
  b.AddInput("x", DataType::kFloat, {-1, 4}, {"batch", ""});
  if (matmul) {
    b.AddFloatInitializer("w", {4, 4}, 0.5f, 7);
    b.AddNode("MatMul", {"x", "w"}, {"m"});
    b.AddNode("Relu", {"m"}, {"y"});
  } else {
    b.AddNode("Relu", {"x"}, {"y"});
  }
  b.AddOutput("y", DataType::kFloat, {-1, 4}, {"batch", ""});
  return b;
}

// End to end on the CPU: perf against the stub server, whose config says
// KIND_CPU and no dynamic batching, compares with bench --io served at the
// request's shape and says so.
TEST(CompareInProcess, Issue25RunsBenchWithTheServedSettingsAndSaysWhatItCompared) {
  // --provider cuda: the config's KIND_CPU wins.
  auto report = CompareWithStub(FourWide(false), R"({"name":"stub","max_batch_size":8,"instance_group":[{"kind":"KIND_CPU"}]})");
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  ASSERT_TRUE(report->comparison);
  const InProcessComparison& c = *report->comparison;
  EXPECT_EQ(c.provider, "cpu");
  EXPECT_EQ(c.io, "served");
  EXPECT_EQ(c.shapes.at("x"), (std::vector<int64_t>{1, 4}));
  EXPECT_EQ(c.config_source, "GET /v2/models/stub/config");
  ASSERT_EQ(c.rows.size(), 1u);
  EXPECT_EQ(c.rows[0].batch, 1) << c.batch_source;
  EXPECT_TRUE(c.rows[0].error.empty()) << c.rows[0].error;
  EXPECT_GT(c.best_in_process_items_per_s, 0);
  EXPECT_NE(c.command.find("--io served --batch 1 --shape x:1x4"), std::string::npos) << c.command;
}

// The same against a server whose config says precision fp16 (what tune
// writes): the in-process run converts the float32 file to float16 first,
// so the ratio compares float16 with float16.
TEST(CompareInProcess, AFloat16ServerIsComparedWithTheFileConvertedToFloat16) {
  auto report = CompareWithStub(FourWide(true), R"({"name":"stub","max_batch_size":8,"instance_group":[{"kind":"KIND_CPU"}],
                                                    "parameters":{"precision":{"string_value":"fp16"}}})");
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  ASSERT_TRUE(report->comparison);
  const InProcessComparison& c = *report->comparison;
  ASSERT_EQ(c.rows.size(), 1u);
  EXPECT_TRUE(c.rows[0].error.empty()) << c.rows[0].error;
  EXPECT_GT(c.best_in_process_items_per_s, 0);
  EXPECT_NE(c.command.find("--io served --batch 1 --shape x:1x4 --precision fp16"), std::string::npos) << c.command;
}

}  // namespace
}  // namespace ortgpu::perf
