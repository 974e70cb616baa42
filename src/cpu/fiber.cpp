#include "coop/cpu/fiber.hpp"

#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <mutex>
#include <new>
#include <stdexcept>
#include <string>

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

struct FiberTeam::Impl {
  ucontext_t main_ctx;
  std::vector<ucontext_t> ctx;
  std::vector<void*> stacks;
  std::vector<unsigned char> done;
  std::size_t stack_bytes;
};

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
  impl_->ctx.resize(count);
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

void FiberTeam::trampoline(unsigned lo, unsigned hi) {
  auto* team = reinterpret_cast<FiberTeam*>(static_cast<std::uintptr_t>(hi) << 32 | lo);
  unsigned i = team->current_;
  team->entry_(team->arg_, i);
  team->impl_->done[i] = 1;
  ++team->finished_;
  // returning switches to uc_link (the scheduler loop in run())
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
  auto self = reinterpret_cast<std::uintptr_t>(this);
  for (unsigned i = 0; i < count_; ++i) {
    ucontext_t& c = impl_->ctx[i];
    getcontext(&c);
    c.uc_stack.ss_sp = static_cast<char*>(impl_->stacks[i]) + page_size();
    c.uc_stack.ss_size = impl_->stack_bytes;
    c.uc_link = &impl_->main_ctx;
    makecontext(&c, reinterpret_cast<void (*)()>(&FiberTeam::trampoline), 2,
                static_cast<unsigned>(self & 0xffffffffu), static_cast<unsigned>(self >> 32));
  }
  while (finished_ < count_ && !stopped_) {
    for (unsigned i = 0; i < count_ && !stopped_; ++i) {
      if (impl_->done[i]) continue;
      current_ = i;
      swapcontext(&impl_->main_ctx, &impl_->ctx[i]);
    }
  }
}

void FiberTeam::yield() {
  if (count_ == 1) return;
  swapcontext(&impl_->ctx[current_], &impl_->main_ctx);
}

}  // namespace coop::cpu
