// Memory layout shared by the CUDA backend's host side and its kernels.
//
// Device memory (DeviceState): the scheduler channel and the job's counters. Every workgroup
// polls only this; the host writes `channel.target`, `channel.suspend` and `channel.abort` by
// copy on a control stream (one 4-byte copy per decision).
//
// Pinned, mapped host memory (Mailbox): the events the kernel sends the host, one record per
// membership change (spawn, kill, suspend, the end of the job), and the first error. The
// kernel only writes there (posted writes), except to check for ring space after a wrap.
#pragma once

#include <cstdint>

#include "coop/config.hpp"
#include "coop/detail/protocol.hpp"

namespace coop::cuda::detail {

struct DeviceState {
  coop::detail::Channel channel;
  /// Workgroups counted by the job and not yet returned: set to M0 at launch, + k at each
  /// spawn (before the join grid exists), - 1 when a block returns. The block that brings it to
  /// zero is the last one of the job and tells the host.
  alignas(128) std::uint32_t outstanding = 0;
  std::uint32_t next_event = 0;  ///< next ring index
  std::uint32_t error_claimed = 0;
};

enum class EventKind : std::uint32_t {
  spawn = 1,       ///< start `count` workgroups at ids [first, first+count) at `site`
  membership = 2,  ///< M changed by `delta` (kills, shrinking barriers)
  suspended = 3,   ///< the job suspended at `site`; payload: workgroup 0's transmit
  done = 4,        ///< the last workgroup returned (`first` = 1 if the job is suspended)
};

/// One ring record: this header, then the transmitted state (spawn, suspended).
struct alignas(16) EventHeader {
  std::uint32_t seq;  ///< ring index + 1, written last (the record is complete)
  EventKind kind;
  std::uint32_t first;
  std::uint32_t count;
  std::int32_t site;
  std::int32_t delta;
  std::uint32_t pad[2];
};

enum class ErrorCode : std::uint32_t {
  none = 0,
  barrier_unreachable = 1,   ///< a = site, b = arrived, c = active, d = finished
  invariant = 2,             ///< a fork beyond N (the only invariant checked on the device)
  unknown_resume_point = 3,  ///< a = group, b = resume point
  loop_misuse = 4,           ///< a = group, b = site: coop::for_each found its cursor misused
};

struct ErrorRecord {
  std::uint32_t set;  ///< written last
  ErrorCode code;
  std::int64_t a, b, c, d;
};

struct Mailbox {
  ErrorRecord error;
  alignas(64) std::uint32_t consumed = 0;  ///< events the host has handled (host-written)
  // followed by the ring: ring_slots records of `stride` bytes each
};

/// Bytes of one ring record for a transmit of `transmit_bytes`.
COOP_HD constexpr std::uint32_t event_stride(std::uint32_t transmit_bytes) {
  return std::uint32_t(sizeof(EventHeader)) + ((transmit_bytes + 15u) & ~15u);
}
COOP_HD constexpr std::uint32_t ring_offset() {
  return (std::uint32_t(sizeof(Mailbox)) + 127u) & ~127u;
}

}  // namespace coop::cuda::detail
