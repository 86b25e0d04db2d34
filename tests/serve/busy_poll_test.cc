#include "serve/busy_poll.h"

#include <atomic>
#include <chrono>
#include <thread>

#include <gtest/gtest.h>

#include "fakes/fake_clock.h"

namespace ortgpu::serve {
namespace {

using std::chrono::microseconds;
using testing::FakeClock;

constexpr int64_t kUs = 1000;

TEST(BusyPoll, AWindowOfZeroNeverPolls) {
  FakeClock clock;
  BusyPoll busy(microseconds(0), clock);
  EXPECT_FALSE(busy.enabled());
  busy.Activity();
  EXPECT_FALSE(busy.ShouldPoll());
  busy.RequestStarted();
  busy.RequestStarted();
  EXPECT_FALSE(busy.Crowded());
}

TEST(BusyPoll, PollsOnlyWithinTheWindowAfterAHandler) {
  FakeClock clock;
  BusyPoll busy(microseconds(200), clock);
  EXPECT_FALSE(busy.ShouldPoll()) << "an idle server polls nothing";
  busy.Activity();
  EXPECT_TRUE(busy.ShouldPoll());
  clock.Advance(199 * kUs);
  EXPECT_TRUE(busy.ShouldPoll());
  clock.Advance(1 * kUs);
  EXPECT_FALSE(busy.ShouldPoll());
}

TEST(BusyPoll, OneRequestAtATimeIsNotCrowded) {
  FakeClock clock;
  BusyPoll busy(microseconds(200), clock);
  for (int i = 0; i < 10; ++i) {
    busy.RequestStarted();
    busy.Activity();
    EXPECT_TRUE(busy.ShouldPoll());
    busy.RequestFinished();
    clock.Advance(50 * kUs);
  }
  EXPECT_FALSE(busy.Crowded());
}

TEST(BusyPoll, OverlappingRequestsStopPollingForTheHold) {
  FakeClock clock;
  BusyPoll busy(microseconds(200), clock, std::chrono::milliseconds(1));
  busy.RequestStarted();
  busy.RequestStarted();
  busy.Activity();
  EXPECT_TRUE(busy.Crowded());
  EXPECT_FALSE(busy.ShouldPoll()) << "every thread has work; a polling one takes the CPU the others need";
  busy.RequestFinished();
  busy.RequestFinished();
  clock.Advance(999 * kUs);
  busy.Activity();
  EXPECT_FALSE(busy.ShouldPoll());
  clock.Advance(1 * kUs);
  busy.Activity();
  EXPECT_FALSE(busy.Crowded());
  EXPECT_TRUE(busy.ShouldPoll());
}

TEST(BusyPoll, TheHoldDefaultsToTenWindows) {
  FakeClock clock;
  BusyPoll busy(microseconds(100), clock);
  busy.RequestStarted();
  busy.RequestStarted();
  busy.RequestFinished();
  busy.RequestFinished();
  clock.Advance(999 * kUs);
  EXPECT_TRUE(busy.Crowded());
  clock.Advance(1 * kUs);
  EXPECT_FALSE(busy.Crowded());
}

TEST(BusyPoll, AtMostTwoThreadsPollByDefault) {
  FakeClock clock;
  BusyPoll busy(microseconds(200), clock);
  EXPECT_EQ(busy.TakeSeat(), BusyPoll::Seat::kFirst);
  EXPECT_EQ(busy.TakeSeat(), BusyPoll::Seat::kJoined);
  EXPECT_EQ(busy.TakeSeat(), BusyPoll::Seat::kNone);
  EXPECT_EQ(busy.seated(), 2);
  busy.ReleaseSeat();
  EXPECT_EQ(busy.TakeSeat(), BusyPoll::Seat::kJoined);
  busy.ReleaseSeat();
  busy.ReleaseSeat();
  EXPECT_EQ(busy.seated(), 0);
  EXPECT_EQ(busy.TakeSeat(), BusyPoll::Seat::kFirst);
}

TEST(BusyPoll, ParkReturnsAtOnceWhenNoThreadPolls) {
  FakeClock clock;
  BusyPoll busy(microseconds(200), clock);
  busy.Park();  // would block forever if it waited
  SUCCEED();
}

// A parked thread returns when the last seat is given up, not before.
TEST(BusyPoll, AParkedThreadGoesBackWhenTheLastSeatIsGivenUp) {
  FakeClock clock;
  BusyPoll busy(microseconds(200), clock);
  ASSERT_EQ(busy.TakeSeat(), BusyPoll::Seat::kFirst);
  ASSERT_EQ(busy.TakeSeat(), BusyPoll::Seat::kJoined);
  std::atomic<bool> back{false};
  std::thread parked([&] {
    busy.Park();
    back = true;
  });
  busy.ReleaseSeat();
  EXPECT_EQ(busy.seated(), 1);
  // One seat still held: the thread is parked or about to be, and cannot
  // have returned (Park re-checks the seats under its lock).
  EXPECT_FALSE(back.load());
  busy.ReleaseSeat();
  parked.join();
  EXPECT_TRUE(back.load());
}

TEST(BusyPoll, OverlappingRequestsWakeTheParkedThreads) {
  FakeClock clock;
  BusyPoll busy(microseconds(200), clock);
  ASSERT_EQ(busy.TakeSeat(), BusyPoll::Seat::kFirst);
  std::thread parked([&] { busy.Park(); });
  busy.RequestStarted();
  busy.RequestStarted();  // crowded: every thread takes its share
  parked.join();
  EXPECT_EQ(busy.seated(), 1) << "the polling thread gives its seat up itself, at its next empty poll";
  busy.Park();  // crowded: returns at once
}

TEST(BusyPoll, StopWakesTheParkedThreadsForGood) {
  FakeClock clock;
  BusyPoll busy(microseconds(200), clock);
  ASSERT_EQ(busy.TakeSeat(), BusyPoll::Seat::kFirst);
  std::thread parked([&] { busy.Park(); });
  busy.Stop();
  parked.join();
  busy.Activity();
  EXPECT_FALSE(busy.ShouldPoll());
  busy.Park();
}

}  // namespace
}  // namespace ortgpu::serve
