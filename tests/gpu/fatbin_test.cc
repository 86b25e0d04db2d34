#include "gpu/fatbin.h"

#include <cstring>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "fakes/fake_file_system.h"
#include "gpu/elf_reader.h"
#include "sys/file_system.h"

namespace ortgpu::gpu {
namespace {

// Builds fatbin containers the way nvcc lays them out.
class FatbinBuilder {
 public:
  struct Entry {
    uint16_t kind;  // 1 PTX, 2 cubin
    uint32_t arch;
    size_t payload;
  };
  FatbinBuilder& Container(const std::vector<Entry>& entries) {
    std::string body;
    for (const auto& e : entries) {
      std::string h(64, '\0');
      Put<uint16_t>(&h, 0, e.kind);
      Put<uint16_t>(&h, 2, 0x0101);
      Put<uint32_t>(&h, 4, 64);
      Put<uint64_t>(&h, 8, e.payload);
      Put<uint32_t>(&h, 28, e.arch);
      body += h + std::string(e.payload, '\xab');
    }
    std::string c(16, '\0');
    Put<uint32_t>(&c, 0, kFatbinMagic);
    Put<uint16_t>(&c, 4, 1);
    Put<uint16_t>(&c, 6, 16);
    Put<uint64_t>(&c, 8, body.size());
    bytes_ += c + body;
    while (bytes_.size() % 8 != 0) bytes_ += '\0';
    return *this;
  }
  FatbinBuilder& Padding(size_t n) {
    bytes_ += std::string(n, '\0');
    return *this;
  }
  const std::string& bytes() const { return bytes_; }

 private:
  template <typename T>
  static void Put(std::string* s, size_t off, T v) {
    std::memcpy(s->data() + off, &v, sizeof(T));
  }
  std::string bytes_;
};

TEST(FatbinTest, CollectsCubinAndPtxArchitectures) {
  FatbinBuilder b;
  b.Container({{2, 80, 100}, {2, 90, 37}, {1, 90, 50}}).Padding(24).Container({{2, 120, 8}, {2, 75, 0}});
  auto archs = ParseFatbin(b.bytes());
  ASSERT_TRUE(archs.ok()) << archs.status().ToString();
  EXPECT_EQ(archs->cubin, (std::set<int>{75, 80, 90, 120}));
  EXPECT_EQ(archs->ptx, (std::set<int>{90}));
  EXPECT_EQ(archs->containers, 2);
  EXPECT_EQ(archs->entries, 5);
}

TEST(FatbinTest, EmptySectionHasNoArchitectures) {
  auto archs = ParseFatbin("");
  ASSERT_TRUE(archs.ok());
  EXPECT_TRUE(archs->cubin.empty());
  EXPECT_TRUE(archs->ptx.empty());
}

TEST(FatbinTest, TruncatedContainerIsAnError) {
  FatbinBuilder b;
  b.Container({{2, 80, 1000}});
  for (size_t cut : {size_t{20}, size_t{100}, b.bytes().size() - 1}) {
    auto archs = ParseFatbin(std::string_view(b.bytes()).substr(0, cut));
    EXPECT_FALSE(archs.ok()) << "cut at " << cut;
  }
}

TEST(FatbinTest, CanRunOnFollowsCudaCompatibilityRules) {
  FatbinArchitectures a;
  a.cubin = {75, 80, 86, 89, 90, 120};
  EXPECT_TRUE(CanRunOn(a, 90));   // H200: exact cubin
  EXPECT_TRUE(CanRunOn(a, 87));   // sm_86 cubin runs on sm_87
  EXPECT_FALSE(CanRunOn(a, 100)); // B200: no sm_100 cubin and no PTX
  EXPECT_FALSE(CanRunOn(a, 70));  // V100: too old
  a.ptx = {90};
  EXPECT_TRUE(CanRunOn(a, 100));  // PTX JIT
}

void ExpectSame(const Expected<FatbinArchitectures>& a, const Expected<FatbinArchitectures>& b,
                const std::string& what) {
  ASSERT_EQ(a.ok(), b.ok()) << what << ": " << a.status().ToString() << " vs " << b.status().ToString();
  if (!a.ok()) {
    EXPECT_EQ(a.status().message(), b.status().message()) << what;
    return;
  }
  EXPECT_EQ(a->cubin, b->cubin) << what;
  EXPECT_EQ(a->ptx, b->ptx) << what;
  EXPECT_EQ(a->containers, b->containers) << what;
  EXPECT_EQ(a->entries, b->entries) << what;
}

// A fatbin with large payloads (skipped by the ranged walk), many small
// entries (several headers per read window) and padding between containers.
FatbinBuilder MixedFatbin() {
  FatbinBuilder b;
  std::vector<FatbinBuilder::Entry> small;
  for (int i = 0; i < 200; ++i) small.push_back({2, static_cast<uint32_t>(80 + i % 3), static_cast<size_t>(i * 7 % 300)});
  b.Container({{2, 75, 300000}, {1, 90, 5000}, {2, 90, 1}})
      .Padding(4096 + 16)
      .Container(small)
      .Padding(8)
      .Container({{2, 120, 1 << 20}, {2, 89, 4095}, {2, 86, 4097}});
  return b;
}

TEST(FatbinRangedTest, FromFileMatchesInMemoryAndSkipsPayloads) {
  const FatbinBuilder b = MixedFatbin();
  const std::string prefix(1000, '\x11');  // the rest of the ELF file before the section
  testing::FakeFileSystem fs;
  fs.AddFile("/lib/libep.so", prefix + b.bytes() + std::string(500, '\x22'));
  auto ranged = ParseFatbinFromFile(fs, "/lib/libep.so", prefix.size(), b.bytes().size());
  ExpectSame(ranged, ParseFatbin(b.bytes()), "mixed");
  ASSERT_TRUE(ranged.ok());
  EXPECT_EQ(ranged->cubin, (std::set<int>{75, 80, 81, 82, 86, 89, 90, 120}));
  EXPECT_EQ(ranged->ptx, (std::set<int>{90}));
  EXPECT_EQ(ranged->containers, 3);
  EXPECT_EQ(ranged->entries, 206);
  EXPECT_LT(fs.range_bytes(), b.bytes().size() / 20);  // headers, not the 1.3 MB of payloads
}

// Every cut of a fatbin, walked in memory and through a reader: same result
// or the same error.
TEST(FatbinRangedTest, EveryTruncationMatchesInMemory) {
  FatbinBuilder b;
  b.Container({{2, 80, 100}, {2, 90, 37}, {1, 90, 50}}).Padding(24).Container({{2, 120, 8}, {2, 75, 0}});
  const std::string& all = b.bytes();
  for (size_t cut = 0; cut <= all.size(); ++cut) {
    const std::string_view section = std::string_view(all).substr(0, cut);
    const FatbinRangeReader read = [&](uint64_t offset, uint64_t size) -> Expected<std::string> {
      return std::string(section.substr(offset, size));
    };
    ExpectSame(ParseFatbin(cut, read), ParseFatbin(section), "cut at " + std::to_string(cut));
  }
}

TEST(FatbinRangedTest, FileEndingInsideTheSectionIsAnError) {
  const FatbinBuilder b = MixedFatbin();
  testing::FakeFileSystem fs;
  fs.AddFile("/lib/libep.so", std::string(64, '\0') + b.bytes().substr(0, 200000));
  auto archs = ParseFatbinFromFile(fs, "/lib/libep.so", 64, b.bytes().size());
  ASSERT_FALSE(archs.ok());
  EXPECT_EQ(archs.status().code(), Code::kInvalidArgument);
  EXPECT_THAT(archs.status().message(), ::testing::HasSubstr("/lib/libep.so"));
  EXPECT_THAT(archs.status().message(), ::testing::HasSubstr("truncated"));

  // A section offset past the end of the file, and a missing file.
  EXPECT_EQ(ParseFatbinFromFile(fs, "/lib/libep.so", 1 << 30, 4096).status().code(), Code::kInvalidArgument);
  EXPECT_EQ(ParseFatbinFromFile(fs, "/lib/none.so", 0, 4096).status().code(), Code::kNotFound);
}

TEST(FatbinRangedTest, LibraryWithoutFatbinIsNotFound) {
  const std::string path = "/usr/lib/x86_64-linux-gnu/libstdc++.so.6";
  if (!RealFileSystem().Exists(path)) GTEST_SKIP() << path << " is not on this machine";
  auto elf = ElfReader::Open(RealFileSystem(), path);
  ASSERT_TRUE(elf.ok()) << elf.status().ToString();
  EXPECT_EQ(ParseFatbinOfLibrary(*elf).status().code(), Code::kNotFound);
}

TEST(FatbinTest, RealCudaExecutionProviderArchitectures) {
  const char* home = std::getenv("HOME");
  const std::string path =
      std::string(home ? home : "/root") + "/.cache/ortgpu/ort-1.29.0/lib/libonnxruntime_providers_cuda.so";
  if (!RealFileSystem().Exists(path)) GTEST_SKIP() << path << " absent (scripts/fetch_ort.sh fetches it)";
  auto elf = ElfReader::Open(RealFileSystem(), path);
  ASSERT_TRUE(elf.ok()) << elf.status().ToString();
  // What doctor does: the headers only, with ranged reads.
  auto ranged = ParseFatbinOfLibrary(*elf);
  ASSERT_TRUE(ranged.ok()) << ranged.status().ToString();
  EXPECT_EQ(ranged->cubin, (std::set<int>{75, 80, 86, 89, 90, 120}));
  EXPECT_TRUE(ranged->ptx.empty());  // ORT 1.29 ships no PTX: sm_100 GPUs cannot run it
  EXPECT_EQ(ranged->containers, 289);
  EXPECT_EQ(ranged->entries, 1591);
  const ElfSection* fatbin = elf->FindSection(".nv_fatbin");
  ASSERT_NE(fatbin, nullptr);
  ExpectSame(ParseFatbinFromFile(RealFileSystem(), path, fatbin->offset, fatbin->size), ranged, "from file");

  // The whole 166 MB section in memory gives the same answer.
  auto section = elf->SectionBytes(".nv_fatbin");
  ASSERT_TRUE(section.ok()) << section.status().ToString();
  ExpectSame(ParseFatbin(*section), ranged, "in memory");
}

}  // namespace
}  // namespace ortgpu::gpu
