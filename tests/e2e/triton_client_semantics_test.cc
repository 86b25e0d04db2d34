// Issue 25, end to end: what Triton's own clients and QA tests (Triton
// server e1db8a6: qa/L0_http/http_test.py and test.sh; the client's
// tritonclient/http/_infer_result.py and src/c++/library/http_client.cc)
// expect of a Triton server, asked of `ortgpu serve` (the real binary, on
// port 0) over real sockets: raw binary requests and their binary answers,
// binary_data against binary_data_output, outputs in shared memory over
// HTTP and gRPC, and a client that half-closes its side. Every wait has a
// deadline; nothing sleeps.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <grpcpp/grpcpp.h>
#include <nlohmann/json.hpp>

#include "e2e/serve_process.h"
#include "grpc_service.grpc.pb.h"
#include "onnx/model_builder.h"
#include "serve/http/test_http_client.h"
#include "support/shm_object.h"

namespace ortgpu::e2e {
namespace {

namespace fs = std::filesystem;
using serve::testing::HttpResult;
using serve::testing::TestHttpClient;
using ::testing::HasSubstr;
using namespace std::chrono_literals;

const std::string kExamples = std::string(ORTGPU_SOURCE_DIR) + "/examples/model_repository";

// An Identity model of one input as Triton's QA "zero" models are: INPUT0 ->
// OUTPUT0 with the batch dim and `dims`, max_batch_size 8.
void WriteIdentityModel(const fs::path& repo, const std::string& name, DataType type, const std::vector<int64_t>& dims) {
  fs::create_directories(repo / name / "1");
  onnx::ModelBuilder b;
  std::vector<int64_t> shape = {-1};
  std::vector<std::string> names = {"batch"};
  for (size_t i = 0; i < dims.size(); ++i) {
    shape.push_back(dims[i]);
    names.push_back(dims[i] < 0 ? "d" + std::to_string(i) : "");
  }
  b.AddInput("INPUT0", type, shape, names);
  b.AddOutput("OUTPUT0", type, shape, names);
  b.AddNode("Identity", {"INPUT0"}, {"OUTPUT0"});
  std::ofstream(repo / name / "1" / "model.onnx", std::ios::binary) << b.Serialize();
  std::ofstream(repo / name / "config.pbtxt") << "max_batch_size: 8\ninstance_group [ { count: 1 kind: KIND_CPU } ]\n";
}

// The example repository (add_sub), Triton's QA zero models, and add_sub
// with a long batching delay (a request stays queued for 300 ms), served once
// for the suite.
class TritonClientSemantics : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    root_ = new fs::path(fs::path(::testing::TempDir()) / ("ortgpu-issue25-" + std::to_string(::getpid())));
    const fs::path repo = *root_ / "repo";
    fs::remove_all(*root_);
    fs::create_directories(repo);
    fs::copy(kExamples + "/add_sub", repo / "add_sub", fs::copy_options::recursive);
    fs::copy(kExamples + "/add_sub", repo / "add_sub_queued", fs::copy_options::recursive);
    std::ifstream in(repo / "add_sub" / "config.pbtxt");
    std::string config((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    config.replace(config.find("name: \"add_sub\""), 15, "name: \"add_sub_queued\"");
    config.replace(config.find("preferred_batch_size: [ 4, 8 ]"), 30, "preferred_batch_size: [ 8 ]");
    config.replace(config.find("max_queue_delay_microseconds: 500"), 33, "max_queue_delay_microseconds: 300000");
    std::ofstream(repo / "add_sub_queued" / "config.pbtxt") << config;
    WriteIdentityModel(repo, "onnx_zero_1_float32", DataType::kFloat, {-1});
    WriteIdentityModel(repo, "onnx_zero_1_float16", DataType::kFloat16, {-1, -1});
    WriteIdentityModel(repo, "onnx_zero_1_object_1_element", DataType::kString, {1});
    server_ = new ServeProcess({"serve", "--model-repository", repo.string(), "--http-port", "0", "--metrics-port",
                                "-1", "--grpc-port", "0", "--cpu"});
    ASSERT_TRUE(server_->WaitForPorts(60s)) << server_->output();
  }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
    fs::remove_all(*root_);
    delete root_;
  }
  static uint16_t port() { return server_->http_port; }
  // Triton's _raw_binary_helper: the body is the input; the outputs follow
  // Inference-Header-Content-Length bytes of JSON.
  static HttpResult RawBinary(const std::string& model, const std::string& body) {
    return TestHttpClient(port()).Post("/v2/models/" + model + "/infer", body,
                                       {{"Inference-Header-Content-Length", "0"}});
  }
  static std::string AfterHeader(const HttpResult& r) {
    const std::string length = r.header("Inference-Header-Content-Length");
    return length.empty() ? std::string("(no Inference-Header-Content-Length)") : r.body.substr(std::stoul(length));
  }

  static fs::path* root_;
  static ServeProcess* server_;
};
fs::path* TritonClientSemantics::root_ = nullptr;
ServeProcess* TritonClientSemantics::server_ = nullptr;

std::string FloatBytes(int n) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) v[static_cast<size_t>(i)] = static_cast<float>(i);
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(float));
}

// test_raw_binary, test_raw_binary_longer and test_byte of L0_http: ortgpu
// answered JSON, and the tests failed with KeyError on the header.
TEST_F(TritonClientSemantics, Issue25RawBinaryRequestGetsBinaryResponse) {
  for (int n : {8, 32}) {
    HttpResult r = RawBinary("onnx_zero_1_float32", FloatBytes(n));
    ASSERT_EQ(r.status, 200u) << r.body;
    EXPECT_EQ(r.header("Content-Type"), "application/octet-stream");
    EXPECT_EQ(AfterHeader(r), FloatBytes(n));
    const auto j = nlohmann::json::parse(r.body.substr(0, std::stoul(r.header("Inference-Header-Content-Length"))));
    EXPECT_EQ(j["outputs"][0]["shape"], nlohmann::json::array({1, n}));
  }
  HttpResult r = RawBinary("onnx_zero_1_object_1_element", "427");
  ASSERT_EQ(r.status, 200u) << r.body;
  EXPECT_EQ(AfterHeader(r), std::string("\x03\0\0\0", 4) + "427");  // BYTES: a 4-byte length, then the bytes
}

// test_multi_variable_dimensions: 2x2 FP16 to a model of dims [-1, -1] was
// fitted to [1, 1, 4]; Triton answers 400, and so does ortgpu now.
TEST_F(TritonClientSemantics, Issue25RawBinaryWithTwoVariableDimsIs400) {
  HttpResult r = RawBinary("onnx_zero_1_float16", std::string(8, '\0'));
  EXPECT_EQ(r.status, 400u) << r.body;
  EXPECT_THAT(r.body, HasSubstr("The shape of the raw input 'INPUT0' can not be deduced because there are more "
                                "than one variable-sized dimension"));
  EXPECT_THAT(r.body, HasSubstr("send a JSON header with the shape"));
}

// L0_http/test.sh: binary_data_output true, binary_data false on OUTPUT0 and
// nothing on OUTPUT1: Triton answers both in JSON (ortgpu sent OUTPUT1
// binary). With no outputs named, binary_data_output makes both binary.
TEST_F(TritonClientSemantics, Issue25BinaryDataFalseOnAnOutputWinsOverBinaryDataOutput) {
  const nlohmann::json inputs = {
      {{"name", "INPUT0"}, {"datatype", "FP32"}, {"shape", {1, 4}}, {"data", {1, 2, 3, 4}}},
      {{"name", "INPUT1"}, {"datatype", "FP32"}, {"shape", {1, 4}}, {"data", {1, 2, 3, 4}}}};
  nlohmann::json request = {{"parameters", {{"binary_data_output", true}}},
                            {"inputs", inputs},
                            {"outputs",
                             {{{"name", "OUTPUT0"}, {"parameters", {{"binary_data", false}}}},
                              {{"name", "OUTPUT1"}}}}};
  TestHttpClient c(port());
  HttpResult r = c.Post("/v2/models/add_sub/infer", request.dump());
  ASSERT_EQ(r.status, 200u) << r.body;
  EXPECT_EQ(r.header("Inference-Header-Content-Length"), "");
  const auto j = nlohmann::json::parse(r.body);
  ASSERT_EQ(j["outputs"].size(), 2u);
  for (const auto& o : j["outputs"]) {
    EXPECT_EQ(o["data"], o["name"] == "OUTPUT0" ? nlohmann::json({2, 4, 6, 8}) : nlohmann::json({0, 0, 0, 0}))
        << o.dump();
  }
  request.erase("outputs");
  r = c.Post("/v2/models/add_sub/infer", request.dump());
  ASSERT_EQ(r.status, 200u) << r.body;
  EXPECT_EQ(AfterHeader(r).size(), 32u);  // both outputs, 16 bytes each
}

// perf_analyzer --shared-memory system -i http: Triton's C++ HTTP client
// reads any parameters object on an output as a binary section and demands
// binary_data_size, so every request failed. The output in a region now
// comes back as Triton sends it; over gRPC it always worked, and still does.
TEST_F(TritonClientSemantics, Issue25AnOutputInSharedMemoryHasNoParametersOverHttpAndWorksOverGrpc) {
  ortgpu::testing::ShmObject shm(64);
  ASSERT_TRUE(shm.ok());
  TestHttpClient c(port());
  HttpResult r = c.Post("/v2/systemsharedmemory/region/out25/register",
                        nlohmann::json{{"key", shm.key()}, {"offset", 0}, {"byte_size", 64}}.dump());
  ASSERT_EQ(r.status, 200u) << r.body;
  const nlohmann::json request = {
      {"inputs",
       {{{"name", "INPUT0"}, {"datatype", "FP32"}, {"shape", {1, 4}}, {"data", {1, 2, 3, 4}}},
        {{"name", "INPUT1"}, {"datatype", "FP32"}, {"shape", {1, 4}}, {"data", {1, 1, 1, 1}}}}},
      {"outputs",
       {{{"name", "OUTPUT0"}, {"parameters", {{"shared_memory_region", "out25"}, {"shared_memory_byte_size", 16}}}},
        {{"name", "OUTPUT1"}, {"parameters", {{"binary_data", true}}}}}}};
  r = c.Post("/v2/models/add_sub/infer", request.dump());
  ASSERT_EQ(r.status, 200u) << r.body;
  const auto j = nlohmann::json::parse(r.body.substr(0, std::stoul(r.header("Inference-Header-Content-Length"))));
  EXPECT_EQ(j["outputs"][0], (nlohmann::json{{"name", "OUTPUT0"}, {"datatype", "FP32"}, {"shape", {1, 4}}}));
  EXPECT_EQ(j["outputs"][1]["parameters"], (nlohmann::json{{"binary_data_size", 16}}));
  float sum[4];
  std::memcpy(sum, shm.bytes(), sizeof sum);
  EXPECT_THAT(sum, ::testing::ElementsAre(2, 3, 4, 5));

  // The same output over gRPC, into the region at offset 16.
  auto channel = ::grpc::CreateChannel("127.0.0.1:" + std::to_string(server_->grpc_port),
                                       ::grpc::InsecureChannelCredentials());
  auto stub = inference::GRPCInferenceService::NewStub(channel);
  inference::ModelInferRequest req;
  req.set_model_name("add_sub");
  const std::vector<std::vector<float>> rows = {{1, 2, 3, 4}, {10, 10, 10, 10}};
  for (int i = 0; i < 2; ++i) {
    auto* in = req.add_inputs();
    in->set_name(i == 0 ? "INPUT0" : "INPUT1");
    in->set_datatype("FP32");
    in->add_shape(1);
    in->add_shape(4);
    req.add_raw_input_contents(reinterpret_cast<const char*>(rows[i].data()), 16);
  }
  auto* out = req.add_outputs();
  out->set_name("OUTPUT0");
  (*out->mutable_parameters())["shared_memory_region"].set_string_param("out25");
  (*out->mutable_parameters())["shared_memory_offset"].set_int64_param(16);
  (*out->mutable_parameters())["shared_memory_byte_size"].set_int64_param(16);
  ::grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + 20s);
  inference::ModelInferResponse resp;
  auto st = stub->ModelInfer(&ctx, req, &resp);
  ASSERT_TRUE(st.ok()) << st.error_message();
  ASSERT_EQ(resp.outputs_size(), 1);
  // In its region: an empty entry that keeps raw_output_contents aligned, and
  // the region named in the output's parameters.
  ASSERT_EQ(resp.raw_output_contents_size(), 1);
  EXPECT_EQ(resp.raw_output_contents(0), "");
  EXPECT_EQ(resp.outputs(0).parameters().at("shared_memory_region").string_param(), "out25");
  std::memcpy(sum, shm.bytes() + 16, sizeof sum);
  EXPECT_THAT(sum, ::testing::ElementsAre(11, 12, 13, 14));
  EXPECT_EQ(c.Post("/v2/systemsharedmemory/region/out25/unregister", "").status, 200u);
}

// A client that shuts down its write side after the request (nc, some
// HTTP/1.0 clients) got 503: its queued request was cancelled as if it had
// gone. It is answered now, then the connection closes.
TEST_F(TritonClientSemantics, Issue25AHalfClosedClientGetsItsAnswer) {
  const std::string body =
      R"({"inputs":[{"name":"INPUT0","datatype":"FP32","shape":[1,4],"data":[1,2,3,4]},)"
      R"({"name":"INPUT1","datatype":"FP32","shape":[1,4],"data":[1,1,1,1]}]})";
  const std::string request = "POST /v2/models/add_sub_queued/infer HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                              "Content-Type: application/json\r\nContent-Length: " +
                              std::to_string(body.size()) + "\r\n\r\n" + body;
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(fd, 0);
  timeval ten_seconds{10, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &ten_seconds, sizeof ten_seconds);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port());
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(::send(fd, request.data(), request.size(), MSG_NOSIGNAL), static_cast<ssize_t>(request.size()));
  ASSERT_EQ(::shutdown(fd, SHUT_WR), 0);  // the request waits 300 ms in the batcher's queue meanwhile
  std::string reply;
  char buf[4096];
  for (ssize_t n; (n = ::recv(fd, buf, sizeof buf, 0)) > 0;) reply.append(buf, static_cast<size_t>(n));
  ::close(fd);
  ASSERT_THAT(reply, HasSubstr("HTTP/1.1 200 OK")) << reply;
  const auto j = nlohmann::json::parse(reply.substr(reply.find("\r\n\r\n") + 4), nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << reply;
  for (const auto& o : j["outputs"]) {
    if (o["name"] == "OUTPUT0") EXPECT_EQ(o["data"], nlohmann::json({2, 3, 4, 5}));
  }
}

}  // namespace
}  // namespace ortgpu::e2e
