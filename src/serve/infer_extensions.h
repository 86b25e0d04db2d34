// Triton's extensions an inference passes through, written once for both
// front ends (HTTP's endpoints.cc, gRPC's grpc_server.cc), which call them
// around ModelServer::Infer:
//
//   before the core  PrepareExtensions: inputs placed in shared memory
//                    regions read from them (system regions in place, CUDA
//                    regions left on the device), and outputs placed in
//                    CUDA regions resolved to device destinations a GPU
//                    instance writes directly;
//   after the core   FinishExtensions: outputs asked for classification
//                    turned into their top N, and outputs placed in regions
//                    written into them.
//
// The front ends keep only what their protocol shapes: decoding (a
// decoder records an input's region in InferRequest::shared_memory_inputs
// and leaves its data empty), the binary flags, encoding.
#pragma once

#include <vector>

#include "serve/inference.h"
#include "serve/model_server.h"
#include "serve/shared_memory.h"
#include "status/status.h"

namespace ortgpu::serve {

// `shm` null: the server has no shared memory, so a request that names a
// region is Unimplemented. Errors as ReadSharedMemoryInputs and
// ResolveDeviceOutputs (shared_memory.h).
Status PrepareExtensions(InferRequest& request, const SharedMemoryRegistry* shm);

// The outputs FinishExtensions will act on: those asked for classification
// or placed in a region. Empty for most requests (nothing to do after the
// core).
std::vector<RequestedOutput> ExtendedOutputs(const std::vector<RequestedOutput>& requested);

// `requested` as the request named its outputs (ExtendedOutputs of them is
// enough). Errors as ApplyClassification and WriteSharedMemoryOutputs.
Status FinishExtensions(const ModelServer& server, const std::vector<RequestedOutput>& requested,
                        InferResponse& response, const SharedMemoryRegistry* shm);

}  // namespace ortgpu::serve
