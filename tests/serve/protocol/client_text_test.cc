#include "serve/protocol/client_text.h"

#include <gtest/gtest.h>

namespace ortgpu::serve::protocol {
namespace {

TEST(ClientTextTest, PathsUnderTheRepositoryBecomeRelativeToIt) {
  EXPECT_EQ(ClientText("loading model /srv/models/resnet/1/model.onnx failed", {"/srv/models"}),
            "loading model resnet/1/model.onnx failed");
  EXPECT_EQ(ClientText("no folder '/srv/models/x'", {"/srv/models/"}), "no folder 'x'");
  EXPECT_EQ(ClientText("repository /srv/models is empty", {"/srv/models"}), "repository the model repository is empty");
  // A relative root as the server was started with.
  EXPECT_EQ(ClientText("model file examples/repo/m/1/model.onnx", {"examples/repo"}), "model file m/1/model.onnx");
  // Nested roots: the longer wins.
  EXPECT_EQ(ClientText("/a/b/c/d.pbtxt", {"/a", "/a/b"}), "c/d.pbtxt");
}

TEST(ClientTextTest, OtherAbsolutePathsKeepOnlyTheirFileName) {
  EXPECT_EQ(ClientText("libcudnn.so.9 at /usr/local/cuda/lib64/libcudnn.so.9 is too old"),
            "libcudnn.so.9 at libcudnn.so.9 is too old");
  EXPECT_EQ(ClientText("(/home/me/secret/model.onnx)"), "(model.onnx)");
  // A folder without an extension is hidden when it exists here.
  EXPECT_EQ(ClientText("no folder /usr/lib here"), "no folder lib here");
  EXPECT_EQ(ClientText("/onnxruntime_src/onnxruntime/core/providers/cpu/tensor/pad.cc:424 failed"),
            "pad.cc:424 failed");
}

TEST(ClientTextTest, UrlPathsAndPlainTextAreLeftAlone) {
  for (const char* text : {"no endpoint at '/v2/models/x/bogus'; see docs/PROTOCOL.md",
                           "no endpoint at '/v1/models/x'; see docs/PROTOCOL.md",
                           "use /v2/health/ready", "GET /metrics", "ratio 3/4 of a/b", "input 'x' has shape 1x4"}) {
    EXPECT_EQ(ClientText(text, {"/srv/models"}), text);
  }
}

}  // namespace
}  // namespace ortgpu::serve::protocol
