// One load of one model version on instances already placed, in steps
// (docs/ARCHITECTURE.md, "Loading a model"):
//
//   1. Prepare       the model file, the session options and the config's
//                    parameters; the precision conversion (fp16, mixed),
//                    before any instance's session;
//   2. PlanMemory    the GPU memory plan (memory_plan.h): a load that will
//                    not fit is refused before its first session allocates;
//   3. per instance  its main session (instance 0's completes the config and
//                    chooses the warm-up), its other sessions (one per padded
//                    batch size, CUDA graphs), its runners (one per worker),
//                    then its warm-up on the loading thread (or, with CUDA
//                    graphs, on its workers' own threads);
//   4. the placement check (require_gpu), the batcher started and waited
//                    for, and the memory measured over the load.
//
// LoadModelVersion (model_loader.h) runs LoadPlaced once per set of GPUs
// left after a GPU's failure. Used by the server core's loading thread only.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "serve/repository/model_loader.h"

namespace ortgpu::serve {

// Loads `version` on `instances` (placed already). `failing_instance` is
// set to the index of the instance being loaded or warmed while that goes
// on, and to -1 outside the instances' loop, so the caller can tell a
// failure of one instance (its GPU) from one of the model.
Expected<std::shared_ptr<LoadedModel>> LoadPlaced(const ModelSource& source, const inference::ModelConfig& config,
                                                  int64_t version, const LoaderOptions& options, const LoaderDeps& deps,
                                                  const std::vector<InstanceSpec>& instances, int& failing_instance);

// Where placement checks keep their profiles and saved graphs (a folder
// under the system's temporary directory, made if missing).
std::string PlacementDir();

}  // namespace ortgpu::serve
