#include "sys/host_cpu.h"

#include <charconv>
#include <string>
#include <vector>

namespace ortgpu {
namespace {

// The unsigned integers of `line` after its first word.
std::vector<uint64_t> Numbers(std::string_view line) {
  std::vector<uint64_t> out;
  size_t i = line.find(' ');
  while (i != std::string_view::npos && i < line.size()) {
    while (i < line.size() && line[i] == ' ') ++i;
    uint64_t v = 0;
    auto [end, ec] = std::from_chars(line.data() + i, line.data() + line.size(), v);
    if (ec != std::errc()) break;
    out.push_back(v);
    i = static_cast<size_t>(end - line.data());
  }
  return out;
}

// The line of `text` that starts with `key`, "" when none does.
std::string_view LineStarting(std::string_view text, std::string_view key) {
  size_t at = 0;
  while (at < text.size()) {
    size_t end = text.find('\n', at);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(at, end - at);
    if (line.substr(0, key.size()) == key) return line;
    at = end + 1;
  }
  return {};
}

}  // namespace

Expected<CpuTimes> ParseProcStat(std::string_view text) {
  const std::vector<uint64_t> n = Numbers(LineStarting(text, "cpu "));
  if (n.size() < 4) return InvalidArgument("/proc/stat has no 'cpu' line with user, nice, system and idle times");
  // user nice system idle iowait irq softirq steal [guest guest_nice]
  CpuTimes t;
  for (size_t i = 0; i < n.size() && i < 8; ++i) {
    t.total += n[i];
    if (i != 3 && i != 4) t.busy += n[i];
  }
  return t;
}

double CpuBusyFraction(const CpuTimes& before, const CpuTimes& after) {
  if (after.total <= before.total || after.busy < before.busy) return 0;
  const double busy = static_cast<double>(after.busy - before.busy);
  const double total = static_cast<double>(after.total - before.total);
  return busy >= total ? 1.0 : busy / total;
}

Expected<HostMemory> ParseMeminfo(std::string_view text) {
  const std::vector<uint64_t> total = Numbers(LineStarting(text, "MemTotal:"));
  const std::vector<uint64_t> available = Numbers(LineStarting(text, "MemAvailable:"));
  if (total.empty() || available.empty()) return InvalidArgument("/proc/meminfo has no MemTotal and MemAvailable");
  HostMemory m;
  m.total_bytes = total[0] * 1024;  // kB
  m.used_bytes = total[0] > available[0] ? (total[0] - available[0]) * 1024 : 0;
  return m;
}

Expected<CpuTimes> ReadCpuTimes(const FileSystem& fs) {
  auto text = fs.ReadFile("/proc/stat", 1 << 16);
  if (!text.ok()) return text.status();
  return ParseProcStat(*text);
}

Expected<HostMemory> ReadHostMemory(const FileSystem& fs) {
  auto text = fs.ReadFile("/proc/meminfo", 1 << 16);
  if (!text.ok()) return text.status();
  return ParseMeminfo(*text);
}

}  // namespace ortgpu
