// End-to-end tests of `ortgpu convert` (issue 26): the real binary on the
// CPU, on small models built in the test. What a user checks: the exit
// code, the report (nodes, Casts, accuracy per output, the nodes kept and
// why), and that the converted model loads, runs and serves.
#include <unistd.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "e2e/mlp_model.h"
#include "e2e/serve_process.h"
#include "serve/http/test_http_client.h"
#include "support/temp_dir.h"

namespace ortgpu::e2e {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;
using namespace std::chrono_literals;

using testing_support::TempDir;

std::string Model(bool overflow) { return MlpModel(overflow); }

TEST(ConvertE2eTest, Fp16ModelIsWrittenWithTheReportAndServes) {
  TempDir dir;
  const std::string in = dir.File("model.onnx", Model(false));
  const std::string out = dir.Path("repo/mlp16/1/model.onnx");
  fs::create_directories(fs::path(out).parent_path());
  Outcome o = RunOrtgpu({"convert", in, "--to", "fp16", "--output", out});
  ASSERT_EQ(o.exit_code, 0) << o.output;
  EXPECT_THAT(o.output, HasSubstr("nodes: 3, 3 now float16, 0 kept float32"));
  EXPECT_THAT(o.output, HasSubstr("casts: 2 added"));
  EXPECT_THAT(o.output, HasSubstr("accuracy against float32 (TF32 off)"));
  EXPECT_THAT(o.output, HasSubstr("written: " + out));
  EXPECT_THAT(o.output, Not(HasSubstr("outside the budget")));
  ASSERT_TRUE(fs::exists(out));

  // The converted model serves: float32 in and out, as before.
  ServeProcess serve({"serve", "--model-repository", dir.Path("repo"), "--http-port", "0", "--metrics-port", "0"});
  ASSERT_TRUE(serve.started());
  ASSERT_TRUE(serve.WaitForPorts(60s)) << serve.output();
  serve::testing::TestHttpClient c(serve.http_port);
  nlohmann::json req = {{"inputs", {{{"name", "x"}, {"datatype", "FP32"}, {"shape", {1, 8}},
                                     {"data", {1, 0.5, -0.25, 0, 0.75, -1, 0.1, 0.2}}}}}};
  auto r = c.Post("/v2/models/mlp16/infer", req.dump());
  ASSERT_EQ(r.status, 200u) << r.body;
  auto j = nlohmann::json::parse(r.body);
  EXPECT_EQ(j["outputs"][0]["datatype"], "FP32");
  EXPECT_EQ(j["outputs"][0]["shape"], nlohmann::json({1, 4}));
}

TEST(ConvertE2eTest, MixedKeepsTheOverflowingNodeInFloat32AndSaysWhy) {
  TempDir dir;
  const std::string in = dir.File("model.onnx", Model(true));
  Outcome fp16 = RunOrtgpu({"convert", in, "--to", "fp16", "--output", dir.Path("fp16.onnx")});
  EXPECT_EQ(fp16.exit_code, 1) << fp16.output;
  EXPECT_THAT(fp16.output, HasSubstr("outside the budget: output 'z'"));
  EXPECT_THAT(fp16.output, HasSubstr("--to mixed keeps the nodes responsible in float32"));
  EXPECT_TRUE(fs::exists(dir.Path("fp16.onnx"))) << "written anyway, for whoever wants it";

  Outcome mixed = RunOrtgpu({"convert", in, "--to", "mixed", "--output", dir.Path("mixed.onnx")});
  ASSERT_EQ(mixed.exit_code, 0) << mixed.output;
  EXPECT_THAT(mixed.output, HasSubstr("Mul_3 (Mul): float16 here breaks the budget: output 'z'"));
  EXPECT_THAT(mixed.output, HasSubstr("1 node(s) kept float32"));
  EXPECT_THAT(mixed.output, HasSubstr("nodes: 4, 3 now float16, 1 kept float32"));
}

TEST(ConvertE2eTest, KeepIoTypesFalseAndABlockListAreHonoured) {
  TempDir dir;
  const std::string in = dir.File("model.onnx", Model(false));
  Outcome o = RunOrtgpu({"convert", in, "--output", dir.Path("out.onnx"), "--keep-io-types=false", "--op-block-list",
                   "default,Relu", "--no-check"});
  ASSERT_EQ(o.exit_code, 0) << o.output;
  EXPECT_THAT(o.output, HasSubstr("Relu_2 (Relu): op Relu is in the op block list"));
  EXPECT_THAT(o.output, HasSubstr("accuracy: not checked (--no-check)"));
  EXPECT_THAT(o.output, HasSubstr("CPU time"));
}

TEST(ConvertE2eTest, BadUsageExitsTwoNamingTheFlagAndAMissingModelOne) {
  TempDir dir;
  const std::string in = dir.File("model.onnx", Model(false));
  const std::string out = dir.Path("o.onnx");
  struct Case {
    std::vector<std::string> args;
    int exit_code;
    std::string says;
  };
  const Case cases[] = {
      {{"convert", in}, 2, "--output"},
      {{"convert", in, "--to", "int8", "--output", out}, 2, "--to"},
      {{"convert", in, "--output", out, "--budget", "cosin=0.9"}, 2, "unknown key 'cosin'"},
      {{"convert", in, "--to", "mixed", "--no-check", "--output", out}, 2, "drop --no-check"},
      {{"convert", dir.Path("nosuch.onnx"), "--output", out}, 1, "cannot open the model file"},
  };
  for (const auto& c : cases) {
    Outcome o = RunOrtgpu(c.args);
    EXPECT_EQ(o.exit_code, c.exit_code) << o.output;
    EXPECT_THAT(o.output, HasSubstr(c.says));
  }
}

}  // namespace
}  // namespace ortgpu::e2e
