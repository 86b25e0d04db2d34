#include "ort/gpu_turn.h"

#include <atomic>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace ortgpu {
namespace {

TEST(GpuTurnTest, ParsesTheConfigParameter) {
  EXPECT_EQ(ParseGpuTurnMode("").value(), GpuTurnMode::kAuto);
  EXPECT_EQ(ParseGpuTurnMode("auto").value(), GpuTurnMode::kAuto);
  EXPECT_EQ(ParseGpuTurnMode("on").value(), GpuTurnMode::kOn);
  EXPECT_EQ(ParseGpuTurnMode("true").value(), GpuTurnMode::kOn);
  EXPECT_EQ(ParseGpuTurnMode("0").value(), GpuTurnMode::kOff);
  auto bad = ParseGpuTurnMode("sometimes");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("gpu_turns is 'sometimes'"), std::string::npos);
  EXPECT_NE(bad.status().message().find("valid: auto"), std::string::npos);
}

// Two batches never hold the GPU at once, however many runners ask.
TEST(GpuTurnTest, OneHolderAtATime) {
  GpuTurn turn;
  std::atomic<int> holders{0};
  std::atomic<int> overlaps{0};
  std::vector<std::thread> runners;
  for (int r = 0; r < 4; ++r) {
    runners.emplace_back([&] {
      for (int k = 0; k < 500; ++k) {
        GpuTurn::Held held = turn.Take();
        if (holders.fetch_add(1) != 0) overlaps.fetch_add(1);
        holders.fetch_sub(1);
      }
    });
  }
  for (auto& t : runners) t.join();
  EXPECT_EQ(overlaps.load(), 0);
  EXPECT_EQ(turn.granted(), 2000u);
}

// First come, first served: a runner that asks while the GPU is held gets
// it before one that asks later.
TEST(GpuTurnTest, TurnsGoInTheOrderAsked) {
  GpuTurn turn;
  std::vector<int> order;  // written only by the turn's holder
  std::thread second, third;
  {
    GpuTurn::Held first = turn.Take();
    second = std::thread([&] {
      GpuTurn::Held held = turn.Take();
      order.push_back(2);
    });
    while (turn.asked() < 2) std::this_thread::yield();  // `second` waits in line
    third = std::thread([&] {
      GpuTurn::Held held = turn.Take();
      order.push_back(3);
    });
    while (turn.asked() < 3) std::this_thread::yield();
    order.push_back(1);
  }
  second.join();
  third.join();
  EXPECT_EQ(order, (std::vector<int>{1, 2, 3}));
}

// The batcher hears of every release, after the turn is free again.
TEST(GpuTurnTest, TheListenerHearsEachReleaseWithTheTurnFree) {
  GpuTurn turn;
  int heard = 0;
  bool busy_when_heard = true;
  turn.SetReleaseListener([&] {
    ++heard;
    busy_when_heard = turn.busy();
  });
  {
    GpuTurn::Held held = turn.Take();
    EXPECT_TRUE(turn.busy());
    EXPECT_EQ(heard, 0);
  }
  EXPECT_EQ(heard, 1);
  EXPECT_FALSE(busy_when_heard);
  turn.SetReleaseListener(nullptr);
  { GpuTurn::Held held = turn.Take(); }
  EXPECT_EQ(heard, 1);
}

}  // namespace
}  // namespace ortgpu
