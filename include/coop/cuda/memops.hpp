// Stream memory operations of the CUDA driver (looked up through the runtime): a write or a wait
// that the stream's front end executes, with no copy engine or kernel on the way. coop sends
// scheduler decisions to a running job and holds tasks back with them.
#pragma once

#include <cstdint>
#include <span>

struct CUstream_st;

namespace coop::cuda {

/// One value to write, 32 or 64 bits wide, at a device address.
struct ValueWrite {
  void* address = nullptr;
  std::uint64_t value = 0;
  bool wide = false;
};

/// Enqueues `writes` on `s` as one batch: each lands after the stream's earlier work and after
/// the writes before it. Returns false, with nothing enqueued, where the driver does not offer
/// these operations (the caller copies instead); throws on any other error.
bool enqueue_writes(CUstream_st* s, std::span<const ValueWrite> writes);

/// Enqueues on `s` a wait until the 32-bit word at `address` equals `value`.
void enqueue_wait_equal(CUstream_st* s, const std::uint32_t* address, std::uint32_t value);

}  // namespace coop::cuda
