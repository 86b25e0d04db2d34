#include "gpu/elf_reader.h"

#include <algorithm>
#include <cstring>
#include <tuple>

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

// Everything a reader parsed, in comparable form.
auto Summary(const ElfReader& e) {
  std::vector<std::tuple<std::string, uint32_t, uint64_t, uint64_t, uint64_t, uint32_t, uint32_t>> sections;
  for (const auto& s : e.sections()) sections.emplace_back(s.name, s.type, s.offset, s.size, s.address, s.link, s.info);
  const auto symbols = [](const std::vector<ElfSymbol>& syms) {
    std::vector<std::tuple<std::string, std::string, std::string, bool, bool, bool>> out;
    for (const auto& s : syms) out.emplace_back(s.name, s.version, s.version_library, s.default_version, s.is_function, s.weak);
    return out;
  };
  return std::make_tuple(e.machine(), e.soname(), e.needed(), e.rpath(), e.runpath(), e.version_definitions(),
                         sections, symbols(e.defined_symbols()), symbols(e.undefined_symbols()));
}

// The bytes of `path`, or "" when it is not on this machine.
std::string ReadWhole(const std::string& path) {
  auto bytes = RealFileSystem().ReadFile(path);
  return bytes.ok() ? *bytes : std::string();
}

template <typename T>
void Put(std::string* s, size_t off, T v) {
  std::memcpy(s->data() + off, &v, sizeof(T));
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

TEST(ElfReaderRangedTest, OpenReadsOnlyHeadersAndDynamicTables) {
  const std::string bytes = ReadWhole(kLibStdCxx);
  if (bytes.empty()) GTEST_SKIP() << kLibStdCxx << " is not on this machine";
  testing::FakeFileSystem fs;
  fs.AddFile("/lib/libstdc++.so.6", bytes);
  auto opened = ElfReader::Open(fs, "/lib/libstdc++.so.6");
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  auto parsed = ElfReader::Parse(bytes, "/lib/libstdc++.so.6");
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_EQ(Summary(*opened), Summary(*parsed));
  // Symbol tables (~470 KB of 2.2 MB), not the code or .rodata.
  const uint64_t after_open = fs.range_bytes();
  EXPECT_LT(after_open, bytes.size() / 4);
  EXPECT_LT(fs.range_reads(), 20u);

  // Other sections are read on demand, once.
  auto rodata = opened->SectionBytes(".rodata");
  ASSERT_TRUE(rodata.ok()) << rodata.status().ToString();
  EXPECT_EQ(*rodata, *parsed->SectionBytes(".rodata"));
  EXPECT_EQ(fs.range_bytes(), after_open + rodata->size());
  auto again = opened->SectionBytes(".rodata");
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->data(), rodata->data());
  EXPECT_EQ(fs.range_bytes(), after_open + rodata->size());
}

TEST(ElfReaderRangedTest, OpenMatchesParseOnTheCudaExecutionProvider) {
  const std::string bytes = ReadWhole(EpPath());
  if (bytes.empty()) GTEST_SKIP() << EpPath() << " absent (scripts/fetch_ort.sh fetches it)";
  auto opened = ElfReader::Open(RealFileSystem(), EpPath());
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  auto parsed = ElfReader::Parse(bytes, EpPath());
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_EQ(Summary(*opened), Summary(*parsed));
  auto range = opened->ReadFileRange(opened->FindSection(".nv_fatbin")->offset, 4096);
  ASSERT_TRUE(range.ok()) << range.status().ToString();
  EXPECT_EQ(*range, bytes.substr(opened->FindSection(".nv_fatbin")->offset, 4096));
}

TEST(ElfReaderRangedTest, RealFileSystemReadRangeClipsAtTheEnd) {
  const std::string bytes = ReadWhole(kLibStdCxx);
  if (bytes.empty()) GTEST_SKIP() << kLibStdCxx << " is not on this machine";
  const FileSystem& fs = RealFileSystem();
  EXPECT_EQ(*fs.ReadRange(kLibStdCxx, 0, 64), bytes.substr(0, 64));
  EXPECT_EQ(*fs.ReadRange(kLibStdCxx, 1000, 5000), bytes.substr(1000, 5000));
  EXPECT_EQ(*fs.ReadRange(kLibStdCxx, bytes.size() - 10, 100), bytes.substr(bytes.size() - 10));
  EXPECT_EQ(*fs.ReadRange(kLibStdCxx, bytes.size(), 100), "");
  EXPECT_EQ(fs.ReadRange(kLibStdCxx, bytes.size() + 1, 1).status().code(), Code::kInvalidArgument);
  EXPECT_EQ(fs.ReadRange("/nowhere/libx.so", 0, 64).status().code(), Code::kNotFound);
  EXPECT_EQ(ElfReader::Open(fs, "/nowhere/libx.so").status().code(), Code::kNotFound);
}

TEST(ElfReaderRangedTest, TruncatedFilesGiveErrorsNotCrashes) {
  const std::string bytes = ReadWhole(kLibStdCxx);
  if (bytes.empty()) GTEST_SKIP() << kLibStdCxx << " is not on this machine";
  testing::FakeFileSystem fs;
  for (size_t keep : {size_t{0}, size_t{10}, size_t{64}, size_t{4096}, bytes.size() / 2, bytes.size() - 1}) {
    fs.AddFile("/lib/truncated.so", bytes.substr(0, keep));
    auto elf = ElfReader::Open(fs, "/lib/truncated.so");
    ASSERT_FALSE(elf.ok()) << "kept " << keep;
    EXPECT_EQ(elf.status().code(), Code::kInvalidArgument) << "kept " << keep;
    EXPECT_THAT(elf.status().message(), ::testing::HasSubstr("/lib/truncated.so"));
  }
}

// The section table survives (copied to the new end of the file) but the
// file stops in the middle of .dynsym: the sections after the cut are named.
TEST(ElfReaderRangedTest, FileCutInTheMiddleOfASectionIsReported) {
  const std::string bytes = ReadWhole(kLibStdCxx);
  if (bytes.empty()) GTEST_SKIP() << kLibStdCxx << " is not on this machine";
  auto whole = ElfReader::Parse(bytes, "whole");
  ASSERT_TRUE(whole.ok());
  const ElfSection* dynsym = whole->FindSection(".dynsym");
  ASSERT_NE(dynsym, nullptr);
  uint64_t shoff = 0;
  uint16_t shnum = 0;
  std::memcpy(&shoff, bytes.data() + 40, 8);
  std::memcpy(&shnum, bytes.data() + 60, 2);
  std::string cut = bytes.substr(0, dynsym->offset + dynsym->size / 2);
  while (cut.size() % 8 != 0) cut += '\0';
  Put<uint64_t>(&cut, 40, cut.size());
  cut += bytes.substr(shoff, uint64_t{shnum} * 64);
  testing::FakeFileSystem fs;
  fs.AddFile("/lib/cut.so", cut);
  auto elf = ElfReader::Open(fs, "/lib/cut.so");
  ASSERT_FALSE(elf.ok());
  EXPECT_EQ(elf.status().code(), Code::kInvalidArgument);
  EXPECT_THAT(elf.status().message(), ::testing::HasSubstr("/lib/cut.so: corrupt ELF section table: section 3 "
                                                           "extends past the end of the file"));
  // Parse() of the same bytes says the same.
  EXPECT_EQ(ElfReader::Parse(cut, "/lib/cut.so").status().message(), elf.status().message());
}

// The file is replaced by a shorter one after Open(): reading a section
// later says so instead of returning short bytes.
TEST(ElfReaderRangedTest, FileThatShrinksAfterOpenIsReported) {
  const std::string bytes = ReadWhole(kLibStdCxx);
  if (bytes.empty()) GTEST_SKIP() << kLibStdCxx << " is not on this machine";
  testing::FakeFileSystem fs;
  fs.AddFile("/lib/libstdc++.so.6", bytes);
  auto elf = ElfReader::Open(fs, "/lib/libstdc++.so.6");
  ASSERT_TRUE(elf.ok()) << elf.status().ToString();
  const ElfSection* rodata = elf->FindSection(".rodata");
  ASSERT_NE(rodata, nullptr);
  fs.AddFile("/lib/libstdc++.so.6", bytes.substr(0, rodata->offset + rodata->size / 2));
  auto section = elf->SectionBytes(".rodata");
  ASSERT_FALSE(section.ok());
  EXPECT_EQ(section.status().code(), Code::kInvalidArgument);
  EXPECT_THAT(section.status().message(), ::testing::HasSubstr("truncated or was replaced"));
  EXPECT_EQ(elf->ReadFileRange(rodata->offset, rodata->size).status().code(), Code::kInvalidArgument);
  EXPECT_EQ(elf->ReadFileRange(bytes.size() + 1, 1).status().code(), Code::kInvalidArgument);
  // Emptied: what Open() already read stays readable, the rest is an error.
  fs.AddFile("/lib/libstdc++.so.6", "");
  EXPECT_TRUE(elf->SectionBytes(".dynstr").ok());
  EXPECT_EQ(elf->SectionBytes(".text").status().code(), Code::kInvalidArgument);
}

TEST(ElfReaderRangedTest, CorruptFilesGiveTheSameAnswerAsParse) {
  const std::string bytes = ReadWhole(kLibStdCxx);
  if (bytes.empty()) GTEST_SKIP() << kLibStdCxx << " is not on this machine";
  testing::FakeFileSystem fs;
  uint32_t seed = 777;
  for (int round = 0; round < 100; ++round) {
    std::string mutated = bytes;
    for (int k = 0; k < 8; ++k) {
      seed = seed * 1664525u + 1013904223u;
      mutated[seed % mutated.size()] = static_cast<char>(seed >> 24);
    }
    // The header, the section table and the dynamic tables.
    seed = seed * 1664525u + 1013904223u;
    mutated[seed % 64] = static_cast<char>(seed >> 8);
    seed = seed * 1664525u + 1013904223u;
    mutated[mutated.size() - 1 - seed % 4096] = static_cast<char>(seed >> 8);
    seed = seed * 1664525u + 1013904223u;
    mutated[0x9010 + seed % 0x7a000] = static_cast<char>(seed >> 8);
    fs.AddFile("/lib/m.so", mutated);
    auto opened = ElfReader::Open(fs, "/lib/m.so");
    auto parsed = ElfReader::Parse(std::move(mutated), "/lib/m.so");
    ASSERT_EQ(opened.ok(), parsed.ok()) << "round " << round << ": " << opened.status().ToString() << " vs "
                                        << parsed.status().ToString();
    if (opened.ok()) {
      EXPECT_EQ(Summary(*opened), Summary(*parsed)) << "round " << round;
    } else {
      EXPECT_EQ(opened.status().message(), parsed.status().message()) << "round " << round;
    }
  }
}

}  // namespace
}  // namespace ortgpu::gpu
