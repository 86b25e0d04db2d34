#include "doctor/render.h"

#include <gtest/gtest.h>

namespace ortgpu::doctor {
namespace {

Report Sample() {
  Report r;
  Finding host;
  host.id = "host.os";
  host.layer = Layer::kHost;
  host.verdict = Verdict::kInfo;
  host.title = "Debian GNU/Linux 12";
  r.Add(host);
  Finding cudnn;
  cudnn.id = "libraries.cudnn";
  cudnn.layer = Layer::kLibraries;
  cudnn.verdict = Verdict::kFail;
  cudnn.gpu = true;
  cudnn.title = "libcudnn.so.9 not found";
  cudnn.seen = "found /opt/venv/lib/python3.12/site-packages/nvidia/cudnn/lib/libcudnn.so.9 (9.19.0)";
  cudnn.why = "the CUDA EP loads cuDNN for convolutions";
  cudnn.fix = "export LD_LIBRARY_PATH=/opt/venv/lib/python3.12/site-packages/nvidia/cudnn/lib";
  cudnn.facts["path"] = "/x";
  r.Add(cudnn);
  return r;
}

TEST(RenderTest, TextShowsLayersFixesAndOneSummaryLine) {
  const std::string text = RenderText(Sample(), RenderOptions{});
  EXPECT_NE(text.find("3 CUDA libraries"), std::string::npos);
  EXPECT_NE(text.find("FAIL  libraries.cudnn"), std::string::npos);
  EXPECT_NE(text.find("fix:  export LD_LIBRARY_PATH="), std::string::npos);
  EXPECT_EQ(text.find("\033["), std::string::npos) << "no colour unless asked";
  const std::string last = text.substr(text.rfind('\n', text.size() - 2) + 1);
  EXPECT_NE(last.find("NOT READY: libcudnn.so.9 not found [libraries.cudnn]"), std::string::npos) << last;
}

TEST(RenderTest, ColourOnlyWhenAsked) {
  RenderOptions o;
  o.color = true;
  EXPECT_NE(RenderText(Sample(), o).find("\033[1;31mFAIL"), std::string::npos);
}

TEST(RenderTest, JsonCarriesEveryFindingAndTheExitCode) {
  auto doc = RenderJson(Sample(), /*require_gpu=*/true, {{"ortgpu_version", "0.1.0"}});
  EXPECT_EQ(doc["schema"], "ortgpu.doctor/1");
  EXPECT_EQ(doc["ortgpu_version"], "0.1.0");
  EXPECT_EQ(doc["exit_code"], 1);
  EXPECT_EQ(doc["summary"]["fail"], 1);
  EXPECT_EQ(doc["layers"]["libraries"], "fail");
  EXPECT_EQ(doc["layers"]["driver"], "skip");
  ASSERT_EQ(doc["findings"].size(), 2u);
  EXPECT_EQ(doc["findings"][1]["status"], "fail");
  EXPECT_EQ(doc["findings"][1]["facts"]["path"], "/x");
}

}  // namespace
}  // namespace ortgpu::doctor
