#include "gpu/fatbin.h"

#include <cstring>

#include <gtest/gtest.h>

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

TEST(FatbinTest, RealCudaExecutionProviderArchitectures) {
  const char* home = std::getenv("HOME");
  const std::string path =
      std::string(home ? home : "/root") + "/.cache/ortgpu/ort-1.29.0/lib/libonnxruntime_providers_cuda.so";
  if (!RealFileSystem().Exists(path)) GTEST_SKIP() << path << " absent (scripts/fetch_ort.sh fetches it)";
  auto elf = ElfReader::Open(RealFileSystem(), path);
  ASSERT_TRUE(elf.ok()) << elf.status().ToString();
  auto section = elf->SectionBytes(".nv_fatbin");
  ASSERT_TRUE(section.ok()) << section.status().ToString();
  auto archs = ParseFatbin(*section);
  ASSERT_TRUE(archs.ok()) << archs.status().ToString();
  EXPECT_EQ(archs->cubin, (std::set<int>{75, 80, 86, 89, 90, 120}));
  EXPECT_TRUE(archs->ptx.empty());  // ORT 1.29 ships no PTX: sm_100 GPUs cannot run it
  EXPECT_EQ(archs->containers, 289);
}

}  // namespace
}  // namespace ortgpu::gpu
