// Tuning a model folder that already has a config.pbtxt (tune/model_folder.h):
// which file is measured, the config's max_batch_size bounding the search,
// the written config read back by serve's own parser with the user's fields
// kept and the changes said in its comments, and the folder rewritten in
// place with the previous config kept.
#include "tune/model_folder.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "serve/repository/model_config.h"
#include "support/temp_dir.h"

namespace ortgpu::tune {
namespace {

using testing_support::TempDir;
using ::testing::HasSubstr;
namespace fs = std::filesystem;

// What a user wrote: fixed fields tune does not search, and ones it does.
constexpr const char* kUserConfig = R"(# my BERT
name: "bert"
max_batch_size: 16
input [ { name: "input_ids" data_type: TYPE_INT64 dims: [ 128 ] } ]
output [ { name: "logits" data_type: TYPE_FP32 dims: [ 2 ] } ]
instance_group [ { count: 4 kind: KIND_GPU gpus: [ 0 ] } ]
dynamic_batching { preferred_batch_size: [ 4, 8 ] max_queue_delay_microseconds: 500 }
parameters { key: "share_weights" value: { string_value: "true" } }
optimization { execution_accelerators { gpu_execution_accelerator [ { name: "cuda"
  parameters { key: "gpu_mem_limit" value: "8000000000" } } ] } }
model_warmup [ { name: "zeros" batch_size: 1 inputs { key: "input_ids" value: {
  data_type: TYPE_INT64 dims: [ 128 ] zero_data: true } } } ]
)";

std::string Read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

inference::ModelConfig ReadBack(const std::string& text) {
  Expected<serve::ParsedConfig> parsed = serve::ParseModelConfig(text, "config.pbtxt");
  EXPECT_TRUE(parsed.ok()) << parsed.status().ToString() << "\n" << text;
  if (!parsed.ok()) return {};
  EXPECT_TRUE(parsed->warnings.empty()) << parsed->warnings.front() << "\n" << text;
  return parsed->config;
}

// repo/bert with the user's config and version 1, resolved in place.
TuneInput BertFolder(const TempDir& dir) {
  dir.File("repo/bert/config.pbtxt", kUserConfig);
  dir.File("repo/bert/1/model.onnx", "weights");
  auto in = ResolveTuneInput(dir.Path("repo/bert"), "");
  EXPECT_TRUE(in.ok()) << in.status().ToString();
  return in.ok() ? *in : TuneInput{};
}

ServedCandidate Winner() {
  ServedCandidate c{.instances = 2, .batch = 8, .pad_to_preferred = true, .max_queue_delay_us = 100};
  c.engine.precision = Precision::kFp16;
  return c;
}

TEST(ModelFolderTest, AFolderMeasuresItsHighestVersionAndWritesInPlace) {
  TempDir dir;
  dir.File("repo/bert/config.pbtxt", kUserConfig);
  dir.File("repo/bert/1/model.onnx", "v1");
  dir.File("repo/bert/3/model.onnx", "v3");
  dir.File("repo/bert/12/README", "a version folder without the model");
  auto in = ResolveTuneInput(dir.Path("repo/bert/"), "");
  ASSERT_TRUE(in.ok()) << in.status().ToString();
  EXPECT_EQ(in->model_file, dir.Path("repo/bert/3/model.onnx"));
  EXPECT_EQ(in->config_path, dir.Path("repo/bert/config.pbtxt"));
  ASSERT_TRUE(in->base.has_value());
  EXPECT_EQ(in->base->name(), "bert");
  EXPECT_EQ(in->config_max_batch_size, 16);
  EXPECT_TRUE(in->in_place);

  // One version folder stands for its model at that version.
  auto v1 = ResolveTuneInput(dir.Path("repo/bert/1"), dir.Path("out/bert"));
  ASSERT_TRUE(v1.ok()) << v1.status().ToString();
  EXPECT_EQ(v1->model_file, dir.Path("repo/bert/1/model.onnx"));
  EXPECT_EQ(v1->folder, dir.Path("repo/bert"));
  EXPECT_FALSE(v1->in_place);
}

TEST(ModelFolderTest, AFileNeedsOutputAndABadConfigNamesItsLine) {
  TempDir dir;
  const std::string model = dir.File("m.onnx", "x");
  auto no_output = ResolveTuneInput(model, "");
  ASSERT_FALSE(no_output.ok());
  EXPECT_THAT(no_output.status().message(), HasSubstr("--output DIR is required"));
  auto file = ResolveTuneInput(model, dir.Path("out"));
  ASSERT_TRUE(file.ok());
  EXPECT_FALSE(file->base.has_value());
  EXPECT_TRUE(file->folder.empty());

  dir.File("repo/bad/config.pbtxt", "name: \"bad\"\nmax_batch_size: [\n");
  dir.File("repo/bad/1/model.onnx", "x");
  auto bad = ResolveTuneInput(dir.Path("repo/bad"), "");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), Code::kInvalidArgument);
  EXPECT_THAT(bad.status().message(), HasSubstr("config.pbtxt:2:"));

  dir.File("repo/empty/config.pbtxt", "max_batch_size: 0\n");
  auto empty = ResolveTuneInput(dir.Path("repo/empty"), "");
  ASSERT_FALSE(empty.ok());
  EXPECT_THAT(empty.status().message(), HasSubstr("no version folder of it holds model.onnx"));
}

TEST(ModelFolderTest, TheConfigsMaxBatchSizeBoundsTheSearch) {
  TempDir dir;
  const TuneInput in = BertFolder(dir);
  ModelTraits traits;
  traits.max_batch_size = 128;  // the largest searched batch: the model batches
  std::vector<std::string> notes;
  BoundTraitsByConfig(in, traits, &notes);
  EXPECT_EQ(traits.max_batch_size, 16);
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_THAT(notes[0], HasSubstr("sets max_batch_size 16: batches above it are not searched"));
  // The candidate space follows: nothing above 16.
  const EngineSpace space = BuildEngineSpace(traits, SpaceOptions());
  EXPECT_EQ(space.batches, (std::vector<int64_t>{1, 2, 4, 8, 16}));

  // max_batch_size 0 written (not absent): batch 1 only.
  dir.File("repo/nobatch/config.pbtxt", "max_batch_size: 0\n");
  dir.File("repo/nobatch/1/model.onnx", "x");
  auto zero = ResolveTuneInput(dir.Path("repo/nobatch"), "");
  ASSERT_TRUE(zero.ok());
  EXPECT_EQ(zero->config_max_batch_size, 0);
  dir.File("repo/unset/config.pbtxt", "name: \"unset\"\n");
  dir.File("repo/unset/1/model.onnx", "x");
  auto unset = ResolveTuneInput(dir.Path("repo/unset"), "");
  ASSERT_TRUE(unset.ok());
  EXPECT_FALSE(unset->config_max_batch_size.has_value());
}

// serve's parser reads the written config without a warning; what tune did
// not search is as the user wrote it; the comments say what changed.
TEST(ModelFolderTest, TheWrittenConfigKeepsTheUsersFieldsAndSaysWhatChanged) {
  TempDir dir;
  const TuneInput in = BertFolder(dir);
  std::vector<std::string> changes;
  const std::string text = TunedFolderConfig(in, Winner(), {.max_batch_size = 16, .comments = {"by tune"}}, &changes);
  const inference::ModelConfig c = ReadBack(text);
  EXPECT_EQ(c.name(), "bert");
  EXPECT_EQ(c.max_batch_size(), 16);
  ASSERT_EQ(c.input_size(), 1);
  EXPECT_EQ(c.input(0).dims(0), 128);
  ASSERT_EQ(c.model_warmup_size(), 1);
  EXPECT_EQ(c.parameters().at("share_weights").string_value(), "true");
  EXPECT_EQ(c.parameters().at("precision").string_value(), "fp16");
  ASSERT_EQ(c.instance_group_size(), 1);
  EXPECT_EQ(c.instance_group(0).count(), 2);
  EXPECT_EQ(c.instance_group(0).kind(), inference::ModelInstanceGroup::KIND_GPU);
  ASSERT_EQ(c.instance_group(0).gpus_size(), 1);  // the group's other fields are kept
  EXPECT_EQ(c.dynamic_batching().preferred_batch_size_size(), 1);
  EXPECT_EQ(c.optimization().execution_accelerators().gpu_execution_accelerator(0).parameters().at("gpu_mem_limit"),
            "8000000000");

  EXPECT_EQ(changes, (std::vector<std::string>{
                         "dynamic_batching.preferred_batch_size: [4, 8] -> [8]",
                         "dynamic_batching.max_queue_delay_microseconds: 500 -> 100",
                         "instance_group: count 4 KIND_GPU -> count 2 KIND_GPU",
                         "parameters precision: unset -> fp16",
                         "parameters pad_to_preferred_batch_size: unset -> true",
                     }));
  EXPECT_EQ(text.rfind("# by tune\n# Tuned from " + dir.Path("repo/bert/config.pbtxt"), 0), 0u) << text;
  EXPECT_THAT(text, HasSubstr("# tune changed 5 field(s):\n#   dynamic_batching.preferred_batch_size: [4, 8] -> [8]\n"));
}

TEST(ModelFolderTest, InPlaceReplacesOnlyTheConfigAndKeepsThePreviousOne) {
  TempDir dir;
  const TuneInput in = BertFolder(dir);
  ASSERT_TRUE(in.in_place);
  ASSERT_TRUE(WriteTunedFolder(in, "max_batch_size: 16\n").ok());
  EXPECT_EQ(Read(dir.Path("repo/bert/config.pbtxt")), "max_batch_size: 16\n");
  EXPECT_EQ(Read(dir.Path("repo/bert/config.pbtxt.before-tune")), kUserConfig);
  EXPECT_EQ(Read(dir.Path("repo/bert/1/model.onnx")), "weights");
}

// Another output folder holds 1/model.onnx under its own name: the config is
// tied to it (name, file name, version policy), and the scratch base too.
TEST(ModelFolderTest, ACopyElsewhereIsTiedToItsNewFolder) {
  TempDir dir;
  dir.File("repo/bert/config.pbtxt", std::string(kUserConfig) +
                                         "default_model_filename: \"bert.onnx\"\n"
                                         "version_policy { specific { versions: [ 7 ] } }\n"
                                         "model_warmup [ { name: \"file\" batch_size: 1 inputs { key: \"input_ids\" "
                                         "value: { data_type: TYPE_INT64 dims: [ 128 ] input_data_file: \"ids\" } } } ]\n");
  dir.File("repo/bert/7/bert.onnx", "weights");
  auto in = ResolveTuneInput(dir.Path("repo/bert"), dir.Path("out/bert-tuned"));
  ASSERT_TRUE(in.ok()) << in.status().ToString();
  EXPECT_EQ(in->model_file, dir.Path("repo/bert/7/bert.onnx"));
  std::vector<std::string> changes;
  const inference::ModelConfig c = ReadBack(TunedFolderConfig(*in, Winner(), {.max_batch_size = 16}, &changes));
  EXPECT_EQ(c.name(), "bert-tuned");
  EXPECT_TRUE(c.default_model_filename().empty());
  EXPECT_FALSE(c.has_version_policy());
  EXPECT_THAT(changes, ::testing::Contains("name: bert -> bert-tuned"));
  EXPECT_THAT(changes, ::testing::Contains("default_model_filename: bert.onnx -> unset"));
  ASSERT_TRUE(WriteTunedFolder(*in, "max_batch_size: 16\n").ok());
  EXPECT_EQ(Read(dir.Path("out/bert-tuned/1/model.onnx")), "weights");

  const auto scratch = ScratchBase(*in);
  ASSERT_TRUE(scratch.has_value());
  EXPECT_TRUE(scratch->name().empty());
  EXPECT_TRUE(scratch->default_model_filename().empty());
  ASSERT_EQ(scratch->model_warmup_size(), 1);  // the one reading a file is dropped
  EXPECT_EQ(scratch->model_warmup(0).name(), "zeros");
}

TEST(ModelFolderTest, TheInstanceKindFollowsTheMeasuredDeviceOnlyWhenItContradictsIt) {
  inference::ModelConfig base;
  auto* g = base.add_instance_group();
  g->set_count(3);
  g->set_kind(inference::ModelInstanceGroup::KIND_GPU);
  ConfigWriterOptions cpu{.max_batch_size = 4, .base = base, .instance_kind = inference::ModelInstanceGroup::KIND_CPU};
  EXPECT_EQ(TunedModelConfig(ServedCandidate{.batch = 4}, cpu).instance_group(0).kind(),
            inference::ModelInstanceGroup::KIND_CPU);
  g->set_kind(inference::ModelInstanceGroup::KIND_AUTO);
  ConfigWriterOptions gpu{.max_batch_size = 4, .base = base};
  EXPECT_EQ(TunedModelConfig(ServedCandidate{.batch = 4}, gpu).instance_group(0).kind(),
            inference::ModelInstanceGroup::KIND_AUTO);
}

}  // namespace
}  // namespace ortgpu::tune
