#include "coop/runtime.hpp"

#include <cstdlib>
#include <stdexcept>
#include <string>

namespace coop {

const char* backend_name(Backend b) { return b == Backend::cuda ? "cuda" : "cpu"; }

namespace {
std::uint32_t cpu_slots_from(const RuntimeOptions& o) {
  if (o.cpu_slots) return o.cpu_slots;
  if (const char* s = std::getenv("COOP_CPU_SLOTS")) {
    long v = std::strtol(s, nullptr, 10);
    if (v >= 1 && v <= long(kMaxGroupsLimit)) return std::uint32_t(v);
  }
  return 16;
}
}  // namespace

Runtime::Runtime(RuntimeOptions opts)
    : opts_(opts), sched_(std::make_unique<detail::Scheduler>(cpu_slots_from(opts))) {}

Runtime::~Runtime() = default;

std::string Runtime::device_name() const {
  return "CPU backend (" + std::to_string(capacity()) + " workgroup slots, " +
         std::to_string(std::thread::hardware_concurrency()) + " hardware threads)";
}

std::uint32_t Runtime::checked_groups(const LaunchConfig& cfg) const {
  if (cfg.threads == 0 || cfg.threads > 1024)
    throw std::invalid_argument("threads per workgroup must be in [1, 1024], got " +
                                std::to_string(cfg.threads));
  std::uint32_t n = cfg.max_groups ? cfg.max_groups : capacity();
  if (n > capacity())
    throw std::invalid_argument("max_groups " + std::to_string(n) +
                                " exceeds the workgroups that can be resident at once (" +
                                std::to_string(capacity()) +
                                "): a cooperative kernel's "
                                "workgroups must all fit");
  if (cfg.policy.kind == Policy::Kind::cap && (cfg.policy.cap == 0 || cfg.policy.cap > n))
    throw std::invalid_argument("cap policy needs a cap in [1, N=" + std::to_string(n) + "]");
  return n;
}

TaskRecord Runtime::run(std::uint32_t groups, const std::function<void(Task&)>& work,
                        int priority) {
  Task task(groups, backend());
  return sched_->run_task(groups, priority, [&] { work(task); });
}

}  // namespace coop
