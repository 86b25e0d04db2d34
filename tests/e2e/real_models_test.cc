// Issue 9: real ONNX models load and serve as they are. A folder of models
// shaped like real pretrained ones (scripts/make_real_models.py: a reflect
// Pad, an If on an int64 sample rate, a Cast of strings, an LSTM with state,
// a stride-4 detector) with no config files is served as a repository
// in-process on port 0 over real HTTP; every model is READY, and each one's
// outputs through JSON and binary requests match a direct ORT run of the
// same inputs. A request the graph rejects at run time is a 400 that names
// the input, and no client-visible text carries a server path.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/tensor_files.h"
#include "e2e/kserve_client.h"
#include "e2e/serve_process.h"
#include "ort/session.h"
#include "serve/core/conformance_cases.h"
#include "serve/http/test_http_client.h"
#include "serve/server.h"

namespace ortgpu::e2e {
namespace {

using serve::testing::TestHttpClient;

// The generated models in a temporary folder, removed at the end.
class RealModels {
 public:
  RealModels() : root_(::testing::TempDir() + "/ortgpu-real-models-" + std::to_string(::getpid())) {
    std::error_code ec;
    std::filesystem::remove_all(root_, ec);
    const std::string cmd = std::string(ORTGPU_SOURCE_DIR) + "/scripts/make_real_models.py " + root_;
    ok_ = std::system(cmd.c_str()) == 0;
  }
  ~RealModels() {
    std::error_code ec;
    std::filesystem::remove_all(root_, ec);
  }
  bool ok() const { return ok_; }
  const std::string& root() const { return root_; }
  std::string Model(const std::string& name) const { return root_ + "/" + name + "/1/model.onnx"; }

 private:
  std::string root_;
  bool ok_ = false;
};

Tensor Floats(const std::string& name, std::vector<int64_t> shape) {
  Tensor t = Tensor::Zeros(name, DataType::kFloat, std::move(shape));
  for (int64_t i = 0; i < t.element_count(); ++i) t.data_as<float>()[i] = static_cast<float>((i * 37) % 101) / 50.0f - 1;
  return t;
}

Tensor Int64Scalar(const std::string& name, int64_t v) {
  Tensor t = Tensor::Zeros(name, DataType::kInt64, {});
  t.data_as<int64_t>()[0] = v;
  return t;
}

Tensor Strings(const std::string& name, std::vector<std::string> values) {
  Tensor t;
  t.name = name;
  t.dtype = DataType::kString;
  t.shape = {static_cast<int64_t>(values.size())};
  t.strings = std::move(values);
  return t;
}

struct Case {
  std::string model;
  std::vector<Tensor> inputs;
};

std::vector<Case> Cases() {
  return {
      {"reflect_pad", {Floats("x", {3, 2, 10})}},  // 3 rows: batching completed from the model
      {"sample_rate_if", {Floats("x", {1, 32}), Int64Scalar("sr", 16000)}},
      {"rate_if", {Floats("x", {1, 48}), Int64Scalar("rate", 16000)}},
      {"string_cast", {Strings("text", {"1.5", "-2", "40"})}},
      {"lstm_state", {Floats("x", {5, 2, 4}), Floats("h0", {1, 2, 8}), Floats("c0", {1, 2, 8})}},
      {"pool_up", {Floats("x", {2, 1, 8, 12})}},
  };
}

// The model names of Cases(), every model the folder holds, sorted.
std::vector<std::string> CaseModels() {
  std::vector<std::string> out;
  for (const Case& c : Cases()) out.push_back(c.model);
  std::sort(out.begin(), out.end());
  return out;
}

// The names of the models a server lists, sorted.
std::vector<std::string> Listed(const std::vector<serve::ModelSummary>& models) {
  std::vector<std::string> out;
  for (const auto& m : models) out.push_back(m.name);
  std::sort(out.begin(), out.end());
  return out;
}

std::unique_ptr<serve::Server> Serve(const std::string& repository, bool strict = false) {
  serve::ServeOptions o;
  o.core.repository = repository;
  o.core.loader.default_instance_kind = serve::InstanceKind::kCpu;
  o.core.loader.strict_warmup = strict;
  o.http.port = 0;
  o.http.threads = 1;
  o.metrics_port = -1;
  o.grpc_port = -1;  // HTTP only: parallel tests never share a gRPC port
  o.handle_signals = false;
  auto server = serve::Server::Start(o);
  EXPECT_TRUE(server.ok()) << server.status().ToString();
  return server.ok() ? std::move(server).value() : nullptr;
}

TEST(RealModelsTest, Issue9AFolderOfRealModelsWithoutConfigsIsAllReadyAndMatchesADirectOrtRun) {
  RealModels models;
  if (!models.ok()) GTEST_SKIP() << "python3-onnx missing (scripts/make_real_models.py failed)";
  auto server = Serve(models.root());
  ASSERT_NE(server, nullptr);
  EXPECT_EQ(Listed(server->Models()), CaseModels());  // every model of the folder, none left out
  for (const auto& m : server->Models()) {
    EXPECT_EQ(m.state, serve::ModelState::kReady) << m.name << ": " << m.reason;
  }
  TestHttpClient client(server->http_port());
  for (const Case& c : Cases()) {
    SCOPED_TRACE(c.model);
    SessionOptions cpu;
    cpu.provider = Provider::kCpu;
    auto direct = Session::Load(models.Model(c.model), cpu);
    ASSERT_TRUE(direct.ok()) << direct.status().ToString();
    auto want = (*direct)->Run(c.inputs);
    ASSERT_TRUE(want.ok()) << want.status().ToString();
    for (TensorEncoding encoding : {TensorEncoding::kJson, TensorEncoding::kBinary}) {
      auto request = EncodeInferRequest(c.inputs, {}, encoding);
      ASSERT_TRUE(request.ok()) << request.status().ToString();
      auto got = DecodeInferResponse(client.Post("/v2/models/" + c.model + "/infer", request->body, request->headers));
      ASSERT_TRUE(got.ok()) << got.status().ToString();
      EXPECT_EQ(serve::testing::CompareOutputs(*got, *want), "");
    }
  }
  // Completed from the model and visible: batching where every tensor has a
  // leading variable dim, none where one does not.
  auto config = nlohmann::json::parse(client.Get("/v2/models/reflect_pad/config").body);
  EXPECT_EQ(config["max_batch_size"], 4);
  EXPECT_TRUE(config.contains("dynamic_batching"));
  EXPECT_EQ(config["input"][0]["dims"], nlohmann::json::array({2, -1}));
  EXPECT_EQ(nlohmann::json::parse(client.Get("/v2/models/lstm_state/config").body).value("max_batch_size", 0), 0);
  const std::string summary = serve::FormatStartupSummary(server->Models(), {}, "127.0.0.1", 1, std::nullopt);
  EXPECT_NE(summary.find("completed from the model: max_batch_size 4 with dynamic_batching; input x; output y"),
            std::string::npos)
      << summary;
  EXPECT_TRUE(server->Shutdown());
}

TEST(RealModelsTest, Issue9AModelNoGeneratedInputRunsIsReadyWithAWarningOrUnavailableWhenStrict) {
  RealModels models;
  if (!models.ok()) GTEST_SKIP() << "python3-onnx missing";
  auto server = Serve(models.root());
  ASSERT_NE(server, nullptr);
  bool seen = false;
  for (const auto& m : server->Models()) {
    if (m.name != "rate_if") {
      EXPECT_TRUE(m.warnings.empty()) << m.name << ": " << m.warnings[0];
      continue;
    }
    seen = true;
    EXPECT_EQ(m.state, serve::ModelState::kReady);
    ASSERT_EQ(m.warnings.size(), 1u);
    EXPECT_NE(m.warnings[0].find("node 'frames_of_80' (Reshape)"), std::string::npos) << m.warnings[0];
    EXPECT_NE(m.warnings[0].find("add a model_warmup"), std::string::npos) << m.warnings[0];
    EXPECT_NE(m.warnings[0].find("--warmup-input NAME=FILE.npy"), std::string::npos) << m.warnings[0];
    EXPECT_NE(m.warnings[0].find("with variable dims 64 node"), std::string::npos) << m.warnings[0];
  }
  EXPECT_TRUE(seen);
  // Remote users see it too: the repository index gives the warning as the READY model's reason.
  TestHttpClient index_client(server->http_port());
  const auto listed = nlohmann::json::parse(index_client.Post("/v2/repository/index", "").body);
  bool indexed = false;
  for (const auto& e : listed) {
    if (e["name"] == "rate_if") {
      indexed = true;
      EXPECT_EQ(e["state"], "READY");
      EXPECT_NE(e["reason"].get<std::string>().find("no generated warm-up input ran"), std::string::npos) << e.dump();
    }
  }
  EXPECT_TRUE(indexed) << listed.dump();
  EXPECT_TRUE(server->Shutdown());

  auto strict = Serve(models.root(), /*strict=*/true);
  ASSERT_NE(strict, nullptr);
  EXPECT_EQ(Listed(strict->Models()), CaseModels());
  for (const auto& m : strict->Models()) {
    EXPECT_EQ(m.state, m.name == "rate_if" ? serve::ModelState::kUnavailable : serve::ModelState::kReady) << m.name;
  }
  TestHttpClient client(strict->http_port());
  const auto index = client.Post("/v2/repository/index", "");
  EXPECT_NE(index.body.find("--strict-warmup keeps the model unavailable"), std::string::npos) << index.body;
  EXPECT_EQ(index.body.find(models.root()), std::string::npos) << index.body;
  // The 503 of a request to it carries the reason, without server paths either.
  auto request = EncodeInferRequest({Floats("x", {1, 32}), Int64Scalar("rate", 16000)}, {}, TensorEncoding::kJson);
  ASSERT_TRUE(request.ok());
  const auto refused = client.Post("/v2/models/rate_if/infer", request->body, request->headers);
  EXPECT_EQ(refused.status, 503u) << refused.body;
  EXPECT_NE(refused.body.find("no generated warm-up input ran"), std::string::npos) << refused.body;
  EXPECT_EQ(refused.body.find(models.root()), std::string::npos) << refused.body;
  EXPECT_EQ(refused.body.find("/tmp"), std::string::npos) << refused.body;
  EXPECT_TRUE(strict->Shutdown());
}

TEST(RealModelsTest, Issue9AShapeTheGraphRejectsAtRunTimeIsA400NamingTheInputWithoutServerPaths) {
  RealModels models;
  if (!models.ok()) GTEST_SKIP() << "python3-onnx missing";
  auto server = Serve(models.root());
  ASSERT_NE(server, nullptr);
  TestHttpClient client(server->http_port());
  for (TensorEncoding encoding : {TensorEncoding::kJson, TensorEncoding::kBinary}) {
    auto request = EncodeInferRequest({Floats("x", {1, 1, 100, 150})}, {}, encoding);
    ASSERT_TRUE(request.ok());
    const auto r = client.Post("/v2/models/pool_up/infer", request->body, request->headers);
    EXPECT_EQ(r.status, 400u) << r.body;
    const std::string error = nlohmann::json::parse(r.body).value("error", "");
    EXPECT_NE(error.find("input 'x' 1x1x100x150 (the model declares ?x1x?x?)"), std::string::npos) << error;
    EXPECT_NE(error.find("skip_add"), std::string::npos) << error;
    for (const char* leak : {"/onnxruntime", ".cc:", ".h:", "onnxruntime::"}) {
      EXPECT_EQ(error.find(leak), std::string::npos) << leak << " in " << error;
    }
    EXPECT_EQ(error.find(models.root()), std::string::npos) << error;
    EXPECT_NE(error.find("pool_up/1/model.onnx"), std::string::npos) << error;
  }
  EXPECT_TRUE(server->Shutdown());
}

std::string ReadText(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// The single-file user's two fixes: --warmup-input NAME=FILE.npy, and
// --config FILE.pbtxt with a model_warmup (its data file beside the model).
TEST(RealModelsTest, Issue9ASingleModelFileIsWarmedUpWithWarmupInputOrConfig) {
  using namespace std::chrono_literals;
  RealModels models;
  if (!models.ok()) GTEST_SKIP() << "python3-onnx missing";
  const std::string rate = models.root() + "/rate.npy";
  {
    auto npy = bench::SerializeNpy(Int64Scalar("rate", 16000));
    ASSERT_TRUE(npy.ok());
    std::ofstream(rate, std::ios::binary) << *npy;
  }
  ServeProcess with_input({"serve", "--model", models.Model("rate_if"), "--cpu", "--http-port", "0", "--metrics-port",
                           "-1", "--warmup-input", "rate=" + rate});
  ASSERT_TRUE(with_input.WaitForPorts(60s)) << with_input.output();
  EXPECT_EQ(with_input.output().find("warning:"), std::string::npos) << with_input.output();
  EXPECT_EQ(with_input.output().find("none (see warning)"), std::string::npos) << with_input.output();
  with_input.Signal(SIGTERM);
  EXPECT_EQ(with_input.WaitExit(30s), 0);

  const std::string folder = models.root() + "/rate_if/1";
  std::filesystem::create_directories(folder + "/warmup");
  const int64_t sr = 16000;
  std::ofstream(folder + "/warmup/rate.bin", std::ios::binary).write(reinterpret_cast<const char*>(&sr), sizeof sr);
  const std::string config = models.root() + "/rate_if.pbtxt";
  std::ofstream(config) << R"pb(model_warmup [ { name: "sixteen_khz" batch_size: 1 inputs [
      { key: "x" value { data_type: TYPE_FP32 dims: [ 1, 32 ] random_data: true } },
      { key: "rate" value { data_type: TYPE_INT64 dims: [ ] input_data_file: "rate.bin" } } ] } ])pb";
  ServeProcess with_config({"serve", "--model", models.Model("rate_if"), "--config", config, "--cpu", "--http-port",
                            "0", "--metrics-port", "-1", "--strict-warmup"});
  ASSERT_TRUE(with_config.WaitForPorts(60s)) << with_config.output();
  EXPECT_NE(with_config.output().find("model  1        READY"), std::string::npos) << with_config.output();
  EXPECT_EQ(with_config.output().find("warning:"), std::string::npos) << with_config.output();
  with_config.Signal(SIGTERM);
  EXPECT_EQ(with_config.WaitExit(30s), 0);
}

// bench -> serve: the fragment `bench --sweep --config-out` writes loads in
// serve with no warning, keeps the model's batching and its graph level.
TEST(RealModelsTest, Issue9TheBenchSweepFragmentServesAsItIsWithEverySettingHonoured) {
  using namespace std::chrono_literals;
  RealModels models;
  if (!models.ok()) GTEST_SKIP() << "python3-onnx missing";
  const std::string fragment = models.root() + "/fragment.pbtxt";
  ServeProcess bench({"bench", models.Model("reflect_pad"), "--provider", "cpu", "--io", "served", "--sweep",
                      "--sweep-axes", "opt=all|basic", "--shape", "samples:16", "--iterations", "20", "--warmup", "2", "--no-progress",
                      "--config-out", fragment});
  ASSERT_EQ(bench.WaitExit(120s), 0) << bench.output();
  const std::string text = ReadText(fragment);
  ASSERT_NE(text.find("max_batch_size: 4"), std::string::npos) << text;
  ServeProcess serve({"serve", "--model", models.Model("reflect_pad"), "--config", fragment, "--cpu", "--http-port",
                      "0", "--metrics-port", "-1"});
  ASSERT_TRUE(serve.WaitForPorts(60s)) << serve.output();
  const std::string out = serve.output();
  EXPECT_EQ(out.find("warning"), std::string::npos) << out;
  EXPECT_EQ(out.find("[warn"), std::string::npos) << out;
  EXPECT_NE(out.find("READY"), std::string::npos) << out;
  TestHttpClient client(serve.http_port);
  auto config = nlohmann::json::parse(client.Get("/v2/models/model/config").body);
  EXPECT_EQ(config["max_batch_size"], 4) << config.dump();
  // Whichever level won is the one served (serve maps it to ORT's level, model_config_test).
  if (text.find("graph { level: -1 }") != std::string::npos) {
    EXPECT_EQ(config["optimization"]["graph"]["level"], -1) << config.dump();
  } else {
    EXPECT_FALSE(config.contains("optimization") && config["optimization"].contains("graph")) << config.dump();
  }
  // Three rows: a batch the fragment must not refuse.
  auto request = EncodeInferRequest({Floats("x", {3, 2, 10})}, {}, TensorEncoding::kJson);
  ASSERT_TRUE(request.ok());
  auto got = DecodeInferResponse(client.Post("/v2/models/model/infer", request->body, request->headers));
  EXPECT_TRUE(got.ok()) << got.status().ToString();
  serve.Signal(SIGTERM);
  EXPECT_EQ(serve.WaitExit(30s), 0);
}

}  // namespace
}  // namespace ortgpu::e2e
