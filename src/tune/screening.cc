#include "tune/screening.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <utility>

#include <fmt/format.h>

#include "tune/evaluator.h"
#include "tune/search.h"

namespace ortgpu::tune {

std::string_view KnobName(Knob k) {
  switch (k) {
    case Knob::kPrecision:
      return "precision";
    case Knob::kPreferNhwc:
      return "prefer_nhwc";
    case Knob::kFuseConvBias:
      return "fuse_conv_bias";
    case Knob::kConvSearch:
      return "conv_search";
    case Knob::kCudaGraphs:
      return "cuda_graphs";
  }
  return "?";
}

const std::vector<Knob>& ScreeningOrder() {
  static const std::vector<Knob> kOrder = {Knob::kPrecision, Knob::kPreferNhwc, Knob::kFuseConvBias,
                                           Knob::kConvSearch, Knob::kCudaGraphs};
  return kOrder;
}

namespace {

bool ConvKnob(Knob k) { return k == Knob::kPreferNhwc || k == Knob::kFuseConvBias || k == Knob::kConvSearch; }

// `current` with each value of `values` set by `set`, the current one left out.
template <typename T, typename Set>
std::vector<EngineChoice> Each(const EngineChoice& current, const std::vector<T>& values, Set set) {
  std::vector<EngineChoice> out;
  for (const T& v : values) {
    EngineChoice e = current;
    set(e, v);
    if (!(e == current) && std::find(out.begin(), out.end(), e) == out.end()) out.push_back(e);
  }
  return out;
}

}  // namespace

std::string KnobSkipped(Knob k, const ModelTraits& traits, const SpaceOptions& space) {
  if (ConvKnob(k) && !traits.has_conv) {
    return fmt::format("the model has no Conv node: {} changes nothing for it", KnobName(k));
  }
  if (k == Knob::kCudaGraphs) {
    const bool asked = std::count(space.cuda_graphs.begin(), space.cuda_graphs.end(), true) > 0;
    if (asked) {
      if (std::string why = GraphsRefusal(traits); !why.empty()) return why;
    }
  }
  return "";
}

std::vector<EngineChoice> Flips(Knob k, const EngineChoice& current, const ModelTraits& traits,
                                const SpaceOptions& space) {
  switch (k) {
    case Knob::kPrecision: {
      std::vector<Precision> ok;
      for (Precision p : space.precisions) {
        const auto& within = traits.precisions_within_budget;
        if (std::find(within.begin(), within.end(), p) != within.end()) ok.push_back(p);
      }
      return Each(current, ok, [](EngineChoice& e, Precision p) { e.precision = p; });
    }
    case Knob::kPreferNhwc:
      return Each(current, space.prefer_nhwc, [](EngineChoice& e, bool v) { e.prefer_nhwc = v; });
    case Knob::kFuseConvBias:
      return Each(current, space.fuse_conv_bias, [](EngineChoice& e, bool v) { e.fuse_conv_bias = v; });
    case Knob::kConvSearch:
      return Each(current, space.conv_searches, [](EngineChoice& e, ConvAlgoSearch v) { e.conv_search = v; });
    case Knob::kCudaGraphs:
      return Each(current, space.cuda_graphs, [](EngineChoice& e, bool v) { e.cuda_graphs = v; });
  }
  return {};
}

double FlipThreshold(const Measurement& from, const Measurement& to, double min_gain) {
  return std::max(min_gain, from.rel_noise + to.rel_noise);
}

int64_t ScreeningBatch(const SpaceOptions& space, const std::vector<int64_t>& valid_batches) {
  int64_t out = valid_batches.front();
  for (int64_t b : valid_batches) {
    if (b <= space.screening_batch) out = b;
  }
  return out;
}

Expected<std::optional<std::vector<Precision>>> JudgePrecisions(const SpaceOptions& space, const SearchOptions& options,
                                                                Measurer& measurer, Evaluator& eval,
                                                                SearchResult& result) {
  using Out = std::optional<std::vector<Precision>>;
  std::vector<Precision> within = {Precision::kTf32, Precision::kFp32};
  auto asked = [&](Precision p) { return std::count(space.precisions.begin(), space.precisions.end(), p) > 0; };
  bool fp16_ok = false;
  for (Precision p : {Precision::kFp16, Precision::kMixed}) {
    if (!asked(p)) continue;
    if (p == Precision::kMixed && fp16_ok) {
      result.rejected.push_back({"precision mixed", "not judged: fp16 is within the accuracy budget, and mixed keeps "
                                                    "float32 nodes only to meet a budget fp16 breaks"});
      continue;
    }
    PrecisionOutcome outcome;
    outcome.precision = p;
    ORTGPU_ASSIGN_OR_RETURN(std::optional<HistoryEntry> entry,
                            eval.GetVerdict(PrecisionKey(p, options.accuracy_tag, options.inputs_tag),
                                            [&] { return measurer.JudgePrecision(p); }));
    if (!entry) return Out();
    if (!entry->ok()) {
      outcome.error = entry->error;
      result.rejected.push_back({fmt::format("precision {}", PrecisionName(p)), "conversion failed: " + entry->error});
    } else if (entry->verdict) {
      outcome.verdict = entry->verdict;
      if (entry->verdict->within_budget) {
        within.push_back(p);
        if (p == Precision::kFp16) fp16_ok = true;
      } else {
        result.rejected.push_back({fmt::format("precision {}", PrecisionName(p)),
                                   "outside the accuracy budget: " + entry->verdict->detail});
      }
    }
    result.precisions.push_back(std::move(outcome));
  }
  return Out(std::move(within));
}

namespace {

// The p50 at the screening batch of `e` through the history.
Expected<std::optional<HistoryEntry>> MeasureAt(const EngineChoice& e, int64_t batch, const SearchOptions& options,
                                                Measurer& measurer, Evaluator& eval) {
  const std::vector<std::string> keys = {InProcessKey(e, batch, options.inputs_tag)};
  ORTGPU_ASSIGN_OR_RETURN(auto entries, eval.GetMany(keys, MeasureKind::kInProcess, [&](const std::vector<size_t>&) {
    return measurer.InProcess(e, {batch});
  }));
  return entries.front();
}

bool Usable(const HistoryEntry& e) { return e.ok() && e.measurement.latency_ms > 0; }

}  // namespace

Expected<std::optional<EngineChoice>> ScreenEngines(const ModelTraits& traits, const SpaceOptions& space,
                                                    const SearchOptions& options, int64_t batch, Measurer& measurer,
                                                    Evaluator& eval, SearchResult& result) {
  using Out = std::optional<EngineChoice>;
  EngineChoice current;
  ORTGPU_ASSIGN_OR_RETURN(std::optional<HistoryEntry> base, MeasureAt(current, batch, options, measurer, eval));
  if (!base) return Out();
  if (!Usable(*base)) {
    result.rejected.push_back({InProcessKey(current, batch, options.inputs_tag),
                               "ORT's default engine choice failed in-process: " + base->error});
    return Out();
  }
  result.curves.Add(current, batch, base->measurement.latency_ms);
  Measurement current_m = base->measurement;

  std::vector<Knob> knobs;
  for (Knob k : ScreeningOrder()) {
    if (Flips(k, current, traits, space).empty()) continue;  // one value in the space: nothing to screen
    if (std::string why = KnobSkipped(k, traits, space); !why.empty()) {
      result.rejected.push_back({std::string(KnobName(k)), why});
      continue;
    }
    knobs.push_back(k);
  }
  // Per knob, what its last trial said: how many flips had been kept before
  // it, and whether it was a close call (its best flip within the retry
  // margin either way, or a flip failed) worth trying again in new company.
  std::map<Knob, std::pair<int, bool>> trials;
  int kept = 0;
  for (int pass = 0; pass < std::max(1, options.screening_passes); ++pass) {
    bool changed = false;
    for (Knob k : knobs) {
      if (auto t = trials.find(k); t != trials.end() && (t->second.first == kept || !t->second.second)) {
        continue;  // nothing changed since its trial, or it was decided by a wide margin
      }
      // Every value of the knob from the current choice; the fastest beyond
      // the noise is kept.
      std::vector<ScreenStep> steps;
      std::optional<size_t> best;
      Measurement best_m;
      for (const EngineChoice& flip : Flips(k, current, traits, space)) {
        // Tried in this company already (an earlier pass): the history has it.
        ORTGPU_ASSIGN_OR_RETURN(std::optional<HistoryEntry> entry, MeasureAt(flip, batch, options, measurer, eval));
        if (!entry) {
          result.screening.insert(result.screening.end(), steps.begin(), steps.end());
          return Out(current);
        }
        ScreenStep step;
        step.knob = k;
        step.from = current;
        step.to = flip;
        step.from_ms = current_m.latency_ms;
        if (!Usable(*entry)) {
          step.note = entry->ok() ? "no latency measured" : "failed: " + entry->error;
          result.rejected.push_back({InProcessKey(flip, batch, options.inputs_tag), "measurement failed: " + entry->error});
          steps.push_back(std::move(step));
          continue;
        }
        result.curves.Add(flip, batch, entry->measurement.latency_ms);
        step.to_ms = entry->measurement.latency_ms;
        step.gain = (current_m.latency_ms - step.to_ms) / current_m.latency_ms;
        step.threshold = FlipThreshold(current_m, entry->measurement, options.screening_min_gain);
        if (step.gain > step.threshold) {
          if (!best || step.to_ms < best_m.latency_ms) {
            best = steps.size();
            best_m = entry->measurement;
          }
        } else {
          step.note = fmt::format("gain {:.1f}% within the noise ({:.1f}%)", step.gain * 100, step.threshold * 100);
        }
        steps.push_back(std::move(step));
      }
      bool close = false;
      for (const ScreenStep& st : steps) {
        close = close || st.to_ms <= 0 || std::abs(st.gain) <= options.screening_retry_margin;
      }
      trials[k] = {kept + (best ? 1 : 0), close};
      for (size_t i = 0; i < steps.size(); ++i) {
        if (best && i == *best) {
          steps[i].kept = true;
        } else if (steps[i].gain > steps[i].threshold) {
          steps[i].note = "faster, but another value of the knob was faster still";
        }
      }
      if (best) {
        current = steps[*best].to;
        current_m = best_m;
        changed = true;
        ++kept;
      }
      result.screening.insert(result.screening.end(), steps.begin(), steps.end());
    }
    if (!changed) break;
  }
  return Out(current);
}

std::vector<EngineChoice> CurveEngines(const EngineChoice& screened, int count) {
  std::vector<EngineChoice> out = {screened};
  EngineChoice fallback;
  if (screened.cuda_graphs) {
    fallback = screened;
    fallback.cuda_graphs = false;
  }
  if (!(fallback == screened)) out.push_back(fallback);
  if (static_cast<int>(out.size()) > std::max(1, count)) out.resize(std::max(1, count));
  return out;
}

}  // namespace ortgpu::tune
