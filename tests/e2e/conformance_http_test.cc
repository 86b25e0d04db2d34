// The ONNX node-test conformance suite (tests/serve/core/conformance_cases.h)
// through the whole server in-process on port 0 and real HTTP: every case is
// answered three ways, through ServerCore::Infer (the core path of
// tests/serve/core/conformance_test.cc), as a KServe JSON request, and with
// the binary tensor extension (binary inputs, binary_data outputs), and each
// answer is compared with the expected outputs at the same tolerance. Each
// path must fail exactly the tests of conformance_expected.h (each with its
// reason; docs/SERVING.md, Conformance), so no case passes through the core
// and fails over HTTP.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>
#include <thread>
#include <vector>

#include "e2e/kserve_client.h"
#include "serve/core/conformance_cases.h"
#include "serve/core/conformance_expected.h"
#include "serve/core/test_repository.h"
#include "serve/http/test_http_client.h"
#include "serve/server.h"

namespace ortgpu::e2e {
namespace {

using serve::testing::ConformanceCase;
using serve::testing::TestHttpClient;

// Client threads, each with one keep-alive connection (CI machines have 2 cores).
constexpr int kClientThreads = 2;

// Why one case failed on each path; "" where it passed.
struct CaseResult {
  std::string name;
  std::string core, json, binary;
};

// One request over `client` and the comparison of its outputs; "" on a match.
std::string InferOverHttp(TestHttpClient& client, const std::string& model, const ConformanceCase& c,
                          TensorEncoding encoding) {
  std::vector<std::string> outputs;
  for (const Tensor& t : c.outputs) outputs.push_back(t.name);
  auto request = EncodeInferRequest(c.inputs, outputs, encoding);
  if (!request.ok()) return "cannot encode: " + request.status().message();
  auto response = client.Post("/v2/models/" + model + "/infer", request->body, request->headers);
  auto got = DecodeInferResponse(response);
  if (!got.ok()) return "request failed: " + got.status().message().substr(0, 240);
  if (encoding == TensorEncoding::kBinary && !outputs.empty() &&
      response.header("Inference-Header-Content-Length").empty()) {
    return "binary outputs were asked for but the response has no binary section";
  }
  const std::string why = serve::testing::CompareOutputs(*got, c.outputs);
  return why.empty() ? "" : "wrong result: " + why;
}

CaseResult RunCase(serve::Server& server, std::unique_ptr<TestHttpClient>& client,
                   const serve::testing::ConformanceRepository& repo, const serve::ModelSummary& model) {
  CaseResult r{model.name, "", "", ""};
  if (model.state != serve::ModelState::kReady) {
    r.core = r.json = r.binary = "not loaded: " + model.reason.substr(0, 240);
    return r;
  }
  auto c = repo.LoadCase(model.name);
  if (!c.ok()) {
    r.core = r.json = r.binary = "bad case file: " + c.status().message();
    return r;
  }
  auto core = serve::testing::InferSync(server.core(), serve::testing::Request(model.name, c->inputs));
  r.core = core.ok() ? serve::testing::CompareOutputs(core->outputs, c->outputs)
                     : "request failed: " + core.status().message().substr(0, 240);
  for (auto [encoding, why] : {std::pair{TensorEncoding::kJson, &r.json}, std::pair{TensorEncoding::kBinary, &r.binary}}) {
    try {
      *why = InferOverHttp(*client, model.name, *c, encoding);
    } catch (const std::exception& e) {  // the server closed or stalled the connection
      *why = std::string("connection failed: ") + e.what();
      client = std::make_unique<TestHttpClient>(server.http_port());
    }
  }
  return r;
}

TEST(ConformanceHttpTest, OnnxNodeTestsServedOverHttpMatchThroughJsonAndBinaryTensors) {
  const auto start = std::chrono::steady_clock::now();
  std::string why_not;
  auto repo = serve::testing::ConformanceRepository::Generate("conformance-http", why_not);
  if (!repo) GTEST_SKIP() << why_not;
  serve::ServeOptions o;
  o.core.repository = repo->repository();
  o.core.loader.default_instance_kind = serve::InstanceKind::kCpu;
  o.http.port = 0;
  o.http.threads = kClientThreads;
  o.metrics_port = -1;
  o.handle_signals = false;
  auto server = serve::Server::Start(o);
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  const auto loaded = std::chrono::steady_clock::now();

  const std::vector<serve::ModelSummary> models = (*server)->Models();
  std::vector<CaseResult> results(models.size());
  std::atomic<size_t> next{0};
  std::vector<std::thread> clients;
  for (int i = 0; i < kClientThreads; ++i) {
    clients.emplace_back([&] {
      auto client = std::make_unique<TestHttpClient>((*server)->http_port());
      for (size_t k = next++; k < models.size(); k = next++) results[k] = RunCase(**server, client, *repo, models[k]);
    });
  }
  for (auto& t : clients) t.join();
  const auto served = std::chrono::steady_clock::now();

  int core = 0, json = 0, binary = 0;
  std::ostringstream core_failures, http_only_failures;
  std::map<std::string, std::string> core_failed, json_failed, binary_failed;
  for (const CaseResult& r : results) {
    core += r.core.empty();
    json += r.json.empty();
    binary += r.binary.empty();
    if (!r.core.empty()) core_failed[r.name] = r.core;
    if (!r.json.empty()) json_failed[r.name] = r.json;
    if (!r.binary.empty()) binary_failed[r.name] = r.binary;
    if (!r.core.empty()) core_failures << "  " << r.name << ": " << r.core << "\n";
    if (r.core.empty() && !r.json.empty()) http_only_failures << "  " << r.name << " (JSON): " << r.json << "\n";
    if (r.core.empty() && !r.binary.empty()) http_only_failures << "  " << r.name << " (binary): " << r.binary << "\n";
    if (!r.core.empty() && (r.json.empty() || r.binary.empty())) {
      http_only_failures << "  " << r.name << " passes over HTTP but not through the core: " << r.core << "\n";
    }
  }
  auto seconds = [](auto d) { return std::chrono::duration<double>(d).count(); };
  std::cout << "conformance over HTTP, " << models.size() << " node tests: core " << core << ", JSON " << json
            << ", binary " << binary << " pass (generate + load " << seconds(loaded - start) << " s, requests "
            << seconds(served - loaded) << " s)\n"
            << "failing through the core (docs/SERVING.md):\n" << core_failures.str()
            << "differences between the core and HTTP:\n" << http_only_failures.str();
  // The JSON form carries every value of these tests exactly (floats as shortest round-trip
  // decimals, NaN/Infinity as strings, UINT64 as exact integers) and the binary form is the
  // tensor's bytes, so each path fails exactly the expected list.
  EXPECT_EQ(serve::testing::CompareWithExpectedFailures(core_failed, "core"), "") << core_failures.str();
  EXPECT_EQ(serve::testing::CompareWithExpectedFailures(json_failed, "JSON"), "") << http_only_failures.str();
  EXPECT_EQ(serve::testing::CompareWithExpectedFailures(binary_failed, "binary"), "") << http_only_failures.str();
  EXPECT_TRUE((*server)->Shutdown());
}

}  // namespace
}  // namespace ortgpu::e2e
