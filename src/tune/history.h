// The search's history (issue 28): every measurement appended as one JSON
// line, so a stopped search continues where it stopped. A restarted search
// opens the same file, finds what it has (History::Find) and measures only
// the rest.
//
// Format, one object per line:
//   {"key":"served budget=20ms tf32 nhwc=0 ... workers=2","repeat":0,
//    "latency_ms":9.8,"items_per_s":7266.0,
//    "steps":[[1,812.5,1.9],[64,7266.0,9.8]],"gpu_memory_bytes":5.1e9,"load_s":4.2}
//   {"key":"inprocess tf32 nhwc=0 graphs=1 ... batch=32","repeat":0,"error":"..."}
// A failed measurement is kept with its error so that it is not retried.
// "steps" (perf's budget-search steps: load, items/s, p99 ms),
// "gpu_memory_bytes" and "load_s" are the served measurement's details for
// the report (measurement.h); lines without them are read as before.
//
// A trailing line that does not parse (the search was killed mid-write) is
// ignored with a warning and cut from the file before the next append; a
// bad line elsewhere is an error (the file is not one this search wrote).
// Not thread-safe: one search owns its history.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "status/expected.h"
#include "tune/measurement.h"

namespace ortgpu::tune {

struct HistoryEntry {
  std::string key;
  int repeat = 0;
  Measurement measurement;
  std::string error;  // non-empty: the measurement failed, and why

  bool ok() const { return error.empty(); }
};

// Parses JSON-lines text. `warnings` (nullable) receives the note about an
// ignored trailing line; `valid_bytes` (nullable) the length of the prefix
// that holds the good lines.
Expected<std::vector<HistoryEntry>> ParseHistory(std::string_view text, const std::string& label,
                                                 std::vector<std::string>* warnings, size_t* valid_bytes);

// One JSON line (with its '\n').
std::string HistoryLine(const HistoryEntry& entry);

class History {
 public:
  // A history with no file: nothing is kept past the process (tests, dry runs).
  History() = default;

  // Opens (or creates on first Append) the file at `path`, reading what it
  // holds; a corrupt trailing line is cut off and named in `warnings`.
  static Expected<History> Open(const std::string& path, std::vector<std::string>* warnings);

  // The entry for (key, repeat), or nullptr.
  const HistoryEntry* Find(const std::string& key, int repeat) const;

  // Records `entry` in memory and appends it to the file (flushed).
  Status Append(const HistoryEntry& entry);

  size_t size() const { return entries_.size(); }

 private:
  std::string path_;
  std::map<std::pair<std::string, int>, HistoryEntry> entries_;
};

}  // namespace ortgpu::tune
