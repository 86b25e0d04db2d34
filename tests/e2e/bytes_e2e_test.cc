// End-to-end tests of BYTES tensors (issue 25): the real `ortgpu serve` with
// an Identity model over strings, driven as Triton's clients drive it, over
// HTTP (JSON and the binary extension), gRPC (bytes_contents and raw
// contents) and system shared memory. A BYTES element is bytes: every one
// must come back, NUL and bytes that are not UTF-8 included.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include <grpcpp/grpcpp.h>
#include <nlohmann/json.hpp>

#include "e2e/kserve_client.h"
#include "e2e/serve_process.h"
#include "grpc_service.grpc.pb.h"
#include "onnx/model_builder.h"
#include "serve/http/test_http_client.h"
#include "support/shm_object.h"

namespace ortgpu::e2e {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using serve::testing::TestHttpClient;

// Elements a JSON string can carry (UTF-8 text), NUL and control
// characters included.
const std::vector<std::string> kText = {std::string("he\0llo", 6), std::string(1, '\0'), "", "tab\t\"quote\"\\",
                                        "\xc3\xa9t\xc3\xa9"};

// Any bytes: not UTF-8, every byte value.
std::vector<std::string> AnyBytes() {
  std::string every_byte;
  for (int c = 0; c < 256; ++c) every_byte += static_cast<char>(c);
  return {std::string("he\0llo", 6), std::string("\xff\xfe\0\x80", 4), "", every_byte};
}

Tensor Text(std::vector<std::string> elements) {
  Tensor t;
  t.name = "text";
  t.dtype = DataType::kString;
  t.shape = {static_cast<int64_t>(elements.size())};
  t.strings = std::move(elements);
  return t;
}

// Each element as a 4-byte little-endian length and its bytes (Triton's
// serialized BYTES tensor).
std::string Serialized(const std::vector<std::string>& elements) {
  std::string out;
  for (const std::string& s : elements) {
    const auto n = static_cast<uint32_t>(s.size());
    const char len[4] = {static_cast<char>(n & 0xff), static_cast<char>((n >> 8) & 0xff),
                         static_cast<char>((n >> 16) & 0xff), static_cast<char>((n >> 24) & 0xff)};
    out.append(len, 4);
    out += s;
  }
  return out;
}

std::vector<std::string> Deserialized(std::string_view bytes) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (bytes.size() - pos >= 4) {
    const auto* u = reinterpret_cast<const unsigned char*>(bytes.data() + pos);
    const uint32_t n = u[0] | u[1] << 8 | u[2] << 16 | static_cast<uint32_t>(u[3]) << 24;
    pos += 4;
    if (bytes.size() - pos < n) break;
    out.emplace_back(bytes.substr(pos, n));
    pos += n;
  }
  return out;
}

class BytesAgainstServe : public ::testing::Test {
 protected:
  // A repository with "echo_bytes": text [n] (STRING) -> Identity -> echo.
  static void SetUpTestSuite() {
    root_ = new fs::path(fs::path(::testing::TempDir()) / ("ortgpu-bytes-" + std::to_string(::getpid())));
    fs::create_directories(*root_ / "echo_bytes" / "1");
    onnx::ModelBuilder b;
    b.AddInput("text", DataType::kString, {-1}, {"n"});
    b.AddOutput("echo", DataType::kString, {-1}, {"n"});
    b.AddNode("Identity", {"text"}, {"echo"});
    std::ofstream(*root_ / "echo_bytes" / "1" / "model.onnx", std::ios::binary) << b.Serialize();
    std::ofstream(*root_ / "echo_bytes" / "config.pbtxt")
        << "max_batch_size: 0\ninstance_group [ { count: 1 kind: KIND_CPU } ]\n";
    server_ = new ServeProcess({"serve", "--model-repository", root_->string(), "--http-port", "0", "--metrics-port",
                                "-1", "--grpc-port", "0", "--cpu"});
    ASSERT_TRUE(server_->WaitForPorts(60s)) << server_->output();
  }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
    fs::remove_all(*root_);
    delete root_;
  }

  // The echo of `elements` over HTTP, the request built by `encoding`.
  static Expected<std::vector<std::string>> HttpEcho(const std::vector<std::string>& elements, TensorEncoding encoding) {
    ORTGPU_ASSIGN_OR_RETURN(KServeRequest r, EncodeInferRequest({Text(elements)}, {"echo"}, encoding));
    TestHttpClient c(server_->http_port);
    ORTGPU_ASSIGN_OR_RETURN(auto outputs, DecodeInferResponse(c.Post("/v2/models/echo_bytes/infer", r.body, r.headers)));
    if (outputs.size() != 1) return Internal("expected one output, got " + std::to_string(outputs.size()));
    return outputs[0].strings;
  }

  static std::unique_ptr<inference::GRPCInferenceService::Stub> Stub() {
    return inference::GRPCInferenceService::NewStub(::grpc::CreateChannel(
        "127.0.0.1:" + std::to_string(server_->grpc_port), ::grpc::InsecureChannelCredentials()));
  }
  static std::unique_ptr<::grpc::ClientContext> Ctx() {
    auto ctx = std::make_unique<::grpc::ClientContext>();
    ctx->set_deadline(std::chrono::system_clock::now() + 20s);
    return ctx;
  }
  static inference::ModelInferRequest GrpcRequest(const std::vector<std::string>& elements) {
    inference::ModelInferRequest req;
    req.set_model_name("echo_bytes");
    auto* in = req.add_inputs();
    in->set_name("text");
    in->set_datatype("BYTES");
    in->add_shape(static_cast<int64_t>(elements.size()));
    return req;
  }

  static fs::path* root_;
  static ServeProcess* server_;
};
fs::path* BytesAgainstServe::root_ = nullptr;
ServeProcess* BytesAgainstServe::server_ = nullptr;

TEST_F(BytesAgainstServe, Issue25BytesKeepNulBytesOverHttpJson) {
  auto echo = HttpEcho(kText, TensorEncoding::kJson);
  ASSERT_TRUE(echo.ok()) << echo.status().ToString();
  EXPECT_EQ(*echo, kText);
}

TEST_F(BytesAgainstServe, Issue25BytesKeepNulBytesOverHttpBinary) {
  auto echo = HttpEcho(AnyBytes(), TensorEncoding::kBinary);
  ASSERT_TRUE(echo.ok()) << echo.status().ToString();
  EXPECT_EQ(*echo, AnyBytes());
}

// A JSON string cannot carry bytes that are not UTF-8: asked for JSON, such
// an output comes in the binary section, which Triton's clients read.
TEST_F(BytesAgainstServe, Issue25BytesThatAreNotUtf8ComeBackBinaryWhenJsonWasAskedFor) {
  const std::string bin = Serialized(AnyBytes());
  const std::string json = R"({"inputs":[{"name":"text","datatype":"BYTES","shape":[4],)"
                           R"("parameters":{"binary_data_size":)" +
                           std::to_string(bin.size()) + R"(}}],"outputs":[{"name":"echo"}]})";
  TestHttpClient c(server_->http_port);
  auto r = c.Post("/v2/models/echo_bytes/infer", json + bin,
                  {{"Inference-Header-Content-Length", std::to_string(json.size())},
                   {"Content-Type", "application/octet-stream"}});
  ASSERT_EQ(r.status, 200u) << r.body;
  EXPECT_FALSE(r.header("Inference-Header-Content-Length").empty());
  auto outputs = DecodeInferResponse(r);
  ASSERT_TRUE(outputs.ok()) << outputs.status().ToString();
  ASSERT_EQ(outputs->size(), 1u);
  EXPECT_EQ((*outputs)[0].strings, AnyBytes());
}

TEST_F(BytesAgainstServe, Issue25BytesKeepNulBytesOverGrpc) {
  auto stub = Stub();
  // bytes_contents, as tritonclient.grpc sends BYTES without raw contents.
  inference::ModelInferRequest typed = GrpcRequest(AnyBytes());
  for (const std::string& s : AnyBytes()) typed.mutable_inputs(0)->mutable_contents()->add_bytes_contents(s);
  // raw_input_contents, as tritonclient.grpc's set_data_from_numpy sends it.
  inference::ModelInferRequest raw = GrpcRequest(AnyBytes());
  raw.add_raw_input_contents(Serialized(AnyBytes()));
  for (const auto* req : {&typed, &raw}) {
    inference::ModelInferResponse resp;
    auto ctx = Ctx();
    auto st = stub->ModelInfer(ctx.get(), *req, &resp);
    ASSERT_TRUE(st.ok()) << st.error_message();
    ASSERT_EQ(resp.raw_output_contents_size(), 1);
    EXPECT_EQ(resp.outputs(0).datatype(), "BYTES");
    EXPECT_EQ(Deserialized(resp.raw_output_contents(0)), AnyBytes());
  }
}

TEST_F(BytesAgainstServe, Issue25BytesKeepNulBytesThroughSystemSharedMemory) {
  const std::string in_bytes = Serialized(AnyBytes());
  ortgpu::testing::ShmObject in(in_bytes.size()), out(in_bytes.size());
  ASSERT_TRUE(in.ok() && out.ok());
  std::memcpy(in.bytes(), in_bytes.data(), in_bytes.size());
  TestHttpClient c(server_->http_port);
  for (const auto& [name, key] : {std::pair<std::string, std::string>{"bytes_in", in.key()}, {"bytes_out", out.key()}}) {
    const nlohmann::json reg = {{"key", key}, {"offset", 0}, {"byte_size", in_bytes.size()}};
    auto r = c.Post("/v2/systemsharedmemory/region/" + name + "/register", reg.dump());
    ASSERT_EQ(r.status, 200u) << r.body;
  }
  const nlohmann::json request = {
      {"inputs",
       {{{"name", "text"},
         {"datatype", "BYTES"},
         {"shape", {4}},
         {"parameters", {{"shared_memory_region", "bytes_in"}, {"shared_memory_byte_size", in_bytes.size()}}}}}},
      {"outputs",
       {{{"name", "echo"},
         {"parameters", {{"shared_memory_region", "bytes_out"}, {"shared_memory_byte_size", in_bytes.size()}}}}}}};
  auto r = c.Post("/v2/models/echo_bytes/infer", request.dump(), {{"Content-Type", "application/json"}});
  ASSERT_EQ(r.status, 200u) << r.body;
  EXPECT_EQ(Deserialized(std::string_view(reinterpret_cast<const char*>(out.bytes()), in_bytes.size())), AnyBytes());
  for (const std::string name : {"bytes_in", "bytes_out"}) {
    EXPECT_EQ(c.Post("/v2/systemsharedmemory/region/" + name + "/unregister", "").status, 200u);
  }
}

}  // namespace
}  // namespace ortgpu::e2e
