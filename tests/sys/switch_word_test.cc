// The auto / on / off words share_weights, gpu_turns and arena_shrinkage take.
#include "sys/switch_word.h"

#include <gtest/gtest.h>

namespace ortgpu {
namespace {

enum class Mode { kAuto, kOn, kOff };

TEST(ParseSwitch, TakesAutoOnOffAndTheirSpellingsAndNothingElse) {
  EXPECT_EQ(ParseSwitch<Mode>(""), Mode::kAuto) << "an empty value is the default";
  EXPECT_EQ(ParseSwitch<Mode>("auto"), Mode::kAuto);
  for (const char* on : {"on", "true", "1"}) EXPECT_EQ(ParseSwitch<Mode>(on), Mode::kOn) << on;
  for (const char* off : {"off", "false", "0"}) EXPECT_EQ(ParseSwitch<Mode>(off), Mode::kOff) << off;
  for (const char* other : {"On", "yes", "2", " on"}) EXPECT_FALSE(ParseSwitch<Mode>(other).has_value()) << other;
}

}  // namespace
}  // namespace ortgpu
