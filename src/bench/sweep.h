// Sweep: the declarative list of settings `bench --sweep` compares, the
// expansion of chosen axes into variants, and the recommendation drawn from
// measured results (pure functions; thread-safe).
#pragma once

#include <string>
#include <vector>

#include "bench/result.h"
#include "status/expected.h"

namespace ortgpu::bench {

// One setting the sweep varies. `key` is "io", "opt", "precision" or a CUDA
// EP option key; values are in the order tried, the first being ORT's
// default.
struct SweepAxis {
  std::string key;
  std::vector<std::string> values;
  std::string description;
  bool cuda_only = false;
  // Swept when --sweep names no axes, per provider. Graph optimisation levels
  // barely move CUDA timings (measured on the H200: under 0.5% on ResNet-50)
  // and would quadruple the sweep, so CUDA leaves them out.
  bool default_on_cpu = true;
  bool default_on_cuda = true;
};

// Every axis bench knows, the single table --help and the sweep use.
const std::vector<SweepAxis>& SweepAxes();

// Expands axis selections into variants: the cartesian product of the chosen
// axes' values, settings not swept kept from `base`. The variant equal to
// `base` is marked is_default and put first (added if the product lacks it).
// `selection` items are "key" (all its values) or "key=v1|v2"; empty
// selects the default axes for `provider`. `extra` items are added to the
// selection, or to the default axes when it is empty (bench --precision
// with --sweep). On the CPU a precision axis's tf32 is fp32 (one variant).
// Errors name the unknown axis or value and list the valid ones.
Expected<std::vector<Variant>> ExpandSweep(Provider provider, const std::vector<std::string>& selection, const Variant& base,
                                           const std::vector<std::string>& extra = {});

// Picks the best latency and throughput configurations among the results
// that ran, passed their accuracy check, whose precision is Recommendable
// (within the budget; fp16 and mixed only when judged), and were measured
// in an I/O mode
// `ortgpu serve` runs (served, served-graph: ServedByServe); the other modes
// are references, never recommended, and one that measured better than a
// pick is named in the pick (faster_not_served) so the report can say why it
// was passed over. Gains are against the default variant measured at the
// same batch and concurrency. nullopt picks when nothing servable succeeded.
Recommendation Recommend(const BenchReport& report);

// The max_batch_size `ortgpu serve` and Triton's ONNX Runtime backend give a
// model that batches when its config does not say (serve's
// CompletionOptions); the fragment never offers less, so requests of a few
// rows keep working when bench only measured batch 1.
inline constexpr int64_t kServeDefaultMaxBatchSize = 4;

// "" unless a reference mode measured better than `pick`; otherwise a
// config.pbtxt comment line naming it and why serve does not run it.
std::string NotServedNote(const BenchReport& report, const Pick& pick);

// "" for a stable pick; otherwise config.pbtxt comment lines saying the pick
// is unstable, or that a faster configuration was passed over as unstable.
std::string StabilityNote(const BenchReport& report, const Pick& pick);

// "" unless a faster configuration was passed over for its precision;
// otherwise a config.pbtxt comment line naming it and why.
std::string BudgetNote(const BenchReport& report, const Pick& pick);

// The Triton config.pbtxt fragment for result `pick` of `report`:
// max_batch_size, dynamic_batching, instance_group and the CUDA EP
// parameters, with comments naming what Triton cannot express (I/O mode).
// A converted precision is the model parameter serve reads,
// `parameters { key: "precision" value: { string_value: "fp16" } }`, with a
// comment saying what it traded; fp32 is the CUDA option use_tf32=0.
std::string ConfigPbtxtFragment(const BenchReport& report, size_t pick);

}  // namespace ortgpu::bench
