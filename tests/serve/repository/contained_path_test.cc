// ResolveInside: files a config.pbtxt names stay inside their folder (issue
// 11, exposure): relative paths without "..", and no link leading out.
#include "serve/repository/contained_path.h"

#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace ortgpu::serve {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;

class ContainedPathTest : public ::testing::Test {
 protected:
  void SetUp() override {
    static std::atomic<int> counter{0};
    root_ = fs::path(::testing::TempDir()) / ("ortgpu-contained-" + std::to_string(::getpid()) + "-" +
                                              std::to_string(counter++));
    fs::create_directories(root_ / "model" / "1");
    std::ofstream(root_ / "model" / "1" / "other.onnx") << "x";
    std::ofstream(root_ / "secret") << "s";
    fs::create_symlink(root_ / "secret", root_ / "model" / "1" / "link.onnx");
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(root_, ec);
  }
  std::string folder() const { return (root_ / "model" / "1").string(); }
  fs::path root_;
};

TEST_F(ContainedPathTest, AFileInsideTheFolderResolves) {
  auto path = ResolveInside(folder(), "other.onnx", "default_model_filename");
  ASSERT_TRUE(path.ok()) << path.status().message();
  EXPECT_EQ(*path, folder() + "/other.onnx");
  EXPECT_TRUE(ResolveInside(folder(), "not_there_yet.onnx", "default_model_filename").ok());
}

TEST_F(ContainedPathTest, DotDotAbsoluteAndLinksOutAreRefusedWithoutServerPaths) {
  for (const std::string& bad : {"../../secret", "sub/../../x", "/etc/passwd", "link.onnx", ""}) {
    auto path = ResolveInside(folder(), bad, "default_model_filename");
    ASSERT_FALSE(path.ok()) << bad;
    EXPECT_EQ(path.status().code(), Code::kInvalidArgument);
    EXPECT_THAT(path.status().message(), HasSubstr("default_model_filename"));
    EXPECT_THAT(path.status().message(), Not(HasSubstr(root_.string())));
  }
  EXPECT_TRUE(ResolveInside(folder(), "..hidden.onnx", "default_model_filename").ok());  // not a ".." component
}

}  // namespace
}  // namespace ortgpu::serve
