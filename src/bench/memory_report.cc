#include "bench/memory_report.h"

#include <algorithm>
#include <cmath>
#include <map>

#include <fmt/format.h>

namespace ortgpu::bench {
namespace {

constexpr double kMiB = 1024.0 * 1024.0;

// Sessions whose arenas a configuration filled.
int SessionsThatRan(const ConfigResult& r) {
  return r.config.concurrency_mode == ConcurrencyMode::kSessionPerWorker ? r.config.concurrency : 1;
}

std::string Cell(const std::optional<uint64_t>& bytes) {
  return bytes ? FormatMiB(static_cast<double>(*bytes)) : "-";
}

}  // namespace

MemoryProfile MemoryTable::Profile() const {
  MemoryProfile p;
  if (fit) p.session = *fit;
  p.other = other;
  const MemoryRow* largest = nullptr;
  for (const auto& r : rows) {
    if (r.measured && r.sessions == 1 && (largest == nullptr || r.batch > largest->batch)) largest = &r;
  }
  if (largest != nullptr) {
    p.measured_shape = {{largest->batch}, 1};
    p.measured_total = *largest->measured;
  }
  return p;
}

std::vector<MemoryTable> BuildMemoryTables(const BenchReport& report) {
  std::vector<MemoryTable> tables;
  std::map<std::string, size_t> by_variant;
  for (const auto& r : report.results) {
    if (!r.error.ok() || !r.arena) continue;
    auto [it, added] = by_variant.try_emplace(r.config.variant.name, tables.size());
    if (added) {
      MemoryTable t;
      t.variant = r.config.variant.name;
      t.device = report.provider != Provider::kCpu;
      t.source = t.device ? r.gpu_memory_source : "host arena";
      if (!t.device) {
        t.notes.push_back("the CPU provider: device memory is not measured; the figures are ONNX Runtime's CPU arena "
                          "(host memory), and 'other' is not known");
      }
      tables.push_back(std::move(t));
    }
    MemoryTable& t = tables[it->second];
    if (!r.arena->unavailable.empty()) {
      t.notes.push_back(fmt::format("batch {} concurrency {}: the arenas could not be read: {}", r.config.batch,
                                    r.config.concurrency, r.arena->unavailable));
      continue;
    }
    MemoryRow row;
    row.batch = r.config.batch;
    row.concurrency = r.config.concurrency;
    row.sessions = SessionsThatRan(r);
    row.arena_reserved = r.arena->reserved;
    row.arena_in_use = r.arena->in_use;
    if (!t.device) {
      row.measured = r.arena->reserved;
    } else if (r.gpu_memory_mb) {
      row.measured = static_cast<uint64_t>(std::llround(*r.gpu_memory_mb * kMiB));
    }
    if (t.weights == 0 && r.arena->sessions > 0) t.weights = r.arena->weights / static_cast<uint64_t>(r.arena->sessions);
    t.rows.push_back(row);
  }
  for (MemoryTable& t : tables) {
    if (t.rows.empty()) continue;
    int least = t.rows.front().concurrency;
    for (const auto& row : t.rows) least = std::min(least, row.concurrency);
    // The fit: session 0's arena, which ran every batch, at the least load.
    std::vector<MemoryPoint> points;
    const MemoryRow* largest = nullptr;
    for (const auto& r : report.results) {
      if (!r.error.ok() || !r.arena || !r.arena->unavailable.empty() || r.config.variant.name != t.variant ||
          r.config.concurrency != least) {
        continue;
      }
      points.push_back({r.config.batch, static_cast<double>(r.arena->first_reserved)});
    }
    for (const auto& row : t.rows) {
      if (row.concurrency == least && (largest == nullptr || row.batch > largest->batch)) largest = &row;
    }
    auto fit = FitMemory(points);
    if (!fit.ok()) {
      t.notes.push_back("no line through the arenas: " + fit.status().message());
      continue;
    }
    t.fit = *fit;
    if (t.device && largest != nullptr && largest->measured) {
      const double other = static_cast<double>(*largest->measured) - static_cast<double>(largest->arena_reserved);
      t.other = other > 0 ? static_cast<uint64_t>(other) : 0;
    } else if (t.device) {
      t.notes.push_back("NVML gave no device memory figure (" + t.source +
                        "): the predictions are the arenas alone, without the CUDA context and libraries");
    }
    bool shared_concurrency = false;
    for (MemoryRow& row : t.rows) {
      const double predicted = static_cast<double>(t.other) + row.sessions * fit->Predict(row.batch);
      row.predicted = static_cast<uint64_t>(std::llround(predicted));
      if (row.measured && *row.measured > 0) {
        row.error = (predicted - static_cast<double>(*row.measured)) / static_cast<double>(*row.measured);
      }
      if (row.concurrency > 1 && row.sessions == 1) shared_concurrency = true;
    }
    if (shared_concurrency) {
      t.notes.push_back("runs in flight on one session share its arena, which the line does not model: measure "
                        "instances with --concurrency-mode per-worker (one session per worker, as serve's instances)");
    }
  }
  return tables;
}

std::string RenderMemoryText(const std::vector<MemoryTable>& tables) {
  std::string out;
  for (const auto& t : tables) {
    const std::string what = t.device ? "device memory (NVML, " + t.source + ")" : "host arena (the CPU provider; device memory not measured)";
    out += fmt::format("memory of {}: {}\n", t.variant, what);
    out += fmt::format("{:>5} {:>4} {:>8} {:>12} {:>14} {:>12} {:>12} {:>8}\n", "batch", "conc", "sessions",
                       t.device ? "measured" : "host arena", "arena reserved", "arena in use", "predicted", "error");
    for (const auto& r : t.rows) {
      out += fmt::format("{:>5} {:>4} {:>8} {:>12} {:>14} {:>12} {:>12} {:>8}\n", r.batch, r.concurrency, r.sessions,
                         Cell(r.measured), FormatMiB(static_cast<double>(r.arena_reserved)),
                         FormatMiB(static_cast<double>(r.arena_in_use)), Cell(r.predicted),
                         r.error ? fmt::format("{:+.1f}%", 100.0 * *r.error) : "-");
    }
    if (t.fit) {
      out += "fit: one session's arena = " + t.fit->Describe() + "; its own weights " +
             FormatMiB(static_cast<double>(t.weights)) + "\n";
      out += fmt::format("predicted peak(batch, instances) = {}other {} + instances x (arena at batch)\n",
                         t.device ? "" : "(host) ", FormatMiB(static_cast<double>(t.other)));
    }
    for (const auto& n : t.notes) out += "note: " + n + "\n";
  }
  return out;
}

nlohmann::json MemoryJson(const std::vector<MemoryTable>& tables) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& t : tables) {
    nlohmann::json rows = nlohmann::json::array();
    for (const auto& r : t.rows) {
      rows.push_back({{"batch", r.batch},
                      {"concurrency", r.concurrency},
                      {"sessions", r.sessions},
                      {"measured_bytes", r.measured ? nlohmann::json(*r.measured) : nlohmann::json(nullptr)},
                      {"arena_reserved_bytes", r.arena_reserved},
                      {"arena_in_use_bytes", r.arena_in_use},
                      {"predicted_bytes", r.predicted ? nlohmann::json(*r.predicted) : nlohmann::json(nullptr)},
                      {"error", r.error ? nlohmann::json(*r.error) : nlohmann::json(nullptr)}});
    }
    nlohmann::json fit = nullptr;
    if (t.fit) {
      fit = {{"fixed_bytes", t.fit->fixed_bytes}, {"per_row_bytes", t.fit->per_row_bytes}, {"through", t.fit->through},
             {"check_batch", t.fit->check_batch ? nlohmann::json(*t.fit->check_batch) : nlohmann::json(nullptr)},
             {"check_error", t.fit->check_batch ? nlohmann::json(t.fit->check_error) : nlohmann::json(nullptr)},
             {"text", t.fit->Describe()}};
      if (t.fit->knots.size() >= 3) {
        nlohmann::json knots = nlohmann::json::array();
        for (const MemoryPoint& k : t.fit->knots) knots.push_back({{"batch", k.batch}, {"bytes", k.bytes}});
        fit["knots"] = std::move(knots);
      }
    }
    out.push_back({{"variant", t.variant},
                   {"source", t.source},
                   {"device", t.device},
                   {"fit", fit},
                   {"weights_bytes", t.weights},
                   {"other_bytes", t.other},
                   {"rows", rows},
                   {"notes", t.notes},
                   {"profile", t.fit ? MemoryProfileToJson(t.Profile()) : nlohmann::json(nullptr)}});
  }
  return out;
}

}  // namespace ortgpu::bench
