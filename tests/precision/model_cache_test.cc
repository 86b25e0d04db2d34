// The cache of converted models: digests, whole entries only, the default
// folder. Real files in a temporary folder.
#include "precision/model_cache.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "fakes/fake_environment.h"
#include "onnx.pb.h"
#include "precision/precision_test_models.h"
#include "support/temp_dir.h"

namespace ortgpu::precision {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using testing_support::TempDir;

TEST(ModelCacheTest, DigestCoversTheModelAndTheExternalDataItNames) {
  TempDir dir;
  const std::string model = dir.File("m/model.onnx", "header weights.bin trailer");
  dir.File("m/weights.bin", "abc");
  dir.File("m/unrelated.txt", "1");
  auto a = ModelFileDigest(model);
  ASSERT_TRUE(a.ok());
  dir.File("m/unrelated.txt", "2");
  EXPECT_EQ(*ModelFileDigest(model), *a) << "a file the model does not name is not part of it";
  dir.File("m/weights.bin", "abd");
  EXPECT_NE(*ModelFileDigest(model), *a);
  EXPECT_FALSE(ModelFileDigest(dir.Path("m/none.onnx")).ok());
}

TEST(ModelCacheTest, StoredEntriesAreFoundAndDamagedOnesAreMisses) {
  TempDir dir;
  ModelCache cache(dir.Path("cache"));
  EXPECT_FALSE(cache.Find("k").has_value());
  auto model = test_models::MatMulAddRelu();
  auto stored = cache.Store("k", model, {{"min_cosine", 0.5}});
  ASSERT_TRUE(stored.ok()) << stored.status().message();
  auto found = cache.Find("k");
  ASSERT_TRUE(found.has_value());
  EXPECT_EQ(found->model_path, stored->model_path);
  EXPECT_EQ(found->record["min_cosine"], 0.5);
  // No staging folder is left behind.
  int entries = 0;
  for (const auto& e : fs::directory_iterator(dir.Path("cache"))) entries += !e.path().filename().string().starts_with(".");
  EXPECT_EQ(entries, 1);

  // The same size, other bytes: the digest tells.
  std::string bytes(fs::file_size(found->model_path), 'x');
  { std::ofstream(found->model_path, std::ios::binary | std::ios::trunc) << bytes; }
  EXPECT_FALSE(cache.Find("k").has_value());
  ASSERT_TRUE(cache.Store("k", model, {}).ok());
  ASSERT_TRUE(cache.Find("k").has_value());
  fs::remove(dir.Path("cache/k/record.json"));
  EXPECT_FALSE(cache.Find("k").has_value()) << "an entry without its record is partial";
}

TEST(ModelCacheTest, AnUnwritableRootIsAnErrorNamingIt) {
  TempDir dir;
  const std::string file = dir.File("file", "x");
  ModelCache cache(file + "/cache");
  auto model = test_models::MatMulAddRelu();
  auto stored = cache.Store("k", model, {});
  ASSERT_FALSE(stored.ok());
  EXPECT_THAT(stored.status().message(), HasSubstr("model cache folder"));
}

TEST(ModelCacheTest, DefaultFolderFollowsXdgThenHome) {
  EXPECT_EQ(DefaultModelCacheDir(testing::FakeEnvironment{{"XDG_CACHE_HOME", "/x"}, {"HOME", "/h"}}), "/x/ortgpu/models");
  EXPECT_EQ(DefaultModelCacheDir(testing::FakeEnvironment{{"HOME", "/h"}}), "/h/.cache/ortgpu/models");
  EXPECT_EQ(DefaultModelCacheDir(testing::FakeEnvironment{}), "");
}

}  // namespace
}  // namespace ortgpu::precision
