// Triton's classification extension: an output requested with
// parameters.classification = N (class_count) comes back as the N largest
// values of each batch item, as a BYTES tensor of "value:index" strings, or
// "value:index:label" when the output's config names a label_filename (one
// label per line, line i for index i), largest first. A batching model's
// output [B, ...] gives [B, N]; a model that does not batch gives [N].
//
// Pure functions but ApplyClassification, which asks the ModelServer for
// labels; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "serve/inference.h"
#include "serve/model_server.h"
#include "status/expected.h"

namespace ortgpu::serve {

// The class count an output's parameters ask for; 0 when none.
// InvalidArgument naming `where` when it is not a positive integer.
Expected<int64_t> ClassCount(const Parameters& p, const std::string& where);

// The classification of `output`. `batched`: its first dim is the batch.
// InvalidArgument when its datatype is not numeric.
Expected<Tensor> Classify(const Tensor& output, int64_t class_count, const std::vector<std::string>& labels,
                          bool batched);

// Replaces every output of `response` that `requested` asks to classify by
// its classification, with the labels of the model's config.
Status ApplyClassification(const ModelServer& server, const std::vector<RequestedOutput>& requested,
                           InferResponse& response);

// True when some requested output asks for classification.
bool WantsClassification(const std::vector<RequestedOutput>& requested);

}  // namespace ortgpu::serve
