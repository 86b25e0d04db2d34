// Issue 10, model load with a config override: the whole server in-process
// (Server on port 0, explicit model control) over a temporary repository of
// tiny ONNX models, driven with the project's HTTP test client and a gRPC
// client generated from Triton's protos. A load's "config" replaces
// config.pbtxt (GET /v2/models/M/config shows it); "file:" parameters alone
// make a model; a bad parameter is a 400 / INVALID_ARGUMENT that says why
// and what served before keeps serving; the private folder of the files
// leaves on unload and exit, and nothing is written into the repository.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>

#include <grpcpp/grpcpp.h>
#include <nlohmann/json.hpp>

#include "fakes/fake_nvml.h"
#include "grpc_service.grpc.pb.h"
#include "serve/core/test_repository.h"
#include "serve/http/test_http_client.h"
#include "serve/protocol/base64.h"
#include "serve/server.h"

namespace ortgpu::serve {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;
using testing::HttpResult;
using testing::ScaleModel;
using testing::TestHttpClient;
using namespace std::chrono_literals;

// y = x * factor over float [batch, 4], as config.pbtxt or its JSON form.
constexpr char kScaleConfig[] = R"(name: "scale"
max_batch_size: 4
input [ { name: "x" data_type: TYPE_FP32 dims: [ 4 ] } ]
output [ { name: "y" data_type: TYPE_FP32 dims: [ 4 ] } ]
instance_group [ { count: 1 kind: KIND_CPU } ]
)";

std::string ConfigJson(const std::string& name, int max_batch_size, int instances) {
  return nlohmann::json{{"name", name},
                        {"max_batch_size", max_batch_size},
                        {"input", {{{"name", "x"}, {"data_type", "TYPE_FP32"}, {"dims", {4}}}}},
                        {"output", {{{"name", "y"}, {"data_type", "TYPE_FP32"}, {"dims", {4}}}}},
                        {"instance_group", {{{"count", instances}, {"kind", "KIND_CPU"}}}}}
      .dump();
}

// A load body with Triton's parameters ("file:" values base64-encoded).
std::string LoadBody(const std::optional<std::string>& config, const std::map<std::string, std::string>& files = {}) {
  nlohmann::json p = nlohmann::json::object();
  if (config) p["config"] = *config;
  for (const auto& [path, bytes] : files) p["file:" + path] = protocol::EncodeBase64(bytes);
  return nlohmann::json{{"parameters", p}}.dump();
}

class ModelLoadOverrideTest : public ::testing::Test {
 protected:
  void SetUp() override {
    temp_root_ = fs::path(repo_.root()).parent_path() / (fs::path(repo_.root()).filename().string() + "-loads");
    fs::remove_all(temp_root_);
    fs::create_directories(temp_root_);
    repo_.AddModel("scale", 1, ScaleModel(2));
    repo_.WriteConfig("scale", kScaleConfig);
    Start({});
  }
  void TearDown() override {
    server_.reset();
    fs::remove_all(temp_root_);
  }
  void Start(std::string auth_token) {
    server_.reset();
    ServeOptions o;
    o.core.repository = repo_.root();
    o.core.model_control = ModelControlMode::kExplicit;
    o.core.startup_models = {"scale"};
    o.core.loader.default_instance_kind = InstanceKind::kCpu;
    o.core.load_temp_root = temp_root_.string();
    o.http.port = 0;
    o.http.access.auth_token = std::move(auth_token);
    o.metrics_port = -1;
    o.grpc_port = 0;
    o.handle_signals = false;
    ServeDeps deps;
    deps.nvml_factory = [] {
      auto nvml = std::make_unique<ortgpu::testing::FakeNvml>();
      nvml->load_status = Unavailable("no NVML in this test");
      return std::unique_ptr<gpu::Nvml>(std::move(nvml));
    };
    auto s = Server::Start(std::move(o), std::move(deps));
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    server_ = std::move(s).value();
    stub_ = inference::GRPCInferenceService::NewStub(::grpc::CreateChannel(
        "127.0.0.1:" + std::to_string(*server_->grpc_port()), ::grpc::InsecureChannelCredentials()));
  }

  // A new connection per call: an error reply may close one.
  std::unique_ptr<TestHttpClient> Http() { return std::make_unique<TestHttpClient>(server_->http_port()); }
  HttpResult Load(const std::string& model, const std::string& body) {
    return Http()->Post("/v2/repository/models/" + model + "/load", body);
  }
  nlohmann::json Config(const std::string& model) {
    HttpResult r = Http()->Get("/v2/models/" + model + "/config");
    EXPECT_EQ(r.status, 200u) << r.body;
    return nlohmann::json::parse(r.body, nullptr, false);
  }
  // The model's y for x = [1, 2, 3, 4] over HTTP; empty when it fails.
  std::vector<float> Infer(const std::string& model) {
    HttpResult r = Http()->Post("/v2/models/" + model + "/infer",
                               R"({"inputs":[{"name":"x","datatype":"FP32","shape":[1,4],"data":[1,2,3,4]}]})");
    if (r.status != 200u) return {};
    return nlohmann::json::parse(r.body)["outputs"][0]["data"].get<std::vector<float>>();
  }
  std::string ErrorOf(const HttpResult& r) {
    auto j = nlohmann::json::parse(r.body, nullptr, false);
    return j.is_object() && j.contains("error") ? j["error"].get<std::string>() : r.body;
  }
  size_t PrivateFolders() const {
    return static_cast<size_t>(std::distance(fs::directory_iterator(temp_root_), fs::directory_iterator()));
  }
  static std::unique_ptr<::grpc::ClientContext> Ctx() {
    auto ctx = std::make_unique<::grpc::ClientContext>();
    ctx->set_deadline(std::chrono::system_clock::now() + 20s);
    return ctx;
  }

  testing::TempRepository repo_;
  fs::path temp_root_;
  std::unique_ptr<Server> server_;
  std::unique_ptr<inference::GRPCInferenceService::Stub> stub_;
};

TEST_F(ModelLoadOverrideTest, AConfigOverrideIsWhatTheConfigEndpointShows) {
  ASSERT_EQ(Config("scale")["max_batch_size"], 4);
  HttpResult r = Load("scale", LoadBody(ConfigJson("scale", 2, 2)));
  ASSERT_EQ(r.status, 200u) << r.body;
  nlohmann::json config = Config("scale");
  EXPECT_EQ(config["max_batch_size"], 2);
  EXPECT_EQ(config["instance_group"][0]["count"], 2);
  EXPECT_EQ(Infer("scale"), (std::vector<float>{2, 4, 6, 8}));
  EXPECT_EQ(PrivateFolders(), 0u);  // a config alone writes no files

  // A load without parameters reads the repository again, as Triton does.
  ASSERT_EQ(Load("scale", "").status, 200u);
  EXPECT_EQ(Config("scale")["max_batch_size"], 4);
  EXPECT_EQ(Config("scale")["instance_group"][0]["count"], 1);
}

TEST_F(ModelLoadOverrideTest, FileParametersAloneMakeAModelOutsideTheRepository) {
  HttpResult r = Load("triple", LoadBody(ConfigJson("triple", 4, 1), {{"1/model.onnx", ScaleModel(3)}}));
  ASSERT_EQ(r.status, 200u) << r.body;
  EXPECT_EQ(Infer("triple"), (std::vector<float>{3, 6, 9, 12}));
  EXPECT_EQ(Config("triple")["max_batch_size"], 4);
  EXPECT_FALSE(fs::exists(fs::path(repo_.root()) / "triple"));  // never written into the repository
  EXPECT_EQ(PrivateFolders(), 1u);
  HttpResult index = Http()->Post("/v2/repository/index", "{}");
  EXPECT_THAT(index.body, HasSubstr(R"("name":"triple","reason":"","state":"READY")"));

  // Reloaded from new files: the folder of the old ones leaves.
  r = Load("triple", LoadBody(ConfigJson("triple", 4, 1), {{"2/model.onnx", ScaleModel(4)}}));
  ASSERT_EQ(r.status, 200u) << r.body;
  EXPECT_EQ(Infer("triple"), (std::vector<float>{4, 8, 12, 16}));
  EXPECT_EQ(PrivateFolders(), 1u);
  // A plain load finds no such model in the repository; what serves stays.
  r = Load("triple", "");
  EXPECT_EQ(r.status, 404u);
  EXPECT_THAT(ErrorOf(r), HasSubstr("send them again"));
  EXPECT_EQ(Infer("triple"), (std::vector<float>{4, 8, 12, 16}));

  ASSERT_EQ(Http()->Post("/v2/repository/models/triple/unload", "").status, 200u);
  EXPECT_EQ(PrivateFolders(), 0u);
  EXPECT_TRUE(Infer("triple").empty());

  ASSERT_EQ(Load("triple", LoadBody(ConfigJson("triple", 4, 1), {{"1/model.onnx", ScaleModel(3)}})).status, 200u);
  EXPECT_EQ(PrivateFolders(), 1u);
  server_.reset();  // exit removes it too
  EXPECT_EQ(PrivateFolders(), 0u);
}

TEST_F(ModelLoadOverrideTest, BadParametersAreA400SayingWhyAndTheOldVersionKeepsServing) {
  const std::string good = ConfigJson("scale", 2, 1);
  struct Case {
    std::string body;
    std::string says;
  };
  const std::vector<Case> cases = {
      {LoadBody(R"({"max_batch_size": "four"})"), "load parameter 'config' is not a model configuration in JSON"},
      {LoadBody("not json"), "load parameter 'config' is not a model configuration in JSON"},
      {LoadBody(std::nullopt, {{"1/model.onnx", ScaleModel(3)}}), "needs a 'config' parameter too"},
      {LoadBody(good, {{"../escape/1/model.onnx", ScaleModel(3)}}), "leaves the model's folder"},
      {LoadBody(good, {{"/tmp/1/model.onnx", ScaleModel(3)}}), "is an absolute path"},
      {nlohmann::json{{"parameters", {{"config", good}, {"file:1/model.onnx", "@@@"}}}}.dump(),
       "load parameter 'file:1/model.onnx' is not base64"},
  };
  for (const Case& c : cases) {
    HttpResult r = Load("scale", c.body);
    EXPECT_EQ(r.status, 400u) << c.says << ": " << r.body;
    EXPECT_THAT(ErrorOf(r), HasSubstr(c.says));
    EXPECT_EQ(Infer("scale"), (std::vector<float>{2, 4, 6, 8})) << c.says;
    EXPECT_EQ(Config("scale")["max_batch_size"], 4) << c.says;
  }
  // Parameters that are well formed but whose model does not load: the
  // version loaded before keeps serving, and no path of the server shows.
  HttpResult r = Load("scale", LoadBody(good, {{"1/model.onnx", "not an onnx model"}}));
  EXPECT_GE(r.status, 400u);
  EXPECT_THAT(ErrorOf(r), Not(HasSubstr(temp_root_.string())));
  EXPECT_THAT(ErrorOf(r), Not(HasSubstr(repo_.root())));
  EXPECT_EQ(Infer("scale"), (std::vector<float>{2, 4, 6, 8}));
  EXPECT_EQ(Config("scale")["max_batch_size"], 4);
  EXPECT_EQ(PrivateFolders(), 0u);
  EXPECT_EQ(Http()->Get("/v2/health/live").status, 200u);
}

TEST_F(ModelLoadOverrideTest, OverGrpcTheSameParametersApply) {
  inference::RepositoryModelLoadRequest load;
  inference::RepositoryModelLoadResponse loaded;
  load.set_model_name("scale");
  (*load.mutable_parameters())["config"].set_string_param(ConfigJson("scale", 2, 1));
  auto ctx = Ctx();
  auto st = stub_->RepositoryModelLoad(ctx.get(), load, &loaded);
  ASSERT_TRUE(st.ok()) << st.error_message();
  inference::ModelConfigRequest cr;
  cr.set_name("scale");
  inference::ModelConfigResponse config;
  ctx = Ctx();
  ASSERT_TRUE(stub_->ModelConfig(ctx.get(), cr, &config).ok());
  EXPECT_EQ(config.config().max_batch_size(), 2);

  load.set_model_name("triple");
  (*load.mutable_parameters())["config"].set_string_param(ConfigJson("triple", 4, 1));
  (*load.mutable_parameters())["file:1/model.onnx"].set_bytes_param(ScaleModel(3));
  ctx = Ctx();
  st = stub_->RepositoryModelLoad(ctx.get(), load, &loaded);
  ASSERT_TRUE(st.ok()) << st.error_message();
  EXPECT_EQ(Infer("triple"), (std::vector<float>{3, 6, 9, 12}));

  load.set_model_name("scale");
  (*load.mutable_parameters())["config"].set_string_param("{\"max_batch_size\": ");
  ctx = Ctx();
  st = stub_->RepositoryModelLoad(ctx.get(), load, &loaded);
  EXPECT_EQ(st.error_code(), ::grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(st.error_message(), HasSubstr("load parameter 'config' is not a model configuration in JSON"));
  load.mutable_parameters()->erase("config");
  ctx = Ctx();
  st = stub_->RepositoryModelLoad(ctx.get(), load, &loaded);
  EXPECT_EQ(st.error_code(), ::grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(st.error_message(), HasSubstr("needs a 'config' parameter too"));
  EXPECT_EQ(Infer("scale"), (std::vector<float>{2, 4, 6, 8}));
}

TEST_F(ModelLoadOverrideTest, WithATokenALoadWithParametersNeedsIt) {
  Start("s3cret");
  HttpResult r = Load("scale", LoadBody(ConfigJson("scale", 2, 1)));
  EXPECT_EQ(r.status, 401u);
  EXPECT_EQ(Config("scale")["max_batch_size"], 4);
  r = Http()->Post("/v2/repository/models/scale/load", LoadBody(ConfigJson("scale", 2, 1)),
                  {{"Authorization", "Bearer s3cret"}});
  EXPECT_EQ(r.status, 200u) << r.body;
  EXPECT_EQ(Config("scale")["max_batch_size"], 2);
}

}  // namespace
}  // namespace ortgpu::serve
