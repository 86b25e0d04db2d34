// Hardening of the server core (issue 11): poll mode notices a model file
// replaced in place, hidden folders are never models, a FIFO as model file
// does not block the load, files a config names
// stay inside the model's folder, the output size cap (before and after the
// run), and cancelled requests are dropped unrun. Real tiny ONNX models on
// the CPU in a temporary repository; tests call Rescan() themselves.
#include <sys/stat.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "serve/protocol/statistics_json.h"

#include <atomic>
#include <filesystem>
#include <memory>

#include "serve/core/test_repository.h"
#include "serve/server_core.h"

namespace ortgpu::serve {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using testing::Floats;
using testing::InferSync;
using testing::Input;
using testing::Request;
using testing::ScaleModel;
using testing::TempRepository;
using testing::CpuOptions;
using testing::Find;
using testing::Start;

// Starts a CPU core over `repo` and returns the reason `model` is
// UNAVAILABLE ("" after a failed expectation when it is not).
std::string UnavailableReason(const TempRepository& repo, const std::string& model) {
  auto core = Start(CpuOptions(repo));
  if (core == nullptr) return "";
  const auto index = core->RepositoryIndex(false);
  const ModelVersionStatus* s = Find(index, model);
  EXPECT_NE(s, nullptr) << model << " is not in the index";
  if (s == nullptr) return "";
  EXPECT_EQ(s->state, ModelState::kUnavailable) << model;
  return s->reason;
}

TEST(ServerCoreHardeningTest, PollReloadsAModelFileReplacedInPlace) {
  TempRepository repo;
  repo.AddModel("m", 1, ScaleModel(2));
  auto core = Start(CpuOptions(repo, ModelControlMode::kPoll));
  ASSERT_NE(core, nullptr);
  auto first = InferSync(*core, Request("m", {Input({1, 2, 3, 4})}));
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_EQ(Floats(first->outputs[0])[0], 2.0f);

  repo.AddModel("m", 1, ScaleModel(3));  // same version folder, new file
  ASSERT_TRUE(core->Rescan().ok());
  auto second = InferSync(*core, Request("m", {Input({1, 2, 3, 4})}));
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  EXPECT_EQ(Floats(second->outputs[0])[0], 3.0f);
  EXPECT_EQ(second->model_version, "1");
}

TEST(ServerCoreHardeningTest, HiddenFoldersAreNeverModels) {
  TempRepository repo;
  repo.AddModel("m", 1, ScaleModel(2));
  repo.AddModel(".staging", 1, ScaleModel(3));
  auto core = Start(CpuOptions(repo, ModelControlMode::kExplicit));
  ASSERT_NE(core, nullptr);
  Status st = core->LoadModel(".staging");
  EXPECT_EQ(st.code(), Code::kNotFound) << st.ToString();
  const auto index = core->RepositoryIndex(false);
  EXPECT_EQ(Find(index, ".staging"), nullptr);
  EXPECT_TRUE(core->LoadModel("m").ok());
}

TEST(ServerCoreHardeningTest, AFifoAsModelFileMakesTheVersionUnavailableInsteadOfBlocking) {
  TempRepository repo;
  repo.AddModel("good", 1, ScaleModel(2));
  std::filesystem::create_directories(repo.root() + "/fifo/1");
  ASSERT_EQ(::mkfifo((repo.root() + "/fifo/1/model.onnx").c_str(), 0600), 0);
  EXPECT_THAT(UnavailableReason(repo, "fifo"), HasSubstr("FIFO"));
}

TEST(ServerCoreHardeningTest, DefaultModelFilenameOutsideTheVersionFolderIsRefused) {
  TempRepository repo;
  repo.AddModel("m", 1, ScaleModel(2));
  repo.WriteFile("outside.onnx", ScaleModel(2));
  repo.WriteConfig("m", "default_model_filename: \"../../outside.onnx\"\n");
  const std::string reason = UnavailableReason(repo, "m");
  EXPECT_THAT(reason, HasSubstr("default_model_filename"));
  EXPECT_THAT(reason, HasSubstr("leaves its folder"));
}

TEST(ServerCoreHardeningTest, WarmupInputDataFileOutsideTheWarmupFolderIsRefused) {
  TempRepository repo;
  repo.AddModel("m", 1, ScaleModel(2));
  repo.WriteConfig("m", R"(max_batch_size: 4
input [ { name: "x" data_type: TYPE_FP32 dims: [ 4 ] } ]
output [ { name: "y" data_type: TYPE_FP32 dims: [ 4 ] } ]
model_warmup [ { name: "w" batch_size: 1
  inputs { key: "x" value { data_type: TYPE_FP32 dims: [ 4 ] input_data_file: "../config.pbtxt" } } } ]
)");
  EXPECT_THAT(UnavailableReason(repo, "m"), HasSubstr("input_data_file"));
}

TEST(ServerCoreHardeningTest, LabelFilenameOutsideTheModelsFolderIsRefused) {
  TempRepository repo;
  repo.AddModel("m", 1, ScaleModel(2));
  repo.WriteFile("secret.txt", "password\n");
  repo.WriteConfig("m", R"(max_batch_size: 4
input [ { name: "x" data_type: TYPE_FP32 dims: [ 4 ] } ]
output [ { name: "y" data_type: TYPE_FP32 dims: [ 4 ] label_filename: "../secret.txt" } ]
)");
  const std::string reason = UnavailableReason(repo, "m");
  EXPECT_THAT(reason, HasSubstr("label_filename"));
  EXPECT_THAT(reason, Not(HasSubstr(repo.root())));
}

TEST(ServerCoreHardeningTest, OutputCapRefusesBeforeTheRunWhenTheDimsAreFixed) {
  TempRepository repo;
  repo.AddModel("m", 1, ScaleModel(2));  // completed: max_batch_size 4, y [4] floats = 16 bytes a row
  ServerOptions o = CpuOptions(repo);
  o.max_output_bytes = 32;
  auto core = Start(o);
  ASSERT_NE(core, nullptr);
  EXPECT_TRUE(InferSync(*core, Request("m", {Input({1, 2, 3, 4, 5, 6, 7, 8})})).ok());  // 32 bytes
  auto big = InferSync(*core, Request("m", {Input(std::vector<float>(12, 1.0f))}));    // 48 bytes
  ASSERT_FALSE(big.ok());
  EXPECT_EQ(big.status().code(), Code::kInvalidArgument);
  EXPECT_THAT(big.status().message(), HasSubstr("would hold 48 bytes"));
  EXPECT_THAT(big.status().message(), HasSubstr("--max-output-bytes"));
  auto stats = core->Statistics("m", "");
  ASSERT_TRUE(stats.ok());
  EXPECT_EQ(protocol::StatisticsToJson(*stats)["model_stats"][0]["execution_count"], 1) << protocol::StatisticsToJson(*stats).dump();
}

TEST(ServerCoreHardeningTest, OutputCapChecksTheOutputsWhenTheirSizeIsOnlyKnownAfterTheRun) {
  TempRepository repo;
  repo.AddModel("m", 1, ScaleModel(2));
  repo.WriteConfig("m", R"(max_batch_size: 0
input [ { name: "x" data_type: TYPE_FP32 dims: [ -1, 4 ] } ]
output [ { name: "y" data_type: TYPE_FP32 dims: [ -1, 4 ] } ]
)");
  ServerOptions o = CpuOptions(repo);
  o.max_output_bytes = 32;
  auto core = Start(o);
  ASSERT_NE(core, nullptr);
  EXPECT_TRUE(InferSync(*core, Request("m", {Input({1, 2, 3, 4})})).ok());
  auto big = InferSync(*core, Request("m", {Input(std::vector<float>(12, 1.0f))}));
  ASSERT_FALSE(big.ok());
  EXPECT_EQ(big.status().code(), Code::kInvalidArgument);
  EXPECT_THAT(big.status().message(), HasSubstr("hold 48 bytes"));
}

TEST(ServerCoreHardeningTest, ACancelledQueuedRequestIsAnsweredCancelledAndNotRun) {
  TempRepository repo;
  repo.AddModel("m", 1, ScaleModel(2));
  auto core = Start(CpuOptions(repo));
  ASSERT_NE(core, nullptr);
  InferRequest r = Request("m", {Input({1, 2, 3, 4})});
  auto cancelled = std::make_shared<std::atomic<bool>>(true);  // its client left before it ran
  r.cancelled = cancelled;
  auto result = InferSync(*core, std::move(r));
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), Code::kCancelled) << result.status().ToString();
  auto stats = core->Statistics("m", "");
  ASSERT_TRUE(stats.ok());
  EXPECT_EQ(protocol::StatisticsToJson(*stats)["model_stats"][0]["execution_count"], 0) << protocol::StatisticsToJson(*stats).dump();
}

}  // namespace
}  // namespace ortgpu::serve
