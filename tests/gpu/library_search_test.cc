#include "gpu/library_search.h"

#include <cstring>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "fakes/fake_environment.h"
#include "fakes/fake_file_system.h"

namespace ortgpu::gpu {
namespace {

using testing::FakeEnvironment;
using testing::FakeFileSystem;

constexpr const char* kSite = "/opt/torch/.venv/lib/python3.12/site-packages";
constexpr const char* kPipCudnn = "/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cudnn/lib";
constexpr const char* kSysLib = "/usr/lib/x86_64-linux-gnu";

// Writes an ld.so.cache in glibc's new format.
std::string BuildLdCache(const std::vector<std::tuple<std::string, std::string, int32_t>>& entries) {
  std::string header(48, '\0');
  std::memcpy(header.data(), "glibc-ld.so.cache1.1", 20);
  const uint32_t n = entries.size();
  std::memcpy(header.data() + 20, &n, 4);
  std::string table(24 * n, '\0');
  std::string strings;
  const size_t strings_at = header.size() + table.size();
  for (uint32_t i = 0; i < n; ++i) {
    const auto& [soname, path, flags] = entries[i];
    const uint32_t key = strings_at + strings.size();
    strings += soname + '\0';
    const uint32_t value = strings_at + strings.size();
    strings += path + '\0';
    std::memcpy(table.data() + 24 * i, &flags, 4);
    std::memcpy(table.data() + 24 * i + 4, &key, 4);
    std::memcpy(table.data() + 24 * i + 8, &value, 4);
  }
  const uint32_t len = strings.size();
  std::memcpy(header.data() + 24, &len, 4);
  return header + table + strings;
}

// The H200 machine: a torch venv with CUDA 13 and cuDNN 9.19 wheels, cuDNN
// 9.14 from the distribution in /usr/lib/x86_64-linux-gnu.
void AddTwoCudnnMachine(FakeFileSystem* fs, FakeEnvironment* env) {
  fs->AddFile("/opt/torch/.venv/bin/python3.12-real");  // placeholder so bin/ exists
  fs->AddFile("/usr/bin/python3.12");
  fs->AddSymlink("/opt/torch/.venv/bin/python3", "/usr/bin/python3.12");
  fs->AddFile(std::string(kPipCudnn) + "/libcudnn.so.9", "9.19");
  fs->AddFile(std::string(kSite) + "/nvidia/cu13/lib/libcudart.so.13");
  fs->AddFile(std::string(kSysLib) + "/libcudnn.so.9.14.0", "9.14");
  fs->AddSymlink(std::string(kSysLib) + "/libcudnn.so.9", "libcudnn.so.9.14.0");
  env->Set("PATH", "/opt/torch/.venv/bin:/usr/bin");
  env->Set("HOME", "/root");
}

LibrarySearchOptions NoCacheOptions() {
  LibrarySearchOptions o;
  o.ld_cache_path = "/etc/ld.so.cache";  // absent from the fakes unless a test adds it
  return o;
}

TEST(LdSoCacheTest, ParsesSyntheticCache) {
  const std::string bytes = BuildLdCache({{"libc.so.6", "/lib/x86_64-linux-gnu/libc.so.6", 0x0303},
                                          {"libc.so.6", "/lib/i386-linux-gnu/libc.so.6", 0x0003}});
  auto entries = ParseLdSoCache(bytes);
  ASSERT_TRUE(entries.ok()) << entries.status().ToString();
  ASSERT_EQ(entries->size(), 2u);
  EXPECT_EQ((*entries)[0].soname, "libc.so.6");
  EXPECT_EQ((*entries)[0].path, "/lib/x86_64-linux-gnu/libc.so.6");
  EXPECT_EQ((*entries)[0].flags, 0x0303);
}

TEST(LdSoCacheTest, RejectsCorruptCache) {
  EXPECT_FALSE(ParseLdSoCache("").ok());
  EXPECT_FALSE(ParseLdSoCache("not a cache at all, just text").ok());
  std::string bytes = BuildLdCache({{"libc.so.6", "/lib/libc.so.6", 0x0303}});
  EXPECT_FALSE(ParseLdSoCache(bytes.substr(0, 60)).ok());  // entry cut off
  bytes[20] = '\x7f';  // absurd entry count
  EXPECT_FALSE(ParseLdSoCache(bytes).ok());
}

TEST(LdSoCacheTest, ReadsThisMachinesCache) {
  auto bytes = RealFileSystem().ReadFile("/etc/ld.so.cache");
  if (!bytes.ok()) GTEST_SKIP() << "no /etc/ld.so.cache here";
  auto entries = ParseLdSoCache(*bytes);
  ASSERT_TRUE(entries.ok()) << entries.status().ToString();
  bool libc = false;
  for (const auto& e : *entries) libc |= e.soname == "libc.so.6" && RealFileSystem().Exists(e.path);
  EXPECT_TRUE(libc);

  LibrarySearch search(RealFileSystem(), RealEnvironment());
  EXPECT_TRUE(search.ld_cache_status().ok()) << search.ld_cache_status().ToString();
  const auto r = search.Find("libc.so.6");
  ASSERT_TRUE(r.loader_pick.has_value());
  EXPECT_TRUE(RealFileSystem().Exists(r.loader_pick->real_path));
}

TEST(LdSoConfTest, FollowsIncludes) {
  FakeFileSystem fs;
  fs.AddFile("/etc/ld.so.conf", "include /etc/ld.so.conf.d/*.conf\n# comment\n/opt/extra/lib\n");
  fs.AddFile("/etc/ld.so.conf.d/cuda.conf", "/usr/local/cuda-13.0/targets/x86_64-linux/lib  # toolkit\n");
  fs.AddFile("/etc/ld.so.conf.d/x86_64-linux-gnu.conf", "/usr/local/lib/x86_64-linux-gnu\n/lib/x86_64-linux-gnu\n");
  fs.AddFile("/etc/ld.so.conf.d/README", "/not/a/conf\n");
  EXPECT_EQ(ReadLdSoConf(fs, "/etc/ld.so.conf"),
            (std::vector<std::string>{"/usr/local/cuda-13.0/targets/x86_64-linux/lib",
                                      "/usr/local/lib/x86_64-linux-gnu", "/lib/x86_64-linux-gnu",
                                      "/opt/extra/lib"}));
}

TEST(LibrarySearchTest, CudnnOnlyInPipFolderIsNotOnTheLoaderPath) {
  FakeFileSystem fs;
  FakeEnvironment env;
  fs.AddFile("/usr/bin/python3.12");
  fs.AddSymlink("/opt/torch/.venv/bin/python3", "/usr/bin/python3.12");
  fs.AddFile(std::string(kPipCudnn) + "/libcudnn.so.9");
  env.Set("PATH", "/opt/torch/.venv/bin:/usr/bin");
  LibrarySearch search(fs, env, NoCacheOptions());
  const auto r = search.Find("libcudnn.so.9");
  EXPECT_FALSE(r.loader_pick.has_value());
  ASSERT_EQ(r.other_copies.size(), 1u);
  EXPECT_EQ(r.other_copies[0].path, std::string(kPipCudnn) + "/libcudnn.so.9");
  EXPECT_EQ(r.other_copies[0].folder, kPipCudnn);
  EXPECT_EQ(r.other_copies[0].source, CandidateSource::kPip);
}

TEST(LibrarySearchTest, TwoCudnnCopiesWithoutLdLibraryPathPicksTheSystemOne) {
  FakeFileSystem fs;
  FakeEnvironment env;
  AddTwoCudnnMachine(&fs, &env);
  LibrarySearch search(fs, env, NoCacheOptions());
  const auto r = search.Find("libcudnn.so.9");
  ASSERT_TRUE(r.loader_pick.has_value());
  EXPECT_EQ(r.loader_pick->path, std::string(kSysLib) + "/libcudnn.so.9");
  EXPECT_EQ(r.loader_pick->real_path, std::string(kSysLib) + "/libcudnn.so.9.14.0");
  EXPECT_EQ(r.loader_pick->source, CandidateSource::kDefaultDir);
  ASSERT_EQ(r.other_copies.size(), 1u);
  EXPECT_EQ(r.other_copies[0].folder, kPipCudnn);
}

TEST(LibrarySearchTest, LdLibraryPathWinsOverSystemFolders) {
  FakeFileSystem fs;
  FakeEnvironment env;
  AddTwoCudnnMachine(&fs, &env);
  env.Set("LD_LIBRARY_PATH", std::string("/nonexistent:") + kPipCudnn);
  LibrarySearch search(fs, env, NoCacheOptions());
  const auto r = search.Find("libcudnn.so.9");
  ASSERT_TRUE(r.loader_pick.has_value());
  EXPECT_EQ(r.loader_pick->folder, kPipCudnn);
  EXPECT_EQ(r.loader_pick->source, CandidateSource::kLdLibraryPath);
  // The pip folder is also a pip copy: same real path, so listed once.
  ASSERT_EQ(r.other_copies.size(), 1u);
  EXPECT_EQ(r.other_copies[0].real_path, std::string(kSysLib) + "/libcudnn.so.9.14.0");
}

TEST(LibrarySearchTest, LdCacheComesBeforeDefaultFolders) {
  FakeFileSystem fs;
  FakeEnvironment env;
  AddTwoCudnnMachine(&fs, &env);
  fs.AddFile("/usr/local/cuda-13.0/targets/x86_64-linux/lib/libcudnn.so.9");
  fs.AddSymlink("/usr/local/cuda", "cuda-13.0");
  fs.AddFile("/etc/ld.so.cache",
             BuildLdCache({{"libcudnn.so.9", "/usr/local/cuda-13.0/targets/x86_64-linux/lib/libcudnn.so.9", 0x0303},
                           {"libcudnn.so.9", "/usr/lib/i386-linux-gnu/libcudnn.so.9", 0x0003}}));
  LibrarySearch search(fs, env);
  ASSERT_TRUE(search.ld_cache_status().ok()) << search.ld_cache_status().ToString();
  const auto r = search.Find("libcudnn.so.9");
  ASSERT_TRUE(r.loader_pick.has_value());
  EXPECT_EQ(r.loader_pick->source, CandidateSource::kLdCache);
  EXPECT_EQ(r.loader_pick->path, "/usr/local/cuda-13.0/targets/x86_64-linux/lib/libcudnn.so.9");
  // /usr/local/cuda and /usr/local/cuda-13.0 are one toolkit: not a second copy.
  ASSERT_EQ(r.other_copies.size(), 2u);
  EXPECT_EQ(r.other_copies[0].folder, kSysLib);
  EXPECT_EQ(r.other_copies[1].source, CandidateSource::kPip);
}

TEST(LibrarySearchTest, CorruptCacheFallsBackToLdSoConf) {
  FakeFileSystem fs;
  FakeEnvironment env;
  fs.AddFile("/etc/ld.so.cache", "garbage");
  fs.AddFile("/etc/ld.so.conf", "/opt/vendor/lib\n");
  fs.AddFile("/opt/vendor/lib/libcudart.so.13");
  LibrarySearch search(fs, env);
  EXPECT_FALSE(search.ld_cache_status().ok());
  const auto r = search.Find("libcudart.so.13");
  ASSERT_TRUE(r.loader_pick.has_value());
  EXPECT_EQ(r.loader_pick->source, CandidateSource::kLdConf);
}

TEST(LibrarySearchTest, FindsCondaToolkitDriverMountAndVirtualEnvCopies) {
  FakeFileSystem fs;
  FakeEnvironment env;
  env.Set("HOME", "/home/ana");
  env.Set("VIRTUAL_ENV", "/srv/app/env");
  env.Set("CONDA_PREFIX", "/home/ana/miniconda3/envs/ml");
  fs.AddFile("/srv/app/env/lib/python3.11/site-packages/nvidia/cu13/lib/libcudart.so.13");
  fs.AddFile("/home/ana/miniconda3/envs/ml/lib/libcudart.so.13");
  fs.AddFile("/home/ana/miniconda3/envs/other/lib/libcudart.so.13");
  fs.AddFile("/usr/local/cuda-13.0/targets/x86_64-linux/lib/libcudart.so.13.0.96");
  fs.AddSymlink("/usr/local/cuda-13.0/targets/x86_64-linux/lib/libcudart.so.13", "libcudart.so.13.0.96");
  fs.AddFile("/usr/local/nvidia/lib64/libcuda.so.1");
  fs.AddFile("/home/ana/.venv/lib/python3.12/site-packages/nvidia/cu13/lib/libcudart.so.13");
  LibrarySearch search(fs, env, NoCacheOptions());
  const auto r = search.Find("libcudart.so.13");
  EXPECT_FALSE(r.loader_pick.has_value());
  std::vector<std::pair<std::string, CandidateSource>> got;
  for (const auto& c : r.other_copies) got.emplace_back(c.real_path, c.source);
  EXPECT_THAT(got, ::testing::UnorderedElementsAre(
      std::pair<std::string, CandidateSource>{"/srv/app/env/lib/python3.11/site-packages/nvidia/cu13/lib/libcudart.so.13", CandidateSource::kPip},
      std::pair<std::string, CandidateSource>{"/home/ana/.venv/lib/python3.12/site-packages/nvidia/cu13/lib/libcudart.so.13", CandidateSource::kPip},
      std::pair<std::string, CandidateSource>{"/home/ana/miniconda3/envs/ml/lib/libcudart.so.13", CandidateSource::kConda},
      std::pair<std::string, CandidateSource>{"/home/ana/miniconda3/envs/other/lib/libcudart.so.13", CandidateSource::kConda},
      std::pair<std::string, CandidateSource>{"/usr/local/cuda-13.0/targets/x86_64-linux/lib/libcudart.so.13.0.96", CandidateSource::kCudaToolkit}));
  const auto driver = search.Find("libcuda.so.1");
  ASSERT_EQ(driver.other_copies.size(), 1u);
  EXPECT_EQ(driver.other_copies[0].source, CandidateSource::kDriverMount);
  EXPECT_EQ(CandidateSourceName(CandidateSource::kDriverMount), "driver_mount");
}

TEST(LibrarySearchTest, EmptyMachineFindsNothing) {
  FakeFileSystem fs;
  FakeEnvironment env;
  LibrarySearch search(fs, env);
  const auto r = search.Find("libcudnn.so.9");
  EXPECT_FALSE(r.loader_pick.has_value());
  EXPECT_TRUE(r.other_copies.empty());
  EXPECT_EQ(search.ld_cache_status().code(), Code::kNotFound);
}

}  // namespace
}  // namespace ortgpu::gpu
