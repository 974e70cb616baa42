#include "coop/cpu/fiber.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <boost/context/detail/fcontext.hpp>

#include <cstdint>
#include <cstdlib>
#include <mutex>
#include <new>
#include <stdexcept>
#include <string>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#define COOP_FIBER_ASAN 1
#endif

namespace coop::cpu {
namespace {

std::size_t page_size() {
  static const std::size_t p = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  return p;
}

// Stacks are recycled: workgroups start and stop often (every fork), and mmap/munmap of a
// guarded stack costs more than the work of a short workgroup.
class StackPool {
 public:
  void* take(std::size_t bytes) {
    {
      std::lock_guard lock(mu_);
      for (std::size_t i = 0; i < free_.size(); ++i) {
        if (free_[i].bytes == bytes) {
          void* p = free_[i].base;
          free_[i] = free_.back();
          free_.pop_back();
          return p;
        }
      }
    }
    std::size_t total = bytes + page_size();
    void* base = mmap(nullptr, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (base == MAP_FAILED) throw std::bad_alloc();
    mprotect(base, page_size(), PROT_NONE);  // guard page: overflow faults instead of corrupting
    return base;
  }
  void give(void* base, std::size_t bytes) {
    std::lock_guard lock(mu_);
    if (free_.size() < 4096) {
      free_.push_back({base, bytes});
      return;
    }
    munmap(base, bytes + page_size());
  }

 private:
  struct Entry {
    void* base;
    std::size_t bytes;
  };
  std::mutex mu_;
  std::vector<Entry> free_;
};

StackPool& stack_pool() {
  static StackPool* pool = new StackPool;  // never destroyed: fibers may outlive statics
  return *pool;
}

}  // namespace

// A fiber switch is Boost.Context's fcontext jump: it saves and restores only the callee-saved
// registers and the stack pointer, with no signal-mask system call (ucontext's swapcontext makes
// one per switch). Fibers never jump to each other: each yields to the scheduler loop in run().
namespace fctx = boost::context::detail;

struct FiberTeam::Impl {
  fctx::fcontext_t scheduler = nullptr;  // the loop in run(), as the running fiber left it
  std::vector<fctx::fcontext_t> fibers;  // each fiber where it last yielded
  std::vector<void*> stacks;             // guard page, then stack_bytes of stack
  std::vector<unsigned char> done;
  std::size_t stack_bytes = 0;
#if defined(COOP_FIBER_ASAN)
  // ASan must be told about every switch to another stack, or it reports false stack overflows
  // and use-after-return when an exception unwinds a fiber.
  const void* scheduler_stack = nullptr;
  std::size_t scheduler_stack_bytes = 0;
#endif

  char* stack_low(unsigned i) const { return static_cast<char*>(stacks[i]) + page_size(); }
  /// Jumps to `to` (whose stack starts at `stack`) and returns what the jump back delivers.
  static fctx::transfer_t jump(fctx::fcontext_t to, void* data, const void* stack,
                               std::size_t stack_size);
  static void fiber_entry(fctx::transfer_t from);
};

fctx::transfer_t FiberTeam::Impl::jump(fctx::fcontext_t to, void* data,
                                       [[maybe_unused]] const void* stack,
                                       [[maybe_unused]] std::size_t stack_size) {
#if defined(COOP_FIBER_ASAN)
  void* fake_stack = nullptr;
  __sanitizer_start_switch_fiber(&fake_stack, stack, stack_size);
  fctx::transfer_t back = fctx::jump_fcontext(to, data);
  __sanitizer_finish_switch_fiber(fake_stack, nullptr, nullptr);
  return back;
#else
  return fctx::jump_fcontext(to, data);
#endif
}

void FiberTeam::Impl::fiber_entry(fctx::transfer_t from) {
  auto* team = static_cast<FiberTeam*>(from.data);
  Impl& impl = *team->impl_;
  impl.scheduler = from.fctx;
#if defined(COOP_FIBER_ASAN)
  __sanitizer_finish_switch_fiber(nullptr, &impl.scheduler_stack, &impl.scheduler_stack_bytes);
#endif
  unsigned i = team->current_;
  team->entry_(team->arg_, i);
  impl.done[i] = 1;
  ++team->finished_;
  // The last jump: nothing resumes this fiber (its stack goes back to the pool).
#if defined(COOP_FIBER_ASAN)
  __sanitizer_start_switch_fiber(nullptr, impl.scheduler_stack, impl.scheduler_stack_bytes);
#endif
  fctx::jump_fcontext(impl.scheduler, nullptr);
  std::abort();  // unreachable: an fcontext entry must never return
}

std::size_t FiberTeam::default_stack_bytes() {
  if (const char* kb = std::getenv("COOP_CPU_STACK_KB")) {
    long v = std::strtol(kb, nullptr, 10);
    if (v >= 16) return static_cast<std::size_t>(v) * 1024;
  }
#if defined(__SANITIZE_ADDRESS__)
  return 512 * 1024;
#else
  return 128 * 1024;
#endif
}

FiberTeam::FiberTeam(unsigned count, std::size_t stack_bytes) : impl_(new Impl), count_(count) {
  if (count == 0) throw std::invalid_argument("a workgroup needs at least one thread");
  std::size_t p = page_size();
  impl_->stack_bytes = (stack_bytes + p - 1) / p * p;
  impl_->fibers.resize(count);
  impl_->done.assign(count, 0);
  if (count > 1) {
    impl_->stacks.reserve(count);
    for (unsigned i = 0; i < count; ++i)
      impl_->stacks.push_back(stack_pool().take(impl_->stack_bytes));
  }
}

FiberTeam::~FiberTeam() {
  for (void* s : impl_->stacks) stack_pool().give(s, impl_->stack_bytes);
  delete impl_;
}

void FiberTeam::run(Entry entry, void* arg) {
  entry_ = entry;
  arg_ = arg;
  if (count_ == 1) {  // a one-thread workgroup needs no fiber at all
    current_ = 0;
    entry(arg, 0);
    finished_ = 1;
    return;
  }
  Impl& impl = *impl_;
  for (unsigned i = 0; i < count_; ++i) {
    char* low = impl.stack_low(i);
#if defined(COOP_FIBER_ASAN)
    // A recycled stack may still carry the poisoned redzones of a fiber that was abandoned
    // mid-call (stop()); this fiber's frames start clean.
    __asan_unpoison_memory_region(low, impl.stack_bytes);
#endif
    impl.fibers[i] =
        fctx::make_fcontext(low + impl.stack_bytes, impl.stack_bytes, &Impl::fiber_entry);
  }
  while (finished_ < count_ && !stopped_) {
    for (unsigned i = 0; i < count_ && !stopped_; ++i) {
      if (impl.done[i]) continue;
      current_ = i;
      impl.fibers[i] = Impl::jump(impl.fibers[i], this, impl.stack_low(i), impl.stack_bytes).fctx;
    }
  }
}

void FiberTeam::yield() {
  if (count_ == 1) return;
#if defined(COOP_FIBER_ASAN)
  const void* stack = impl_->scheduler_stack;
  std::size_t stack_bytes = impl_->scheduler_stack_bytes;
#else
  const void* stack = nullptr;
  std::size_t stack_bytes = 0;
#endif
  impl_->scheduler = Impl::jump(impl_->scheduler, nullptr, stack, stack_bytes).fctx;
}

}  // namespace coop::cpu
