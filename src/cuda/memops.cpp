#include "coop/cuda/memops.hpp"

#include <cuda.h>

#include <atomic>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

#include "driver.hpp"

namespace coop::cuda {

namespace {

using BatchMemOp = CUresult (*)(CUstream, unsigned, CUstreamBatchMemOpParams*, unsigned);
using WaitValue32 = CUresult (*)(CUstream, CUdeviceptr, cuuint32_t, unsigned);

// The driver's functions, looked up once.
BatchMemOp batch_mem_op() {
  static const auto fn =
      reinterpret_cast<BatchMemOp>(driver_entry_point("cuStreamBatchMemOp", 12000));
  return fn;
}

WaitValue32 wait_value32() {
  static const auto fn =
      reinterpret_cast<WaitValue32>(driver_entry_point("cuStreamWaitValue32", 12000));
  return fn;
}

std::string driver_error(const char* what, CUresult rc) {
  return std::string(what) + ": the driver returned CUresult " + std::to_string(int(rc));
}

}  // namespace

bool enqueue_writes(CUstream_st* s, std::span<const ValueWrite> writes) {
  // Set once a batch is refused as unsupported (a driver with memory operations switched off):
  // every later call takes the caller's copies without asking again.
  static std::atomic<bool> refused{false};
  // COOP_CUDA_CONTROL_COPIES=1 takes the copies on any driver (the fallback's test).
  static const bool copies = [] {
    const char* v = std::getenv("COOP_CUDA_CONTROL_COPIES");
    return v && *v && std::string(v) != "0";
  }();
  if (writes.empty()) return true;
  if (copies) return false;
  BatchMemOp fn = batch_mem_op();
  if (!fn || refused.load(std::memory_order_relaxed)) return false;
  std::vector<CUstreamBatchMemOpParams> ops(writes.size());
  for (std::size_t i = 0; i < writes.size(); ++i) {
    auto& w = ops[i].writeValue;
    w.operation =
        writes[i].wide ? CU_STREAM_MEM_OP_WRITE_VALUE_64 : CU_STREAM_MEM_OP_WRITE_VALUE_32;
    w.address = reinterpret_cast<CUdeviceptr>(writes[i].address);
    if (writes[i].wide)
      w.value64 = writes[i].value;
    else
      w.value = cuuint32_t(writes[i].value);
    // A memory barrier before every write: in order with what came before. (With
    // CU_STREAM_WRITE_VALUE_NO_MEMORY_BARRIER on all but the last write of a batch, tasks
    // enqueued at their request hung on an H100, driver 580.)
    w.flags = CU_STREAM_WRITE_VALUE_DEFAULT;
  }
  const CUresult rc = fn(s, unsigned(ops.size()), ops.data(), 0);
  if (rc == CUDA_SUCCESS) return true;
  if (rc == CUDA_ERROR_NOT_SUPPORTED) {
    refused.store(true, std::memory_order_relaxed);
    return false;
  }
  throw std::runtime_error(driver_error("sending a scheduler decision to the device", rc));
}

void enqueue_wait_equal(CUstream_st* s, const std::uint32_t* address, std::uint32_t value) {
  WaitValue32 fn = wait_value32();
  if (!fn) throw std::runtime_error("the CUDA driver has no cuStreamWaitValue32");
  const CUresult rc = fn(s, reinterpret_cast<CUdeviceptr>(address), value, CU_STREAM_WAIT_VALUE_EQ);
  if (rc != CUDA_SUCCESS)
    throw std::runtime_error(driver_error("enqueuing a task's release wait", rc));
}

}  // namespace coop::cuda
