#include "serve/infer_extensions.h"

#include "serve/classification.h"

namespace ortgpu::serve {
namespace {

bool InRegion(const RequestedOutput& o) { return o.parameters.count("shared_memory_region") > 0; }

}  // namespace

Status PrepareExtensions(InferRequest& request, const SharedMemoryRegistry* shm) {
  if (shm == nullptr) {
    if (!request.shared_memory_inputs.empty()) {
      return Unimplemented("input '" + request.shared_memory_inputs.begin()->first +
                           "': this server has no shared memory");
    }
    return Status::Ok();
  }
  if (!request.shared_memory_inputs.empty()) ORTGPU_RETURN_IF_ERROR(ReadSharedMemoryInputs(request, *shm));
  return ResolveDeviceOutputs(request, *shm);
}

std::vector<RequestedOutput> ExtendedOutputs(const std::vector<RequestedOutput>& requested) {
  std::vector<RequestedOutput> out;
  for (const RequestedOutput& o : requested) {
    if (InRegion(o) || o.parameters.count("classification") > 0) out.push_back(o);
  }
  return out;
}

Status FinishExtensions(const ModelServer& server, const std::vector<RequestedOutput>& requested,
                        InferResponse& response, const SharedMemoryRegistry* shm) {
  if (WantsClassification(requested)) ORTGPU_RETURN_IF_ERROR(ApplyClassification(server, requested, response));
  if (shm == nullptr) return Status::Ok();
  for (const RequestedOutput& o : requested) {
    if (InRegion(o)) return WriteSharedMemoryOutputs(response, requested, *shm);
  }
  return Status::Ok();
}

}  // namespace ortgpu::serve
