#include "tune/run_details.h"

namespace ortgpu::tune {

void CollectMeasurements(const ModelTraits& traits, const SpaceOptions& space, const SearchOptions& options,
                         const SearchResult& search, const History& history, RunDetails& details) {
  details.in_process.clear();
  const EngineSpace engines = BuildEngineSpace(traits, space);
  for (const EngineChoice& e : engines.choices) {
    for (int64_t b : engines.batches) {
      const HistoryEntry* entry = history.Find(InProcessKey(e, b, options.inputs_tag), 0);
      if (entry == nullptr) continue;
      details.in_process.push_back({e, b, entry->measurement, entry->error});
    }
  }
  details.served.clear();
  const std::string served_tag = ServedTag(options);
  for (const ServedOutcome& o : search.served) {
    std::vector<Measurement> repeats;
    const std::string key = ServedKey(o.candidate, options.latency_budget_ms, served_tag);
    // Repeats are numbered from 0 without gaps; a failed one is skipped.
    for (int rep = 0;; ++rep) {
      const HistoryEntry* entry = history.Find(key, rep);
      if (entry == nullptr) break;
      if (entry->ok()) repeats.push_back(entry->measurement);
    }
    details.served.push_back(std::move(repeats));
  }
}

}  // namespace ortgpu::tune
