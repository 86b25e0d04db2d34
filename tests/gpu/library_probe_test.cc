#include "gpu/library_probe.h"

#include <algorithm>
#include <set>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "fakes/fake_dynamic_loader.h"
#include "fakes/fake_environment.h"
#include "fakes/fake_file_system.h"

namespace ortgpu::gpu {
namespace {

using testing::FakeDynamicLoader;
using testing::FakeEnvironment;
using testing::FakeFileSystem;

constexpr const char* kSite = "/opt/torch/.venv/lib/python3.12/site-packages";
constexpr const char* kPipCudnn = "/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cudnn/lib";
constexpr const char* kSysLib = "/usr/lib/x86_64-linux-gnu";

int FakeCudartVersion(int* v) { *v = 13000; return 0; }
size_t FakeCudnn914() { return 91400; }
size_t FakeCudnnCudart() { return 13000; }

const LibraryReport& ReportFor(const std::vector<LibraryReport>& reports, const std::string& soname) {
  auto it = std::find_if(reports.begin(), reports.end(), [&](const LibraryReport& r) { return r.soname == soname; });
  EXPECT_NE(it, reports.end()) << soname;
  return *it;
}

void AddTwoCudnnMachine(FakeFileSystem* fs, FakeEnvironment* env) {
  fs->AddFile("/usr/bin/python3.12");
  fs->AddSymlink("/opt/torch/.venv/bin/python3", "/usr/bin/python3.12");
  fs->AddFile(std::string(kPipCudnn) + "/libcudnn.so.9");
  fs->AddDirectory(std::string(kSite) + "/nvidia_cudnn_cu13-9.19.0.56.dist-info");
  fs->AddDirectory(std::string(kSite) + "/nvidia_cuda_runtime-13.0.96.dist-info");
  fs->AddFile(std::string(kSite) + "/nvidia/cu13/lib/libcudart.so.13");
  fs->AddFile(std::string(kSysLib) + "/libcudnn.so.9.14.0");
  fs->AddSymlink(std::string(kSysLib) + "/libcudnn.so.9", "libcudnn.so.9.14.0");
  env->Set("PATH", "/opt/torch/.venv/bin:/usr/bin");
}

TEST(CudaLibrariesTest, DecodesVersionNumbers) {
  EXPECT_EQ(DecodeCudaVersion(13000), "13.0");
  EXPECT_EQ(DecodeCudaVersion(12020), "12.2");
  EXPECT_EQ(DecodeCudnnVersion(91900), "9.19.0");
  EXPECT_EQ(DecodeCudnnVersion(8907), "8.9.7");
  EXPECT_EQ(DecodeCublasVersion(130100), "13.1.0");
  EXPECT_EQ(DecodeCurandVersion(10400), "10.4.0");
  EXPECT_EQ(DecodeCurandVersion(12000), "12.0.0");
  EXPECT_EQ(DecodeCudaVersion(0), "");
}

TEST(CudaLibrariesTest, TableCoversWhatTheEpNeeds) {
  std::set<std::string> sonames;
  for (const auto& l : CudaLibraries()) EXPECT_TRUE(sonames.insert(l.soname).second) << l.soname;
  for (const char* s : {"libcuda.so.1", "libnvidia-ml.so.1", "libcudart.so.13", "libcublas.so.13",
                        "libcublasLt.so.13", "libcurand.so.10", "libcufft.so.12", "libcudnn.so.9",
                        "libcudnn_graph.so.9", "libcudnn_engines_precompiled.so.9", "libcudnn_heuristic.so.9"}) {
    EXPECT_NE(FindCudaLibrary(s), nullptr) << s;
  }
  EXPECT_EQ(FindCudaLibrary("libcudnn.so.9")->pip_packages, std::vector<std::string>{"nvidia-cudnn-cu13"});
  EXPECT_EQ(FindCudaLibrary("libcudnn.so.9")->linkage, EpLinkage::kOpenedAtRunTime);
  EXPECT_EQ(FindCudaLibrary("libcublasLt.so.13")->linkage, EpLinkage::kNeeded);
}

TEST(VersionTest, FromFileName) {
  EXPECT_EQ(VersionFromFileName("/usr/lib/x86_64-linux-gnu/libcudnn.so.9.14.0"), "9.14.0");
  EXPECT_EQ(VersionFromFileName("/usr/lib/libcuda.so.580.159.03"), "580.159.03");
  EXPECT_EQ(VersionFromFileName("libcudart.so.13.0.96"), "13.0.96");
  EXPECT_EQ(VersionFromFileName("/x/libcudnn.so.9"), "");
  EXPECT_EQ(VersionFromFileName("/x/libcudnn.so"), "");
}

TEST(VersionTest, FromDistInfo) {
  FakeFileSystem fs;
  fs.AddDirectory(std::string(kSite) + "/nvidia_cudnn_cu13-9.19.0.56.dist-info");
  fs.AddDirectory(std::string(kSite) + "/nvidia_cublas_cu12-12.4.5.8.dist-info");
  fs.AddDirectory("/usr/local/cuda-13.0/dist-info/nvidia_cublas-13.1.0.3.dist-info");
  EXPECT_EQ(VersionFromDistInfo(fs, kPipCudnn, {"nvidia-cudnn-cu13"}), "9.19.0.56");
  EXPECT_EQ(VersionFromDistInfo(fs, std::string(kSite) + "/nvidia/cu13/lib", {"nvidia-cublas"}), "");
  EXPECT_EQ(VersionFromDistInfo(fs, "/usr/local/cuda-13.0/lib", {"nvidia-cublas"}), "13.1.0.3");
}

TEST(VersionTest, FromRodata) {
  const std::string rodata = std::string("unrelated 9.1.2\0", 16) + std::string("cuDNN version 9.19.0 (build 56)\0", 32);
  EXPECT_EQ(VersionFromRodata(rodata, "cudnn", 9), "9.19.0");
  EXPECT_EQ(VersionFromRodata(rodata, "cublas", 13), "");
  EXPECT_EQ(VersionFromRodata(std::string("cudnn 19.1\0", 11), "cudnn", 9), "");
}

TEST(LibraryProbeTest, TwoCudnnCopiesWithoutLoading) {
  FakeFileSystem fs;
  FakeEnvironment env;
  AddTwoCudnnMachine(&fs, &env);
  LibrarySearch search(fs, env);
  const auto reports = ProbeCudaLibraries(fs, search, nullptr, {});
  ASSERT_EQ(reports.size(), CudaLibraries().size());
  const auto& cudnn = ReportFor(reports, "libcudnn.so.9");
  EXPECT_TRUE(cudnn.found);
  EXPECT_FALSE(cudnn.needed_by_ep);
  ASSERT_TRUE(cudnn.picked.has_value());
  EXPECT_EQ(cudnn.picked->real_path, std::string(kSysLib) + "/libcudnn.so.9.14.0");
  EXPECT_EQ(cudnn.picked->version, "9.14.0");
  EXPECT_EQ(cudnn.picked->version_origin, "file_name");
  ASSERT_EQ(cudnn.other_copies.size(), 1u);
  EXPECT_EQ(cudnn.other_copies[0].folder, kPipCudnn);
  EXPECT_EQ(cudnn.other_copies[0].source, CandidateSource::kPip);
  EXPECT_EQ(cudnn.other_copies[0].version, "9.19.0.56");
  EXPECT_EQ(cudnn.other_copies[0].version_origin, "dist_info");
  EXPECT_FALSE(cudnn.load_attempted);

  const auto& cudart = ReportFor(reports, "libcudart.so.13");
  EXPECT_TRUE(cudart.needed_by_ep);
  EXPECT_FALSE(cudart.found);  // only in the venv: the EP would fail to load
  ASSERT_EQ(cudart.other_copies.size(), 1u);
  EXPECT_EQ(cudart.other_copies[0].version, "13.0.96");
  EXPECT_EQ(cudart.pip_install, "pip install nvidia-cuda-runtime==13.*");
}

TEST(LibraryProbeTest, LoadingAsksTheLibraryItsVersion) {
  FakeFileSystem fs;
  FakeEnvironment env;
  AddTwoCudnnMachine(&fs, &env);
  env.Set("LD_LIBRARY_PATH", std::string(kSite) + "/nvidia/cu13/lib");
  LibrarySearch search(fs, env);
  FakeDynamicLoader loader;
  loader.AddLibrary("libcudart.so.13", {std::string(kSite) + "/nvidia/cu13/lib/libcudart.so.13",
                                        {{"cudaRuntimeGetVersion", FakeDynamicLoader::Fn2Ptr(&FakeCudartVersion)}}});
  loader.AddLibrary("libcudnn.so.9", {std::string(kSysLib) + "/libcudnn.so.9",
                                      {{"cudnnGetVersion", FakeDynamicLoader::Fn2Ptr(&FakeCudnn914)},
                                       {"cudnnGetCudartVersion", FakeDynamicLoader::Fn2Ptr(&FakeCudnnCudart)}}});
  loader.AddLibrary("libcurand.so.10", {"/somewhere/libcurand.so.10", {}});  // stub without the symbol
  loader.FailOpen("libcuda.so.1", "libcuda.so.1: cannot open shared object file: No such file or directory");
  LibraryProbeOptions options;
  options.load_libraries = true;
  const auto reports = ProbeCudaLibraries(fs, search, &loader, options);

  const auto& cudart = ReportFor(reports, "libcudart.so.13");
  EXPECT_TRUE(cudart.loaded);
  EXPECT_EQ(cudart.loaded_version, "13.0");
  ASSERT_TRUE(cudart.picked.has_value());
  EXPECT_EQ(cudart.picked->version, "13.0");
  EXPECT_EQ(cudart.picked->version_origin, "loaded");

  const auto& cudnn = ReportFor(reports, "libcudnn.so.9");
  EXPECT_EQ(cudnn.loaded_path, std::string(kSysLib) + "/libcudnn.so.9");
  EXPECT_EQ(cudnn.loaded_version, "9.14.0");
  EXPECT_EQ(cudnn.built_against_cudart, "13.0");

  const auto& driver = ReportFor(reports, "libcuda.so.1");
  EXPECT_TRUE(driver.load_attempted);
  EXPECT_FALSE(driver.loaded);
  EXPECT_THAT(driver.load_error, ::testing::HasSubstr("cannot open shared object file"));

  const auto& curand = ReportFor(reports, "libcurand.so.10");
  EXPECT_TRUE(curand.loaded);
  EXPECT_EQ(curand.loaded_version, "");
  EXPECT_THAT(curand.version_error, ::testing::HasSubstr("curandGetVersion"));

  // cuDNN's sub-libraries have no version function: never loaded.
  EXPECT_FALSE(ReportFor(reports, "libcudnn_engines_precompiled.so.9").load_attempted);
}

TEST(LibraryProbeTest, MissingEpFileIsReportedPerNeededLibrary) {
  FakeFileSystem fs;
  FakeEnvironment env;
  LibrarySearch search(fs, env);
  LibraryProbeOptions options;
  options.ep_library_path = "/nowhere/libonnxruntime_providers_cuda.so";
  const auto reports = ProbeCudaLibraries(fs, search, nullptr, options);
  const auto& cublas = ReportFor(reports, "libcublas.so.13");
  EXPECT_FALSE(cublas.found);
  EXPECT_FALSE(cublas.symbols_checked);
  EXPECT_THAT(cublas.symbols_error, ::testing::HasSubstr("/nowhere/libonnxruntime_providers_cuda.so"));
}

// doctor opens the EP once (for NEEDED and its fatbin) and hands the reader
// over: the probe then uses its imports and never reads ep_library_path.
TEST(LibraryProbeTest, UsesAnAlreadyOpenedEp) {
  const char* home = std::getenv("HOME");
  const std::string ep_path = std::string(home ? home : "/root") + "/.cache/ortgpu/ort-1.29.0/lib/libonnxruntime_providers_cuda.so";
  const std::string cudart_path = "/usr/local/cuda-13.0/lib/libcudart.so.13";
  auto cudart_bytes = RealFileSystem().ReadFile(cudart_path);
  if (!cudart_bytes.ok() || !RealFileSystem().Exists(ep_path)) {
    GTEST_SKIP() << "needs " << cudart_path << " and " << ep_path;
  }
  auto ep = ElfReader::Open(RealFileSystem(), ep_path);
  ASSERT_TRUE(ep.ok()) << ep.status().ToString();
  // A machine with only cudart, and no EP file at ep_library_path.
  FakeFileSystem fs;
  FakeEnvironment env;
  fs.AddFile(std::string(kSysLib) + "/libcudart.so.13", *cudart_bytes);
  LibrarySearch search(fs, env);
  LibraryProbeOptions options;
  options.ep_library_path = "/nowhere/libonnxruntime_providers_cuda.so";
  options.ep_library = &*ep;
  const auto reports = ProbeCudaLibraries(fs, search, nullptr, options);
  const auto& cudart = ReportFor(reports, "libcudart.so.13");
  ASSERT_TRUE(cudart.found);
  EXPECT_TRUE(cudart.symbols_checked) << cudart.symbols_error;
  EXPECT_TRUE(cudart.missing_symbols.empty());
  const auto& cublas = ReportFor(reports, "libcublas.so.13");
  EXPECT_FALSE(cublas.found);
  EXPECT_EQ(cublas.symbols_error, "");  // the missing path was never opened
  // cudart's symbol tables were read, not the whole file.
  EXPECT_LT(fs.range_bytes(), cudart_bytes->size());
}

TEST(MissingSymbolsTest, ComparesVersionedImportsWithDefinitions) {
  const std::string path = "/usr/local/cuda-13.0/lib/libcudart.so.13";
  if (!RealFileSystem().Exists(path)) GTEST_SKIP() << path << " is not on this machine";
  auto cudart = ElfReader::Open(RealFileSystem(), path);
  ASSERT_TRUE(cudart.ok()) << cudart.status().ToString();
  std::vector<ElfSymbol> imports = {
      {"cudaMalloc", "libcudart.so.13", "libcudart.so.13"},
      {"cudaFunctionFromCuda99", "libcudart.so.13", "libcudart.so.13"},
      {"cudaMalloc", "libcudart.so.12", "libcudart.so.12"},  // asks another library: ignored
      {"malloc", "GLIBC_2.2.5", "libc.so.6"},
  };
  const auto missing = FindMissingSymbols(imports, "libcudart.so.13", *cudart);
  ASSERT_EQ(missing.size(), 1u);
  EXPECT_EQ(missing[0].name, "cudaFunctionFromCuda99");
  EXPECT_EQ(missing[0].version, "libcudart.so.13");
}

// This machine has a CUDA 13 toolkit from wheels in /usr/local/cuda-13.0 (on
// the ld.so.cache) but no driver: the probe must load cudart and cuDNN, read
// their versions, check the EP's imports, and report libcuda.so.1 missing.
TEST(LibraryProbeTest, RealMachine) {
  const char* home = std::getenv("HOME");
  const std::string ep = std::string(home ? home : "/root") + "/.cache/ortgpu/ort-1.29.0/lib/libonnxruntime_providers_cuda.so";
  LibrarySearch search(RealFileSystem(), RealEnvironment());
  if (!search.Find("libcudart.so.13").loader_pick || !RealFileSystem().Exists(ep)) {
    GTEST_SKIP() << "needs libcudart.so.13 on the loader path and " << ep;
  }
  LibraryProbeOptions options;
  options.load_libraries = true;
  options.ep_library_path = ep;
  const auto reports = ProbeCudaLibraries(RealFileSystem(), search, &RealDynamicLoader(), options);
  const auto& cudart = ReportFor(reports, "libcudart.so.13");
  EXPECT_TRUE(cudart.loaded) << cudart.load_error;
  EXPECT_EQ(cudart.loaded_version.rfind("13.", 0), 0u) << cudart.loaded_version;
  EXPECT_TRUE(cudart.symbols_checked) << cudart.symbols_error;
  EXPECT_TRUE(cudart.missing_symbols.empty());
  const auto& cudnn = ReportFor(reports, "libcudnn.so.9");
  if (cudnn.loaded) {
    EXPECT_EQ(cudnn.loaded_version.rfind("9.", 0), 0u) << cudnn.loaded_version;
  }
  const auto& cublas = ReportFor(reports, "libcublas.so.13");
  if (cublas.found) {
    EXPECT_TRUE(cublas.symbols_checked) << cublas.symbols_error;
    EXPECT_TRUE(cublas.missing_symbols.empty());
  }
}

}  // namespace
}  // namespace ortgpu::gpu
