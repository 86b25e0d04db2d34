#include "tune/candidates.h"

#include <algorithm>
#include <tuple>
#include <utility>

#include <fmt/format.h>

namespace ortgpu::tune {

std::string_view ConvAlgoSearchName(ConvAlgoSearch s) {
  return s == ConvAlgoSearch::kHeuristic ? "HEURISTIC" : "EXHAUSTIVE";
}

std::string EngineChoice::Key() const {
  return fmt::format("{} nhwc={} graphs={} conv={}{}", PrecisionName(precision), prefer_nhwc ? 1 : 0, cuda_graphs ? 1 : 0,
                     ConvAlgoSearchName(conv_search), fuse_conv_bias ? " fuse=1" : "");
}

std::string ServedCandidate::Key() const {
  return fmt::format("{} inst={} batch={} pad={} delay={}us workers={}{}", engine.Key(), instances, batch,
                     pad_to_preferred ? 1 : 0, max_queue_delay_us, workers_per_instance,
                     pad_to_preferred && !adaptive_padding ? " adaptive=0" : "");
}

namespace {

bool Converted(Precision p) { return p == Precision::kFp16 || p == Precision::kMixed; }

bool WithinBudget(Precision p, const ModelTraits& traits) {
  const auto& ok = traits.precisions_within_budget;
  return std::find(ok.begin(), ok.end(), p) != ok.end();
}

int64_t MaxBatch(const ModelTraits& traits) { return traits.max_batch_size > 0 ? traits.max_batch_size : 1; }

}  // namespace

std::string GraphsRefusal(const ModelTraits& traits) {
  if (traits.variable_non_batch_dim) {
    return "CUDA graphs need fixed shapes, and a dimension other than the batch is variable (a sequence length?): "
           "each new shape would need a new capture";
  }
  if (!traits.io_bindable) return "CUDA graphs need I/O bound to fixed device buffers, and this model's cannot be bound";
  return "";
}

std::string MeasuredOverMemory(const std::optional<double>& measured_bytes, const ModelTraits& traits) {
  if (!measured_bytes || !traits.gpu_memory_limit_bytes) return "";
  if (*measured_bytes <= static_cast<double>(*traits.gpu_memory_limit_bytes)) return "";
  return fmt::format("over the GPU memory limit: {} MiB in use while serving (the whole device), the limit {} MiB",
                     static_cast<int64_t>(*measured_bytes) >> 20, *traits.gpu_memory_limit_bytes >> 20);
}

bool NeedsAtLeastTheMemoryOf(const ServedCandidate& c, const ServedCandidate& measured) {
  return c.engine.precision == measured.engine.precision && (c.engine.cuda_graphs || !measured.engine.cuda_graphs) &&
         c.instances >= measured.instances && c.workers_per_instance >= measured.workers_per_instance &&
         c.batch >= measured.batch;
}

std::string RuledOutByMemory(const ServedCandidate& over, const std::string& why) {
  return "needs at least the memory of " + over.Key() + ", which was " + why;
}

int64_t EstimatedMemoryBytes(const ServedCandidate& c, const ModelTraits& traits) {
  // Converted weights and activations are float16 (mixed keeps some float32:
  // halving is the estimate's optimistic side, refined once measured).
  const int64_t divisor = Converted(c.engine.precision) ? 2 : 1;
  const int64_t per_instance =
      traits.weight_bytes / divisor + traits.activation_bytes_per_row / divisor * c.batch * c.workers_per_instance;
  return per_instance * c.instances;
}

std::vector<int64_t> ValidBatches(const ModelTraits& traits, const SpaceOptions& options, std::vector<Rejected>* rejected) {
  std::vector<int64_t> out;
  auto reject = [&](int64_t b, std::string reason) {
    if (rejected != nullptr) rejected->push_back({fmt::format("batch {}", b), std::move(reason)});
  };
  for (int64_t b : options.batches) {
    if (b < 1 || b > MaxBatch(traits)) {
      reject(b, traits.max_batch_size > 0 ? fmt::format("above the model's max_batch_size {}", traits.max_batch_size)
                                          : std::string("the model does not batch (max_batch_size 0): batch 1 only"));
      continue;
    }
    ServedCandidate one;
    one.batch = b;
    one.workers_per_instance = 1;
    if (traits.gpu_memory_limit_bytes && EstimatedMemoryBytes(one, traits) > *traits.gpu_memory_limit_bytes) {
      reject(b, fmt::format("needs about {} MiB, over the GPU memory limit of {} MiB", EstimatedMemoryBytes(one, traits) >> 20,
                            *traits.gpu_memory_limit_bytes >> 20));
      continue;
    }
    out.push_back(b);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

EngineSpace BuildEngineSpace(const ModelTraits& traits, const SpaceOptions& options) {
  EngineSpace space;
  const std::string graphs_refusal = GraphsRefusal(traits);
  for (Precision p : options.precisions) {
    if (!WithinBudget(p, traits)) {
      space.rejected.push_back({fmt::format("precision {}", PrecisionName(p)),
                                "outside the accuracy budget (or not yet judged against it)"});
      continue;
    }
    for (bool graphs : options.cuda_graphs) {
      if (graphs && !graphs_refusal.empty()) {
        space.rejected.push_back({fmt::format("precision {} with CUDA graphs", PrecisionName(p)), graphs_refusal});
        continue;
      }
      for (bool nhwc : options.prefer_nhwc) {
        for (ConvAlgoSearch conv : options.conv_searches) {
          for (bool fuse : options.fuse_conv_bias) {
            space.choices.push_back(
                {.precision = p, .prefer_nhwc = nhwc, .cuda_graphs = graphs, .conv_search = conv, .fuse_conv_bias = fuse});
          }
        }
      }
    }
  }
  // Defaults first: the first measured is the reference every gain is against.
  std::stable_sort(space.choices.begin(), space.choices.end(), [](const EngineChoice& a, const EngineChoice& b) {
    ServedCandidate sa, sb;
    sa.engine = a;
    sb.engine = b;
    return std::make_tuple(a.cuda_graphs, KnobsAwayFromDefaults(sa)) < std::make_tuple(b.cuda_graphs, KnobsAwayFromDefaults(sb));
  });
  space.batches = ValidBatches(traits, options, &space.rejected);
  return space;
}

std::vector<ServedCandidate> BuildServedCandidates(const std::vector<EngineChoice>& engines,
                                                   const std::vector<int64_t>& batches, const ModelTraits& traits,
                                                   const SpaceOptions& options, std::vector<Rejected>* rejected) {
  std::vector<ServedCandidate> out;
  auto reject = [&](const ServedCandidate& c, std::string reason) {
    if (rejected != nullptr) rejected->push_back({c.Key(), std::move(reason)});
  };
  const bool batching = traits.max_batch_size > 0;
  // Without dynamic batching there is nothing to pad or to wait for.
  const std::vector<bool> padding = batching ? options.padding : std::vector<bool>{false};
  const std::vector<int64_t> delays = batching ? options.queue_delays_us : std::vector<int64_t>{0};
  // Padding modes: unpadded, or padded with each adaptive_padding value.
  std::vector<std::pair<bool, bool>> pad_modes;  // (pad, adaptive)
  for (bool pad : padding) {
    if (!pad || options.adaptive_padding.empty()) {
      pad_modes.emplace_back(pad, true);
      continue;
    }
    for (bool adaptive : options.adaptive_padding) pad_modes.emplace_back(true, adaptive);
  }
  for (const EngineChoice& e : engines) {
    for (int64_t b : batches) {
      for (int n : options.instances) {
        for (const auto& [pad, adaptive] : pad_modes) {
          for (int64_t delay : delays) {
            for (int w : options.workers) {
              ServedCandidate c{.engine = e, .instances = n, .batch = b, .pad_to_preferred = pad,
                                .adaptive_padding = adaptive, .max_queue_delay_us = delay, .workers_per_instance = w};
              if (e.cuda_graphs && !pad) {
                reject(c, "serve captures CUDA graphs only for padded batch sizes (pad_to_preferred_batch_size)");
                continue;
              }
              if (traits.gpu_memory_limit_bytes && EstimatedMemoryBytes(c, traits) > *traits.gpu_memory_limit_bytes) {
                reject(c, fmt::format("needs about {} MiB ({} instances x {} workers x batch {}), over the GPU memory "
                                      "limit of {} MiB",
                                      EstimatedMemoryBytes(c, traits) >> 20, n, w, b,
                                      *traits.gpu_memory_limit_bytes >> 20));
                continue;
              }
              out.push_back(c);
            }
          }
        }
      }
    }
  }
  return out;
}

int KnobsAwayFromDefaults(const ServedCandidate& c) {
  const ServedCandidate d;
  return (c.engine.precision != d.engine.precision) + (c.engine.prefer_nhwc != d.engine.prefer_nhwc) +
         (c.engine.conv_search != d.engine.conv_search) + (c.engine.fuse_conv_bias != d.engine.fuse_conv_bias) +
         (c.pad_to_preferred != d.pad_to_preferred) +
         (c.max_queue_delay_us != d.max_queue_delay_us) + (c.workers_per_instance != d.workers_per_instance);
}

bool SimplerThan(const ServedCandidate& a, const ServedCandidate& b) {
  auto rank = [](const ServedCandidate& c) {
    return std::make_tuple(c.instances, c.engine.cuda_graphs, KnobsAwayFromDefaults(c), c.max_queue_delay_us, c.batch);
  };
  return rank(a) < rank(b);
}

}  // namespace ortgpu::tune
