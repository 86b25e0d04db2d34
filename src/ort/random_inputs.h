// Synthetic input values and shape checks shared by `doctor` and `bench`:
// tensors filled from a seed with values a model accepts (integers in a range
// that keeps index inputs valid, masks set to 1), and the check that a
// user-given shape fits a model input. Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ort/session.h"
#include "ort/tensor.h"
#include "status/status.h"

namespace ortgpu {

struct IntRange {
  int64_t lo = 0;  // inclusive
  int64_t hi = 0;  // exclusive
};

// The range integer values of input `name` get when nobody says otherwise:
// masks 1, token type / segment ids 0, int8/uint8 their full range, else
// [0, 100) (index inputs into tables of at least 100 rows stay valid).
IntRange DefaultIntRange(const std::string& name, DataType type);

// Fills `t` (its shape and dtype set, storage sized) with values drawn from
// `seed`: floats in [-1, 1), integers in `ints`, booleans 0/1, strings.
void FillRandom(Tensor& t, uint64_t seed, IntRange ints);

// OK when `shape` has the input's rank and matches its fixed dims; else
// InvalidArgument saying which dimension is fixed at what. `source` names
// where the shape came from ("--shape", "--input cat.npy").
Status CheckShapeFits(const TensorInfo& input, const std::vector<int64_t>& shape, const std::string& source);

// The most bytes one generated (or tiled) input may take: 4 GiB, as for
// serve's warm-up samples. Checked before anything is allocated, so a
// --shape of 2^40 elements is a clear error instead of std::bad_alloc.
inline constexpr uint64_t kMaxInputBytes = uint64_t{4} << 30;

// OK when a tensor of `dtype` and `shape` has every dimension >= 0 and takes
// at most `limit` bytes (a string element counts as sizeof(std::string));
// else InvalidArgument naming the input, its shape, the bytes it would take
// and `source` ("--shape", "--batch").
Status CheckInputSize(const std::string& name, DataType dtype, const std::vector<int64_t>& shape,
                      const std::string& source, uint64_t limit = kMaxInputBytes);

}  // namespace ortgpu
