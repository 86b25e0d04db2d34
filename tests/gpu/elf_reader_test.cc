#include "gpu/elf_reader.h"

#include <algorithm>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "fakes/fake_file_system.h"

namespace ortgpu::gpu {
namespace {

using ::testing::Contains;
using ::testing::IsSupersetOf;

constexpr const char* kLibStdCxx = "/usr/lib/x86_64-linux-gnu/libstdc++.so.6";
constexpr const char* kCudaEp = "/root/.cache/ortgpu/ort-1.29.0/lib/libonnxruntime_providers_cuda.so";

std::string EpPath() {
  const char* home = std::getenv("HOME");
  return home != nullptr ? std::string(home) + "/.cache/ortgpu/ort-1.29.0/lib/libonnxruntime_providers_cuda.so"
                         : kCudaEp;
}

bool HasSymbol(const std::vector<ElfSymbol>& syms, const std::string& name, const std::string& version) {
  return std::any_of(syms.begin(), syms.end(),
                     [&](const ElfSymbol& s) { return s.name == name && s.version == version; });
}

TEST(ElfReaderTest, ReadsSystemLibStdCxx) {
  if (!RealFileSystem().Exists(kLibStdCxx)) GTEST_SKIP() << kLibStdCxx << " is not on this machine";
  auto elf = ElfReader::Open(RealFileSystem(), kLibStdCxx);
  ASSERT_TRUE(elf.ok()) << elf.status().ToString();
  EXPECT_EQ(elf->soname(), "libstdc++.so.6");
  EXPECT_EQ(elf->machine(), 62);
  EXPECT_THAT(elf->needed(), Contains("libc.so.6"));
  EXPECT_THAT(elf->version_definitions(), IsSupersetOf({"GLIBCXX_3.4", "GLIBCXX_3.4.21", "CXXABI_1.3"}));
  // std::terminate() is exported as _ZSt9terminatev@@GLIBCXX_3.4.
  EXPECT_TRUE(HasSymbol(elf->defined_symbols(), "_ZSt9terminatev", "GLIBCXX_3.4"));
  // It imports versioned symbols from libc, and knows the providing file.
  const auto& undef = elf->undefined_symbols();
  EXPECT_TRUE(std::any_of(undef.begin(), undef.end(), [](const ElfSymbol& s) {
    return s.name == "malloc" && s.version_library == "libc.so.6" && s.version.rfind("GLIBC_2.", 0) == 0;
  }));
  EXPECT_NE(elf->FindSection(".dynsym"), nullptr);
  auto rodata = elf->SectionBytes(".rodata");
  ASSERT_TRUE(rodata.ok());
  EXPECT_GT(rodata->size(), 0u);
  EXPECT_EQ(elf->SectionBytes(".no_such_section").status().code(), Code::kNotFound);
}

TEST(ElfReaderTest, ReadsCudaRuntimeWhenInstalled) {
  const std::string path = "/usr/local/cuda-13.0/lib/libcudart.so.13";
  if (!RealFileSystem().Exists(path)) GTEST_SKIP() << path << " is not on this machine";
  auto elf = ElfReader::Open(RealFileSystem(), path);
  ASSERT_TRUE(elf.ok()) << elf.status().ToString();
  EXPECT_EQ(elf->soname(), "libcudart.so.13");
  EXPECT_TRUE(HasSymbol(elf->defined_symbols(), "cudaRuntimeGetVersion", "libcudart.so.13"));
}

TEST(ElfReaderTest, ReadsTheCudaExecutionProvider) {
  const std::string path = EpPath();
  if (!RealFileSystem().Exists(path)) GTEST_SKIP() << path << " absent (scripts/fetch_ort.sh fetches it)";
  auto elf = ElfReader::Open(RealFileSystem(), path);
  ASSERT_TRUE(elf.ok()) << elf.status().ToString();
  EXPECT_THAT(elf->needed(), IsSupersetOf({"libcublasLt.so.13", "libcublas.so.13", "libcurand.so.10",
                                           "libcudart.so.13", "libcuda.so.1"}));
  EXPECT_THAT(elf->needed(), ::testing::Not(Contains("libcudnn.so.9")));  // opened at run time
  const auto& undef = elf->undefined_symbols();
  EXPECT_TRUE(std::any_of(undef.begin(), undef.end(), [](const ElfSymbol& s) {
    return s.name == "cudaMalloc" && s.version == "libcudart.so.13" && s.version_library == "libcudart.so.13";
  }));
  EXPECT_NE(elf->FindSection(".nv_fatbin"), nullptr);
}

TEST(ElfReaderTest, MissingFileIsNotFound) {
  testing::FakeFileSystem fs;
  auto elf = ElfReader::Open(fs, "/nowhere/libx.so");
  ASSERT_FALSE(elf.ok());
  EXPECT_EQ(elf.status().code(), Code::kNotFound);
}

TEST(ElfReaderTest, RejectsNonElfAndWrongClass) {
  for (const std::string& bytes : {std::string(), std::string("hello"), std::string(100, 'x'),
                                   std::string("\x7f" "ELF\x01\x01", 6) + std::string(100, '\0'),
                                   std::string("\x7f" "ELF\x02\x02", 6) + std::string(100, '\0')}) {
    auto elf = ElfReader::Parse(bytes, "test.so");
    ASSERT_FALSE(elf.ok());
    EXPECT_EQ(elf.status().code(), Code::kInvalidArgument);
    EXPECT_THAT(elf.status().message(), ::testing::HasSubstr("test.so"));
  }
}

TEST(ElfReaderTest, TruncatedAndCorruptFilesGiveErrorsNotCrashes) {
  if (!RealFileSystem().Exists(kLibStdCxx)) GTEST_SKIP() << kLibStdCxx << " is not on this machine";
  auto bytes = RealFileSystem().ReadFile(kLibStdCxx);
  ASSERT_TRUE(bytes.ok());
  // Section headers live at the end: any truncation loses them.
  for (size_t keep : {size_t{64}, size_t{4096}, bytes->size() / 2, bytes->size() - 1}) {
    auto elf = ElfReader::Parse(bytes->substr(0, keep), "truncated.so");
    EXPECT_FALSE(elf.ok()) << "kept " << keep;
  }
  // e_shoff pointing far past the end.
  std::string bad = *bytes;
  bad[40 + 7] = 0x7f;
  EXPECT_FALSE(ElfReader::Parse(bad, "bad.so").ok());
  // Deterministic byte corruption across the whole file: must never crash.
  uint32_t seed = 12345;
  for (int round = 0; round < 200; ++round) {
    std::string mutated = *bytes;
    for (int k = 0; k < 16; ++k) {
      seed = seed * 1664525u + 1013904223u;
      mutated[seed % mutated.size()] = static_cast<char>(seed >> 24);
    }
    // Section table and dynamic data are what the reader walks: hit them too.
    seed = seed * 1664525u + 1013904223u;
    mutated[mutated.size() - 1 - seed % 4096] = static_cast<char>(seed >> 8);
    auto elf = ElfReader::Parse(std::move(mutated), "mutated.so");
    (void)elf.ok();
  }
}

}  // namespace
}  // namespace ortgpu::gpu
