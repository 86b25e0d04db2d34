// sys/host_cpu.h: the host's CPU busy share and memory from /proc texts.
#include "sys/host_cpu.h"

#include <gtest/gtest.h>

#include "fakes/fake_file_system.h"

namespace ortgpu {
namespace {

constexpr const char* kStat =
    "cpu  100 10 50 800 40 0 0 0 0 0\n"
    "cpu0 50 5 25 400 20 0 0 0 0 0\n"
    "intr 12345\n";

TEST(HostCpuTest, ProcStatCountsIdleAndIowaitAsIdle) {
  auto t = ParseProcStat(kStat);
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_EQ(t->total, 1000u);
  EXPECT_EQ(t->busy, 160u);
}

TEST(HostCpuTest, BusyFractionIsTheShareOfTicksBetweenTwoReadings) {
  CpuTimes before{160, 1000};
  CpuTimes after{160 + 750, 1000 + 1000};
  EXPECT_DOUBLE_EQ(CpuBusyFraction(before, after), 0.75);
  EXPECT_EQ(CpuBusyFraction(after, after), 0.0);   // no time passed
  EXPECT_EQ(CpuBusyFraction(after, before), 0.0);  // counters went back
}

TEST(HostCpuTest, ProcStatWithoutACpuLineIsAnError) {
  EXPECT_FALSE(ParseProcStat("intr 1\n").ok());
  EXPECT_FALSE(ParseProcStat("cpu  1 2\n").ok());
  EXPECT_FALSE(ParseProcStat("cpu0 1 2 3 4 5\n").ok());  // only per-core lines
}

TEST(HostCpuTest, MeminfoUsedIsTotalLessAvailable) {
  auto m = ParseMeminfo("MemTotal:       16000 kB\nMemFree:  1000 kB\nMemAvailable:   12000 kB\n");
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_EQ(m->total_bytes, 16000u * 1024);
  EXPECT_EQ(m->used_bytes, 4000u * 1024);
  EXPECT_FALSE(ParseMeminfo("MemTotal: 1 kB\n").ok());
}

TEST(HostCpuTest, ReadsThroughTheFileSystemSeam) {
  testing::FakeFileSystem fs;
  EXPECT_FALSE(ReadCpuTimes(fs).ok());  // no /proc: an error, not a crash
  fs.AddFile("/proc/stat", kStat);
  fs.AddFile("/proc/meminfo", "MemTotal: 100 kB\nMemAvailable: 25 kB\n");
  auto t = ReadCpuTimes(fs);
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->busy, 160u);
  auto m = ReadHostMemory(fs);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->used_bytes, 75u * 1024);
}

}  // namespace
}  // namespace ortgpu
