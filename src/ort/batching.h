// Joining requests into one batch along dimension 0 and splitting a batch's
// outputs back: what serve's dynamic batcher and BatchRunner (a batch of
// requests run as one) do with Tensor values. Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ort/tensor.h"
#include "status/expected.h"

namespace ortgpu {

// A key equal for two requests exactly when they can share a batch: the same
// input names, types and non-batch dimensions.
std::string BatchKey(const std::vector<Tensor>& inputs);

// Concatenates each input across `requests` along dimension 0, then appends
// `padding_rows` rows of zeros (empty strings) to each: the padding that
// makes a batch a preferred size.
// REQUIRES: every element has the same BatchKey and every input has rank >= 1.
Expected<std::vector<Tensor>> ConcatBatch(const std::vector<const std::vector<Tensor>*>& requests,
                                          int64_t padding_rows = 0);

// Splits every output along dimension 0 into pieces of `rows[i]` rows; the
// last `padding_rows` rows (ConcatBatch's padding) are dropped.
// InvalidArgument when an output's first dimension is not the sum of rows
// and padding (a model that does not batch along dimension 0). The pieces
// are views of `outputs`' buffers (which SplitBatch turns into shared ones),
// not copies: a batch's output is fetched once and each response borrows
// its rows until it is sent.
Expected<std::vector<std::vector<Tensor>>> SplitBatch(std::vector<Tensor>& outputs,
                                                      const std::vector<int64_t>& rows, int64_t padding_rows = 0);

}  // namespace ortgpu
