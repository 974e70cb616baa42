#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <string_view>

#include "coop/policy.hpp"

namespace coop {

std::string Policy::name() const {
  switch (kind) {
    case Kind::fixed:
      return "fixed";
    case Kind::adversarial:
      return (shrink_only ? "adversarial-shrink:" : "adversarial:") + std::to_string(seed);
    case Kind::cap:
      return "cap:" + std::to_string(cap);
    case Kind::generous:
      break;
  }
  return "generous";
}

Policy Policy::parse(const std::string& text) {
  auto number = [&](const std::string& digits) -> std::uint64_t {
    if (digits.empty() || digits.find_first_not_of("0123456789") != std::string::npos)
      throw std::invalid_argument("policy '" + text + "': expected a number after ':'");
    return std::stoull(digits);
  };
  if (text == "adversarial" || text == "adversarial:" || text == "adversarial-shrink" ||
      text == "adversarial-shrink:")
    throw std::invalid_argument("policy '" + text +
                                "' needs a seed, e.g. adversarial:1 (the seed draws the schedule's "
                                "kills, forks and resizes, so a run can be repeated)");
  if (text == "generous") return generous();
  if (text == "fixed") return fixed();
  if (text.rfind("adversarial:", 0) == 0) return adversarial(number(text.substr(12)));
  if (text.rfind("adversarial-shrink:", 0) == 0)
    return adversarial_shrinking(number(text.substr(19)));
  if (text.rfind("cap:", 0) == 0) {
    std::uint64_t m = number(text.substr(4));
    if (m == 0 || m > kMaxGroupsLimit)
      throw std::invalid_argument("policy '" + text + "': cap must be in [1, " +
                                  std::to_string(kMaxGroupsLimit) + "]");
    return capped(std::uint32_t(m));
  }
  throw std::invalid_argument(
      "unknown policy '" + text +
      "' (expected generous, fixed, adversarial:SEED, adversarial-shrink:SEED or cap:M)");
}

std::string PreemptionPolicy::name() const {
  const char* pause = pause_kept ? "" : ",no-pause";
  switch (mode) {
    case Mode::shrink:
      return std::string("shrink") + pause;
    case Mode::suspend:
      return std::string("suspend") + pause;
    case Mode::hybrid:
      break;
  }
  char buf[48];
  std::snprintf(buf, sizeof buf, "hybrid:%g%s", suspend_above, pause);
  return buf;
}

PreemptionPolicy PreemptionPolicy::parse(const std::string& given) {
  PreemptionPolicy p;
  std::string text = given;
  constexpr std::string_view no_pause = ",no-pause";
  if (text.size() > no_pause.size() && text.ends_with(no_pause)) {
    p.pause_kept = false;
    text.resize(text.size() - no_pause.size());
  }
  if (text == "shrink" || text == "cooperative") {
    p.mode = Mode::shrink;
  } else if (text == "suspend" || text == "kernel") {
    p.mode = Mode::suspend;
  } else if (text == "hybrid") {
    p.mode = Mode::hybrid;
  } else if (text.rfind("hybrid:", 0) == 0) {
    p.mode = Mode::hybrid;
    const std::string f = text.substr(7);
    char* end = nullptr;
    p.suspend_above = std::strtod(f.c_str(), &end);
    if (f.empty() || *end != '\0' || !(p.suspend_above >= 0.0 && p.suspend_above <= 1.0))
      throw std::invalid_argument("preemption '" + given +
                                  "': expected a fraction in [0, 1] after 'hybrid:'");
  } else {
    throw std::invalid_argument("unknown preemption '" + given +
                                "' (expected shrink, suspend, hybrid or hybrid:F, optionally "
                                "followed by ,no-pause)");
  }
  return p;
}

}  // namespace coop
