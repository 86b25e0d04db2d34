#include "serve/metrics/memory_metrics.h"

namespace ortgpu::serve {

MemoryMetrics::MemoryMetrics(Metrics& metrics)
    : loaded_(prometheus::BuildGauge()
                  .Name("ortgpu_model_gpu_memory_bytes")
                  .Help("GPU memory a loaded model version holds, measured at load: weights, arena_in_use, "
                        "arena_reserved, other (CUDA context, cuDNN/cuBLAS, CUDA graph pools) and total")
                  .Register(metrics.registry())),
      unloaded_(prometheus::BuildGauge()
                    .Name("ortgpu_model_unload_gpu_memory_bytes")
                    .Help("The process's GPU memory after the version's last unload (kind after) and what the "
                          "unload gave back (kind released)")
                    .Register(metrics.registry())) {}

void MemoryMetrics::RemoveLocked(std::vector<prometheus::Gauge*>& gauges) {
  for (prometheus::Gauge* g : gauges) loaded_.Remove(g);
  gauges.clear();
}

void MemoryMetrics::Record(const std::string& model, const std::string& version, const MemoryFigures& f) {
  MutexLock lock(&mu_);
  auto& gauges = series_[{model, version}];
  RemoveLocked(gauges);
  auto add = [&](const char* kind, uint64_t bytes) {
    prometheus::Gauge& g = loaded_.Add({{"model", model}, {"version", version}, {"kind", kind}});
    g.Set(static_cast<double>(bytes));
    gauges.push_back(&g);
  };
  add("weights", f.weights);
  add("arena_in_use", f.arena_in_use);
  add("arena_reserved", f.arena_reserved);
  if (f.other) add("other", *f.other);
  add("total", f.total);
}

void MemoryMetrics::Remove(const std::string& model, const std::string& version) {
  MutexLock lock(&mu_);
  auto it = series_.find({model, version});
  if (it == series_.end()) return;
  RemoveLocked(it->second);
  series_.erase(it);
}

void MemoryMetrics::RecordUnload(const std::string& model, const std::string& version, const UnloadMemory& m) {
  const prometheus::Labels labels = {{"model", model}, {"version", version}, {"gpu", std::to_string(m.gpu)}};
  prometheus::Labels after = labels, released = labels;
  after["kind"] = "after";
  released["kind"] = "released";
  // Add returns the existing series for the same labels.
  unloaded_.Add(after).Set(static_cast<double>(m.after));
  unloaded_.Add(released).Set(static_cast<double>(m.released));
}

}  // namespace ortgpu::serve
