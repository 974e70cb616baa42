// Option parsing the coop subcommands share.
#pragma once

#include <stdexcept>
#include <string>

#include "coop/runtime.hpp"

namespace coop::cli {

/// "auto" | "cpu" | "cuda" (--backend).
inline RuntimeOptions::Select parse_backend(const std::string& s) {
  if (s == "auto") return RuntimeOptions::Select::automatic;
  if (s == "cpu") return RuntimeOptions::Select::cpu;
  if (s == "cuda") return RuntimeOptions::Select::cuda;
  throw std::invalid_argument("--backend must be auto, cpu or cuda, got '" + s + "'");
}

/// "query" | "plain" (--barrier).
inline ResizeBarrier parse_barrier(const std::string& s) {
  if (s == "query") return ResizeBarrier::query;
  if (s == "plain") return ResizeBarrier::plain;
  throw std::invalid_argument("--barrier must be query or plain, got '" + s + "'");
}

}  // namespace coop::cli
