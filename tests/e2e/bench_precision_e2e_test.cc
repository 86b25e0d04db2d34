// End-to-end tests of `ortgpu bench --precision` (issue 26, part 4): the real
// binary on the CPU provider, which runs float16 models, on a small model
// built in the test. What a user checks: the exit code, the precision and
// its accuracy against fp32 in each output, and the config fragment.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "e2e/serve_process.h"
#include "precision/precision_test_models.h"
#include "support/temp_dir.h"

namespace ortgpu::e2e {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using testing_support::TempDir;

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::vector<std::string> Bench(const std::string& model, std::vector<std::string> more) {
  std::vector<std::string> args = {"bench", model, "--iterations", "5", "--warmup", "1", "--no-progress"};
  args.insert(args.end(), more.begin(), more.end());
  return args;
}

TEST(BenchPrecisionE2eTest, Issue26JsonAndHtmlCarryEachPrecisionAndItsAccuracyAgainstFp32) {
  TempDir dir;
  const std::string model = dir.File("mlp.onnx", precision::test_models::MatMulAddRelu().SerializeAsString());
  const std::string html = dir.Path("report.html");
  Outcome o = RunOrtgpu(Bench(model, {"--precision", "fp32,fp16", "--batch", "4", "--json", "--html", html}));
  ASSERT_EQ(o.exit_code, 0) << o.output;
  const auto j = nlohmann::json::parse(o.output.substr(o.output.find('{')));
  ASSERT_EQ(j["results"].size(), 2u) << j.dump(2);
  EXPECT_EQ(j["results"][0]["precision"], "fp32");
  EXPECT_TRUE(j["results"][0]["precision_accuracy"]["reference"].get<bool>());
  const auto& fp16 = j["results"][1];
  EXPECT_EQ(fp16["precision"], "fp16");
  EXPECT_TRUE(fp16["precision_accuracy"]["within_budget"].get<bool>()) << fp16.dump(2);
  EXPECT_GT(fp16["precision_accuracy"]["min_cosine"].get<double>(), 0.999);
  EXPECT_TRUE(fp16["precision_accuracy"]["top1_agreement"].is_number()) << "y is [batch, 3]: classifier-shaped";
  EXPECT_THAT(j["precision_budget"].get<std::string>(), HasSubstr("row cosine >= 0.999"));
  const std::string page = ReadAll(html);
  EXPECT_THAT(page, HasSubstr("data-chart=\"throughput-vs-accuracy\""));
  EXPECT_THAT(page, HasSubstr("min cos (fp32)"));
}

TEST(BenchPrecisionE2eTest, Issue26APrecisionOutsideTheBudgetIsMarkedAndNeverInTheFragment) {
  TempDir dir;
  const std::string model = dir.File("mlp.onnx", precision::test_models::MatMulAddRelu().SerializeAsString());
  const std::string fragment = dir.Path("config.pbtxt");
  // No float16 model keeps a relative error under 1e-9: fp16 is outside.
  Outcome o = RunOrtgpu(Bench(model, {"--sweep", "--sweep-axes", "io=served,precision=fp32|fp16", "--budget", "rel=1e-9",
                                      "--config-out", fragment}));
  ASSERT_EQ(o.exit_code, 0) << o.output;
  EXPECT_THAT(o.output, HasSubstr(" (outside the budget)"));
  EXPECT_THAT(o.output, HasSubstr("fp16 is outside the accuracy budget (output 'y': max relative error"));
  EXPECT_THAT(ReadAll(fragment), Not(HasSubstr("key: \"precision\"")));

  Outcome csv = RunOrtgpu(Bench(model, {"--precision", "fp16", "--csv"}));
  ASSERT_EQ(csv.exit_code, 0) << csv.output;
  EXPECT_THAT(csv.output, HasSubstr(",precision,fp32_min_cosine,fp32_max_rel_error,fp32_top1,within_budget,error"));
  const size_t row = csv.output.find(",fp16,");
  ASSERT_NE(row, std::string::npos) << csv.output;
  const std::string line = csv.output.substr(row, csv.output.find('\n', row) - row);
  EXPECT_THAT(line, ::testing::EndsWith(",1,")) << "within the budget, no error: " << line;
}

TEST(BenchPrecisionE2eTest, Issue26BadPrecisionUsageExitsTwoNamingTheProblem) {
  TempDir dir;
  const std::string model = dir.File("mlp.onnx", precision::test_models::MatMulAddRelu().SerializeAsString());
  struct Case {
    std::vector<std::string> more;
    std::string says;
  };
  const Case cases[] = {
      {{"--precision", "fp8"}, "--precision"},
      {{"--precision", "fp16", "--budget", "cosin=0.9"}, "unknown key 'cosin'"},
      {{"--precision", "mixed", "--no-check"}, "drop --no-check"},
      {{"--precision", "fp32", "--sweep", "--sweep-axes", "precision=fp16"}, "give them once"},
  };
  for (const auto& c : cases) {
    Outcome o = RunOrtgpu(Bench(model, c.more));
    EXPECT_EQ(o.exit_code, 2) << o.output;
    EXPECT_THAT(o.output, HasSubstr(c.says));
  }
}

}  // namespace
}  // namespace ortgpu::e2e
