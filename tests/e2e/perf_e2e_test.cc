// End-to-end tests of `ortgpu perf`: the real binary against the real
// `ortgpu serve` (the example repository, on the CPU) and against a stub
// server that fails, stalls or lacks the statistics extension. Windows are
// short (--measurement-interval 200..300, --max-trials 4) so each run takes
// about a second. Every wait has a deadline.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "e2e/serve_process.h"
#include "fakes/stub_kserve_server.h"

namespace ortgpu::e2e {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using ortgpu::testing::StubKServeServer;

const std::string kExamples = std::string(ORTGPU_SOURCE_DIR) + "/examples/model_repository";

struct RunResult {
  int exit_code = -1;
  std::string output;  // stdout and stderr together
  double seconds = 0;
};

RunResult RunPerf(std::vector<std::string> args, std::chrono::milliseconds deadline = 60s) {
  args.insert(args.begin(), "perf");
  const auto start = Clock::now();
  ServeProcess p(args);
  RunResult r;
  r.exit_code = p.WaitExit(deadline);
  r.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  r.output = p.output();
  return r;
}

nlohmann::json JsonOf(const RunResult& r) {
  const size_t begin = r.output.find('{');
  const size_t end = r.output.rfind('}');
  if (begin == std::string::npos || end == std::string::npos) return nullptr;
  return nlohmann::json::parse(r.output.substr(begin, end - begin + 1), nullptr, false);
}

std::string ReadFile(const fs::path& p) {
  std::ifstream f(p);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

// One `ortgpu serve` of the example repository for the whole suite.
class PerfAgainstServe : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    server_ = new ServeProcess({"serve", "--model-repository", kExamples, "--http-port", "0", "--metrics-port", "0"});
    ASSERT_TRUE(server_->WaitForPorts(60s)) << server_->output();
  }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }
  static std::vector<std::string> Target(const std::string& model) {
    return {"--url", "http://127.0.0.1:" + std::to_string(server_->http_port), "--model", model, "--metrics-url",
            "http://127.0.0.1:" + std::to_string(server_->metrics_port) + "/metrics", "--max-trials", "4"};
  }
  static std::vector<std::string> With(std::vector<std::string> a, const std::vector<std::string>& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
  }
  static ServeProcess* server_;
};
ServeProcess* PerfAgainstServe::server_ = nullptr;

TEST_F(PerfAgainstServe, ConcurrencySweepReportsThroughputAndTheServerSideSplit) {
  const fs::path html = fs::path(::testing::TempDir()) / ("perf-" + std::to_string(::getpid()) + ".html");
  const RunResult r = RunPerf(With(Target("add_sub"), {"--concurrency", "1,2", "--measurement-interval", "300", "--json",
                                                       "--html", html.string()}));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto j = JsonOf(r);
  ASSERT_TRUE(j.is_object()) << r.output;
  EXPECT_EQ(j["mode"], "concurrency");
  EXPECT_TRUE(j["ok"].get<bool>());
  EXPECT_TRUE(j["server_statistics"].get<bool>());
  ASSERT_EQ(j["steps"].size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    const auto& s = j["steps"][i];
    EXPECT_EQ(s["load"].get<double>(), static_cast<double>(i + 1));
    EXPECT_GT(s["throughput"]["infer_per_s"].get<double>(), 0);
    EXPECT_GT(s["latency_ms"]["p99"].get<double>(), 0);
    EXPECT_EQ(s["error_count"], 0);
    ASSERT_TRUE(s["server"].is_object()) << s.dump();
    EXPECT_GT(s["server"]["requests"].get<int64_t>(), 0);
    EXPECT_GT(s["server"]["compute_infer_us"].get<double>(), 0);
    EXPECT_GE(s["server"]["queue_us"].get<double>(), 0);
    EXPECT_GE(s["windows"].size(), 3u);
  }
  // The CPU server has no GPU series: one note, not an error.
  EXPECT_NE(j["notes"].dump().find("nv_gpu_utilization"), std::string::npos) << j["notes"].dump();
  const std::string page = ReadFile(html);
  EXPECT_NE(page.find("<html"), std::string::npos);
  EXPECT_NE(page.find("concurrency 2"), std::string::npos);
  fs::remove(html);
}

// Issue 27: two models loaded together, 3:1, each reported with its own
// throughput, percentiles and goodput within the budget.
TEST_F(PerfAgainstServe, SeveralModelsShareTheLoadAndAreReportedEachOnItsOwn) {
  const RunResult r = RunPerf(With(Target("add_sub:3,classifier:1"), {"--concurrency", "4", "--measurement-interval",
                                                                       "200", "--latency-budget-ms", "1000", "--json"}));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto j = JsonOf(r);
  ASSERT_TRUE(j.is_object()) << r.output;
  EXPECT_TRUE(j["ok"].get<bool>());
  EXPECT_EQ(j["budget_ms"], 1000);
  ASSERT_EQ(j["models"].size(), 2u);
  EXPECT_EQ(j["models"][0]["model"], "add_sub");
  EXPECT_DOUBLE_EQ(j["models"][0]["share"].get<double>(), 0.75);
  const auto& a = j["models"][0]["report"]["steps"][0];
  const auto& c = j["models"][1]["report"]["steps"][0];
  EXPECT_EQ(a["load"], 3);
  EXPECT_EQ(c["load"], 1);
  for (const auto* s : {&a, &c}) {
    EXPECT_GT((*s)["throughput"]["infer_per_s"].get<double>(), 0);
    EXPECT_GT((*s)["goodput_per_s"].get<double>(), 0);
    EXPECT_EQ((*s)["windows"].size(), 3u) << "lock-step windows";
  }
  EXPECT_LT(r.seconds, 10);
}

TEST_F(PerfAgainstServe, GrpcProtocolLoadsTheSameServer) {
  ASSERT_GT(server_->grpc_port, 0) << server_->output();
  const RunResult r = RunPerf(With(Target("add_sub"), {"-i", "grpc", "--grpc-url",
                                                       "127.0.0.1:" + std::to_string(server_->grpc_port),
                                                       "--concurrency", "2,20", "--measurement-interval", "300",
                                                       "--json"}));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto j = JsonOf(r);
  ASSERT_TRUE(j.is_object()) << r.output;
  EXPECT_EQ(j["url"], "grpc://127.0.0.1:" + std::to_string(server_->grpc_port));
  // 2: a poller thread per call; 20: gRPC's callback API on 20 channels.
  ASSERT_EQ(j["steps"].size(), 2u);
  for (const auto& s : j["steps"]) {
    EXPECT_GT(s["throughput"]["infer_per_s"].get<double>(), 0);
    EXPECT_EQ(s["error_count"], 0);
    ASSERT_TRUE(s["server"].is_object()) << s.dump();
    EXPECT_GT(s["server"]["requests"].get<int64_t>(), 0);
  }
}

// --shared-memory system: the tensors travel in registered regions over
// both protocols; every request is answered and the regions are gone after.
TEST_F(PerfAgainstServe, SystemSharedMemoryCarriesTheTensorsOverHttpAndGrpc) {
  for (const std::string protocol : {"http", "grpc"}) {
    const RunResult r = RunPerf(With(Target("add_sub"), {"-i", protocol, "--grpc-url",
                                                         "127.0.0.1:" + std::to_string(server_->grpc_port),
                                                         "--shared-memory", "system", "--request-count", "20",
                                                         "--json"}));
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const auto j = JsonOf(r);
    ASSERT_TRUE(j.is_object()) << r.output;
    EXPECT_EQ(j["steps"][0]["requests"], 20) << protocol;
    EXPECT_EQ(j["steps"][0]["error_count"], 0) << protocol;
    EXPECT_NE(j["notes"].dump().find("system shared memory"), std::string::npos) << j["notes"].dump();
  }
  const RunResult none = RunPerf(With(Target("add_sub"), {"--shared-memory", "gpu", "--request-count", "1"}));
  EXPECT_EQ(none.exit_code, 2) << none.output;
  EXPECT_NE(none.output.find("--shared-memory"), std::string::npos) << none.output;
}

// --busy-poll: the client's threads never sleep; every request is still
// sent and answered exactly once over both protocols (gRPC: 1 on a poller
// of its own, 24 on gRPC's callback threads; HTTP: 1 and 24 on 2 threads).
TEST_F(PerfAgainstServe, BusyPollingClientsSendExactlyTheCountOverBothProtocols) {
  for (const std::string protocol : {"http", "grpc"}) {
    const RunResult r = RunPerf(With(Target("add_sub"), {"-i", protocol, "--grpc-url",
                                                         "127.0.0.1:" + std::to_string(server_->grpc_port),
                                                         "--busy-poll", "--threads", "2", "--concurrency", "1,24",
                                                         "--request-count", "60", "--json"}));
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const auto j = JsonOf(r);
    ASSERT_TRUE(j.is_object()) << r.output;
    ASSERT_EQ(j["steps"].size(), 2u) << protocol;
    for (const auto& s : j["steps"]) {
      EXPECT_EQ(s["requests"], 60) << protocol;
      EXPECT_EQ(s["error_count"], 0) << protocol;
    }
    // Over gRPC the 24-request step runs on gRPC's threads: the report says
    // where --busy-poll applies.
    const bool noted = j["notes"].dump().find("--busy-poll over gRPC applies") != std::string::npos;
    EXPECT_EQ(noted, protocol == "grpc") << protocol << ": " << j["notes"].dump();
  }
}

TEST_F(PerfAgainstServe, GrpcRateModeWithAFixedCount) {
  const RunResult r = RunPerf(With(Target("classifier"), {"--protocol", "grpc", "--grpc-url",
                                                          "127.0.0.1:" + std::to_string(server_->grpc_port),
                                                          "--request-rate", "200", "--request-count", "40",
                                                          "--json"}));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto j = JsonOf(r);
  ASSERT_TRUE(j.is_object()) << r.output;
  EXPECT_EQ(j["steps"][0]["requests"], 40);
}

TEST_F(PerfAgainstServe, GrpcToAPortWithNoServerFailsTheStep) {
  const RunResult r = RunPerf(With(Target("add_sub"), {"-i", "grpc", "--grpc-url", "127.0.0.1:1", "--request-count",
                                                       "3", "--request-timeout-ms", "2000"}));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  // What was seen (gRPC's account) and what to check.
  EXPECT_NE(r.output.find("Connection refused"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("check --grpc-url"), std::string::npos) << r.output;
}

TEST_F(PerfAgainstServe, RateModeWithPoissonArrivalsWritesCsv) {
  const RunResult r = RunPerf(With(Target("classifier"), {"--request-rate", "200", "--request-distribution", "poisson",
                                                          "--measurement-interval", "300", "--json-tensors", "--csv"}));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::istringstream lines(r.output);
  std::string header, row;
  std::getline(lines, header);
  std::getline(lines, row);
  EXPECT_TRUE(header.starts_with("mode,load,stable,failed,requests,infer_per_s")) << header;
  EXPECT_TRUE(row.starts_with("request-rate,200,")) << row;
  // About 200 requests a second arrive (Poisson over 0.9 s or more: wide bounds).
  std::vector<std::string> cells;
  std::stringstream ss(row);
  for (std::string cell; std::getline(ss, cell, ',');) cells.push_back(cell);
  ASSERT_GT(cells.size(), 6u);
  const double rate = std::stod(cells[5]);
  EXPECT_GT(rate, 100);
  EXPECT_LT(rate, 300);
}

TEST_F(PerfAgainstServe, LatencyBudgetSearchReportsTheBestPoint) {
  const RunResult r = RunPerf(With(Target("add_sub"), {"--latency-budget-ms", "2000", "--max-concurrency", "4",
                                                       "--measurement-interval", "200", "--json"}));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto j = JsonOf(r);
  ASSERT_TRUE(j.is_object()) << r.output;
  ASSERT_TRUE(j.contains("latency_budget"));
  const auto& b = j["latency_budget"];
  EXPECT_EQ(b["budget_ms"].get<double>(), 2000);
  ASSERT_FALSE(b["best_step"].is_null()) << b.dump();
  EXPECT_GT(b["goodput_infer_per_s"].get<double>(), 0);
  EXPECT_LE(b["best_latency_ms"].get<double>(), 2000);
  // Growth 1, 2, 4 (the maximum) all within a generous budget.
  ASSERT_EQ(j["steps"].size(), 3u);
  EXPECT_EQ(j["steps"][2]["load"].get<double>(), 4);
}

TEST_F(PerfAgainstServe, FixedRequestCountSendsExactlyThatManyOverSeveralThreads) {
  const RunResult r = RunPerf(With(Target("add_sub"), {"--request-count", "50", "--concurrency", "4", "--threads", "2", "--json"}));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto j = JsonOf(r);
  ASSERT_TRUE(j.is_object()) << r.output;
  EXPECT_EQ(j["steps"][0]["requests"], 50);
}

TEST_F(PerfAgainstServe, CompareInProcessPutsServedNextToBench) {
  const std::string model = kExamples + "/add_sub/1/model.onnx";
  const RunResult r = RunPerf(With(Target("add_sub"), {"--concurrency", "2", "--measurement-interval", "200",
                                                       "--compare-in-process", model, "--provider", "cpu", "--json"}));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto j = JsonOf(r);
  ASSERT_TRUE(j.is_object()) << r.output;
  const auto& c = j["in_process"];
  EXPECT_EQ(c["provider"], "cpu");
  // Issue 25: one run, as serve ran the model: its KIND_CPU, serve's staged
  // I/O, the batch the server ran (unpadded on the CPU), the request's shapes.
  ASSERT_EQ(c["rows"].size(), 1u) << c.dump();
  const int64_t batch = c["rows"][0]["batch"].get<int64_t>();
  EXPECT_GE(batch, 1);
  EXPECT_LE(batch, 8);
  EXPECT_GT(c["rows"][0]["items_per_s"].get<double>(), 0);
  EXPECT_EQ(c["compared"]["io"], "served") << c.dump();
  EXPECT_EQ(c["compared"]["config_source"], "GET /v2/models/add_sub/config");
  EXPECT_EQ(c["compared"]["shapes"]["INPUT0"], nlohmann::json::array({batch, 4})) << c.dump();
  EXPECT_NE(c["compared"]["command"].get<std::string>().find("--provider cpu --io served --batch " + std::to_string(batch)),
            std::string::npos)
      << c.dump();
  EXPECT_GT(c["ratio"].get<double>(), 0);
  EXPECT_DOUBLE_EQ(c["ratio"].get<double>(),
                   c["served_items_per_s"].get<double>() / c["best_in_process_items_per_s"].get<double>());
}

TEST_F(PerfAgainstServe, UnknownModelIsAClearError) {
  const RunResult r = RunPerf(With(Target("no_such_model"), {"--measurement-interval", "200"}));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("no ready model 'no_such_model'"), std::string::npos) << r.output;
}

std::vector<std::string> StubTarget(const StubKServeServer& s) {
  return {"--url", "http://127.0.0.1:" + std::to_string(s.port()), "--model", "stub", "--metrics-url", "off",
          "--measurement-interval", "200", "--max-trials", "4"};
}

TEST(PerfAgainstStub, ServerErrorsAreCountedByCodeAndTheRunStopsCleanly) {
  StubKServeServer stub({.infer = StubKServeServer::Infer::kError500});
  auto args = StubTarget(stub);
  args.insert(args.end(), {"--concurrency", "2,4", "--json"});
  const RunResult r = RunPerf(args, 30s);
  EXPECT_EQ(r.exit_code, 1) << r.output;
  const auto j = JsonOf(r);
  ASSERT_TRUE(j.is_object()) << r.output;
  ASSERT_EQ(j["steps"].size(), 1u);  // the sweep stops at the step where every request failed
  EXPECT_GT(j["steps"][0]["errors"]["500"].get<int64_t>(), 0);
  EXPECT_TRUE(j["steps"][0]["failed"].get<bool>());
  EXPECT_NE(r.output.find("requests failed: HTTP 500 x"), std::string::npos) << r.output;
}

TEST(PerfAgainstStub, AServerThatNeverAnswersEndsWithinTheRequestTimeout) {
  StubKServeServer stub({.infer = StubKServeServer::Infer::kNeverAnswer});
  auto args = StubTarget(stub);
  args.insert(args.end(), {"--concurrency", "2", "--request-timeout-ms", "500"});
  const RunResult r = RunPerf(args, 30s);
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_LT(r.seconds, 10) << r.output;
  EXPECT_NE(r.output.find("timeout x"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("no answer from 127.0.0.1:" + std::to_string(stub.port()) + " within 500 ms"), std::string::npos)
      << r.output;
}

TEST(PerfAgainstStub, WithoutStatisticsItGivesClientFiguresAndANote) {
  StubKServeServer stub({.statistics = false});
  auto args = StubTarget(stub);
  args.insert(args.end(), {"--concurrency", "1", "--json"});
  const RunResult r = RunPerf(args, 30s);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto j = JsonOf(r);
  ASSERT_TRUE(j.is_object()) << r.output;
  EXPECT_FALSE(j["server_statistics"].get<bool>());
  EXPECT_TRUE(j["steps"][0]["server"].is_null());
  EXPECT_GT(j["steps"][0]["throughput"]["infer_per_s"].get<double>(), 0);
  EXPECT_NE(j["notes"].dump().find("statistics extension is not usable"), std::string::npos) << j["notes"].dump();
}

TEST(PerfUsage, BadUsageExitsTwoNamingTheFlag) {
  const RunResult zero = RunPerf({"--model", "m", "--concurrency", "0"});
  EXPECT_EQ(zero.exit_code, 2);
  EXPECT_NE(zero.output.find("--concurrency"), std::string::npos) << zero.output;
  const RunResult unknown = RunPerf({"--model", "m", "--bogus-flag", "1"});
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_NE(unknown.output.find("--bogus-flag"), std::string::npos) << unknown.output;
  const RunResult missing = RunPerf({"--concurrency", "1"});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.output.find("--model"), std::string::npos) << missing.output;
  const RunResult both = RunPerf({"--model", "m", "--concurrency", "1", "--request-rate", "10"});
  EXPECT_EQ(both.exit_code, 2);
  EXPECT_NE(both.output.find("--request-rate"), std::string::npos) << both.output;
  const RunResult range = RunPerf({"--model", "m", "--concurrency-range", "8:2"});
  EXPECT_EQ(range.exit_code, 2);
  EXPECT_NE(range.output.find("--concurrency-range"), std::string::npos) << range.output;
}

}  // namespace
}  // namespace ortgpu::e2e
