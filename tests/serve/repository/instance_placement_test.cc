#include "serve/repository/instance_placement.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "fakes/fake_environment.h"
#include "fakes/fake_gpu_driver.h"
#include "serve/repository/model_config.h"

namespace ortgpu::serve {
namespace {

using ::testing::HasSubstr;

inference::ModelConfig Config(const std::string& text) {
  auto parsed = ParseModelConfig(text, "config.pbtxt");
  EXPECT_TRUE(parsed.ok()) << parsed.status().ToString();
  return parsed.ok() ? parsed->config : inference::ModelConfig{};
}

VisibleGpus Gpus(int n, std::optional<std::string> visible = std::nullopt) {
  VisibleGpus g;
  for (int i = 0; i < n; ++i) {
    g.uuids.push_back("GPU-" + std::to_string(i));
    g.names.push_back("NVIDIA H100");
  }
  g.cuda_visible_devices = std::move(visible);
  return g;
}

// The GPU of each instance, in order.
std::vector<int> GpusOf(const std::vector<InstanceSpec>& instances) {
  std::vector<int> out;
  for (const auto& s : instances) out.push_back(s.kind == InstanceKind::kGpu ? s.gpu : -1);
  return out;
}

TEST(InstancePlacementTest, CountInstancesOnEachListedGpuAsTritonDoes) {
  const VisibleGpus four = Gpus(4);
  auto placed = PlaceInstances(Config(R"pb(instance_group [ { count: 2 kind: KIND_GPU gpus: [ 0, 1 ] } ])pb"),
                               InstanceKind::kGpu, &four);
  ASSERT_TRUE(placed.ok()) << placed.status().ToString();
  EXPECT_EQ(GpusOf(*placed), (std::vector<int>{0, 0, 1, 1}));
  EXPECT_EQ(InstancesPerGpu(*placed), (std::map<int, int>{{0, 2}, {1, 2}}));
  EXPECT_EQ(DescribePlacement(*placed, &four.names), "GPU 0 (NVIDIA H100) x2, GPU 1 (NVIDIA H100) x2");
}

TEST(InstancePlacementTest, AGroupWithoutGpusHasCountInstancesOnEveryVisibleGpu) {
  const VisibleGpus two = Gpus(2), four = Gpus(4);
  const auto config = Config(R"pb(instance_group [ { count: 2 kind: KIND_GPU }, { count: 1 kind: KIND_CPU } ])pb");
  auto on_two = PlaceInstances(config, InstanceKind::kGpu, &two);
  ASSERT_TRUE(on_two.ok()) << on_two.status().ToString();
  EXPECT_EQ(GpusOf(*on_two), (std::vector<int>{0, 0, 1, 1, -1}));
  auto on_four = PlaceInstances(config, InstanceKind::kGpu, &four);
  ASSERT_TRUE(on_four.ok());
  EXPECT_EQ(GpusOf(*on_four), (std::vector<int>{0, 0, 1, 1, 2, 2, 3, 3, -1}));
  EXPECT_EQ(DescribePlacement(*on_four, nullptr), "GPU 0 x2, GPU 1 x2, GPU 2 x2, GPU 3 x2, CPU x1");
}

TEST(InstancePlacementTest, NoInstanceGroupIsOneInstancePerVisibleGpuOrOneOnTheCpu) {
  const VisibleGpus four = Gpus(4);
  auto gpu = PlaceInstances(Config(""), InstanceKind::kGpu, &four);
  ASSERT_TRUE(gpu.ok());
  EXPECT_EQ(GpusOf(*gpu), (std::vector<int>{0, 1, 2, 3}));
  auto cpu = PlaceInstances(Config(""), InstanceKind::kCpu, &four);
  ASSERT_TRUE(cpu.ok());
  EXPECT_EQ(GpusOf(*cpu), (std::vector<int>{-1}));
  // KIND_AUTO takes the default kind.
  auto autos = PlaceInstances(Config(R"pb(instance_group [ { count: 1 kind: KIND_AUTO } ])pb"), InstanceKind::kGpu, &four);
  ASSERT_TRUE(autos.ok());
  EXPECT_EQ(GpusOf(*autos), (std::vector<int>{0, 1, 2, 3}));
}

TEST(InstancePlacementTest, UnknownGpusKeepTheSingleGpuPlacement) {
  auto placed = PlaceInstances(Config(R"pb(instance_group [ { count: 2 kind: KIND_GPU } ])pb"), InstanceKind::kGpu,
                               nullptr);
  ASSERT_TRUE(placed.ok());
  EXPECT_EQ(GpusOf(*placed), (std::vector<int>{0, 0}));
  auto listed = PlaceInstances(Config(R"pb(instance_group [ { kind: KIND_GPU gpus: [ 3 ] } ])pb"), InstanceKind::kGpu,
                               nullptr);
  ASSERT_TRUE(listed.ok());
  EXPECT_EQ(GpusOf(*listed), (std::vector<int>{3}));
}

TEST(InstancePlacementTest, AListedGpuThatIsNotVisibleNamesTheGpuTheCountAndCudaVisibleDevices) {
  const VisibleGpus one = Gpus(1, "0");
  auto placed = PlaceInstances(Config(R"pb(instance_group [ { count: 1 kind: KIND_GPU gpus: [ 0, 1 ] } ])pb"),
                               InstanceKind::kGpu, &one);
  ASSERT_FALSE(placed.ok());
  EXPECT_EQ(placed.status().code(), Code::kInvalidArgument);
  EXPECT_THAT(placed.status().message(),
              HasSubstr("instance_group 0 names GPU 1 but 1 GPU is visible (CUDA_VISIBLE_DEVICES=0), numbered 0..0"));
  EXPECT_THAT(placed.status().message(), HasSubstr("leave gpus out to use every visible GPU"));

  const VisibleGpus two = Gpus(2);
  auto named = PlaceInstances(Config(R"pb(instance_group [ { name: "big" kind: KIND_GPU gpus: [ 2 ] } ])pb"),
                              InstanceKind::kGpu, &two);
  ASSERT_FALSE(named.ok());
  EXPECT_THAT(named.status().message(),
              HasSubstr("instance_group 0 ('big') names GPU 2 but 2 GPUs are visible (CUDA_VISIBLE_DEVICES unset)"));

  auto negative = PlaceInstances(Config(R"pb(instance_group [ { kind: KIND_GPU gpus: [ -1 ] } ])pb"),
                                 InstanceKind::kGpu, nullptr);
  ASSERT_FALSE(negative.ok());
  EXPECT_THAT(negative.status().message(), HasSubstr("names GPU -1"));
}

TEST(InstancePlacementTest, GpuInstancesWithNoVisibleGpuAreRefused) {
  const VisibleGpus none = Gpus(0, "");
  auto placed = PlaceInstances(Config(R"pb(instance_group [ { kind: KIND_GPU } ])pb"), InstanceKind::kCpu, &none);
  ASSERT_FALSE(placed.ok());
  EXPECT_THAT(placed.status().message(),
              HasSubstr("instance_group 0 asks for GPU instances but 0 GPUs are visible (CUDA_VISIBLE_DEVICES=)"));
  // CPU groups need no GPU.
  EXPECT_TRUE(PlaceInstances(Config(R"pb(instance_group [ { kind: KIND_CPU } ])pb"), InstanceKind::kCpu, &none).ok());
}

TEST(InstancePlacementTest, VisibleGpusComeFromTheDriverAndTheEnvironment) {
  testing::FakeGpuDriver driver;
  driver.AddDevice("NVIDIA H100 80GB HBM3", "GPU-aaaa", 9, 0, 80ull << 30);
  driver.AddDevice("NVIDIA H100 80GB HBM3", "GPU-bbbb", 9, 0, 80ull << 30);
  testing::FakeEnvironment env{{"CUDA_VISIBLE_DEVICES", "2,3"}};
  auto gpus = ProbeVisibleGpus(driver, env);
  ASSERT_TRUE(gpus.ok()) << gpus.status().ToString();
  EXPECT_EQ(gpus->uuids, (std::vector<std::string>{"GPU-aaaa", "GPU-bbbb"}));
  EXPECT_EQ(gpus->Uuid(1), "GPU-bbbb");
  EXPECT_EQ(gpus->Uuid(2), "");
  EXPECT_EQ(gpus->DescribeCount(), "2 GPUs are visible (CUDA_VISIBLE_DEVICES=2,3)");

  // cuInit refusing (every GPU hidden): none visible, not an error.
  testing::FakeGpuDriver hidden;
  hidden.init_error = gpu::kCudaErrorNoDevice;
  auto none = ProbeVisibleGpus(hidden, testing::FakeEnvironment{{"CUDA_VISIBLE_DEVICES", ""}});
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none->count(), 0);
}

}  // namespace
}  // namespace ortgpu::serve
