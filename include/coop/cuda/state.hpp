// Memory layout shared by the CUDA backend's host side and its kernels.
//
// Device memory (DeviceState): the scheduler channel and the job's counters. Every workgroup
// polls only this; the host writes `channel.request` (target and suspend bit) and
// `channel.abort` on a control stream (one 4-byte stream write or copy per decision).
//
// Pinned, mapped host memory (Mailbox): the events the kernel sends the host, one record per
// membership change (spawn, kill, suspend, the end of the job), and the first error. The
// kernel only writes there (posted writes), except to check for ring space after a wrap.
#pragma once

#include <cstdint>

#include "coop/config.hpp"
#include "coop/detail/protocol.hpp"

namespace coop::cuda::detail {

/// Release slots: a task enqueued at its request (TaskLaunch::at_request) waits on a word of
/// the device's release ring (pinned, mapped host memory) that its stream waits for. The host
/// arms a slot of each job it shrinks for the task, an 8-byte write on the control stream in
/// the target's batch, before it (then the mask of armed slots): the value to write (bits 0-31,
/// never 0), the word's index in the ring (32-47) and the M at or below which the job has given
/// enough (48-63). The block that brings M there writes the word, so the task's blocks are placed
/// as the job's leave, with no host step between; the host writes it too when it grants the task
/// (the slow path never fails).
inline constexpr std::uint32_t kReleaseSlots = 8;
/// SMs a device may have (%smid is below it); 132 on an H100 or H200.
inline constexpr std::uint32_t kMaxSms = 512;
inline constexpr std::uint32_t kReleaseRingWords = 1u << 16;
COOP_HD constexpr std::uint64_t release_slot(std::uint32_t value, std::uint32_t index,
                                             std::uint32_t m_at_most) {
  return std::uint64_t(value) | std::uint64_t(index & 0xffffu) << 32 |
         std::uint64_t(m_at_most & 0xffffu) << 48;
}

/// Where the blocks of one grid whose ids go by SM count themselves (pack_ids in backend.cuh).
struct alignas(128) PackSlot {
  /// Blocks that have arrived; kPackClosed is set once the count has closed (a join grid's
  /// blocks wait only a bounded time for each other: they need not all be resident).
  std::uint32_t arrived = 0;
  std::uint32_t registered = 0;  ///< counted blocks (arrived before the close) in blocks_on_sm
  std::uint32_t closed_at = 0;   ///< 0 while open, then 1 + the number of blocks counted
  std::uint32_t taken = 0;       ///< blocks that have their id (join grids)
  std::uint32_t blocks_on_sm[kMaxSms] = {};
};
inline constexpr std::uint32_t kPackClosed = 1u << 31;
/// Join grids that can number their blocks by SM at once (one per job stream).
inline constexpr std::uint32_t kJoinPackSlots = 8;

struct DeviceState {
  coop::detail::Channel channel;
  /// Armed release slots (0: empty); see release_slot.
  alignas(64) std::uint64_t release[kReleaseSlots] = {};
  /// Which slots are armed (bit i: release[i]), written after the slot: a kill with no task
  /// waiting reads one word.
  std::uint32_t release_armed = 0;
  /// Device view of the release ring (kReleaseRingWords words).
  std::uint32_t* release_ring = nullptr;

  /// Ids by SM (pack_ids in backend.cuh): the start grid's count, zeroed before every start
  /// grid, and the join grids', one per job stream (the first kJoinPackSlots streams). A join
  /// grid's last block to take its id zeroes its slot; the next grid on that stream starts
  /// after that grid has ended, so it finds the slot empty.
  PackSlot start_pack;
  PackSlot join_pack[kJoinPackSlots];

  /// Workgroups counted by the job and not yet returned: set to M0 at launch, + k at each
  /// spawn (before the join grid exists), - 1 when a block returns. The block that brings it to
  /// zero is the last one of the job and tells the host.
  alignas(128) std::uint32_t outstanding = 0;
  std::uint32_t next_event = 0;  ///< next ring index
  std::uint32_t error_claimed = 0;
};

enum class EventKind : std::uint32_t {
  spawn = 1,       ///< start `count` workgroups at ids [first, first+count) at `site`
  membership = 2,  ///< M went down by the tag's value (kills, shrinking barriers)
  suspended = 3,   ///< the job suspended at `site`; payload: workgroup 0's transmit
  done = 4,        ///< the last workgroup returned (the tag's value: 1 if the job is suspended)
};

/// One ring record: this header, then the transmitted state (spawn, suspended). The first 8
/// bytes are one word, written last: the ring index + 1 (`seq`) and the tag (the kind, bits
/// 0-7, and for an event that needs nothing more its value, bits 8-31). A membership change
/// (the value: workgroups gone) and the end of the job (the value: 1 if suspended) are that word
/// alone, one 8-byte store with no fence, so a leaving block does not wait for a round trip to
/// host memory; the others write the fields and the transmit first, then the word with release.
struct alignas(16) EventHeader {
  std::uint32_t seq;
  std::uint32_t tag;
  std::uint32_t first;
  std::uint32_t count;
  std::int32_t site;
  std::uint32_t pad[3];
};
COOP_HD constexpr std::uint32_t event_tag(EventKind kind, std::uint32_t value = 0) {
  return std::uint32_t(kind) | value << 8;
}
COOP_HD constexpr EventKind tag_kind(std::uint32_t tag) { return EventKind(tag & 0xffu); }
COOP_HD constexpr std::uint32_t tag_value(std::uint32_t tag) { return tag >> 8; }
COOP_HD constexpr std::uint64_t event_word(std::uint32_t seq, std::uint32_t tag) {
  return std::uint64_t(seq) | std::uint64_t(tag) << 32;
}

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
