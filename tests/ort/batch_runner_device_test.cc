// Batches whose rows are already in device memory (CUDA shared memory,
// issue 10), with the device faked on the host (FakeDeviceMemory): the rows
// are joined device to device into the buffer the run reads, host rows of a
// mixed batch go up in one copy per run of them, padding is zeroed on the
// device, and the outputs match the same batch sent as host tensors.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>

#include "fakes/fake_device_memory.h"
#include "ort/batching.h"
#include "ort/linear_model.h"
#include "ort/batch_runner.h"

namespace ortgpu {
namespace {

using ::testing::HasSubstr;
using ortgpu::testing::FakeDeviceMemory;

using testing::Linear;

std::vector<Tensor> HostRequest(int64_t rows, float base) {
  Tensor t = Tensor::Zeros("x", DataType::kFloat, {rows, 4});
  for (int64_t i = 0; i < t.element_count(); ++i) t.data_as<float>()[i] = base + 0.25f * static_cast<float>(i);
  return {t};
}

// The same request with its bytes in "device memory" (host memory the
// fakes use as such) on GPU `device`, kept alive by the view's owner.
std::vector<Tensor> DeviceRequest(int64_t rows, float base, int device = 0) {
  std::vector<Tensor> req = HostRequest(rows, base);
  Tensor& t = req[0];
  auto memory = std::make_shared<std::vector<uint8_t>>(t.data.begin(), t.data.end());
  DeviceView v;
  v.address = reinterpret_cast<uint64_t>(memory->data());
  v.size = memory->size();
  v.device = device;
  v.where = "CUDA shared memory region 'g0'";
  v.owner = memory;
  t.data.clear();
  t.device = std::move(v);
  return req;
}

ReshapeRules Batched() {
  ReshapeRules r;
  r.batched = true;
  r.max_batch_size = 8;
  return r;
}

class DeviceBatchTest : public ::testing::Test {
 protected:
  DeviceBatchTest() : runner_(Linear(), Batched()), reference_(Linear(), Batched()) {
    runner_.SetDeviceMemory(memory_, 0);
  }
  // What the batch gives when every row is sent as a host tensor.
  std::vector<Tensor> Reference(const std::vector<const std::vector<Tensor>*>& host_batch, int64_t padding) {
    auto joined = ConcatBatch(host_batch, padding);
    EXPECT_TRUE(joined.ok()) << joined.status().ToString();
    auto out = reference_.Run(*joined);
    EXPECT_TRUE(out.ok()) << out.status().ToString();
    return out.ok() ? *out : std::vector<Tensor>{};
  }

  std::shared_ptr<FakeDeviceMemory> memory_ = std::make_shared<FakeDeviceMemory>();
  BatchRunner runner_;
  BatchRunner reference_;
  const Clock& clock_ = RealClock();
  int64_t ready_ = 0;
};

TEST_F(DeviceBatchTest, ASingleDeviceRequestMakesNoHostCopy) {
  auto dev = DeviceRequest(2, 0.5f);
  auto host = HostRequest(2, 0.5f);
  auto got = runner_.RunBatch({&dev}, 0, clock_, ready_);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  const auto want = Reference({&host}, 0);
  ASSERT_EQ(got->size(), 1u);
  EXPECT_EQ((*got)[0].shape, want[0].shape);
  EXPECT_EQ((*got)[0].data, want[0].data);
  const auto c = memory_->counts();
  EXPECT_EQ(c.to_device, 0);
  EXPECT_EQ(c.to_host, 0);
  EXPECT_EQ(c.on_device, 1);
  EXPECT_EQ(c.on_device_bytes, 2u * 4 * sizeof(float));
  EXPECT_EQ(c.allocations, 1);  // the device batch buffer, made once
}

TEST_F(DeviceBatchTest, BatchedDeviceRequestsWithPaddingMatchHostRequests) {
  auto a = DeviceRequest(1, 0.5f), b = DeviceRequest(3, -2.0f), c = DeviceRequest(2, 4.0f);
  auto ha = HostRequest(1, 0.5f), hb = HostRequest(3, -2.0f), hc = HostRequest(2, 4.0f);
  for (int round = 0; round < 2; ++round) {  // the second batch reuses the device buffer
    auto got = runner_.RunBatch({&a, &b, &c}, 2, clock_, ready_);
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    const auto want = Reference({&ha, &hb, &hc}, 2);
    EXPECT_EQ((*got)[0].shape, want[0].shape);
    EXPECT_EQ((*got)[0].data, want[0].data);  // padding rows zeroed on the device (the fake fills with 0xAB)
  }
  const auto counts = memory_->counts();
  EXPECT_EQ(counts.to_device, 0);
  EXPECT_EQ(counts.to_host, 0);
  EXPECT_EQ(counts.on_device, 6);
  EXPECT_EQ(counts.zeroed, 2);
  EXPECT_EQ(counts.allocations, 1);
}

TEST_F(DeviceBatchTest, MixedBatchSendsHostRowsUpInOneCopyPerRun) {
  auto a = HostRequest(1, 0.5f), b = HostRequest(2, 1.0f), c = DeviceRequest(2, 4.0f), d = HostRequest(1, -1.0f);
  auto hc = HostRequest(2, 4.0f);
  auto got = runner_.RunBatch({&a, &b, &c, &d}, 0, clock_, ready_);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  const auto want = Reference({&a, &b, &hc, &d}, 0);
  EXPECT_EQ((*got)[0].data, want[0].data);
  const auto counts = memory_->counts();
  EXPECT_EQ(counts.to_device, 2);  // rows of a and b together, then d
  EXPECT_EQ(counts.to_device_bytes, 4u * 4 * sizeof(float));
  EXPECT_EQ(counts.on_device, 1);
  EXPECT_EQ(counts.to_host, 0);
}

TEST_F(DeviceBatchTest, HostOnlyBatchesKeepTheHostPath) {
  auto a = HostRequest(2, 0.5f);
  auto got = runner_.RunBatch({&a}, 1, clock_, ready_);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  const auto counts = memory_->counts();
  EXPECT_EQ(counts.allocations, 0);
  EXPECT_EQ(counts.to_device + counts.on_device + counts.zeroed, 0);
}

TEST_F(DeviceBatchTest, RowsOnAnotherGpuArePeerCopiedOrRefusedNamingBothGpus) {
  auto a = DeviceRequest(1, 0.5f, /*device=*/1);
  auto ha = HostRequest(1, 0.5f);
  auto got = runner_.RunBatch({&a}, 0, clock_, ready_);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ((*got)[0].data, Reference({&ha}, 0)[0].data);
  EXPECT_EQ(memory_->counts().peer, 1);

  memory_->RefusePeerCopies();
  got = runner_.RunBatch({&a}, 0, clock_, ready_);
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), Code::kInvalidArgument);
  EXPECT_THAT(got.status().message(), HasSubstr("on GPU 1 and the model runs on GPU 0"));
  EXPECT_THAT(got.status().message(), HasSubstr("CUDA shared memory region 'g0'"));
  // The runner is fine afterwards.
  auto host = HostRequest(1, 0.5f);
  EXPECT_TRUE(runner_.RunBatch({&host}, 0, clock_, ready_).ok());
}

// `req` with its device rows readable from the host as a CUDA region's
// are (DeviceView::to_host), each copy counted in `copies`.
std::vector<Tensor> HostReadable(std::vector<Tensor> req, std::shared_ptr<int> copies) {
  for (Tensor& t : req) {
    if (!t.on_device()) continue;
    t.device->to_host = [copies](void* dst, uint64_t address, size_t size) {
      ++*copies;
      std::memcpy(dst, reinterpret_cast<const void*>(address), size);
      return Status::Ok();
    };
  }
  return req;
}

// A CPU instance reads host memory: rows in a CUDA region are copied to the
// host once each and the batch runs as a host batch (issue 10: Triton
// serves such inputs on any instance).
TEST_F(DeviceBatchTest, ACpuInstanceCopiesDeviceRowsToTheHostOnce) {
  BatchRunner cpu(Linear(), Batched());
  auto copies = std::make_shared<int>(0);
  auto a = HostReadable(DeviceRequest(1, 0.5f), copies), b = HostReadable(DeviceRequest(2, -1.0f), copies);
  auto host = HostRequest(1, 3.0f);
  auto got = cpu.RunBatch({&a, &host, &b}, 1, clock_, ready_);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(*copies, 2);
  auto ha = HostRequest(1, 0.5f), hb = HostRequest(2, -1.0f);
  const auto want = Reference({&ha, &host, &hb}, 1);
  ASSERT_EQ(got->size(), 1u);
  EXPECT_EQ((*got)[0].shape, want[0].shape);
  EXPECT_EQ((*got)[0].data, want[0].data);
}

// So does an instance whose path runs on the request's own host tensors
// (an unbatched model).
TEST_F(DeviceBatchTest, AnUnbatchedRunCopiesDeviceInputsToTheHostOnce) {
  ReshapeRules unbatched;
  BatchRunner cpu(Linear(), unbatched);
  auto copies = std::make_shared<int>(0);
  auto a = HostReadable(DeviceRequest(2, 0.5f), copies);
  auto got = cpu.RunBatch({&a}, 0, clock_, ready_);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(*copies, 1);
  auto host = HostRequest(2, 0.5f);
  const auto want = reference_.Run(host);
  ASSERT_TRUE(want.ok());
  ASSERT_EQ(got->size(), 1u);
  EXPECT_EQ((*got)[0].shape, (*want)[0].shape);
  EXPECT_EQ((*got)[0].data, (*want)[0].data);
}

// Device bytes that cannot be read from the host are refused with what the
// input is and where, and what to send instead; the runner serves on.
TEST_F(DeviceBatchTest, ACpuInstanceRefusesDeviceRowsItCannotCopy) {
  BatchRunner cpu(Linear(), Batched());
  auto a = DeviceRequest(1, 0.5f);
  auto got = cpu.RunBatch({&a}, 0, clock_, ready_);
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), Code::kInvalidArgument);
  EXPECT_THAT(got.status().message(), HasSubstr("input 'x' is in CUDA shared memory region 'g0' on GPU 0"));
  EXPECT_THAT(got.status().message(), HasSubstr("runs on the CPU"));
  EXPECT_THAT(got.status().message(), HasSubstr("system shared memory"));
  auto host = HostRequest(1, 0.5f);
  EXPECT_TRUE(cpu.RunBatch({&host}, 0, clock_, ready_).ok());
  // Run itself takes host tensors only.
  auto run = cpu.Run(a);
  ASSERT_FALSE(run.ok());
  EXPECT_THAT(run.status().message(), HasSubstr("reads host memory only"));
}

// Outputs every request of the batch placed in a CUDA region are written
// device to device at each request's rows and come back as placeholders.
class DeviceOutputTest : public DeviceBatchTest {
 protected:
  // A destination of `bytes` bytes for output y, in "device memory".
  OutputDestinations Destination(size_t bytes) {
    buffers_.push_back(std::make_shared<std::vector<uint8_t>>(bytes, 0));
    DeviceView v;
    v.address = reinterpret_cast<uint64_t>(buffers_.back()->data());
    v.size = bytes;
    v.device = 0;
    v.where = "CUDA shared memory region 'out'";
    v.owner = buffers_.back();
    return {{"y", v}};
  }
  std::vector<float> Written(size_t k, size_t floats) const {
    std::vector<float> f(floats);
    std::memcpy(f.data(), buffers_[k]->data(), floats * sizeof(float));
    return f;
  }
  static std::vector<float> Rows(const Tensor& t, size_t first, size_t count) {
    const float* p = t.data_as<float>() + first * 3;
    return std::vector<float>(p, p + count * 3);
  }
  std::vector<std::shared_ptr<std::vector<uint8_t>>> buffers_;
};

TEST_F(DeviceOutputTest, OutputsInCudaRegionsAreWrittenDeviceToDevice) {
  auto a = DeviceRequest(2, 0.5f), b = DeviceRequest(1, -3.0f);
  auto ha = HostRequest(2, 0.5f), hb = HostRequest(1, -3.0f);
  OutputDestinations da = Destination(2 * 3 * sizeof(float)), db = Destination(64);
  auto got = runner_.RunBatch({&a, &b}, 1, clock_, ready_, {"y"}, {&da, &db});
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  ASSERT_EQ(got->size(), 1u);
  const Tensor& y = (*got)[0];
  EXPECT_TRUE(y.on_device());  // a placeholder: written already
  EXPECT_TRUE(y.data.empty());
  EXPECT_EQ(y.shape, (std::vector<int64_t>{4, 3}));  // padding included, as for host outputs
  const auto want = Reference({&ha, &hb}, 1);
  EXPECT_EQ(Written(0, 6), Rows(want[0], 0, 2));
  EXPECT_EQ(Written(1, 3), Rows(want[0], 2, 1));
  const auto counts = memory_->counts();
  EXPECT_EQ(counts.on_device, 4);  // two input rows, two output slices
  EXPECT_EQ(counts.to_host + counts.to_device, 0);

  // Split per request, each piece is a placeholder of its own rows.
  auto split = SplitBatch(*got, {2, 1}, 1);
  ASSERT_TRUE(split.ok()) << split.status().ToString();
  EXPECT_TRUE((*split)[0][0].on_device());
  EXPECT_EQ((*split)[0][0].shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ((*split)[1][0].shape, (std::vector<int64_t>{1, 3}));
}

TEST_F(DeviceOutputTest, HostInputsWithDeviceOutputsToo) {
  auto a = HostRequest(2, 0.5f);
  OutputDestinations da = Destination(2 * 3 * sizeof(float));
  auto got = runner_.RunBatch({&a}, 0, clock_, ready_, {}, {&da});
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_TRUE((*got)[0].on_device());
  EXPECT_EQ(Written(0, 6), Rows(Reference({&a}, 0)[0], 0, 2));
  EXPECT_EQ(memory_->counts().on_device, 1);
}

// When not every request of the batch has the output in a region, or one
// region is too small, the output comes to the host as before and the
// front end writes (or refuses) it.
TEST_F(DeviceOutputTest, OtherwiseTheOutputComesToTheHost) {
  auto a = DeviceRequest(1, 0.5f), b = DeviceRequest(1, 2.0f);
  OutputDestinations da = Destination(12), none;
  auto got = runner_.RunBatch({&a, &b}, 0, clock_, ready_, {"y"}, {&da, &none});
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_FALSE((*got)[0].on_device());
  EXPECT_EQ((*got)[0].data.size(), 2u * 3 * sizeof(float));

  OutputDestinations small = Destination(4), fine = Destination(12);
  got = runner_.RunBatch({&a, &b}, 0, clock_, ready_, {"y"}, {&small, &fine});
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_FALSE((*got)[0].on_device());
  EXPECT_EQ((*got)[0].data.size(), 2u * 3 * sizeof(float));
  EXPECT_EQ(memory_->counts().to_host, 1);  // brought back once, whole
}

}  // namespace
}  // namespace ortgpu
