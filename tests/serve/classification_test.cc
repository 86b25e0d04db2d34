// Triton's classification extension (issue 10): the top N values of each
// batch item as "value:index[:label]" BYTES, labels from the output's
// label_filename; over a real ServerCore and through both front ends' codecs.
#include "serve/classification.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>

#include "serve/core/test_repository.h"
#include "serve/server_core.h"

namespace ortgpu::serve {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;
using namespace serve::testing;

Tensor Floats2d(std::vector<float> v, int64_t rows) {
  Tensor t;
  t.name = "y";
  t.dtype = DataType::kFloat;
  t.shape = {rows, static_cast<int64_t>(v.size()) / rows};
  t.data.resize(v.size() * 4);
  std::memcpy(t.data.data(), v.data(), v.size() * 4);
  return t;
}

TEST(ClassificationTest, TopValuesPerBatchItemWithLabels) {
  auto c = Classify(Floats2d({0.1f, 0.7f, 0.2f, 5, 1, 3}, 2), 2, {"cat", "dog"}, /*batched=*/true);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->dtype, DataType::kString);
  EXPECT_THAT(c->shape, ElementsAre(2, 2));
  EXPECT_THAT(c->strings, ElementsAre("0.7:1:dog", "0.2:2", "5:0:cat", "3:2"));
  auto flat = Classify(Floats2d({1, 4, 2, 3}, 1), 9, {}, /*batched=*/false);
  ASSERT_TRUE(flat.ok());
  EXPECT_THAT(flat->shape, ElementsAre(4));  // no more than there are
  EXPECT_EQ(flat->strings.front(), "4:1");
}

TEST(ClassificationTest, ClassCountMustBePositive) {
  EXPECT_EQ(*ClassCount({}, "output 'y'"), 0);
  EXPECT_EQ(*ClassCount({{"classification", "3"}}, "output 'y'"), 3);
  auto bad = ClassCount({{"classification", "0"}}, "output 'y'");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("output 'y': classification must be a positive integer"));
}

// A CPU model "scale" whose output y names labels.txt, holding `labels`.
ServerOptions LabelledScaleModel(TempRepository& repo, const std::string& labels) {
  repo.AddModel("scale", 1, ScaleModel(2));
  repo.WriteConfig("scale", R"(name: "scale"
max_batch_size: 8
input [ { name: "x" data_type: TYPE_FP32 dims: [ 4 ] } ]
output [ { name: "y" data_type: TYPE_FP32 dims: [ 4 ] label_filename: "labels.txt" } ]
instance_group [ { kind: KIND_CPU } ])");
  repo.WriteFile("scale/labels.txt", labels);
  ServerOptions o;
  o.repository = repo.root();
  o.loader.default_instance_kind = InstanceKind::kCpu;
  return o;
}

TEST(ClassificationTest, ServerCoreReadsTheLabelFile) {
  TempRepository repo;
  const ServerOptions o = LabelledScaleModel(repo, "zero\none\ntwo\nthree\n");
  auto core = ServerCore::Create(o);
  ASSERT_TRUE(core.ok()) << core.status().ToString();
  auto labels = (*core)->OutputLabels("scale", "", "y");
  ASSERT_TRUE(labels.ok()) << labels.status().ToString();
  EXPECT_THAT(*labels, ElementsAre("zero", "one", "two", "three"));

  auto response = InferSync(**core, Request("scale", {Input({1, 9, 3, 4})}));
  ASSERT_TRUE(response.ok()) << response.status().ToString();
  RequestedOutput y{"y", false, {{"classification", "2"}}};
  ASSERT_TRUE(ApplyClassification(**core, {y}, *response).ok());
  EXPECT_THAT(response->outputs[0].shape, ElementsAre(1, 2));
  EXPECT_THAT(response->outputs[0].strings, ElementsAre("18:1:one", "8:3:three"));
  (*core)->Shutdown();
}

TEST(ClassificationTest, LabelsAreReadOnceAtLoadAndAMissingFileFailsOnlyClassification) {
  TempRepository repo;
  const ServerOptions o = LabelledScaleModel(repo, "zero\r\none\r\ntwo\r\nthree\r\n");
  auto core = ServerCore::Create(o);
  ASSERT_TRUE(core.ok()) << core.status().ToString();
  // Edited after the load: the served labels are the ones read at load (no disk read per request).
  repo.WriteFile("scale/labels.txt", "a\nb\n");
  auto labels = (*core)->OutputLabels("scale", "", "y");
  ASSERT_TRUE(labels.ok()) << labels.status().ToString();
  EXPECT_THAT(*labels, ElementsAre("zero", "one", "two", "three"));
  (*core)->Shutdown();

  std::filesystem::remove(repo.root() + "/scale/labels.txt");
  auto without = ServerCore::Create(o);
  ASSERT_TRUE(without.ok()) << without.status().ToString();
  EXPECT_TRUE(*(*without)->IsModelReady("scale", ""));  // the version loads; only classification fails
  auto response = InferSync(**without, Request("scale", {Input({1, 9, 3, 4})}));
  ASSERT_TRUE(response.ok()) << response.status().ToString();
  RequestedOutput y{"y", false, {{"classification", "2"}}};
  Status classified = ApplyClassification(**without, {y}, *response);
  ASSERT_FALSE(classified.ok());
  EXPECT_EQ(classified.code(), Code::kNotFound);
  EXPECT_THAT(classified.message(), HasSubstr("output 'y': its label_filename 'labels.txt' cannot be read"));
  EXPECT_THAT(classified.message(), Not(HasSubstr(repo.root())));  // no server path to the client
  (*without)->Shutdown();
}

}  // namespace
}  // namespace ortgpu::serve
