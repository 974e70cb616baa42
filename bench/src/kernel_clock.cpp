#include "kernel_clock.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <stdexcept>

namespace coop::bench {

namespace {

std::int64_t to_ns(clk::time_point t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}
clk::time_point from_ns(std::int64_t ns) {
  return clk::time_point(std::chrono::duration_cast<clk::duration>(std::chrono::nanoseconds(ns)));
}

}  // namespace

// Plain data in a mapping (anonymous, or a file's for several processes): lock-free atomics
// only. A reader retries while `seq` is odd or moved; spans are written before `spans` counts
// them.
struct KernelClock::Shared {
  static constexpr std::uint32_t kSpans = 1u << 20;
  struct Span {
    double kernel_ms;      ///< the clock's reading when the span started
    std::int64_t wall_ns;  ///< and the steady clock's
  };
  std::atomic<std::uint64_t> seq;
  std::atomic<std::uint32_t> running, finished, spans;
  std::atomic<double> banked;
  std::atomic<std::int64_t> since_ns;
  Span span[kSpans];
};
static_assert(std::atomic<double>::is_always_lock_free &&
                  std::atomic<std::int64_t>::is_always_lock_free,
              "the clock's fields are shared between processes");

namespace {

void* map_clock(int fd, std::size_t bytes) {
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                 fd < 0 ? MAP_PRIVATE | MAP_ANONYMOUS : MAP_SHARED, fd, 0);
  if (p == MAP_FAILED)
    throw std::runtime_error(std::string("kernel clock: cannot map its memory: ") +
                             std::strerror(errno));
  return p;
}

}  // namespace

KernelClock::KernelClock() : s_(static_cast<Shared*>(map_clock(-1, sizeof(Shared)))) {}

KernelClock::KernelClock(const std::string& file, bool create) {
  const int fd = open(file.c_str(), create ? O_RDWR | O_CREAT | O_TRUNC : O_RDWR, 0600);
  if (fd < 0)
    throw std::runtime_error("kernel clock: cannot open " + file + ": " + std::strerror(errno));
  // A new file reads as zeros: every field starts at 0 (not running, nothing banked).
  if (create && ftruncate(fd, off_t(sizeof(Shared))) != 0) {
    const int e = errno;
    close(fd);
    throw std::runtime_error("kernel clock: cannot size " + file + ": " + std::strerror(e));
  }
  try {
    s_ = static_cast<Shared*>(map_clock(fd, sizeof(Shared)));
  } catch (...) {
    close(fd);
    throw;
  }
  close(fd);  // the mapping stays
}

KernelClock::~KernelClock() { munmap(s_, sizeof(Shared)); }

KernelClock::Reading KernelClock::read() const {
  for (;;) {
    const std::uint64_t before = s_->seq.load(std::memory_order_acquire);
    if (before & 1) continue;  // set() is writing
    const Reading r{s_->running.load(std::memory_order_relaxed) != 0,
                    s_->banked.load(std::memory_order_relaxed),
                    from_ns(s_->since_ns.load(std::memory_order_relaxed))};
    std::atomic_thread_fence(std::memory_order_acquire);
    if (s_->seq.load(std::memory_order_relaxed) == before) return r;
  }
}

double KernelClock::now() const {
  const Reading r = read();
  return r.banked + (r.running ? ms_between(r.since, clk::now()) : 0);
}

bool KernelClock::due(double release) const {
  const Reading r = read();
  return r.running && r.banked + ms_between(r.since, clk::now()) >= release;
}

bool KernelClock::running() const { return read().running; }

double KernelClock::into_span() const {
  const Reading r = read();
  return r.running ? ms_between(r.since, clk::now()) : -1;
}

void KernelClock::set(bool on) {
  const Reading r = read();  // the writer's own fields: consistent
  if (on == r.running) return;
  const std::uint32_t n = s_->spans.load(std::memory_order_relaxed);
  if (on && n == Shared::kSpans)
    throw std::length_error("kernel clock: more than a million app runs in one unit");
  const clk::time_point t = clk::now();
  const double banked = r.banked + (r.running ? ms_between(r.since, t) : 0);
  // The span first: a reader that sees the clock running finds its span in wall_at().
  if (on) {
    s_->span[n] = {banked, to_ns(t)};
    s_->spans.store(n + 1, std::memory_order_release);
  }
  const std::uint64_t seq = s_->seq.load(std::memory_order_relaxed);
  s_->seq.store(seq + 1, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);
  s_->banked.store(banked, std::memory_order_relaxed);
  s_->since_ns.store(to_ns(t), std::memory_order_relaxed);
  s_->running.store(on ? 1 : 0, std::memory_order_relaxed);
  s_->seq.store(seq + 2, std::memory_order_release);
}

clk::time_point KernelClock::wall_at(double kernel_ms) const {
  const std::uint32_t n = s_->spans.load(std::memory_order_acquire);
  const Shared::Span* begin = s_->span;
  const Shared::Span* end = begin + n;
  const Shared::Span* it = std::upper_bound(
      begin, end, kernel_ms, [](double t, const Shared::Span& s) { return t < s.kernel_ms; });
  if (it == begin) return n == 0 ? clk::now() : from_ns(it->wall_ns);
  --it;
  return from_ns(it->wall_ns) +
         std::chrono::duration_cast<clk::duration>(
             std::chrono::duration<double, std::milli>(kernel_ms - it->kernel_ms));
}

void KernelClock::finish() { s_->finished.store(1, std::memory_order_release); }

bool KernelClock::finished() const { return s_->finished.load(std::memory_order_acquire) != 0; }

}  // namespace coop::bench
