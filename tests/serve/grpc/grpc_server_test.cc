// GrpcServer over a FakeModelServer, through a client generated from the same
// protos (inference.GRPCInferenceService, grpc.health.v1.Health) on a real
// socket (port 0): every RPC, bad inputs, limits, deadlines and the drain.
#include "serve/grpc/grpc_server.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <condition_variable>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <thread>

#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>
#include <spdlog/spdlog.h>

#include "fakes/fake_model_server.h"
#include "grpc_service.grpc.pb.h"
#include "health.grpc.pb.h"
#include "fakes/fake_cuda_ipc.h"
#include "support/shm_object.h"

namespace ortgpu::serve {
namespace {

using ::testing::HasSubstr;
using ortgpu::testing::ShmObject;
using namespace std::chrono_literals;

class GrpcServerTest : public ::testing::Test {
 protected:
  void SetUp() override { StartServer({}); }

  void StartServer(GrpcOptions options) {
    server_.reset();
    options.port = 0;
    auto s = GrpcServer::Start(fake_, settings_, options);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    server_ = std::move(s).value();
    channel_ = ::grpc::CreateChannel("127.0.0.1:" + std::to_string(server_->port()),
                                     ::grpc::InsecureChannelCredentials());
    stub_ = inference::GRPCInferenceService::NewStub(channel_);
  }

  // A context whose call fails after 10 s rather than hang a broken test.
  static std::unique_ptr<::grpc::ClientContext> Ctx(std::chrono::milliseconds deadline = 10s) {
    auto ctx = std::make_unique<::grpc::ClientContext>();
    ctx->set_deadline(std::chrono::system_clock::now() + deadline);
    return ctx;
  }

  // An echo request with one FP32 input "x" of shape [1, 2] in raw contents.
  static inference::ModelInferRequest EchoRequest(std::vector<float> values = {1.5f, -2.0f}) {
    inference::ModelInferRequest req;
    req.set_model_name("echo");
    req.set_id("r1");
    auto* in = req.add_inputs();
    in->set_name("x");
    in->set_datatype("FP32");
    in->add_shape(1);
    in->add_shape(static_cast<int64_t>(values.size()));
    req.add_raw_input_contents(std::string(reinterpret_cast<const char*>(values.data()), values.size() * 4));
    return req;
  }

  void ExpectAlive() {
    inference::ServerLiveResponse live;
    auto ctx = Ctx();
    ASSERT_TRUE(stub_->ServerLive(ctx.get(), {}, &live).ok());
    EXPECT_TRUE(live.live());
  }

  FakeModelServer fake_;
  RuntimeSettings settings_;
  std::unique_ptr<GrpcServer> server_;
  std::shared_ptr<::grpc::Channel> channel_;
  std::unique_ptr<inference::GRPCInferenceService::Stub> stub_;
};

TEST_F(GrpcServerTest, HealthAndServerMetadata) {
  ExpectAlive();
  inference::ServerReadyResponse ready;
  auto ctx = Ctx();
  ASSERT_TRUE(stub_->ServerReady(ctx.get(), {}, &ready).ok());
  EXPECT_TRUE(ready.ready());

  inference::ServerMetadataResponse md;
  ctx = Ctx();
  ASSERT_TRUE(stub_->ServerMetadata(ctx.get(), {}, &md).ok());
  EXPECT_EQ(md.name(), "ortgpu");
  EXPECT_FALSE(md.version().empty());
  EXPECT_THAT(md.extensions(), ::testing::Contains("statistics"));
  EXPECT_THAT(md.extensions(), ::testing::Contains("binary_tensor_data"));
}

TEST_F(GrpcServerTest, GrpcHealthCheckFollowsReadiness) {
  auto health = grpc::health::v1::Health::NewStub(channel_);
  grpc::health::v1::HealthCheckResponse r;
  auto ctx = Ctx();
  ASSERT_TRUE(health->Check(ctx.get(), {}, &r).ok());
  EXPECT_EQ(r.status(), grpc::health::v1::HealthCheckResponse::SERVING);

  fake_.SetReady(false);
  grpc::health::v1::HealthCheckRequest req;
  req.set_service("inference.GRPCInferenceService");
  ctx = Ctx();
  ASSERT_TRUE(health->Check(ctx.get(), req, &r).ok());
  EXPECT_EQ(r.status(), grpc::health::v1::HealthCheckResponse::NOT_SERVING);

  req.set_service("other.Service");
  ctx = Ctx();
  EXPECT_EQ(health->Check(ctx.get(), req, &r).error_code(), ::grpc::StatusCode::NOT_FOUND);
}

TEST_F(GrpcServerTest, GrpcHealthWatchSendsEachChangeOfReadiness) {
  GrpcOptions options;
  options.health_watch_poll = 5ms;
  StartServer(options);
  using grpc::health::v1::HealthCheckResponse;
  auto health = grpc::health::v1::Health::NewStub(channel_);
  auto ctx = Ctx();
  auto watch = health->Watch(ctx.get(), {});
  HealthCheckResponse r;
  ASSERT_TRUE(watch->Read(&r));
  EXPECT_EQ(r.status(), HealthCheckResponse::SERVING);
  fake_.SetReady(false);
  ASSERT_TRUE(watch->Read(&r));
  EXPECT_EQ(r.status(), HealthCheckResponse::NOT_SERVING);
  fake_.SetReady(true);
  ASSERT_TRUE(watch->Read(&r));
  EXPECT_EQ(r.status(), HealthCheckResponse::SERVING);

  // An unknown service is SERVICE_UNKNOWN and the call stays open (the
  // health protocol's rule for Watch).
  grpc::health::v1::HealthCheckRequest other;
  other.set_service("other.Service");
  auto other_ctx = Ctx();
  auto other_watch = health->Watch(other_ctx.get(), other);
  ASSERT_TRUE(other_watch->Read(&r));
  EXPECT_EQ(r.status(), HealthCheckResponse::SERVICE_UNKNOWN);

  // A drain is NOT_SERVING; the client cancelling ends the call.
  server_->BeginDrain();
  ASSERT_TRUE(watch->Read(&r));
  EXPECT_EQ(r.status(), HealthCheckResponse::NOT_SERVING);
  ctx->TryCancel();
  other_ctx->TryCancel();
  EXPECT_EQ(watch->Finish().error_code(), ::grpc::StatusCode::CANCELLED);
  EXPECT_EQ(other_watch->Finish().error_code(), ::grpc::StatusCode::CANCELLED);
  ExpectAlive();
}

TEST_F(GrpcServerTest, StopEndsOpenWatchesAndStreams) {
  auto health = grpc::health::v1::Health::NewStub(channel_);
  auto watch_ctx = Ctx();
  auto watch = health->Watch(watch_ctx.get(), {});
  grpc::health::v1::HealthCheckResponse r;
  ASSERT_TRUE(watch->Read(&r));
  auto stream_ctx = Ctx();
  auto stream = stub_->ModelStreamInfer(stream_ctx.get());
  ASSERT_TRUE(stream->Write(EchoRequest()));
  inference::ModelStreamInferResponse sr;
  ASSERT_TRUE(stream->Read(&sr));

  server_->Stop();  // returns: nothing of the server waits on the open calls
  EXPECT_FALSE(watch->Read(&r));
  EXPECT_FALSE(watch->Finish().ok());
  EXPECT_FALSE(stream->Read(&sr));
  EXPECT_FALSE(stream->Finish().ok());
}

// The pollers are the only threads that read gRPC's sockets: serving every
// kind of RPC starts none of the threads gRPC brings for its callback API
// (cores/2 "nexting_thread"s, which took the calls off the socket and woke
// the poller: a thread hand-off on every call) or its sync API
// ("grpcpp_sync_server" pools). gRPC names its threads; this reads the names.
TEST_F(GrpcServerTest, ServingEveryKindOfRpcStartsNoThreadOfGrpcsThatPolls) {
  auto grpc_pollers = [] {
    std::vector<std::string> found;
    for (const auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
      std::ifstream comm(task.path() / "comm");
      std::string name;
      std::getline(comm, name);
      if (name.rfind("nexting", 0) == 0 || name.rfind("grpcpp_sync", 0) == 0) found.push_back(name);
    }
    return found;
  };
  ExpectAlive();
  inference::ModelInferResponse resp;
  auto ctx = Ctx();
  ASSERT_TRUE(stub_->ModelInfer(ctx.get(), EchoRequest(), &resp).ok());
  auto stream_ctx = Ctx();
  auto stream = stub_->ModelStreamInfer(stream_ctx.get());
  ASSERT_TRUE(stream->Write(EchoRequest()));
  ASSERT_TRUE(stream->WritesDone());
  inference::ModelStreamInferResponse sr;
  ASSERT_TRUE(stream->Read(&sr));
  EXPECT_TRUE(stream->Finish().ok());
  auto health = grpc::health::v1::Health::NewStub(channel_);
  grpc::health::v1::HealthCheckResponse hr;
  ctx = Ctx();
  ASSERT_TRUE(health->Check(ctx.get(), {}, &hr).ok());
  inference::RepositoryIndexResponse index;
  ctx = Ctx();
  ASSERT_TRUE(stub_->RepositoryIndex(ctx.get(), {}, &index).ok());
  EXPECT_THAT(grpc_pollers(), ::testing::IsEmpty());
}

TEST_F(GrpcServerTest, ModelReadyMetadataConfigAndStatistics) {
  inference::ModelReadyRequest rr;
  rr.set_name("echo");
  inference::ModelReadyResponse ready;
  auto ctx = Ctx();
  ASSERT_TRUE(stub_->ModelReady(ctx.get(), rr, &ready).ok());
  EXPECT_TRUE(ready.ready());
  rr.set_name("broken");
  ctx = Ctx();
  ASSERT_TRUE(stub_->ModelReady(ctx.get(), rr, &ready).ok());
  EXPECT_FALSE(ready.ready());

  inference::ModelMetadataRequest mr;
  mr.set_name("echo");
  inference::ModelMetadataResponse md;
  ctx = Ctx();
  ASSERT_TRUE(stub_->ModelMetadata(ctx.get(), mr, &md).ok());
  EXPECT_EQ(md.name(), "echo");
  EXPECT_EQ(md.platform(), "onnxruntime_onnx");
  ASSERT_EQ(md.inputs_size(), 1);
  EXPECT_EQ(md.inputs(0).datatype(), "FP32");
  EXPECT_THAT(md.inputs(0).shape(), ::testing::ElementsAre(-1, 2));

  inference::ModelConfigRequest cr;
  cr.set_name("echo");
  inference::ModelConfigResponse config;
  ctx = Ctx();
  ASSERT_TRUE(stub_->ModelConfig(ctx.get(), cr, &config).ok());
  EXPECT_EQ(config.config().name(), "echo");
  EXPECT_EQ(config.config().max_batch_size(), 8);

  inference::ModelStatisticsResponse stats;
  ctx = Ctx();
  ASSERT_TRUE(stub_->ModelStatistics(ctx.get(), {}, &stats).ok());
  EXPECT_EQ(stats.model_stats_size(), 2);
}

TEST_F(GrpcServerTest, UnknownModelIsNotFoundEverywhere) {
  inference::ModelMetadataRequest mr;
  mr.set_name("nope");
  inference::ModelMetadataResponse md;
  auto ctx = Ctx();
  auto st = stub_->ModelMetadata(ctx.get(), mr, &md);
  EXPECT_EQ(st.error_code(), ::grpc::StatusCode::NOT_FOUND);
  EXPECT_THAT(st.error_message(), HasSubstr("nope"));

  auto req = EchoRequest();
  req.set_model_name("nope");
  inference::ModelInferResponse resp;
  ctx = Ctx();
  EXPECT_EQ(stub_->ModelInfer(ctx.get(), req, &resp).error_code(), ::grpc::StatusCode::NOT_FOUND);

  inference::ModelConfigRequest cr;
  cr.set_name("nope");
  inference::ModelConfigResponse config;
  ctx = Ctx();
  EXPECT_EQ(stub_->ModelConfig(ctx.get(), cr, &config).error_code(), ::grpc::StatusCode::NOT_FOUND);
  ExpectAlive();
}

TEST_F(GrpcServerTest, RepositoryIndexLoadAndUnload) {
  inference::RepositoryIndexResponse index;
  auto ctx = Ctx();
  ASSERT_TRUE(stub_->RepositoryIndex(ctx.get(), {}, &index).ok());
  ASSERT_EQ(index.models_size(), 2);
  EXPECT_EQ(index.models(0).name(), "broken");
  EXPECT_EQ(index.models(0).state(), "UNAVAILABLE");
  EXPECT_EQ(index.models(0).reason(), "failed to load");
  inference::RepositoryIndexRequest ready_only;
  ready_only.set_ready(true);
  ctx = Ctx();
  ASSERT_TRUE(stub_->RepositoryIndex(ctx.get(), ready_only, &index).ok());
  ASSERT_EQ(index.models_size(), 1);
  EXPECT_EQ(index.models(0).state(), "READY");

  inference::RepositoryModelLoadRequest load;
  load.set_model_name("echo");
  inference::RepositoryModelLoadResponse loaded;
  ctx = Ctx();
  EXPECT_TRUE(stub_->RepositoryModelLoad(ctx.get(), load, &loaded).ok());
  inference::RepositoryModelUnloadRequest unload;
  unload.set_model_name("echo");
  inference::RepositoryModelUnloadResponse unloaded;
  ctx = Ctx();
  EXPECT_TRUE(stub_->RepositoryModelUnload(ctx.get(), unload, &unloaded).ok());

  load.set_model_name("nope");
  ctx = Ctx();
  EXPECT_EQ(stub_->RepositoryModelLoad(ctx.get(), load, &loaded).error_code(), ::grpc::StatusCode::NOT_FOUND);
  load.set_model_name("echo");
  // Issue 10: config as string_param, file: as bytes_param reach the server.
  (*load.mutable_parameters())["config"].set_string_param("{}");
  (*load.mutable_parameters())["file:1/model.onnx"].set_bytes_param(std::string("on\0nx", 5));
  ctx = Ctx();
  auto st = stub_->RepositoryModelLoad(ctx.get(), load, &loaded);
  EXPECT_TRUE(st.ok()) << st.error_message();
  EXPECT_EQ(fake_.last_load_parameters().config_json.value_or(""), "{}");
  EXPECT_EQ(fake_.last_load_parameters().files.at("1/model.onnx"), std::string("on\0nx", 5));
  (*load.mutable_parameters())["file:1/model.onnx"].set_string_param("onnx");
  ctx = Ctx();
  st = stub_->RepositoryModelLoad(ctx.get(), load, &loaded);
  EXPECT_EQ(st.error_code(), ::grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(st.error_message(), HasSubstr("'file:1/model.onnx' must be a bytes_param"));
  load.clear_parameters();
  (*load.mutable_parameters())["priority"].set_int64_param(1);
  ctx = Ctx();
  st = stub_->RepositoryModelLoad(ctx.get(), load, &loaded);
  EXPECT_EQ(st.error_code(), ::grpc::StatusCode::UNIMPLEMENTED);
  EXPECT_THAT(st.error_message(), HasSubstr("'priority'"));
}

// Issue 25: a reason may name the files a load failed on; over gRPC as over
// HTTP, it reaches the client through protocol::ClientText.
TEST_F(GrpcServerTest, Issue25RepositoryIndexReasonsHoldNoServerPath) {
  fake_.SetClientTextRoots({"/srv/models"});
  fake_.SetBrokenReason("failed to load /srv/models/broken/1/model.onnx: Protobuf parsing failed; also read "
                        "/etc/ortgpu/secret.pbtxt");
  inference::RepositoryIndexResponse index;
  auto ctx = Ctx();
  ASSERT_TRUE(stub_->RepositoryIndex(ctx.get(), {}, &index).ok());
  ASSERT_EQ(index.models(0).name(), "broken");
  EXPECT_EQ(index.models(0).reason(),
            "failed to load broken/1/model.onnx: Protobuf parsing failed; also read secret.pbtxt");
}

// Issue 25: an exception escaping a handler (a bug) answers the call with a
// clear error, whatever the RPC, and the server keeps serving.
TEST_F(GrpcServerTest, Issue25AHandlerThatThrowsAnswersInternalAndTheServerKeepsServing) {
  fake_.SetClientTextRoots({"/srv/models"});
  fake_.ThrowRuntimeErrors(true);
  auto expect_internal = [](const ::grpc::Status& st, const std::string& rpc) {
    EXPECT_EQ(st.error_code(), ::grpc::StatusCode::INTERNAL) << rpc << ": " << st.error_message();
    EXPECT_THAT(st.error_message(), HasSubstr("unexpected error handling this " + rpc + " call"));
    EXPECT_THAT(st.error_message(), HasSubstr("inconsistent state reading echo/1/model.onnx"));
    EXPECT_THAT(st.error_message(), ::testing::Not(HasSubstr("/srv/models")));
  };
  inference::ModelMetadataRequest md_req;
  md_req.set_name("echo");
  inference::ModelMetadataResponse md;
  auto ctx = Ctx();
  expect_internal(stub_->ModelMetadata(ctx.get(), md_req, &md), "ModelMetadata");
  inference::ModelInferResponse resp;
  ctx = Ctx();
  expect_internal(stub_->ModelInfer(ctx.get(), EchoRequest(), &resp), "ModelInfer");
  inference::RepositoryModelLoadRequest load;
  load.set_model_name("echo");
  inference::RepositoryModelLoadResponse loaded;
  ctx = Ctx();
  expect_internal(stub_->RepositoryModelLoad(ctx.get(), load, &loaded), "RepositoryModelLoad");
  ctx = Ctx();
  auto stream = stub_->ModelStreamInfer(ctx.get());
  ASSERT_TRUE(stream->Write(EchoRequest()));
  ASSERT_TRUE(stream->WritesDone());
  inference::ModelStreamInferResponse streamed;
  ASSERT_TRUE(stream->Read(&streamed));
  EXPECT_THAT(streamed.error_message(), HasSubstr("unexpected error handling this ModelStreamInfer call"));
  EXPECT_TRUE(stream->Finish().ok());

  fake_.ThrowRuntimeErrors(false);
  fake_.ThrowBadAllocOnInfer(true);
  ctx = Ctx();
  auto st = stub_->ModelInfer(ctx.get(), EchoRequest(), &resp);
  EXPECT_EQ(st.error_code(), ::grpc::StatusCode::RESOURCE_EXHAUSTED) << st.error_message();
  EXPECT_THAT(st.error_message(), HasSubstr("ran out of memory handling this ModelInfer call"));
  fake_.ThrowBadAllocOnInfer(false);

  ExpectAlive();
  ctx = Ctx();
  st = stub_->ModelInfer(ctx.get(), EchoRequest(), &resp);
  EXPECT_TRUE(st.ok()) << st.error_message();
  ctx = Ctx();
  EXPECT_TRUE(stub_->ModelMetadata(ctx.get(), md_req, &md).ok());
}

TEST_F(GrpcServerTest, ModelInferRawContentsRoundTrip) {
  inference::ModelInferResponse resp;
  auto ctx = Ctx();
  auto st = stub_->ModelInfer(ctx.get(), EchoRequest({3.25f, -1.0f}), &resp);
  ASSERT_TRUE(st.ok()) << st.error_message();
  EXPECT_EQ(resp.model_name(), "echo");
  EXPECT_EQ(resp.model_version(), "1");
  EXPECT_EQ(resp.id(), "r1");
  ASSERT_EQ(resp.outputs_size(), 1);
  EXPECT_EQ(resp.outputs(0).name(), "x");
  EXPECT_EQ(resp.outputs(0).datatype(), "FP32");
  EXPECT_THAT(resp.outputs(0).shape(), ::testing::ElementsAre(1, 2));
  ASSERT_EQ(resp.raw_output_contents_size(), 1);
  float out[2];
  ASSERT_EQ(resp.raw_output_contents(0).size(), sizeof out);
  std::memcpy(out, resp.raw_output_contents(0).data(), sizeof out);
  EXPECT_EQ(out[0], 3.25f);
  EXPECT_EQ(out[1], -1.0f);
}

// ModelInfer runs on completion queues (AsyncInferQueues): many calls at
// once over two busy-polling queues, small responses completed inline and
// large ones (over 64 KiB) through the encoding pool, each answered once with
// its own values.
TEST_F(GrpcServerTest, ConcurrentInfersOnBusyPollingQueuesEachGetTheirOwnAnswer) {
  GrpcOptions options;
  options.poller_threads = 2;
  options.busy_poll = 200us;
  StartServer(options);
  constexpr int kCalls = 48;
  struct Call {
    ::grpc::ClientContext ctx;
    inference::ModelInferResponse resp;
    ::grpc::Status status;
    std::vector<float> sent;
  };
  std::vector<std::unique_ptr<Call>> calls;
  std::mutex mu;
  std::condition_variable cv;
  int done = 0;
  for (int i = 0; i < kCalls; ++i) {
    auto c = std::make_unique<Call>();
    c->ctx.set_deadline(std::chrono::system_clock::now() + 10s);
    // Every fourth call echoes 20,000 floats (80 KB): encoded off the worker.
    c->sent.assign(i % 4 == 0 ? 20'000 : 2, static_cast<float>(i));
    calls.push_back(std::move(c));
  }
  std::vector<inference::ModelInferRequest> requests;
  for (auto& c : calls) requests.push_back(EchoRequest(c->sent));
  for (int i = 0; i < kCalls; ++i) {
    Call* c = calls[static_cast<size_t>(i)].get();
    stub_->async()->ModelInfer(&c->ctx, &requests[static_cast<size_t>(i)], &c->resp, [&, c](::grpc::Status st) {
      std::lock_guard lock(mu);
      c->status = st;
      ++done;
      cv.notify_all();
    });
  }
  std::unique_lock lock(mu);
  ASSERT_TRUE(cv.wait_for(lock, 20s, [&] { return done == kCalls; })) << done << " of " << kCalls << " answered";
  for (const auto& c : calls) {
    ASSERT_TRUE(c->status.ok()) << c->status.error_message();
    ASSERT_EQ(c->resp.raw_output_contents_size(), 1);
    const std::string& raw = c->resp.raw_output_contents(0);
    ASSERT_EQ(raw.size(), c->sent.size() * sizeof(float));
    std::vector<float> got(c->sent.size());
    std::memcpy(got.data(), raw.data(), raw.size());
    EXPECT_EQ(got, c->sent);
  }
  lock.unlock();
  EXPECT_TRUE(server_->WaitIdle(10s));
  ExpectAlive();
}

TEST_F(GrpcServerTest, ModelInferTypedContentsAndParameters) {
  inference::ModelInferRequest req;
  req.set_model_name("echo");
  (*req.mutable_parameters())["priority"].set_int64_param(2);
  auto* in = req.add_inputs();
  in->set_name("x");
  in->set_datatype("FP32");
  in->add_shape(2);
  in->mutable_contents()->add_fp32_contents(7.0f);
  in->mutable_contents()->add_fp32_contents(8.0f);
  inference::ModelInferResponse resp;
  auto ctx = Ctx();
  auto st = stub_->ModelInfer(ctx.get(), req, &resp);
  ASSERT_TRUE(st.ok()) << st.error_message();
  ASSERT_EQ(resp.raw_output_contents_size(), 1);
  float out[2];
  std::memcpy(out, resp.raw_output_contents(0).data(), sizeof out);
  EXPECT_EQ(out[1], 8.0f);
  EXPECT_EQ(fake_.last_request().parameters.at("priority"), "2");
}

TEST_F(GrpcServerTest, ClassificationReturnsTheTopClassesAsBytes) {
  auto req = EchoRequest({0.5f, 3.0f});
  auto* out = req.add_outputs();
  out->set_name("x");
  (*out->mutable_parameters())["classification"].set_int64_param(2);
  inference::ModelInferResponse resp;
  auto ctx = Ctx();
  auto st = stub_->ModelInfer(ctx.get(), req, &resp);
  ASSERT_TRUE(st.ok()) << st.error_message();
  EXPECT_EQ(resp.outputs(0).datatype(), "BYTES");
  EXPECT_THAT(resp.outputs(0).shape(), ::testing::ElementsAre(1, 2));
  EXPECT_EQ(resp.raw_output_contents(0), std::string("\x03\0\0\0", 4) + "3:1" + std::string("\x05\0\0\0", 4) +
                                             "0.5:0");
}

TEST_F(GrpcServerTest, BadInferInputsAreInvalidArgumentAndTheServerStaysUp) {
  inference::ModelInferResponse resp;
  auto wrong_size = EchoRequest();
  wrong_size.set_raw_input_contents(0, std::string(4, '\0'));
  auto ctx = Ctx();
  auto st = stub_->ModelInfer(ctx.get(), wrong_size, &resp);
  EXPECT_EQ(st.error_code(), ::grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(st.error_message(), HasSubstr("input 'x': raw_input_contents holds 4 bytes"));

  auto two_raws = EchoRequest();
  two_raws.add_raw_input_contents("abcd");
  ctx = Ctx();
  st = stub_->ModelInfer(ctx.get(), two_raws, &resp);
  EXPECT_EQ(st.error_code(), ::grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(st.error_message(), HasSubstr("1 inputs outside shared memory but 2 raw_input_contents"));

  auto bad_type = EchoRequest();
  bad_type.mutable_inputs(0)->set_datatype("FLOAT");
  ctx = Ctx();
  st = stub_->ModelInfer(ctx.get(), bad_type, &resp);
  EXPECT_EQ(st.error_code(), ::grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(st.error_message(), HasSubstr("unknown datatype 'FLOAT'"));

  auto no_model = EchoRequest();
  no_model.clear_model_name();
  ctx = Ctx();
  EXPECT_EQ(stub_->ModelInfer(ctx.get(), no_model, &resp).error_code(), ::grpc::StatusCode::INVALID_ARGUMENT);

  auto broken = EchoRequest();
  broken.set_model_name("broken");
  ctx = Ctx();
  EXPECT_EQ(stub_->ModelInfer(ctx.get(), broken, &resp).error_code(), ::grpc::StatusCode::UNAVAILABLE);
  ExpectAlive();
}

TEST_F(GrpcServerTest, MalformedMessageIsRejectedAndTheServerStaysUp) {
  ::grpc::GenericStub generic(channel_);
  // Field 1 (model_name) as a length-delimited string claiming 100 bytes, with 2.
  const char garbage[] = {0x0a, 0x64, 'a', 'b'};
  ::grpc::Slice slice(garbage, sizeof garbage);
  ::grpc::ByteBuffer request(&slice, 1);
  ::grpc::ByteBuffer response;
  auto ctx = Ctx();
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  ::grpc::Status status;
  generic.UnaryCall(ctx.get(), "/inference.GRPCInferenceService/ModelInfer", {}, &request, &response,
                    [&](::grpc::Status s) {
                      std::lock_guard lock(mu);
                      status = s;
                      done = true;
                      cv.notify_all();
                    });
  std::unique_lock lock(mu);
  ASSERT_TRUE(cv.wait_for(lock, 10s, [&] { return done; }));
  EXPECT_FALSE(status.ok());
  EXPECT_NE(status.error_code(), ::grpc::StatusCode::UNAVAILABLE);
  lock.unlock();
  ExpectAlive();
}

TEST_F(GrpcServerTest, MessagesOverTheLimitAreResourceExhausted) {
  GrpcOptions small;
  small.max_message_bytes = 1024;
  StartServer(small);
  inference::ModelInferResponse resp;
  auto ctx = Ctx();
  auto st = stub_->ModelInfer(ctx.get(), EchoRequest(std::vector<float>(1024, 1.0f)), &resp);
  EXPECT_EQ(st.error_code(), ::grpc::StatusCode::RESOURCE_EXHAUSTED);
  ExpectAlive();
}

TEST_F(GrpcServerTest, StreamInferAnswersEachRequestAndCarriesErrorsInTheStream) {
  auto ctx = Ctx();
  auto stream = stub_->ModelStreamInfer(ctx.get());
  auto a = EchoRequest({1.0f, 2.0f});
  a.set_id("a");
  auto bad = EchoRequest();
  bad.set_id("bad");
  bad.set_raw_input_contents(0, "xy");
  auto b = EchoRequest({3.0f, 4.0f});
  b.set_id("b");
  ASSERT_TRUE(stream->Write(a));
  ASSERT_TRUE(stream->Write(bad));
  ASSERT_TRUE(stream->Write(b));
  ASSERT_TRUE(stream->WritesDone());
  std::set<std::string> ids;
  int errors = 0;
  inference::ModelStreamInferResponse r;
  while (stream->Read(&r)) {
    if (!r.error_message().empty()) {
      ++errors;
      EXPECT_THAT(r.error_message(), HasSubstr("raw_input_contents holds 2 bytes"));
    } else {
      ids.insert(r.infer_response().id());
      EXPECT_EQ(r.infer_response().raw_output_contents_size(), 1);
    }
  }
  EXPECT_TRUE(stream->Finish().ok());
  EXPECT_EQ(errors, 1);
  EXPECT_EQ(ids, (std::set<std::string>{"a", "b"}));
}

TEST_F(GrpcServerTest, ClientDeadlineTravelsWithTheRequest) {
  fake_.HoldInfers(true);
  inference::ModelInferResponse resp;
  auto ctx = Ctx(200ms);
  std::thread release([&] {
    fake_.WaitForParked(1);
    EXPECT_GT(fake_.last_request().deadline_ns, 0);
  });
  auto st = stub_->ModelInfer(ctx.get(), EchoRequest(), &resp);
  release.join();
  EXPECT_EQ(st.error_code(), ::grpc::StatusCode::DEADLINE_EXCEEDED);
  fake_.ReleaseAll();
  EXPECT_TRUE(server_->WaitIdle(10s));
  ExpectAlive();
}

TEST_F(GrpcServerTest, DrainRefusesNewInfersAndWaitsForThoseInFlight) {
  fake_.HoldInfers(true);
  inference::ModelInferResponse held_resp;
  ::grpc::Status held_status;
  auto held_ctx = Ctx();
  std::thread held([&] { held_status = stub_->ModelInfer(held_ctx.get(), EchoRequest(), &held_resp); });
  fake_.WaitForParked(1);
  EXPECT_EQ(server_->in_flight(), 1);
  server_->BeginDrain();

  inference::ServerReadyResponse ready;
  auto ctx = Ctx();
  ASSERT_TRUE(stub_->ServerReady(ctx.get(), {}, &ready).ok());
  EXPECT_FALSE(ready.ready());
  inference::ModelInferResponse resp;
  ctx = Ctx();
  EXPECT_EQ(stub_->ModelInfer(ctx.get(), EchoRequest(), &resp).error_code(), ::grpc::StatusCode::UNAVAILABLE);
  EXPECT_FALSE(server_->WaitIdle(0ms));

  fake_.ReleaseAll();
  held.join();
  EXPECT_TRUE(held_status.ok()) << held_status.error_message();
  EXPECT_TRUE(server_->WaitIdle(10s));
  server_->Stop();
}

TEST_F(GrpcServerTest, LogSettingsChangeTheLogLevelAtRunTime) {
  const auto before = spdlog::get_level();
  inference::LogSettingsResponse resp;
  auto ctx = Ctx();
  ASSERT_TRUE(stub_->LogSettings(ctx.get(), {}, &resp).ok());
  EXPECT_EQ(resp.settings().at("log_file").string_param(), "");
  EXPECT_TRUE(resp.settings().count("log_verbose_level"));

  inference::LogSettingsRequest req;
  (*req.mutable_settings())["log_verbose_level"].set_uint32_param(1);
  ctx = Ctx();
  ASSERT_TRUE(stub_->LogSettings(ctx.get(), req, &resp).ok());
  EXPECT_EQ(resp.settings().at("log_verbose_level").uint32_param(), 1u);
  EXPECT_EQ(spdlog::get_level(), spdlog::level::debug);

  inference::LogSettingsRequest bad;
  (*bad.mutable_settings())["log_colour"].set_bool_param(true);
  ctx = Ctx();
  auto st = stub_->LogSettings(ctx.get(), bad, &resp);
  EXPECT_EQ(st.error_code(), ::grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(st.error_message(), HasSubstr("log_colour"));
  spdlog::set_level(before);
}

TEST_F(GrpcServerTest, TraceSettingsAreKeptPerModelAndTracingIsUnimplemented) {
  inference::TraceSettingResponse resp;
  auto ctx = Ctx();
  ASSERT_TRUE(stub_->TraceSetting(ctx.get(), {}, &resp).ok());
  EXPECT_EQ(resp.settings().at("trace_level").value(0), "OFF");

  inference::TraceSettingRequest req;
  req.set_model_name("echo");
  (*req.mutable_settings())["trace_rate"].add_value("5");
  ctx = Ctx();
  ASSERT_TRUE(stub_->TraceSetting(ctx.get(), req, &resp).ok());
  EXPECT_EQ(resp.settings().at("trace_rate").value(0), "5");
  ctx = Ctx();
  ASSERT_TRUE(stub_->TraceSetting(ctx.get(), {}, &resp).ok());
  EXPECT_EQ(resp.settings().at("trace_rate").value(0), "1000");

  inference::TraceSettingRequest on;
  (*on.mutable_settings())["trace_level"].add_value("TIMESTAMPS");
  ctx = Ctx();
  EXPECT_EQ(stub_->TraceSetting(ctx.get(), on, &resp).error_code(), ::grpc::StatusCode::UNIMPLEMENTED);

  req.set_model_name("nope");
  ctx = Ctx();
  EXPECT_EQ(stub_->TraceSetting(ctx.get(), req, &resp).error_code(), ::grpc::StatusCode::NOT_FOUND);
}

// An infer of "echo" whose [1, 2] FP32 input is the first 8 bytes of
// `region` and whose output goes to `output_offset` in it.
inference::ModelInferRequest EchoThroughRegion(const std::string& region, int64_t output_offset) {
  inference::ModelInferRequest req;
  req.set_model_name("echo");
  auto* input = req.add_inputs();
  input->set_name("x");
  input->set_datatype("FP32");
  input->add_shape(1);
  input->add_shape(2);
  (*input->mutable_parameters())["shared_memory_region"].set_string_param(region);
  (*input->mutable_parameters())["shared_memory_byte_size"].set_int64_param(8);
  auto* output = req.add_outputs();
  output->set_name("x");
  (*output->mutable_parameters())["shared_memory_region"].set_string_param(region);
  (*output->mutable_parameters())["shared_memory_byte_size"].set_int64_param(8);
  (*output->mutable_parameters())["shared_memory_offset"].set_int64_param(output_offset);
  return req;
}

TEST_F(GrpcServerTest, SystemSharedMemoryCarriesInputsAndOutputs) {
  ShmObject shm(64);
  const float in[2] = {4.5f, -7.0f};
  std::memcpy(shm.bytes(), in, sizeof in);

  inference::SystemSharedMemoryRegisterRequest reg;
  reg.set_name("r0");
  reg.set_key(shm.key());
  reg.set_byte_size(64);
  inference::SystemSharedMemoryRegisterResponse reg_resp;
  auto ctx = Ctx();
  ASSERT_TRUE(stub_->SystemSharedMemoryRegister(ctx.get(), reg, &reg_resp).ok());
  ctx = Ctx();
  EXPECT_EQ(stub_->SystemSharedMemoryRegister(ctx.get(), reg, &reg_resp).error_code(),
            ::grpc::StatusCode::ALREADY_EXISTS);

  inference::SystemSharedMemoryStatusResponse status;
  ctx = Ctx();
  ASSERT_TRUE(stub_->SystemSharedMemoryStatus(ctx.get(), {}, &status).ok());
  ASSERT_EQ(status.regions().count("r0"), 1u);
  EXPECT_EQ(status.regions().at("r0").key(), shm.key());
  EXPECT_EQ(status.regions().at("r0").byte_size(), 64u);

  // Input from bytes 0-7, output into bytes 16-23.
  inference::ModelInferRequest req = EchoThroughRegion("r0", 16);
  inference::ModelInferResponse resp;
  ctx = Ctx();
  auto st = stub_->ModelInfer(ctx.get(), req, &resp);
  ASSERT_TRUE(st.ok()) << st.error_message();
  ASSERT_EQ(resp.outputs_size(), 1);
  EXPECT_EQ(resp.outputs(0).parameters().at("shared_memory_region").string_param(), "r0");
  EXPECT_EQ(resp.outputs(0).parameters().at("shared_memory_byte_size").int64_param(), 8);
  ASSERT_EQ(resp.raw_output_contents_size(), 1);
  EXPECT_TRUE(resp.raw_output_contents(0).empty());
  float out[2];
  std::memcpy(out, shm.bytes() + 16, sizeof out);
  EXPECT_EQ(out[0], 4.5f);
  EXPECT_EQ(out[1], -7.0f);

  // An output larger than its region's byte size is refused, saying so.
  (*req.mutable_outputs(0)->mutable_parameters())["shared_memory_byte_size"].set_int64_param(4);
  ctx = Ctx();
  st = stub_->ModelInfer(ctx.get(), req, &resp);
  EXPECT_EQ(st.error_code(), ::grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(st.error_message(), HasSubstr("larger shared_memory_byte_size"));

  inference::SystemSharedMemoryUnregisterRequest unreg;
  unreg.set_name("r0");
  inference::SystemSharedMemoryUnregisterResponse unreg_resp;
  ctx = Ctx();
  ASSERT_TRUE(stub_->SystemSharedMemoryUnregister(ctx.get(), unreg, &unreg_resp).ok());
  ctx = Ctx();
  st = stub_->ModelInfer(ctx.get(), req, &resp);
  EXPECT_EQ(st.error_code(), ::grpc::StatusCode::NOT_FOUND);
  EXPECT_THAT(st.error_message(), HasSubstr("Unable to find shared memory region: 'r0'"));
  ExpectAlive();
}

// CUDA shared memory over gRPC, the device memory faked on the host: the
// raw cudaIpcMemHandle bytes register a region whose memory the input is
// read from and the output written into.
TEST_F(GrpcServerTest, CudaSharedMemoryCarriesInputsAndOutputs) {
  auto ipc = std::make_shared<ortgpu::testing::FakeCudaIpc>();
  settings_.system_shm.SetCudaIpc(ipc);
  const std::string handle = ipc->Export(32, /*device=*/0);
  const float in[2] = {3.0f, 0.5f};
  std::memcpy(ipc->Memory(handle).data(), in, sizeof in);
  inference::CudaSharedMemoryRegisterRequest reg;
  reg.set_name("g0");
  reg.set_raw_handle(handle);
  reg.set_device_id(0);
  reg.set_byte_size(32);
  inference::CudaSharedMemoryRegisterResponse reg_resp;
  auto ctx = Ctx();
  auto st = stub_->CudaSharedMemoryRegister(ctx.get(), reg, &reg_resp);
  ASSERT_TRUE(st.ok()) << st.error_message();
  inference::CudaSharedMemoryStatusResponse status;
  ctx = Ctx();
  ASSERT_TRUE(stub_->CudaSharedMemoryStatus(ctx.get(), {}, &status).ok());
  ASSERT_EQ(status.regions().count("g0"), 1u);
  EXPECT_EQ(status.regions().at("g0").byte_size(), 32u);
  EXPECT_EQ(status.regions().at("g0").device_id(), 0u);

  inference::ModelInferRequest req = EchoThroughRegion("g0", 8);
  inference::ModelInferResponse resp;
  ctx = Ctx();
  st = stub_->ModelInfer(ctx.get(), req, &resp);
  ASSERT_TRUE(st.ok()) << st.error_message();
  float out[2];
  std::memcpy(out, ipc->Memory(handle).data() + 8, sizeof out);
  EXPECT_EQ(out[0], 3.0f);
  EXPECT_EQ(out[1], 0.5f);
  EXPECT_EQ(ipc->to_host_count(), 0);  // the input stayed on the "device" (issue 10)

  inference::CudaSharedMemoryUnregisterRequest unreg;
  unreg.set_name("g0");
  inference::CudaSharedMemoryUnregisterResponse unreg_resp;
  ctx = Ctx();
  ASSERT_TRUE(stub_->CudaSharedMemoryUnregister(ctx.get(), unreg, &unreg_resp).ok());
  EXPECT_EQ(ipc->open_count(), 0);
  ExpectAlive();
}

TEST_F(GrpcServerTest, SharedMemoryErrorsAreClear) {
  inference::SystemSharedMemoryStatusRequest named;
  named.set_name("r9");
  inference::SystemSharedMemoryStatusResponse status;
  auto ctx = Ctx();
  EXPECT_EQ(stub_->SystemSharedMemoryStatus(ctx.get(), named, &status).error_code(), ::grpc::StatusCode::NOT_FOUND);
  inference::SystemSharedMemoryRegisterRequest reg;
  reg.set_name("r9");
  reg.set_key("/ortgpu-no-such-object");
  reg.set_byte_size(8);
  inference::SystemSharedMemoryRegisterResponse reg_resp;
  ctx = Ctx();
  auto st = stub_->SystemSharedMemoryRegister(ctx.get(), reg, &reg_resp);
  EXPECT_EQ(st.error_code(), ::grpc::StatusCode::NOT_FOUND);
  EXPECT_THAT(st.error_message(), HasSubstr("Unable to open shared memory region: '/ortgpu-no-such-object'"));
  ShmObject shm(16);
  reg.set_key(shm.key());
  reg.set_byte_size(32);
  ctx = Ctx();
  EXPECT_EQ(stub_->SystemSharedMemoryRegister(ctx.get(), reg, &reg_resp).error_code(),
            ::grpc::StatusCode::INVALID_ARGUMENT);

  inference::CudaSharedMemoryStatusResponse cuda;
  ctx = Ctx();
  EXPECT_TRUE(stub_->CudaSharedMemoryStatus(ctx.get(), {}, &cuda).ok());
  inference::CudaSharedMemoryRegisterResponse cuda_reg;
  ctx = Ctx();
  EXPECT_EQ(stub_->CudaSharedMemoryRegister(ctx.get(), {}, &cuda_reg).error_code(),
            ::grpc::StatusCode::INVALID_ARGUMENT);  // no name
}

// With --auth-token-file the RPCs whose HTTP endpoints need the token need
// it as metadata; the others (health, inference) do not.
TEST_F(GrpcServerTest, TheBearerTokenGuardsRepositoryLoggingTraceAndSharedMemoryRpcs) {
  GrpcOptions o;
  o.port = 0;
  o.auth_token = "s3cret";
  auto guarded = GrpcServer::Start(fake_, settings_, o);
  ASSERT_TRUE(guarded.ok()) << guarded.status().ToString();
  auto channel = ::grpc::CreateChannel("127.0.0.1:" + std::to_string((*guarded)->port()),
                                       ::grpc::InsecureChannelCredentials());
  auto stub = inference::GRPCInferenceService::NewStub(channel);
  inference::RepositoryIndexResponse index;
  auto ctx = Ctx();
  auto st = stub->RepositoryIndex(ctx.get(), {}, &index);
  EXPECT_EQ(st.error_code(), ::grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_THAT(st.error_message(), HasSubstr("authorization: Bearer <token>"));
  ctx = Ctx();
  ctx->AddMetadata("authorization", "Bearer wrong");
  st = stub->RepositoryIndex(ctx.get(), {}, &index);
  EXPECT_EQ(st.error_code(), ::grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_THAT(st.error_message(), HasSubstr("the token sent is wrong"));
  ctx = Ctx();
  ctx->AddMetadata("authorization", "Bearer s3cret");
  EXPECT_TRUE(stub->RepositoryIndex(ctx.get(), {}, &index).ok());
  inference::LogSettingsResponse logs;
  ctx = Ctx();
  EXPECT_EQ(stub->LogSettings(ctx.get(), {}, &logs).error_code(), ::grpc::StatusCode::UNAUTHENTICATED);
  inference::SystemSharedMemoryRegisterResponse reg;
  ctx = Ctx();
  EXPECT_EQ(stub->SystemSharedMemoryRegister(ctx.get(), {}, &reg).error_code(), ::grpc::StatusCode::UNAUTHENTICATED);
  // Health and status need no token.
  inference::ServerLiveResponse live;
  ctx = Ctx();
  EXPECT_TRUE(stub->ServerLive(ctx.get(), {}, &live).ok());
  inference::SystemSharedMemoryStatusResponse shm_status;
  ctx = Ctx();
  EXPECT_TRUE(stub->SystemSharedMemoryStatus(ctx.get(), {}, &shm_status).ok());
  (*guarded)->Stop();
}

TEST_F(GrpcServerTest, BusyPortIsUnavailableNamingTheFlag) {
  GrpcOptions o;
  o.port = server_->port();
  auto second = GrpcServer::Start(fake_, settings_, o);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), Code::kUnavailable);
  EXPECT_THAT(second.status().message(), HasSubstr("--grpc-port"));
}

}  // namespace
}  // namespace ortgpu::serve
