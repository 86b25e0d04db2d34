// End-to-end tests of `ortgpu serve`'s gRPC endpoint: the real binary on
// --grpc-port 0 with the example repository, through a client generated from
// Triton's protos, as tritonclient.grpc or perf_analyzer -i grpc would talk
// to it. Every wait has a deadline.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>

#include <grpcpp/grpcpp.h>

#include "e2e/serve_process.h"
#include "grpc_service.grpc.pb.h"
#include "health.grpc.pb.h"

namespace ortgpu::e2e {
namespace {

using testing::HasSubstr;
using namespace std::chrono_literals;

const std::string kExamples = std::string(ORTGPU_SOURCE_DIR) + "/examples/model_repository";

class GrpcAgainstServe : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    server_ = new ServeProcess({"serve", "--model-repository", kExamples, "--http-port", "0", "--metrics-port", "-1",
                                "--grpc-port", "0"});
    ASSERT_TRUE(server_->WaitForPorts(60s)) << server_->output();
    ASSERT_NE(server_->grpc_port, 0) << server_->output();
  }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }
  void SetUp() override {
    channel_ = ::grpc::CreateChannel("127.0.0.1:" + std::to_string(server_->grpc_port),
                                     ::grpc::InsecureChannelCredentials());
    stub_ = inference::GRPCInferenceService::NewStub(channel_);
  }
  static std::unique_ptr<::grpc::ClientContext> Ctx() {
    auto ctx = std::make_unique<::grpc::ClientContext>();
    ctx->set_deadline(std::chrono::system_clock::now() + 20s);
    return ctx;
  }
  static std::string Raw(const std::vector<float>& v) {
    return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(float));
  }
  // add_sub with one row: INPUT0 + INPUT1 and INPUT0 - INPUT1.
  static inference::ModelInferRequest AddSub(const std::vector<float>& a, const std::vector<float>& b) {
    inference::ModelInferRequest req;
    req.set_model_name("add_sub");
    for (const char* name : {"INPUT0", "INPUT1"}) {
      auto* in = req.add_inputs();
      in->set_name(name);
      in->set_datatype("FP32");
      in->add_shape(1);
      in->add_shape(4);
    }
    req.add_raw_input_contents(Raw(a));
    req.add_raw_input_contents(Raw(b));
    return req;
  }
  static std::vector<float> Floats(const std::string& raw) {
    std::vector<float> v(raw.size() / sizeof(float));
    std::memcpy(v.data(), raw.data(), v.size() * sizeof(float));
    return v;
  }
  void ExpectReady() {
    inference::ServerReadyResponse ready;
    auto ctx = Ctx();
    ASSERT_TRUE(stub_->ServerReady(ctx.get(), {}, &ready).ok());
    EXPECT_TRUE(ready.ready());
  }

  static ServeProcess* server_;
  std::shared_ptr<::grpc::Channel> channel_;
  std::unique_ptr<inference::GRPCInferenceService::Stub> stub_;
};
ServeProcess* GrpcAgainstServe::server_ = nullptr;

TEST_F(GrpcAgainstServe, StartupSummaryNamesTheGrpcPort) {
  EXPECT_THAT(server_->output(), HasSubstr("gRPC: 127.0.0.1:" + std::to_string(server_->grpc_port) + "\n"));
}

TEST_F(GrpcAgainstServe, ModelInferRunsTheModel) {
  inference::ModelInferResponse resp;
  auto ctx = Ctx();
  auto st = stub_->ModelInfer(ctx.get(), AddSub({1, 2, 3, 4}, {10, 20, 30, 40}), &resp);
  ASSERT_TRUE(st.ok()) << st.error_message();
  ASSERT_EQ(resp.outputs_size(), 2);
  ASSERT_EQ(resp.raw_output_contents_size(), 2);
  for (int i = 0; i < 2; ++i) {
    if (resp.outputs(i).name() == "OUTPUT0") {
      EXPECT_THAT(Floats(resp.raw_output_contents(i)), testing::ElementsAre(11, 22, 33, 44));
    } else {
      EXPECT_THAT(Floats(resp.raw_output_contents(i)), testing::ElementsAre(-9, -18, -27, -36));
    }
    EXPECT_THAT(resp.outputs(i).shape(), testing::ElementsAre(1, 4));
  }
}

TEST_F(GrpcAgainstServe, StreamedRequestsAreBatchedAndAnswered) {
  auto ctx = Ctx();
  auto stream = stub_->ModelStreamInfer(ctx.get());
  for (int i = 0; i < 8; ++i) {
    auto req = AddSub({1, 1, 1, static_cast<float>(i)}, {0, 0, 0, 0});
    req.set_id(std::to_string(i));
    ASSERT_TRUE(stream->Write(req));
  }
  ASSERT_TRUE(stream->WritesDone());
  int answered = 0;
  inference::ModelStreamInferResponse r;
  while (stream->Read(&r)) {
    EXPECT_EQ(r.error_message(), "");
    ++answered;
  }
  EXPECT_TRUE(stream->Finish().ok());
  EXPECT_EQ(answered, 8);
}

TEST_F(GrpcAgainstServe, BadRequestsGetAClearStatusAndTheServerStaysUp) {
  inference::ModelInferResponse resp;
  auto wrong = AddSub({1, 2, 3, 4}, {1, 2, 3, 4});
  wrong.set_raw_input_contents(1, Raw({1, 2}));
  auto ctx = Ctx();
  auto st = stub_->ModelInfer(ctx.get(), wrong, &resp);
  EXPECT_EQ(st.error_code(), ::grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(st.error_message(), HasSubstr("input 'INPUT1': raw_input_contents holds 8 bytes"));

  auto unknown = AddSub({1, 2, 3, 4}, {1, 2, 3, 4});
  unknown.set_model_name("resnet");
  ctx = Ctx();
  st = stub_->ModelInfer(ctx.get(), unknown, &resp);
  EXPECT_EQ(st.error_code(), ::grpc::StatusCode::NOT_FOUND);
  EXPECT_THAT(st.error_message(), HasSubstr("resnet"));

  auto missing = AddSub({1, 2, 3, 4}, {1, 2, 3, 4});
  missing.mutable_inputs()->RemoveLast();
  missing.mutable_raw_input_contents()->RemoveLast();
  ctx = Ctx();
  st = stub_->ModelInfer(ctx.get(), missing, &resp);
  EXPECT_EQ(st.error_code(), ::grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(st.error_message(), HasSubstr("INPUT1"));
  ExpectReady();
}

TEST_F(GrpcAgainstServe, MetadataConfigStatisticsAndHealth) {
  inference::ModelConfigRequest cr;
  cr.set_name("add_sub");
  inference::ModelConfigResponse config;
  auto ctx = Ctx();
  ASSERT_TRUE(stub_->ModelConfig(ctx.get(), cr, &config).ok());
  EXPECT_EQ(config.config().max_batch_size(), 8);
  ASSERT_EQ(config.config().input_size(), 2);
  EXPECT_EQ(config.config().input(0).data_type(), inference::TYPE_FP32);

  inference::ModelStatisticsRequest sr;
  sr.set_name("add_sub");
  inference::ModelStatisticsResponse stats;
  ctx = Ctx();
  ASSERT_TRUE(stub_->ModelStatistics(ctx.get(), sr, &stats).ok());
  ASSERT_EQ(stats.model_stats_size(), 1);
  EXPECT_EQ(stats.model_stats(0).version(), "1");

  auto health = grpc::health::v1::Health::NewStub(channel_);
  grpc::health::v1::HealthCheckResponse h;
  ctx = Ctx();
  ASSERT_TRUE(health->Check(ctx.get(), {}, &h).ok());
  EXPECT_EQ(h.status(), grpc::health::v1::HealthCheckResponse::SERVING);
}

TEST(GrpcServe, GrpcCanBeSwitchedOff) {
  ServeProcess p({"serve", "--model-repository", kExamples, "--http-port", "0", "--metrics-port", "-1", "--grpc-port",
                  "-1"});
  ASSERT_TRUE(p.WaitForPorts(60s)) << p.output();
  EXPECT_THAT(p.output(), HasSubstr("gRPC: off\n"));
  EXPECT_EQ(p.grpc_port, 0);
}

}  // namespace
}  // namespace ortgpu::e2e
