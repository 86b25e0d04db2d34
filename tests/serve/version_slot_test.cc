// A version's lifecycle as the server core records it (serve/version_slot.h):
// what each event leaves a client to read, and what a failed reload keeps.
#include "serve/version_slot.h"

#include <gtest/gtest.h>

#include "serve/repository/model_loader.h"

namespace ortgpu::serve {
namespace {

std::shared_ptr<LoadedModel> Model(int64_t version) {
  auto m = std::make_shared<LoadedModel>();
  m->version = version;
  return m;
}

TEST(VersionSlotTest, AFirstLoadIsLoadingThenReadyWithTheWarmupWarningAsItsReason) {
  VersionSlot slot;
  slot.BeginLoad();
  EXPECT_EQ(slot.state(), ModelState::kLoading);
  EXPECT_FALSE(slot.ServesNow());
  auto m = Model(1);
  EXPECT_EQ(slot.Loaded(m, std::string("fp1"), "no generated warm-up input ran"), nullptr);
  EXPECT_EQ(slot.state(), ModelState::kReady);
  EXPECT_EQ(slot.reason(), "no generated warm-up input ran");
  EXPECT_EQ(slot.model(), m);
  EXPECT_TRUE(slot.ServesNow());
  EXPECT_EQ(slot.Standing(), std::make_pair(ModelState::kReady, std::string("no generated warm-up input ran")));
}

TEST(VersionSlotTest, AFailedFirstLoadIsUnavailableWithWhyAndSaysWhenItRepeats) {
  VersionSlot slot;
  slot.BeginLoad();
  EXPECT_FALSE(slot.LoadFailed("model.onnx is not an ONNX model"));
  EXPECT_EQ(slot.state(), ModelState::kUnavailable);
  EXPECT_EQ(slot.reason(), "model.onnx is not an ONNX model");
  EXPECT_EQ(slot.failed_load(), "model.onnx is not an ONNX model");
  slot.BeginLoad();
  EXPECT_EQ(slot.state(), ModelState::kLoading);
  EXPECT_TRUE(slot.LoadFailed("model.onnx is not an ONNX model"));   // the same failure: logged once
  EXPECT_FALSE(slot.LoadFailed("model.onnx has no inputs"));          // a new one
}

TEST(VersionSlotTest, AReloadKeepsTheServingLoadReadyWhileItLoadsAndWhenItFails) {
  VersionSlot slot;
  auto first = Model(1);
  slot.Loaded(first, std::string("fp1"), "");
  slot.BeginLoad();
  EXPECT_EQ(slot.state(), ModelState::kReady);  // the version being replaced keeps serving
  EXPECT_FALSE(slot.LoadFailed("out of memory"));
  EXPECT_EQ(slot.state(), ModelState::kReady);
  EXPECT_EQ(slot.model(), first);
  EXPECT_EQ(slot.reason(), "reloading failed, the version loaded before keeps serving: out of memory");
  EXPECT_FALSE(slot.Settled(std::string("fp1")));  // the failed reload is retried on the next rescan
  auto second = Model(1);
  EXPECT_EQ(slot.Loaded(second, std::nullopt, ""), first);  // the replaced load comes back, to be stopped
  EXPECT_EQ(slot.model(), second);
  EXPECT_TRUE(slot.failed_load().empty());
  EXPECT_TRUE(slot.Settled(std::string("fp1")));  // the fingerprint before was kept
}

TEST(VersionSlotTest, SettledOnlyWhenReadyFromAnUnchangedFolder) {
  VersionSlot slot;
  EXPECT_FALSE(slot.Settled(std::nullopt));
  slot.Loaded(Model(2), std::string("fp1"), "");
  EXPECT_TRUE(slot.Settled(std::string("fp1")));
  EXPECT_TRUE(slot.Settled(std::nullopt));
  EXPECT_FALSE(slot.Settled(std::string("fp2")));  // a file replaced in place
}

TEST(VersionSlotTest, UnloadHandsBackTheLoadToStop) {
  VersionSlot slot;
  auto m = Model(3);
  slot.Loaded(m, std::nullopt, "");
  EXPECT_EQ(slot.Unload(), m);
  EXPECT_EQ(slot.state(), ModelState::kUnloading);
  EXPECT_EQ(slot.model(), nullptr);
  EXPECT_FALSE(slot.ServesNow());
  EXPECT_EQ(slot.Unload(), nullptr);
}

}  // namespace
}  // namespace ortgpu::serve
