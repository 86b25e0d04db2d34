// End-to-end tests of `ortgpu serve` with the precision parameters (issue
// 26, part 5): the real binary on the CPU provider over a repository built
// in the test, with --model-cache-dir in a temporary folder. What a user
// checks: answers of the converted model, /v2/models/M/config, the start-up
// summary, the repository index's reason for a refused version, the metrics,
// and FP16 tensors over HTTP JSON, HTTP binary and gRPC.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <grpcpp/grpcpp.h>
#include <nlohmann/json.hpp>

#include "e2e/mlp_model.h"
#include "e2e/serve_process.h"
#include "grpc_service.grpc.pb.h"
#include "ort/tensor.h"
#include "serve/http/test_http_client.h"
#include "support/temp_dir.h"

namespace ortgpu::e2e {
namespace {

using namespace std::chrono_literals;
using testing_support::TempDir;
using ::testing::HasSubstr;
using ::testing::Not;
namespace fs = std::filesystem;

std::string Model() { return MlpModel(); }

const std::vector<float> kX = {1, 0.5, -0.25, 0, 0.75, -1, 0.1, 0.2};

void AddModel(const TempDir& dir, const std::string& name, const std::string& parameters) {
  dir.File("repo/" + name + "/1/model.onnx", Model());
  std::string config = "max_batch_size: 4\ninstance_group [ { count: 1 kind: KIND_CPU } ]\n";
  config += parameters;
  dir.File("repo/" + name + "/config.pbtxt", config);
}

std::string Param(const std::string& key, const std::string& value) {
  return "parameters { key: \"" + key + "\" value: { string_value: \"" + value + "\" } }\n";
}

std::vector<std::string> Args(const TempDir& dir) {
  return {"serve", "--model-repository", dir.Path("repo"), "--http-port", "0", "--metrics-port", "0", "--grpc-port",
          "0", "--model-cache-dir", dir.Path("cache")};
}

std::string JsonRequest(const std::string& datatype) {
  return nlohmann::json{{"inputs", {{{"name", "x"}, {"datatype", datatype}, {"shape", {1, 8}}, {"data", kX}}}}}.dump();
}

std::vector<float> Infer(serve::testing::TestHttpClient& c, const std::string& model, const std::string& datatype,
                         std::string* response_type = nullptr) {
  auto r = c.Post("/v2/models/" + model + "/infer", JsonRequest(datatype));
  EXPECT_EQ(r.status, 200u) << r.body;
  if (r.status != 200u) return {};
  auto j = nlohmann::json::parse(r.body);
  if (response_type) *response_type = j["outputs"][0]["datatype"].get<std::string>();
  return j["outputs"][0]["data"].get<std::vector<float>>();
}

void ExpectClose(const std::vector<float>& actual, const std::vector<float>& reference) {
  ASSERT_EQ(actual.size(), reference.size());
  for (size_t i = 0; i < actual.size(); ++i) EXPECT_NEAR(actual[i], reference[i], 1e-2 + 1e-2 * std::fabs(reference[i]));
}

std::string ConfigParameter(serve::testing::TestHttpClient& c, const std::string& model, const std::string& key) {
  auto r = c.Get("/v2/models/" + model + "/config");
  if (r.status != 200u) return "";
  auto j = nlohmann::json::parse(r.body);
  return j["parameters"].contains(key) ? j["parameters"][key]["string_value"].get<std::string>() : "";
}

TEST(ServePrecisionE2eTest, Fp16IsConvertedCachedJudgedAndShown) {
  TempDir dir;
  AddModel(dir, "plain", "");
  AddModel(dir, "m16", Param("precision", "fp16"));
  AddModel(dir, "tight", Param("precision", "fp16") + Param("precision_budget", "cosine=1.0,rel=1e-9"));
  AddModel(dir, "warned", Param("precision", "fp16") + Param("precision_budget", "cosine=1.0,rel=1e-9") +
                              Param("precision_check", "warn"));
  AddModel(dir, "badparam", Param("precision", "int8"));
  std::vector<float> reference;
  {
    ServeProcess serve(Args(dir));
    ASSERT_TRUE(serve.started());
    ASSERT_TRUE(serve.WaitForPorts(60s)) << serve.output();
    EXPECT_THAT(serve.output(), HasSubstr("precision: fp16 (converted at load): min cosine"));
    EXPECT_THAT(serve.output(), HasSubstr("served outside the accuracy budget (precision_check warn)"));
    serve::testing::TestHttpClient c(serve.http_port);
    reference = Infer(c, "plain", "FP32");
    std::string type;
    ExpectClose(Infer(c, "m16", "FP32", &type), reference);
    EXPECT_EQ(type, "FP32") << "keep_io_types: the interface stays float32";
    EXPECT_EQ(ConfigParameter(c, "m16", "precision"), "fp16");
    EXPECT_EQ(ConfigParameter(c, "m16", "precision_cache"), "stored");
    EXPECT_THAT(ConfigParameter(c, "m16", "precision_accuracy"), HasSubstr("within_budget=true"));
    EXPECT_THAT(ConfigParameter(c, "warned", "precision_accuracy"), HasSubstr("within_budget=false"));

    auto index = nlohmann::json::parse(c.Post("/v2/repository/index", "").body);
    std::map<std::string, nlohmann::json> by_name;
    for (const auto& e : index) by_name[e["name"].get<std::string>()] = e;
    EXPECT_EQ(by_name["tight"]["state"], "UNAVAILABLE");
    const std::string tight = by_name["tight"]["reason"].get<std::string>();
    EXPECT_THAT(tight, HasSubstr("outside the accuracy budget"));
    EXPECT_THAT(tight, HasSubstr("min_cosine="));
    EXPECT_THAT(tight, HasSubstr("max_rel_error="));
    EXPECT_THAT(tight, Not(HasSubstr(dir.Path(""))));
    EXPECT_EQ(by_name["warned"]["state"], "READY");
    EXPECT_EQ(by_name["badparam"]["state"], "UNAVAILABLE");
    EXPECT_THAT(by_name["badparam"]["reason"].get<std::string>(), HasSubstr("parameter precision is 'int8'"));

    serve::testing::TestHttpClient m(serve.metrics_port);
    const std::string metrics = m.Get("/metrics").body;
    EXPECT_THAT(metrics, HasSubstr("ortgpu_model_precision_info{model=\"m16\",precision=\"fp16\",version=\"1\"} 1"));
    EXPECT_THAT(metrics, HasSubstr("ortgpu_model_accuracy_min_cosine{model=\"m16\",version=\"1\"}"));
    EXPECT_THAT(metrics, HasSubstr("ortgpu_model_accuracy_within_budget{model=\"warned\",version=\"1\"} 0"));
  }
  // Nothing was written beside the user's models.
  for (const auto& e : fs::recursive_directory_iterator(dir.Path("repo"))) {
    EXPECT_TRUE(e.is_directory() || e.path().filename() == "model.onnx" || e.path().filename() == "config.pbtxt")
        << e.path();
  }
  // A restart finds the converted model in the cache.
  ServeProcess again(Args(dir));
  ASSERT_TRUE(again.WaitForPorts(60s)) << again.output();
  serve::testing::TestHttpClient c(again.http_port);
  EXPECT_EQ(ConfigParameter(c, "m16", "precision_cache"), "hit");
  EXPECT_THAT(again.output(), HasSubstr("precision: fp16 (converted, from the model cache)"));
  ExpectClose(Infer(c, "m16", "FP32"), reference);
}

std::string Halves(const std::vector<float>& v) {
  std::string out(v.size() * 2, '\0');
  for (size_t i = 0; i < v.size(); ++i) {
    const uint16_t h = FloatToHalf(v[i]);
    std::memcpy(out.data() + 2 * i, &h, 2);
  }
  return out;
}

std::vector<float> FromHalves(const std::string& raw) {
  std::vector<float> out(raw.size() / 2);
  for (size_t i = 0; i < out.size(); ++i) {
    uint16_t h = 0;
    std::memcpy(&h, raw.data() + 2 * i, 2);
    out[i] = HalfToFloat(h);
  }
  return out;
}

TEST(ServePrecisionE2eTest, Fp16InterfaceIsServedOverJsonBinaryAndGrpc) {
  TempDir dir;
  AddModel(dir, "plain", "");
  AddModel(dir, "io16", Param("precision", "fp16") + Param("precision_io", "fp16"));
  ServeProcess serve(Args(dir));
  ASSERT_TRUE(serve.WaitForPorts(60s)) << serve.output();
  serve::testing::TestHttpClient c(serve.http_port);
  const std::vector<float> reference = Infer(c, "plain", "FP32");

  auto meta = nlohmann::json::parse(c.Get("/v2/models/io16").body);
  EXPECT_EQ(meta["inputs"][0]["datatype"], "FP16") << meta.dump();
  EXPECT_EQ(meta["outputs"][0]["datatype"], "FP16") << meta.dump();

  // HTTP JSON: FP16 as numbers.
  std::string type;
  ExpectClose(Infer(c, "io16", "FP16", &type), reference);
  EXPECT_EQ(type, "FP16");

  // HTTP binary: two bytes an element, both ways.
  const std::string header =
      nlohmann::json{{"inputs", {{{"name", "x"}, {"datatype", "FP16"}, {"shape", {1, 8}},
                                  {"parameters", {{"binary_data_size", 16}}}}}},
                     {"outputs", {{{"name", "y"}, {"parameters", {{"binary_data", true}}}}}}}
          .dump();
  auto r = c.Post("/v2/models/io16/infer", header + Halves(kX),
                  {{"Inference-Header-Content-Length", std::to_string(header.size())},
                   {"Content-Type", "application/octet-stream"}});
  ASSERT_EQ(r.status, 200u) << r.body;
  const size_t json_size = std::stoul(r.header("Inference-Header-Content-Length"));
  EXPECT_THAT(r.body.substr(0, json_size), HasSubstr("\"FP16\""));
  ExpectClose(FromHalves(r.body.substr(json_size)), reference);

  // gRPC: raw contents.
  auto channel = ::grpc::CreateChannel("127.0.0.1:" + std::to_string(serve.grpc_port),
                                       ::grpc::InsecureChannelCredentials());
  auto stub = inference::GRPCInferenceService::NewStub(channel);
  inference::ModelInferRequest req;
  req.set_model_name("io16");
  auto* in = req.add_inputs();
  in->set_name("x");
  in->set_datatype("FP16");
  in->add_shape(1);
  in->add_shape(8);
  req.add_raw_input_contents(Halves(kX));
  inference::ModelInferResponse resp;
  ::grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + 20s);
  auto st = stub->ModelInfer(&ctx, req, &resp);
  ASSERT_TRUE(st.ok()) << st.error_message();
  ASSERT_EQ(resp.outputs_size(), 1);
  EXPECT_EQ(resp.outputs(0).datatype(), "FP16");
  ASSERT_EQ(resp.raw_output_contents_size(), 1);
  ExpectClose(FromHalves(resp.raw_output_contents(0)), reference);
}

}  // namespace
}  // namespace ortgpu::e2e
