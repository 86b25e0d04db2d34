// Precision findings (issue 26) on machines described with fakes and models
// built here: tensor cores by compute capability, TF32 and who set it, and
// the census of float16, mixed and float32 models.
#include "doctor/checks_precision.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "doctor/precision_models.h"
#include "doctor/render.h"
#include "fakes/fake_environment.h"
#include "fakes/fake_gpu_driver.h"
#include "fakes/fake_nvml.h"
#include "onnx.pb.h"
#include "onnx/model_builder.h"
#include "support/vit_attention_scale.h"

namespace ortgpu::doctor {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using ::ortgpu::testing::FakeEnvironment;
using ::ortgpu::testing::FakeGpuDriver;
using ::ortgpu::testing::FakeNvml;
using ::ortgpu::testing::Fp16Chain;
using ::ortgpu::testing::Fp32Chain;
using ::ortgpu::testing::ProfiledNode;

constexpr int kH200 = 90;
constexpr int kT4 = 75;

gpu::DriverInfo Gpus(std::vector<std::pair<std::string, std::pair<int, int>>> boards) {
  FakeGpuDriver driver;
  FakeNvml nvml;
  driver.load_status = Status::Ok();
  nvml.load_status = Status::Ok();
  int k = 0;
  for (const auto& [name, cc] : boards) {
    const std::string uuid = "GPU-0000000" + std::to_string(k++) + "-0000-0000-0000-000000000000";
    driver.AddDevice(name, uuid, cc.first, cc.second, 16ull << 30);
    nvml.AddDevice(name, uuid, cc.first, cc.second, 16ull << 30, 0);
  }
  return gpu::ProbeDriverSources(driver, nvml);
}

TEST(CheckGpuPrecisionTest, EachGpuListsItsTensorCorePrecisionsAndWhatOrtgpuUses) {
  Report r;
  CheckGpuPrecision(Gpus({{"NVIDIA H200", {9, 0}}, {"Tesla T4", {7, 5}}, {"Tesla P100", {6, 0}}}), r);
  const Finding* h200 = r.Find("driver.precision.0");
  ASSERT_NE(h200, nullptr);
  EXPECT_EQ(h200->layer, Layer::kDriver);
  EXPECT_EQ(h200->verdict, Verdict::kInfo);
  EXPECT_EQ(h200->title, "GPU 0: Hopper tensor cores compute fp16, bf16, tf32, fp8, int8");
  EXPECT_EQ(h200->facts.at("tensor_core_precisions"), "fp16,bf16,tf32,fp8,int8");
  EXPECT_THAT(h200->seen, HasSubstr("ortgpu convert --to fp16|mixed"));
  EXPECT_THAT(h200->seen, HasSubstr("not targets of ortgpu yet: bf16, fp8, int8"));
  const Finding* t4 = r.Find("driver.precision.1");
  ASSERT_NE(t4, nullptr);
  EXPECT_EQ(t4->facts.at("tensor_core_precisions"), "fp16,int8,int4");
  EXPECT_THAT(t4->seen, HasSubstr("no TF32 before compute capability 8.0"));
  const Finding* p100 = r.Find("driver.precision.2");
  ASSERT_NE(p100, nullptr);
  EXPECT_EQ(p100->title, "GPU 2: no tensor cores (Tesla P100, compute capability 6.0)");
  EXPECT_THAT(p100->seen, HasSubstr("saves memory more than time"));
}

TEST(CheckGpuPrecisionTest, NoGpuNoFinding) {
  Report r;
  CheckGpuPrecision(gpu::DriverInfo{}, r);
  EXPECT_TRUE(r.findings().empty());
}

void ExpectTf32(const Finding& f, const std::string& state, const std::string& source) {
  EXPECT_EQ(f.facts.at("tf32"), state) << f.title;
  EXPECT_EQ(f.facts.at("source"), source) << f.title;
}

// host.tf32 with NVIDIA_TF32_OVERRIDE=`env` and --cuda-option use_tf32=`option`
// ("": not set) on GPUs of compute capabilities `ccs`.
Finding Tf32(const std::string& env, const std::string& option, std::vector<int> ccs = {kH200}) {
  FakeEnvironment environment;
  if (!env.empty()) environment.Set("NVIDIA_TF32_OVERRIDE", env);
  std::map<std::string, std::string> options;
  if (!option.empty()) options["use_tf32"] = option;
  Report r;
  CheckTf32(Tf32Inputs{environment, std::move(ccs), options}, r);
  EXPECT_EQ(r.findings().size(), 1u);
  return r.findings().empty() ? Finding{} : r.findings()[0];
}

TEST(CheckTf32Test, OnByOrtsDefault) {
  const Finding f = Tf32("", "");
  EXPECT_EQ(f.id, "host.tf32");
  EXPECT_EQ(f.verdict, Verdict::kInfo);
  ExpectTf32(f, "on", "ort_default");
  EXPECT_THAT(f.fix, HasSubstr("--cuda-option use_tf32=0"));
}

TEST(CheckTf32Test, OverrideZeroSilentlyTurnsItOffAndWarnsWithTheCost) {
  const Finding f = Tf32("0", "");
  EXPECT_EQ(f.verdict, Verdict::kWarn);
  ExpectTf32(f, "off", "NVIDIA_TF32_OVERRIDE");
  EXPECT_THAT(f.title, HasSubstr("NVIDIA_TF32_OVERRIDE=0 overrides ORT's use_tf32=1"));
  EXPECT_THAT(f.why, HasSubstr("2,333/s"));
  EXPECT_THAT(f.why, HasSubstr("7,232/s"));
  EXPECT_THAT(f.fix, HasSubstr("unset NVIDIA_TF32_OVERRIDE"));
  // An explicit use_tf32=1 cannot win against it.
  ExpectTf32(Tf32("0", "1"), "off", "NVIDIA_TF32_OVERRIDE");
}

TEST(CheckTf32Test, ProviderOptionOffIsTheUsersChoice) {
  const Finding both = Tf32("0", "0");
  EXPECT_EQ(both.verdict, Verdict::kInfo);
  ExpectTf32(both, "off", "provider_option");
  EXPECT_THAT(both.seen, HasSubstr("--cuda-option use_tf32=0"));
}

TEST(CheckTf32Test, OverrideOneDoesNotForceItOn) {
  const Finding on = Tf32("1", "");
  ExpectTf32(on, "on", "ort_default");
  EXPECT_THAT(on.seen, HasSubstr("\"1\" changes nothing"));
  ExpectTf32(Tf32("1", "0"), "off", "provider_option");
}

TEST(CheckTf32Test, NoTf32BeforeAmpere) {
  const Finding t4 = Tf32("0", "", {kT4});
  EXPECT_EQ(t4.verdict, Verdict::kInfo);
  ExpectTf32(t4, "unsupported", "gpu");
  EXPECT_EQ(t4.title, "no TF32 on this GPU (Turing, compute capability 7.5)");
}

TEST(CheckTf32Test, NothingToSayWithoutGpuOrSetting) {
  FakeEnvironment env;
  Report r;
  CheckTf32(Tf32Inputs{env, {}, {}}, r);
  EXPECT_TRUE(r.findings().empty());
}

PrecisionCensus CensusOf(std::map<std::string, std::string> keep_fp32, bool convert = true) {
  return CensusPrecision(convert ? Fp16Chain(std::move(keep_fp32)) : Fp32Chain());
}

Report CheckModel(const PrecisionCensus& c, int cc, const PlacementSummary* placement = nullptr) {
  ModelPrecisionInputs in;
  in.path = "/models/m.onnx";
  in.census = &c;
  in.device_cc = cc;
  in.placement = placement;
  Report r;
  CheckModelPrecision(in, 1, r);
  return r;
}

TEST(CheckModelPrecisionTest, Float32ModelOnTensorCoresIsToldHowToTryFloat16) {
  const PrecisionCensus c = CensusOf({}, /*convert=*/false);
  Report r = CheckModel(c, kH200);
  const Finding* f = r.Find("model.1.precision");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->verdict, Verdict::kInfo);
  EXPECT_EQ(f->title, "float32 model: 5 nodes compute in float32");
  EXPECT_EQ(f->facts.at("precision"), "fp32");
  EXPECT_THAT(f->why, HasSubstr("twice TF32's rate"));
  EXPECT_THAT(f->fix, HasSubstr("ortgpu convert /models/m.onnx --to fp16"));
  EXPECT_THAT(f->fix, HasSubstr("ortgpu bench /models/m.onnx --precision tf32,fp16"));
  EXPECT_EQ(r.Find("model.1.casts"), nullptr);
  EXPECT_EQ(r.Find("model.1.fp32_islands"), nullptr);
  // Without a GPU, or on one without tensor cores, there is nothing to suggest.
  EXPECT_TRUE(CheckModel(c, 0).Find("model.1.precision")->fix.empty());
  EXPECT_TRUE(CheckModel(c, 61).Find("model.1.precision")->fix.empty());
}

TEST(CheckModelPrecisionTest, MixedModelListsItsIslandsAndCasts) {
  const PrecisionCensus c = CensusOf({{"Add_1", "kept"}, {"Relu_2", "kept"}});
  Report r = CheckModel(c, kH200);
  const Finding* p = r.Find("model.1.precision");
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->title, "mixed-precision model: 3 nodes in float16, 2 in float32 (1 island)");
  EXPECT_TRUE(p->fix.empty());
  const Finding* islands = r.Find("model.1.fp32_islands");
  ASSERT_NE(islands, nullptr);
  EXPECT_THAT(islands->seen, HasSubstr("#1: 2 nodes (1 Add, 1 Relu): Add_1, Relu_2; 2 Casts at its borders"));
  EXPECT_THAT(islands->fix, HasSubstr("--to mixed"));
  const Finding* casts = r.Find("model.1.casts");
  ASSERT_NE(casts, nullptr);
  EXPECT_EQ(casts->verdict, Verdict::kPass);
}

TEST(CheckModelPrecisionTest, CancellingCastsWarnAndNameTheConverter) {
  onnx::ModelBuilder b;
  b.AddInput("x", DataType::kFloat16, {2, 4}, {});
  b.AddOutput("y", DataType::kFloat16, {2, 4}, {});
  b.AddNode("Cast", {"x"}, {"x32"}, {{"to", 1}});
  b.AddNode("Cast", {"x32"}, {"x16"}, {{"to", 10}});
  b.AddNode("Relu", {"x16"}, {"y"});
  ::onnx::ModelProto m;
  m.ParseFromString(b.Serialize());
  const PrecisionCensus c = CensusPrecision(m);
  Report r = CheckModel(c, kH200);
  const Finding* casts = r.Find("model.1.casts");
  ASSERT_NE(casts, nullptr);
  EXPECT_EQ(casts->verdict, Verdict::kWarn);
  EXPECT_THAT(casts->seen, HasSubstr("Cast_0 -> Cast_1 (float16 -> float32 -> float16)"));
  EXPECT_THAT(casts->fix, HasSubstr("ortgpu convert MODEL --to fp16"));
  EXPECT_EQ(r.Find("model.1.precision")->facts.at("cancelling_cast_pairs"), "1");
}

TEST(CheckModelPrecisionTest, Float16NodeOnTheCpuIsNamedWithTheBlockListFix) {
  const PrecisionCensus c = CensusOf({});
  PlacementSummary placement = SummarizePlacement(
      {ProfiledNode("MatMul_0", "MatMul", "CUDAExecutionProvider", {{"MLFloat16", {1, 8}}, {"MLFloat16", {8, 8}}},
                    {{"MLFloat16", {1, 8}}}),
       ProfiledNode("Sigmoid_3", "Sigmoid", "CPUExecutionProvider", {{"MLFloat16", {64, 1024}}},
                    {{"MLFloat16", {64, 1024}}}),
       ProfiledNode("Shape_9", "Shape", "CPUExecutionProvider", {{"MLFloat16", {64, 1024}}}, {{"int64", {2}}})},
      "CUDAExecutionProvider");
  Report r = CheckModel(c, kH200, &placement);
  const Finding* f = r.Find("model.1.fp16_cpu");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->verdict, Verdict::kWarn);
  EXPECT_EQ(f->title, "1 float16 compute node fell back to the CPU");
  EXPECT_THAT(f->seen, HasSubstr("Sigmoid 'Sigmoid_3'"));
  EXPECT_THAT(f->seen, Not(HasSubstr("Shape_9")));  // shape arithmetic is benign
  EXPECT_THAT(f->fix, HasSubstr("--node-block-list Sigmoid_3"));
  EXPECT_EQ(f->facts.at("fp16_nodes_on_cpu"), "1");

  PlacementSummary all_gpu = SummarizePlacement(
      {ProfiledNode("MatMul_0", "MatMul", "CUDAExecutionProvider", {{"MLFloat16", {1, 8}}}, {{"MLFloat16", {1, 8}}})},
      "CUDAExecutionProvider");
  EXPECT_EQ(CheckModel(c, kH200, &all_gpu).Find("model.1.fp16_cpu")->verdict, Verdict::kPass);
  EXPECT_EQ(CheckModel(c, kH200).Find("model.1.fp16_cpu"), nullptr);  // no CUDA run
}

TEST(CheckModelPrecisionTest, UnreadableGraphIsASkipThatSaysWhy) {
  Report r;
  CheckModelPrecision({.path = "/models/huge.onnx", .census_error = "/models/huge.onnx is over 2 GiB"}, 2, r);
  ASSERT_EQ(r.findings().size(), 1u);
  EXPECT_EQ(r.findings()[0].id, "model.2.precision");
  EXPECT_EQ(r.findings()[0].verdict, Verdict::kSkip);
  EXPECT_EQ(r.findings()[0].seen, "/models/huge.onnx is over 2 GiB");
}

TEST(CheckModelPrecisionTest, FindingsAppearInTextJsonAndHtml) {
  const PrecisionCensus c = CensusOf({{"Add_1", "kept"}});
  Report r = CheckModel(c, kH200);
  FakeEnvironment env{{"NVIDIA_TF32_OVERRIDE", "0"}};
  CheckTf32(Tf32Inputs{env, {kH200}, {}}, r);
  CheckGpuPrecision(Gpus({{"NVIDIA H200", {9, 0}}}), r);
  RenderOptions ro;
  ro.width = 400;
  const std::string text = RenderText(r, ro);
  const nlohmann::json json = RenderJson(r, false, nlohmann::json::object());
  const std::string html = RenderHtml(r, false, nlohmann::json::object());
  for (const char* id : {"model.1.precision", "model.1.fp32_islands", "host.tf32", "driver.precision.0"}) {
    EXPECT_THAT(text, HasSubstr(id));
    EXPECT_THAT(html, HasSubstr(id));
    bool in_json = false;
    for (const auto& f : json.at("findings")) in_json = in_json || f.at("id") == id;
    EXPECT_TRUE(in_json) << id;
  }
  EXPECT_THAT(text, HasSubstr("NVIDIA_TF32_OVERRIDE=0"));
  for (const auto& f : json.at("findings")) {
    if (f.at("id") == "host.tf32") EXPECT_EQ(f.at("facts").at("source"), "NVIDIA_TF32_OVERRIDE");
  }
}

}  // namespace
}  // namespace ortgpu::doctor
