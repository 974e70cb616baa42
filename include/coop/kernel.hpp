/// \file
/// What a kernel author includes: resume-point macros and the pieces of a kernel type.
///
/// A cooperative kernel is a type with (docs/guide.md teaches it):
///
/// \code
///   struct Params   { ... };   // immutable launch parameters (trivially copyable)
///   struct Transmit { ... };   // optional: state new workgroups inherit (trivially copyable)
///   struct Shared   { ... };   // optional: workgroup-shared memory (trivially constructible)
///   static constexpr coop::KernelTraits traits{...};   // optional App. B alternatives
///   template <class Ctx> COOP_HD void operator()(Ctx&, const Params&, Transmit&) const;
/// \endcode
///
/// Forked workgroups enter the kernel at the point after the request_fork or resizing barrier
/// that created them. The body is therefore a switch on the resume point (the stackless
/// coroutine pattern):
///
/// \code
///   COOP_BEGIN(ctx);
///   while (...) {
///     ...
///     COOP_RESIZING_BARRIER(ctx);   // new workgroups start here, with the transmitted state
///   }
///   COOP_END(ctx);
/// \endcode
///
/// Rules the compiler enforces: a resume point may not jump past an initialised local (g++:
/// "jump to case label crosses initialization"; nvcc: warning 546, an error in coop's build).
/// Locals are not preserved for new workgroups: only Params and Transmit are. A resume point
/// inside a nested switch would belong to that switch: coop reports it at run time.
#pragma once

#include <cstdint>
#include <type_traits>

#include "coop/config.hpp"
#include "coop/policy.hpp"

namespace coop {

/// The Transmit (or Shared) of a kernel that declares none: operator() then takes
/// `coop::Empty&` as its third parameter.
struct Empty {};

namespace detail {
template <class K, class = void>
struct transmit_of {
  using type = Empty;
};
template <class K>
struct transmit_of<K, std::void_t<typename K::Transmit>> {
  using type = typename K::Transmit;
};
template <class K, class = void>
struct shared_of {
  using type = Empty;
};
template <class K>
struct shared_of<K, std::void_t<typename K::Shared>> {
  using type = typename K::Shared;
};
template <class K>
constexpr KernelTraits traits_of() {
  if constexpr (requires { K::traits; }) {
    return K::traits;
  } else {
    return KernelTraits{};
  }
}

/// Which primitive a workgroup-level synchronisation belongs to (for misuse reports).
enum class SiteKind : std::uint8_t {
  workgroup_barrier,
  offer_kill,
  request_fork,
  global_barrier,
  resizing_barrier,
  query,
  checkpoint,
  exit,
};
const char* site_name(SiteKind k);
}  // namespace detail

/// What ctx.poll_barrier() saw, judged from the values the workgroup's last primitive loaded;
/// under an adversarial policy both are true (`fork` not under adversarial-shrink, which never
/// grows).
struct Polled {
  /// An offer_kill here could accept: the scheduler wants workgroups back and this one is
  /// among those it would take.
  bool kill = false;
  /// A request_fork here would add workgroups.
  bool fork = false;
};

/// Kernel K's launch parameters, `K::Params`.
template <class K>
using params_t = typename K::Params;
/// Kernel K's transmitted state: `K::Transmit`, or coop::Empty when K declares none.
template <class K>
using transmit_t = typename detail::transmit_of<K>::type;
/// Kernel K's workgroup-shared memory: `K::Shared`, or coop::Empty when K declares none.
template <class K>
using shared_t = typename detail::shared_of<K>::type;

}  // namespace coop

/// Opens the kernel body: dispatches to the resume point the workgroup starts at.
#define COOP_BEGIN(ctx)             \
  switch ((ctx).resume_point()) {   \
    default:                        \
      (ctx).unknown_resume_point(); \
      return;                       \
    case 0:

/// Closes the kernel body opened by COOP_BEGIN.
#define COOP_END(ctx) \
  }                   \
  (void)(ctx)

/// offer_kill: if the scheduler accepts, the workgroup leaves the kernel here.
#define COOP_OFFER_KILL(ctx)                \
  do {                                      \
    if ((ctx).offer_kill(__LINE__)) return; \
  } while (0)

/// request_fork: new workgroups start right after this point with the transmitted state.
#define COOP_REQUEST_FORK(ctx)  \
  (ctx).request_fork(__LINE__); \
  [[fallthrough]];              \
  case __LINE__:

/// resizing_global_barrier: M may change here; new workgroups start right after it with the
/// transmitted state of workgroup 0, removed workgroups leave the kernel.
#define COOP_RESIZING_BARRIER(ctx)              \
  if ((ctx).resizing_barrier(__LINE__)) return; \
  [[fallthrough]];                              \
  case __LINE__:
