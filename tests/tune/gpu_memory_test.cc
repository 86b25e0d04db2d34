// --max-gpu-memory (tune/gpu_memory.h): the units, a percentage of the
// GPU's memory through NVML (a fake H200), the CPU provider where it does not
// apply, and the estimate's inputs from the model; then the candidates it
// leaves out, each with its reason.
#include "tune/gpu_memory.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "fakes/fake_nvml.h"
#include "support/temp_dir.h"

namespace ortgpu::tune {
namespace {

using ::testing::HasSubstr;

int64_t Bytes(std::string_view text) {
  auto spec = ParseGpuMemoryLimit(text);
  EXPECT_TRUE(spec.ok()) << spec.status().ToString();
  return spec.ok() && spec->bytes ? *spec->bytes : -1;
}

TEST(GpuMemoryTest, SizesInBytesBinaryAndDecimalUnits) {
  EXPECT_EQ(Bytes("8000000000"), 8000000000);
  EXPECT_EQ(Bytes("64GiB"), int64_t{64} << 30);
  EXPECT_EQ(Bytes("1.5GiB"), int64_t{3} << 29);
  EXPECT_EQ(Bytes("512MiB"), int64_t{512} << 20);
  EXPECT_EQ(Bytes("80GB"), 80000000000);
  EXPECT_EQ(Bytes("100B"), 100);
  auto percent = ParseGpuMemoryLimit("90%");
  ASSERT_TRUE(percent.ok());
  EXPECT_EQ(percent->percent, 90);
  EXPECT_FALSE(percent->bytes.has_value());
}

TEST(GpuMemoryTest, ABadValueNamesTheFlagAndTheAcceptedForms) {
  for (const char* bad : {"", "lots", "64XB", "0", "-5GiB", "150%", "GiB"}) {
    auto spec = ParseGpuMemoryLimit(bad);
    ASSERT_FALSE(spec.ok()) << bad;
    EXPECT_EQ(spec.status().code(), Code::kInvalidArgument);
    EXPECT_THAT(spec.status().message(), HasSubstr("--max-gpu-memory"));
    EXPECT_THAT(spec.status().message(), HasSubstr("64GiB")) << bad;
  }
}

TEST(GpuMemoryTest, APercentageIsOfGpuZerosMemory) {
  testing::FakeNvml nvml;
  gpu::NvmlDevice h200;
  h200.name = "NVIDIA H200";
  h200.memory.total = uint64_t{140} << 30;
  nvml.devices = {h200};
  auto limit = GpuMemoryLimitFromFlag("50%", Provider::kCuda, &nvml);
  ASSERT_TRUE(limit.ok()) << limit.status().ToString();
  EXPECT_EQ(limit->bytes, int64_t{70} << 30);
  EXPECT_EQ(limit->source, "--max-gpu-memory 50% of GPU 0 (NVIDIA H200, 140.0 GiB): 70.0 GiB");

  testing::FakeNvml none;
  none.load_status = Unavailable("libnvidia-ml.so.1: cannot open shared object file");
  auto missing = GpuMemoryLimitFromFlag("50%", Provider::kCuda, &none);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), Code::kInvalidArgument);
  EXPECT_THAT(missing.status().message(), HasSubstr("needs the GPU's total memory"));
  EXPECT_THAT(missing.status().message(), HasSubstr("--max-gpu-memory 64GiB"));
}

TEST(GpuMemoryTest, OnTheCpuProviderTheFlagDoesNotApplyAndSaysSo) {
  testing::FakeNvml never_asked;
  never_asked.load_status = Unavailable("no NVML");
  auto limit = GpuMemoryLimitFromFlag("50%", Provider::kCpu, &never_asked);
  ASSERT_TRUE(limit.ok());
  EXPECT_FALSE(limit->bytes.has_value());
  EXPECT_THAT(limit->note, HasSubstr("does not apply to --provider cpu"));
  auto none = GpuMemoryLimitFromFlag("", Provider::kCuda, nullptr);
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->bytes.has_value());
  EXPECT_TRUE(none->note.empty());
}

TEST(GpuMemoryTest, TheEstimateComesFromTheModelAndLeavesOutWhatDoesNotFit) {
  testing_support::TempDir dir;
  const std::string model = dir.File("m.onnx", std::string(1000, 'w'));
  TensorInfo x{.name = "x", .dtype = DataType::kFloat, .shape = {-1, 3, 224, 224}};
  TensorInfo y{.name = "y", .dtype = DataType::kFloat16, .shape = {-1, 1000}};
  ModelTraits traits;
  traits.max_batch_size = 32;
  EstimateModelMemory(model, {x}, {y}, traits);
  EXPECT_EQ(traits.weight_bytes, 1000);
  EXPECT_EQ(traits.activation_bytes_per_row, 4 * 3 * 224 * 224 + 2 * 1000);

  // A limit that fits two instances of batch 8 with two workers, not more.
  const ServedCandidate fits{.instances = 2, .batch = 8};
  traits.gpu_memory_limit_bytes = EstimatedMemoryBytes(fits, traits);
  SpaceOptions space;
  space.precisions = {Precision::kTf32};
  space.batches = {8, 16};
  std::vector<Rejected> rejected;
  const auto kept = BuildServedCandidates({EngineChoice{}}, {8, 16}, traits, space, &rejected);
  EXPECT_THAT(kept, ::testing::Contains(ServedCandidate{.instances = 2, .batch = 8}));
  for (const ServedCandidate& c : kept) EXPECT_LE(EstimatedMemoryBytes(c, traits), *traits.gpu_memory_limit_bytes);
  ASSERT_FALSE(rejected.empty());
  EXPECT_THAT(rejected.front().reason, HasSubstr("over the GPU memory limit"));
}

}  // namespace
}  // namespace ortgpu::tune
