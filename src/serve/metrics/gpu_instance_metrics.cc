#include "serve/metrics/gpu_instance_metrics.h"

#include <utility>

namespace ortgpu::serve {

GpuInstanceMetrics::GpuInstanceMetrics(Metrics& metrics)
    : exec_count_(prometheus::BuildCounter()
                      .Name("ortgpu_gpu_exec_count")
                      .Help("Model executions (batches) run by the instances on one GPU")
                      .Register(metrics.registry())),
      rows_(prometheus::BuildCounter()
                .Name("ortgpu_gpu_inference_count")
                .Help("Rows executed by the instances on one GPU (padding included)")
                .Register(metrics.registry())),
      infer_us_(prometheus::BuildCounter()
                    .Name("ortgpu_gpu_compute_infer_duration_us")
                    .Help("Cumulative compute inference duration of the instances on one GPU, in microseconds")
                    .Register(metrics.registry())) {}

void GpuInstanceMetrics::SetGpuUuids(std::vector<std::string> uuids) {
  MutexLock lock(&mu_);
  uuids_ = std::move(uuids);
}

void GpuInstanceMetrics::RecordExecution(const std::string& model, const std::string& version, int gpu, int64_t rows,
                                         const ExecutionTimes& times) {
  if (gpu < 0) return;
  Series* s = nullptr;
  {
    MutexLock lock(&mu_);
    auto [it, fresh] = series_.try_emplace({model, version, gpu});
    if (fresh) {
      const std::string uuid = static_cast<size_t>(gpu) < uuids_.size() ? uuids_[static_cast<size_t>(gpu)] : "";
      const prometheus::Labels labels = {
          {"model", model}, {"version", version}, {"gpu", std::to_string(gpu)}, {"gpu_uuid", uuid}};
      it->second = {&exec_count_.Add(labels), &rows_.Add(labels), &infer_us_.Add(labels)};
    }
    s = &it->second;
  }
  // The counters are atomic; a Remove of the version only follows its last
  // execution (the batcher stopped first), so `s` is alive here.
  s->exec_count->Increment();
  s->rows->Increment(static_cast<double>(rows));
  s->infer_us->Increment(static_cast<double>(times.compute_infer_ns > 0 ? times.compute_infer_ns / 1000 : 0));
}

void GpuInstanceMetrics::Remove(const std::string& model, const std::string& version) {
  MutexLock lock(&mu_);
  for (auto it = series_.begin(); it != series_.end();) {
    if (std::get<0>(it->first) == model && std::get<1>(it->first) == version) {
      exec_count_.Remove(it->second.exec_count);
      rows_.Remove(it->second.rows);
      infer_us_.Remove(it->second.infer_us);
      it = series_.erase(it);
    } else {
      ++it;
    }
  }
}

}  // namespace ortgpu::serve
