#include "gpu/preload.h"

#include <algorithm>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "fakes/fake_dynamic_loader.h"
#include "fakes/fake_environment.h"
#include "fakes/fake_file_system.h"
#include "gpu/cuda_libraries.h"

namespace ortgpu::gpu {
namespace {

using testing::FakeDynamicLoader;
using testing::FakeEnvironment;
using testing::FakeFileSystem;

const std::string kSite = "/opt/torch/.venv/lib/python3.12/site-packages";
const std::string kCu13 = kSite + "/nvidia/cu13/lib";
const std::string kCudnn = kSite + "/nvidia/cudnn/lib";
const std::vector<std::string> kCu13Libs = {"libcudart.so.13", "libcublasLt.so.13", "libcublas.so.13",
                                            "libcurand.so.10", "libcufft.so.12"};
const std::vector<std::string> kCudnnLibs = {
    "libcudnn.so.9", "libcudnn_graph.so.9", "libcudnn_ops.so.9", "libcudnn_cnn.so.9", "libcudnn_adv.so.9",
    "libcudnn_engines_precompiled.so.9", "libcudnn_engines_runtime_compiled.so.9", "libcudnn_heuristic.so.9"};

// A venv with the CUDA 13 and cuDNN wheels, and nothing on the loader path.
void AddPipOnlyMachine(FakeFileSystem* fs, FakeEnvironment* env, FakeDynamicLoader* loader) {
  fs->AddFile("/usr/bin/python3.12");
  fs->AddSymlink("/opt/torch/.venv/bin/python3", "/usr/bin/python3.12");
  env->Set("PATH", "/opt/torch/.venv/bin:/usr/bin");
  for (const auto& l : kCu13Libs) {
    fs->AddFile(kCu13 + "/" + l);
    loader->AddLibrary(kCu13 + "/" + l, {kCu13 + "/" + l, {}});
  }
  for (const auto& l : kCudnnLibs) {
    fs->AddFile(kCudnn + "/" + l);
    loader->AddLibrary(kCudnn + "/" + l, {kCudnn + "/" + l, {}});
  }
}

// The result for `soname`; a missing one fails the test and reads as an
// empty result (action kNotFound, no path).
const PreloadResult& ResultFor(const std::vector<PreloadResult>& results, const std::string& soname) {
  static const PreloadResult kMissing;
  auto it = std::find_if(results.begin(), results.end(), [&](const PreloadResult& r) { return r.soname == soname; });
  EXPECT_NE(it, results.end()) << soname << " has no preload result";
  return it == results.end() ? kMissing : *it;
}

std::vector<std::string> Sonames(const std::vector<PreloadResult>& results) {
  std::vector<std::string> out;
  for (const auto& r : results) out.push_back(r.soname);
  return out;
}

TEST(PreloadTest, LoadsPipCopiesGloballyInDependencyOrder) {
  FakeFileSystem fs;
  FakeEnvironment env;
  FakeDynamicLoader loader;
  AddPipOnlyMachine(&fs, &env, &loader);
  LibrarySearch search(fs, env);
  const auto results = PreloadCudaLibraries(search, loader);

  std::vector<std::string> expected;
  for (const auto& l : kCu13Libs) expected.push_back(kCu13 + "/" + l);
  for (const auto& l : kCudnnLibs) expected.push_back(kCudnn + "/" + l);
  std::vector<std::string> opened;
  for (const auto& c : loader.calls()) {
    opened.push_back(c.name_or_path);
    EXPECT_EQ(c.scope, SymbolScope::kGlobal) << c.name_or_path;
  }
  EXPECT_EQ(opened, expected);
  ASSERT_EQ(results.size(), kCu13Libs.size() + kCudnnLibs.size());  // driver libs are not preloaded
  for (const auto& r : results) {
    EXPECT_EQ(r.action, PreloadAction::kPreloaded) << r.soname << ": " << r.error;
    EXPECT_EQ(r.source, CandidateSource::kPip);
  }
}

TEST(PreloadTest, NothingToDoWhenTheLoaderFindsEverything) {
  FakeFileSystem fs;
  FakeEnvironment env;
  FakeDynamicLoader loader;
  AddPipOnlyMachine(&fs, &env, &loader);
  env.Set("LD_LIBRARY_PATH", kCu13 + ":" + kCudnn);
  LibrarySearch search(fs, env);
  const auto results = PreloadCudaLibraries(search, loader);
  EXPECT_TRUE(loader.calls().empty());
  // Every library was considered, and each is left to the loader.
  std::vector<std::string> expected = kCu13Libs;
  expected.insert(expected.end(), kCudnnLibs.begin(), kCudnnLibs.end());
  EXPECT_EQ(Sonames(results), expected);
  for (const auto& r : results) EXPECT_EQ(r.action, PreloadAction::kLoaderFinds) << r.soname;
}

TEST(PreloadTest, HarmlessOnAMachineWithoutCuda) {
  FakeFileSystem fs;
  FakeEnvironment env;
  FakeDynamicLoader loader;
  LibrarySearch search(fs, env);
  const auto results = PreloadCudaLibraries(search, loader);
  EXPECT_TRUE(loader.calls().empty());
  EXPECT_EQ(ResultFor(results, "libcudart.so.13").action, PreloadAction::kNotFound);
  EXPECT_EQ(ResultFor(results, "libcudnn.so.9").action, PreloadAction::kNotFound);
  EXPECT_EQ(ResultFor(results, "libcudnn_ops.so.9").action, PreloadAction::kSkipped);
}

TEST(PreloadTest, ReportsDlopenFailureAndCarriesOn) {
  FakeFileSystem fs;
  FakeEnvironment env;
  FakeDynamicLoader loader;
  AddPipOnlyMachine(&fs, &env, &loader);
  loader.FailOpen(kCu13 + "/libcublasLt.so.13", "libcublasLt.so.13: file too short");
  LibrarySearch search(fs, env);
  const auto results = PreloadCudaLibraries(search, loader);
  const auto& lt = ResultFor(results, "libcublasLt.so.13");
  EXPECT_EQ(lt.action, PreloadAction::kFailed);
  EXPECT_EQ(lt.path, kCu13 + "/libcublasLt.so.13");
  EXPECT_EQ(lt.error, "libcublasLt.so.13: file too short");
  EXPECT_EQ(ResultFor(results, "libcudnn.so.9").action, PreloadAction::kPreloaded);
}

TEST(PreloadTest, CudnnSubLibrariesComeFromCudnnsOwnFolder) {
  FakeFileSystem fs;
  FakeEnvironment env;
  FakeDynamicLoader loader;
  AddPipOnlyMachine(&fs, &env, &loader);
  // A second, incomplete cuDNN in a conda env: preloading must not mix the two.
  fs.AddFile("/opt/conda/lib/libcudnn_ops.so.9");
  fs.AddFile("/opt/conda/lib/libcudnn.so.9");
  LibrarySearch search(fs, env);
  const auto results = PreloadCudaLibraries(search, loader);
  EXPECT_EQ(ResultFor(results, "libcudnn.so.9").path, kCudnn + "/libcudnn.so.9");  // pip preferred
  EXPECT_EQ(ResultFor(results, "libcudnn_ops.so.9").path, kCudnn + "/libcudnn_ops.so.9");
}

TEST(PreloadTest, IncompleteCudnnFolderIsReported) {
  FakeFileSystem fs;
  FakeEnvironment env;
  FakeDynamicLoader loader;
  fs.AddFile("/usr/bin/python3.12");
  fs.AddSymlink("/opt/torch/.venv/bin/python3", "/usr/bin/python3.12");
  env.Set("PATH", "/opt/torch/.venv/bin");
  fs.AddFile(kCudnn + "/libcudnn.so.9");
  loader.AddLibrary(kCudnn + "/libcudnn.so.9", {kCudnn + "/libcudnn.so.9", {}});
  LibrarySearch search(fs, env);
  const auto results = PreloadCudaLibraries(search, loader);
  const auto& graph = ResultFor(results, "libcudnn_graph.so.9");
  EXPECT_EQ(graph.action, PreloadAction::kFailed);
  EXPECT_THAT(graph.error, ::testing::HasSubstr("nvidia-cudnn-cu13"));
}

TEST(PreloadTest, SkipsWhatIsAlreadyLoaded) {
  FakeFileSystem fs;
  FakeEnvironment env;
  FakeDynamicLoader loader;
  AddPipOnlyMachine(&fs, &env, &loader);
  loader.AddAlreadyLoaded("/elsewhere/libcudart.so.13");
  LibrarySearch search(fs, env);
  const auto results = PreloadCudaLibraries(search, loader);
  EXPECT_EQ(ResultFor(results, "libcudart.so.13").action, PreloadAction::kAlreadyLoaded);
  ASSERT_FALSE(loader.calls().empty());
  EXPECT_EQ(loader.calls().front().name_or_path, kCu13 + "/libcublasLt.so.13");
}

}  // namespace
}  // namespace ortgpu::gpu
