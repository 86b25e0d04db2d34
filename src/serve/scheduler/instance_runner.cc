#include "serve/scheduler/instance_runner.h"

namespace ortgpu::serve {

Expected<std::vector<Tensor>> InstanceRunner::RunBatch(const std::vector<const std::vector<Tensor>*>& requests,
                                                       int64_t padding_rows, const Clock& clock,
                                                       int64_t& inputs_ready_ns, const std::vector<std::string>&,
                                                       const std::vector<const OutputDestinations*>&) {
  return RunJoinedOnHost(requests, padding_rows, clock, inputs_ready_ns,
                         [this](const std::vector<Tensor>& joined) { return Run(joined); });
}

Status SessionRunner::PrepareOnWorker() {
  ORTGPU_RETURN_IF_ERROR(
      batch_.BindDevice().WithContext("binding the worker thread to GPU " + std::to_string(batch_.device())));
  return worker_warmup_ ? worker_warmup_(*this) : Status::Ok();
}

}  // namespace ortgpu::serve
