// LoadOverride: the checks on a load's config and file: parameters, the
// private folder the files are written to (and removed from), and the paths
// clients see.
#include "serve/repository/load_override.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <filesystem>

#include "serve/repository/model_config.h"

namespace ortgpu::serve {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;

class LoadOverrideTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::path(::testing::TempDir()) / ("ortgpu-override-" + std::to_string(::getpid()));
    fs::remove_all(root_);
    fs::create_directories(root_);
  }
  void TearDown() override { fs::remove_all(root_); }
  Expected<std::shared_ptr<const LoadOverride>> Prepare(ModelLoadParameters p, const std::string& model = "m") {
    return LoadOverride::Prepare(model, p, root_.string());
  }
  static ModelLoadParameters Files(std::map<std::string, std::string> files,
                                   std::optional<std::string> config = R"({"max_batch_size": 2})") {
    ModelLoadParameters p;
    p.config_json = std::move(config);
    p.files = std::move(files);
    return p;
  }
  size_t FoldersUnderRoot() const {
    return static_cast<size_t>(std::distance(fs::directory_iterator(root_), fs::directory_iterator()));
  }
  fs::path root_;
};

TEST_F(LoadOverrideTest, FilesGoToAPrivateFolderThatLeavesWithTheOverride) {
  auto o = Prepare(Files({{"1/model.onnx", "bytes"}, {"labels.txt", "a\nb\n"}}));
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  std::shared_ptr<const LoadOverride> held = std::move(o).value();
  EXPECT_TRUE(held->has_files());
  ASSERT_EQ(FoldersUnderRoot(), 1u);
  const fs::path folder = fs::directory_iterator(root_)->path();
  struct stat st{};
  ASSERT_EQ(::stat(folder.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  auto source = held->Source(ModelRepository::FromDirectory("/nonexistent"), "m");
  ASSERT_TRUE(source.ok()) << source.status().ToString();
  EXPECT_EQ(source->versions, std::vector<int64_t>{1});
  EXPECT_TRUE(fs::exists(fs::path(source->dir) / "labels.txt"));
  EXPECT_THAT(source->config_text, HasSubstr("max_batch_size: 2"));
  EXPECT_EQ(held->ClientPaths("no model file " + source->dir + "/1/model.onnx"), "no model file file:1/model.onnx");
  held.reset();  // the last reference goes
  EXPECT_EQ(FoldersUnderRoot(), 0u);
}

TEST_F(LoadOverrideTest, AConfigAloneReadsTheRepositoryWithTheConfigReplaced) {
  fs::create_directories(root_ / "repo" / "m" / "1");
  ModelLoadParameters p;
  p.config_json = R"({"name": "m", "max_batch_size": 0, "instance_group": [{"count": 2, "kind": "KIND_CPU"}]})";
  auto o = Prepare(p);
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_FALSE((*o)->has_files());
  auto source = (*o)->Source(ModelRepository::FromDirectory((root_ / "repo").string()), "m");
  ASSERT_TRUE(source.ok()) << source.status().ToString();
  EXPECT_EQ(source->dir, (root_ / "repo" / "m").string());
  EXPECT_TRUE(source->has_config);
  EXPECT_EQ(source->config_path, "load parameter 'config'");
  EXPECT_THAT(source->config_text, HasSubstr("count: 2"));
  // An explicit 0 stays visible: the loader must not make the model batch.
  EXPECT_TRUE(SetsMaxBatchSize(source->config_text));
}

TEST_F(LoadOverrideTest, BadParametersSayWhyAndWriteNothing) {
  struct Case {
    ModelLoadParameters p;
    std::string model;
    std::string says;
  };
  ModelLoadParameters bad_json;
  bad_json.config_json = "{max_batch_size: 4";
  ModelLoadParameters unknown;
  unknown.config_json = R"({"max_batch_sise": 4})";
  ModelLoadParameters other_name;
  other_name.config_json = R"({"name": "other"})";
  const std::vector<Case> cases = {
      {bad_json, "m", "load parameter 'config' is not a model configuration in JSON"},
      {unknown, "m", "max_batch_sise"},
      {other_name, "m", "names the model 'other' but the load is for 'm'"},
      {Files({{"1/model.onnx", "x"}}, std::nullopt), "m", "needs a 'config' parameter too"},
      {Files({{"../1/model.onnx", "x"}}), "m", "leaves the model's folder"},
      {Files({{"1/../../x", "x"}}), "m", "leaves the model's folder"},
      {Files({{"/etc/passwd", "x"}}), "m", "is an absolute path"},
      {Files({{"1//model.onnx", "x"}}), "m", "empty or '.' path component"},
      {Files({{"", "x"}}), "m", "names no file"},
      {Files({{"model.onnx", "x"}}), "m", "no file in a version folder"},
      {Files({{"1/model.onnx", "x"}}), "../m", "cannot name a model"},
  };
  for (const Case& c : cases) {
    auto o = Prepare(c.p, c.model);
    ASSERT_FALSE(o.ok()) << c.says;
    EXPECT_EQ(o.status().code(), Code::kInvalidArgument) << c.says;
    EXPECT_THAT(o.status().message(), HasSubstr(c.says));
    EXPECT_THAT(o.status().message(), Not(HasSubstr(root_.string())));
  }
  EXPECT_EQ(FoldersUnderRoot(), 0u);
}

TEST_F(LoadOverrideTest, AFileThatCannotBeWrittenRemovesTheFolder) {
  // "1/model.onnx" is a file, so "1/model.onnx/x" cannot be made.
  auto o = Prepare(Files({{"1/model.onnx", "x"}, {"1/model.onnx/x", "y"}}));
  ASSERT_FALSE(o.ok());
  EXPECT_THAT(o.status().message(), HasSubstr("cannot be written"));
  EXPECT_THAT(o.status().message(), Not(HasSubstr(root_.string())));
  EXPECT_EQ(FoldersUnderRoot(), 0u);
}

}  // namespace
}  // namespace ortgpu::serve
